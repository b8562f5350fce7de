/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
// The software NIC's delivery agent (io.gdrkit.gpu.cuda.CudaAgent): a persistent kernel that takes delivery
// descriptors from a ring in pinned, device-mapped host memory and copies each payload from pinned staging into
// device memory with SM loads and stores, then reports completion in host-mapped memory, which the NIC polls
// without a CUDA call. Built into agent.ptx / agent_sm75.ptx by gpu/build-ptx.sh (MODULES=agent).
//
// The ring's layout is AgentRing's (the Java flyweight); the offsets below must stay equal to it:
//   header  [0, 64):  magic u64 | slots u32 | blocks u32 | fault u64 | ce_done u64 | (reserved)
//   done    [64, 64 + 8 * slots): one completion word per slot: the seq last completed in that slot
//   descs   [64 + 8 * slots, + 64 * slots): seq u64 | dst u64 | src u64 | len u32 | flags u32 | ce_wait u64 | pad
// Device-memory state (zeroed by the host): done_seq u64 at 0, mirror_seq u64 at 8, one u32 counter per slot from
// 64, then one 32-byte mirror per slot (dst, src, len | flags << 32, ce_wait).
//
// Only block 0 reads the ring in host memory: it polls the next descriptor, checks it, meets its FENCE and WAIT_CE,
// copies it into the device-memory mirror and publishes mirror_seq; the other blocks poll mirror_seq in device
// memory. Many blocks polling host memory would flood PCIe with reads (on the H200, 64 polling blocks cut even a
// copy-engine copy beside them to a tenth).
//
// Work split: a byte at device address a is always copied by block (a / GRANULE) % gridDim.x, and every block takes
// the descriptors in ring order, so two writes of the same byte land in the order they were posted. A descriptor is
// complete when every block has finished its part: the block that finishes last (a counter per slot) publishes its
// seq in device memory (done_seq, for FENCE) and, after __threadfence_system, in the slot's completion word. As each
// block finishes descriptors in order, that block's seq being published means every earlier one is complete too.
// A restarted agent continues the numbering (first = the last seq + 1): each slot then holds the seq one lap before
// the one expected in it, or 0, exactly as in an agent that never stopped, and done_seq stays valid for FENCE.

typedef unsigned long long u64;
typedef unsigned int u32;

#define GRANULE 4096u
#define THREADS 256u          // GRANULE / 16: one 16-byte vector per thread per granule
#define UNROLL 4u             // granules in flight per block: loads of UNROLL granules are issued before their stores
#define F_FENCE 1u            // wait until every earlier descriptor is complete
#define F_STOP 2u             // complete, then end the kernel
#define F_WAIT_CE 4u          // wait until the copy engine's completion word reaches ce_wait
#define F_ALL (F_FENCE | F_STOP | F_WAIT_CE)
#define FAULT_BAD_SEQ 1ull    // a descriptor's seq is neither empty, the one expected, nor the slot's last
#define FAULT_BAD_DESC 2ull   // unknown flags, a zero or oversized length, or a length without addresses
#define MAX_LEN (1ull << 30)

__device__ __forceinline__ u64 ld_acquire_sys(const u64 *p) {
    u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release_sys(u64 *p, u64 v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ u64 ld_acquire_gpu(const u64 *p) {
    u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release_gpu(u64 *p, u64 v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void ld_volatile_v2(const u64 *p, u64 &a, u64 &b) {
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}

__device__ __forceinline__ void backoff(u32 &spins) {
    // spin tight for a while (latency), then sleep a little per poll so an idle agent costs the GPU almost nothing
    if (++spins > 4096u) {
        __nanosleep(spins > 65536u ? 2000u : 200u);
    }
}

// Copies [lo, hi) of the destination (src is the matching source) with the block's threads; any alignment.
__device__ __forceinline__ void copy_range(unsigned char *d, const unsigned char *s, u64 n) {
    if ((((u64) d ^ (u64) s) & 15u) == 0) {
        u64 head = (16u - ((u64) d & 15u)) & 15u;
        if (head > n) head = n;
        if (threadIdx.x < head) d[threadIdx.x] = s[threadIdx.x];
        u64 body = (n - head) / 16u;
        uint4 *dv = reinterpret_cast<uint4 *>(d + head);
        const uint4 *sv = reinterpret_cast<const uint4 *>(s + head);
        for (u64 i = threadIdx.x; i < body; i += blockDim.x) dv[i] = sv[i];
        u64 tail = head + body * 16u;
        if (threadIdx.x < n - tail) d[tail + threadIdx.x] = s[tail + threadIdx.x];
    } else {
        for (u64 i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) nic_agent(u64 ring, u64 state, u32 slots, u64 first) {
    u64 *hdr = reinterpret_cast<u64 *>(ring);
    u64 *done = reinterpret_cast<u64 *>(ring + 64u);
    u64 *descs = reinterpret_cast<u64 *>(ring + 64u + 8u * (u64) slots);
    u64 *done_seq = reinterpret_cast<u64 *>(state);
    u64 *mirror_seq = reinterpret_cast<u64 *>(state + 8u);
    u32 *counters = reinterpret_cast<u32 *>(state + 64u);
    u64 *mirror = reinterpret_cast<u64 *>(state + 64u + 4u * (u64) slots);
    __shared__ u64 s_dst, s_src, s_len;
    __shared__ u32 s_flags, s_fault;
    const u32 nb = gridDim.x;
    for (u64 seq = first;; seq++) {
        const u32 slot = (u32) ((seq - 1u) & (u64) (slots - 1u));
        u64 *m = mirror + 4u * slot;
        if (threadIdx.x == 0) {
            s_fault = 0;
            u32 spins = 0;
            if (blockIdx.x == 0) {
                u64 *desc = descs + 8u * slot;
                u64 lf = 0, dst = 0, src = 0, ce = 0;
                for (;;) {
                    const u64 v = ld_acquire_sys(desc);
                    if (v == seq) break;
                    // before its turn a slot holds 0 (never used) or the seq one lap earlier; anything else is corrupt
                    if (v != 0 && v != seq - slots) {
                        s_fault = 1;
                        hdr[2] = (FAULT_BAD_SEQ << 56) | seq;
                        break;
                    }
                    backoff(spins);
                }
                if (!s_fault) {
                    // 16-byte reads where the layout allows: each read is a PCIe round trip
                    u64 again;
                    ld_volatile_v2(desc, again, dst);
                    ld_volatile_v2(desc + 2, src, lf);
                    if ((lf >> 32) & F_WAIT_CE) ce = ((const volatile u64 *) desc)[4];
                    const u32 flags = (u32) (lf >> 32);
                    const u64 len = lf & 0xffffffffull;
                    const bool halt = (flags & F_STOP) != 0;
                    if ((flags & ~F_ALL) != 0 || len > MAX_LEN || (!halt && (len == 0 || dst == 0 || src == 0))) {
                        s_fault = 1;
                        hdr[2] = (FAULT_BAD_DESC << 56) | seq;
                    }
                }
                if (!s_fault && ((lf >> 32) & F_WAIT_CE)) {
                    spins = 0;
                    while (ld_acquire_sys(hdr + 3) < ce) backoff(spins);
                }
                if (!s_fault && ((lf >> 32) & F_FENCE)) {
                    spins = 0;
                    while (*(volatile u64 *) done_seq < seq - 1u) backoff(spins);
                }
                if (s_fault) {
                    __threadfence_system();
                    st_release_gpu(mirror_seq, ~0ull); // the other blocks end too
                } else {
                    m[0] = dst;
                    m[1] = src;
                    m[2] = lf;
                    st_release_gpu(mirror_seq, seq);
                }
            } else {
                for (;;) {
                    const u64 v = ld_acquire_gpu(mirror_seq);
                    if (v == ~0ull) {
                        s_fault = 1;
                        break;
                    }
                    if (v >= seq) break;
                    backoff(spins);
                }
            }
            if (!s_fault) {
                const volatile u64 *vm = m;
                s_dst = vm[0];
                s_src = vm[1];
                const u64 lf = vm[2];
                s_len = lf & 0xffffffffull;
                s_flags = (u32) (lf >> 32);
            }
        }
        __syncthreads();
        if (s_fault) {
            return;
        }
        const u64 dst = s_dst, src = s_src, len = s_len;
        const bool stop = (s_flags & F_STOP) != 0; // read before the next descriptor's thread 0 overwrites it
        if (len > 0) {
            const u64 end = dst + len;
            const u64 g0 = dst / GRANULE, g1 = (end - 1u) / GRANULE;
            // this block's first granule of the descriptor: the first g >= g0 with g % nb == blockIdx.x
            u64 g = g0 + (((u64) blockIdx.x + nb - g0 % nb) % nb);
            for (; g <= g1; g += (u64) UNROLL * nb) {
                uint4 r[UNROLL];
                bool whole[UNROLL];
#pragma unroll
                for (u32 j = 0; j < UNROLL; j++) {
                    const u64 gg = g + (u64) j * nb;
                    const u64 base = gg * GRANULE;
                    whole[j] = gg <= g1 && base >= dst && base + GRANULE <= end && ((src + (base - dst)) & 15u) == 0;
                    if (whole[j]) r[j] = reinterpret_cast<const uint4 *>(src + (base - dst))[threadIdx.x];
                }
#pragma unroll
                for (u32 j = 0; j < UNROLL; j++) {
                    const u64 gg = g + (u64) j * nb;
                    if (gg > g1) break;
                    const u64 base = gg * GRANULE;
                    if (whole[j]) {
                        reinterpret_cast<uint4 *>(base)[threadIdx.x] = r[j];
                    } else {
                        const u64 lo = base > dst ? base : dst;
                        const u64 hi = base + GRANULE < end ? base + GRANULE : end;
                        copy_range(reinterpret_cast<unsigned char *>(lo),
                                   reinterpret_cast<const unsigned char *>(src + (lo - dst)), hi - lo);
                    }
                }
            }
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            if (atomicAdd(counters + slot, 1u) == nb - 1u) {
                // last block of this descriptor: every block is past it and every earlier one
                counters[slot] = 0;
                atomicMax(done_seq, seq);
                __threadfence_system();
                st_release_sys(done + slot, seq);
            }
        }
        if (stop) return;
    }
}
