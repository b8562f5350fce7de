/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
// The collectives' reduction kernel (io.gdrkit.gpu.ReduceKernel): dst[i] = op(dst[i], src[i]) over count elements.
// Type and op codes are ReduceKernel's. Half and bfloat16 compute in float and round to nearest even, as NCCL's
// kernels do. Built into coll.ptx / coll_sm75.ptx by gpu/build-ptx.sh.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef unsigned long long u64;
typedef unsigned int u32;

template <typename T> __device__ __forceinline__ T red(T a, T b, u32 op) {
    switch (op) {
        case 0: return a + b;
        case 1: return a * b;
        case 2: return b < a ? b : a;
        default: return a < b ? b : a;
    }
}

template <typename T> __device__ void reduce_loop(unsigned char* dst, const unsigned char* src, u64 count, u32 op) {
    T* d = reinterpret_cast<T*>(dst);
    const T* s = reinterpret_cast<const T*>(src);
    for (u64 i = blockIdx.x * (u64) blockDim.x + threadIdx.x; i < count; i += (u64) gridDim.x * blockDim.x) {
        d[i] = red<T>(d[i], s[i], op);
    }
}

__device__ void reduce_half(unsigned char* dst, const unsigned char* src, u64 count, u32 op) {
    __half* d = reinterpret_cast<__half*>(dst);
    const __half* s = reinterpret_cast<const __half*>(src);
    for (u64 i = blockIdx.x * (u64) blockDim.x + threadIdx.x; i < count; i += (u64) gridDim.x * blockDim.x) {
        d[i] = __float2half_rn(red<float>(__half2float(d[i]), __half2float(s[i]), op));
    }
}

__device__ void reduce_bf16(unsigned char* dst, const unsigned char* src, u64 count, u32 op) {
    __nv_bfloat16* d = reinterpret_cast<__nv_bfloat16*>(dst);
    const __nv_bfloat16* s = reinterpret_cast<const __nv_bfloat16*>(src);
    for (u64 i = blockIdx.x * (u64) blockDim.x + threadIdx.x; i < count; i += (u64) gridDim.x * blockDim.x) {
        d[i] = __float2bfloat16_rn(red<float>(__bfloat162float(d[i]), __bfloat162float(s[i]), op));
    }
}

extern "C" __global__ void coll_reduce(unsigned char* dst, u64 dst_off, const unsigned char* src, u64 src_off,
                                       u64 count, u32 type, u32 op) {
    unsigned char* d = dst + dst_off;
    const unsigned char* s = src + src_off;
    switch (type) {
        case 0: reduce_loop<signed char>(d, s, count, op); break;
        case 1: reduce_loop<int>(d, s, count, op); break;
        case 2: reduce_loop<long long>(d, s, count, op); break;
        case 3: reduce_half(d, s, count, op); break;
        case 4: reduce_bf16(d, s, count, op); break;
        case 5: reduce_loop<float>(d, s, count, op); break;
        case 6: reduce_loop<double>(d, s, count, op); break;
        default: break;
    }
}
