// gdrkit GPU kernels (module "kernels"). Compiled to PTX by gpu/build-ptx.sh; loaded at run time with
// cuModuleLoadData. io.gdrkit.gpu.sim.SimKernels holds Java twins with the same names and parameters, and
// io.gdrkit.gpu.Pattern the same pattern function: keep the three in step.
//
// Result buffers (unsigned long long result[4]): [0] mismatching bytes, [1] index of the first mismatch (the host
// sets it to ~0 before the launch), [2] 1 when a poll timed out, [3] polls made.

// Round- and position-dependent byte: a position hash plus round*157 (odd), so two rounds less than 256 apart
// differ in every byte, and shifted data and partial writes show up too.
__device__ __forceinline__ unsigned char pattern_at(unsigned long long i, unsigned int round, unsigned int seed) {
    unsigned int m = (unsigned int)i * 2654435761u + seed;
    m ^= m >> 16;
    return (unsigned char)((m >> 8) + round * 157u);
}

// Reads go through volatile loads so that each one is served by memory (L2), not a stale L1 line: the point is
// to observe what NIC writes have really landed.
__device__ void verify_range(const volatile unsigned char* buf, unsigned long long n, unsigned int round,
                             unsigned int seed, unsigned long long* result) {
    unsigned long long bad = 0;
    unsigned long long first = ~0ull;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (buf[i] != pattern_at(i, round, seed)) {
            bad++;
            if (first == ~0ull) first = i;
        }
    }
    if (bad) {
        atomicAdd(&result[0], bad);
        atomicMin(&result[1], first);
    }
}

extern "C" __global__ void fill_pattern(unsigned char* buf, unsigned long long n, unsigned int round,
                                        unsigned int seed) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        buf[i] = pattern_at(i, round, seed);
    }
}

extern "C" __global__ void verify_pattern(const unsigned char* buf, unsigned long long n, unsigned int round,
                                          unsigned int seed, unsigned long long* result) {
    verify_range(buf, n, round, seed, result);
}

// A persistent consumer: thread 0 of each block polls the flag (volatile loads) until it reaches `expect` or
// `max_polls` polls have been made; then the block verifies its share of the buffer.
extern "C" __global__ void poll_flag_verify(const volatile unsigned int* flag, unsigned int expect,
                                            unsigned long long max_polls, const unsigned char* buf,
                                            unsigned long long n, unsigned int round, unsigned int seed,
                                            unsigned long long* result) {
    __shared__ int seen;
    if (threadIdx.x == 0) {
        unsigned long long polls = 0;
        seen = 0;
        while (polls < max_polls) {
            polls++;
            if (*flag >= expect) {
                seen = 1;
                break;
            }
        }
        if (!seen) atomicExch(&result[2], 1ull);
        atomicAdd(&result[3], polls);
        __threadfence();
    }
    __syncthreads();
    if (seen) {
        verify_range((const volatile unsigned char*)buf, n, round, seed, result);
    }
}

// Does nothing: measures launch overhead.
extern "C" __global__ void noop() {
}
