/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
// gdrkit GPU kernels (module "kernels"). Compiled to PTX by gpu/build-ptx.sh; loaded at run time with
// cuModuleLoadData. io.gdrkit.gpu.sim.SimKernels holds Java twins with the same names and parameters, and
// io.gdrkit.gpu.Pattern the same pattern function: keep the three in step.
//
// Result buffers of verify_pattern and poll_flag_verify (the vis_* kernels below have their own; see there)
// (unsigned long long result[4]): [0] mismatching bytes, [1] index of the first mismatch (the host
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

// ---------------------------------------------------------------------------------------------------------------
// Visibility-experiment consumers (BRIEF D1, D5; issue 6). Twins: SimKernels.VIS_*; result layout: io.gdrkit.gpu.VisResult.
//
// Counts of one check of a buffer against round `round`:
//   bad   bytes that differ from pattern_at(i, round, seed)
//   first the smallest such i (~0 when none)
//   last  max(1 + i) over the i that hold this round's byte (0 when none): with `first` it tells a prefix that
//         landed (partial: last <= first) from later bytes that landed before earlier ones (reordered: last > first)
//   prev  bad bytes that hold pattern_at(i, round - 1, seed): stale data from the round before
struct VisCounts {
    unsigned long long bad, first, last, prev;
};

__device__ __forceinline__ void vis_count_byte(unsigned char b, unsigned long long i, unsigned int round,
                                               unsigned int seed, VisCounts& c) {
    if (b == pattern_at(i, round, seed)) {
        c.last = i + 1; // i grows along a thread's walk, so the last one seen is its maximum
    } else {
        c.bad++;
        if (c.first == ~0ull) c.first = i;
        if (b == pattern_at(i, round - 1u, seed)) c.prev++;
    }
}

// One thread's share of [0, n): 8-byte words start, start+stride, ... Every load is volatile (ld.volatile): it is
// served by L2/memory, never by an L1 line this SM cached earlier. A persistent block reads the same buffer every
// round, so a plain (ld.global, L1-cacheable) load could return round r-1's bytes from L1 after round r landed in
// memory, and the experiment would blame the NIC for a cache artefact. Volatile also keeps the compiler from
// merging or hoisting the loads across the flag poll.
__device__ VisCounts vis_scan(const volatile unsigned char* buf, unsigned long long n, unsigned int round,
                              unsigned int seed, unsigned long long start, unsigned long long stride) {
    VisCounts c = {0, ~0ull, 0, 0};
    if (((unsigned long long)buf & 7) != 0) {
        for (unsigned long long i = start; i < n; i += stride) vis_count_byte(buf[i], i, round, seed, c);
        return c;
    }
    const volatile unsigned long long* w = (const volatile unsigned long long*)buf;
    const unsigned long long words = n >> 3;
    for (unsigned long long k = start; k < words; k += stride) {
        const unsigned long long v = w[k]; // little-endian: byte j of the word is buf[8k + j]
#pragma unroll
        for (int j = 0; j < 8; j++) vis_count_byte((unsigned char)(v >> (8 * j)), 8 * k + j, round, seed, c);
    }
    // the tail that does not fill a word, one byte per thread
    const unsigned long long i = (words << 3) + start;
    if (i < n) vis_count_byte(buf[i], i, round, seed, c);
    return c;
}

// Sums the block's counts in shared memory; thread 0 gets the block's totals. All threads of the block must call it.
// Shared-memory atomics rather than warp shuffles so that any block size works (partial warps too).
__device__ VisCounts vis_block_reduce(VisCounts c) {
    __shared__ unsigned long long s_bad, s_first, s_last, s_prev;
    if (threadIdx.x == 0) {
        s_bad = 0;
        s_first = ~0ull;
        s_last = 0;
        s_prev = 0;
    }
    __syncthreads();
    if (c.bad) atomicAdd(&s_bad, c.bad);
    if (c.first != ~0ull) atomicMin(&s_first, c.first);
    if (c.last) atomicMax(&s_last, c.last);
    if (c.prev) atomicAdd(&s_prev, c.prev);
    __syncthreads();
    VisCounts t = {s_bad, s_first, s_last, s_prev};
    __syncthreads(); // the shared words are reused by the block's next call
    return t;
}

// vis_verify(const u8* buf, u64 n, u32 round, u32 seed, u64* result), any 1-D grid and block. Accumulates into
// result (the host sets [0] = 0, [1] = ~0, [2] = 0, [3] = 0 before the launch): [0] += bad, [1] = min(first),
// [2] = max(last), [3] += prev. One global atomic per word per block; result should be device memory (atomics on
// host memory need PCIe atomics the platform may not have).
extern "C" __global__ void vis_verify(const unsigned char* buf, unsigned long long n, unsigned int round,
                                      unsigned int seed, unsigned long long* result) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const VisCounts t = vis_block_reduce(vis_scan((const volatile unsigned char*)buf, n, round, seed,
                                                  (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x, stride));
    if (threadIdx.x == 0) {
        if (t.bad) atomicAdd(&result[0], t.bad);
        if (t.first != ~0ull) atomicMin(&result[1], t.first);
        if (t.last) atomicMax(&result[2], t.last);
        if (t.prev) atomicAdd(&result[3], t.prev);
    }
}

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    // volatile: read the clock every time; no "memory" clobber on purpose, so the asm does not stop the compiler
    // from hoisting a plain flag load out of the poll loop (that is what vis_persistent_plain exists to show)
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// The three ways thread 0 reads the flag. flags[s] may be pinned host memory (a CPU store) or device memory.
struct PollPlain {
    // an ordinary load: the compiler may keep the value in a register and never read memory again (ptxas does, for
    // sm_90: the PTX has the ld.global in the loop, the SASS loads once before it; docs/GPU.md section 8)
    __device__ static unsigned int load(const unsigned int* p) { return *p; }
};
struct PollVolatile {
    // ld.volatile: a fresh read of memory each time, no ordering of later loads
    __device__ static unsigned int load(const unsigned int* p) { return *(const volatile unsigned int*)p; }
};
struct PollAcquire {
    // ld.acquire.sys: a fresh read, and the block's later loads (after __syncthreads) are ordered after it at
    // system scope, which is what a flag written by a CPU or another agent after the data asks for
    __device__ static unsigned int load(const unsigned int* p) {
        unsigned int v;
        asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
        return v;
    }
};

// Result slot words (u64) of round r, sender s: res + ((r-1)*senders + s)*8.
#define VIS_SLOT_WORDS 8

// The persistent consumer, shared by the three variants: see vis_persistent_plain.
template <typename Poll>
__device__ void vis_persistent(const unsigned int* flags, const unsigned long long* bufs, unsigned int senders,
                               unsigned long long n, unsigned int rounds, unsigned int seed,
                               unsigned long long timeout_ns, unsigned long long* res) {
    __shared__ int seen;
    __shared__ unsigned long long polls;
    for (unsigned int r = 1; r <= rounds; r++) {
        // round-major: a block serving several senders finishes round r for all of them before round r+1, so a
        // receiver that grants round r+1 only after every sender's round r is back cannot deadlock against it
        for (unsigned int s = blockIdx.x; s < senders; s += gridDim.x) {
            if (threadIdx.x == 0) {
                const unsigned int* flag = flags + s;
                const unsigned long long t0 = global_ns();
                unsigned long long p = 0;
                int ok = 0;
                // bounded by %globaltimer, not by a poll count: a plain load hoisted out of the loop still ends,
                // and the slot says it timed out instead of hanging the GPU
                do {
                    p++;
                    if (Poll::load(flag) >= r) {
                        ok = 1;
                        break;
                    }
                } while (global_ns() - t0 < timeout_ns);
                seen = ok;
                polls = p;
            }
            __syncthreads();
            VisCounts c = {0, ~0ull, 0, 0};
            if (seen) {
                c = vis_scan((const volatile unsigned char*)bufs[s], n, r, seed, threadIdx.x, blockDim.x);
            }
            const VisCounts t = vis_block_reduce(c); // every thread takes part, seen or not
            if (threadIdx.x == 0) {
                volatile unsigned long long* slot = res + ((unsigned long long)(r - 1) * senders + s) * VIS_SLOT_WORDS;
                slot[0] = seen ? t.bad : n;
                slot[1] = seen ? t.first : ~0ull;
                slot[2] = seen ? t.last : 0;
                slot[3] = seen ? t.prev : 0;
                slot[4] = polls;
                slot[5] = seen ? 0 : 1;
                slot[6] = 0;
                // release at system scope: a host thread that reads slot[7] == r also reads the words above
                asm volatile("st.release.sys.u64 [%0], %1;" :: "l"(slot + 7), "l"((unsigned long long)r) : "memory");
            }
            __syncthreads(); // `seen` and `polls` are rewritten for the next sender/round
        }
    }
}

// vis_persistent_*(const u32* flags, const u64* bufs, u32 senders, u64 n, u32 rounds, u32 seed, u64 timeout_ns,
//                  u64* res)
// Launched once before the first round. bufs[s] is sender s's buffer of n bytes. Block b serves senders b,
// b + gridDim.x, ...; the grid must be co-resident (at most the SM count) or blocks waiting for their turn starve.
// For r = 1..rounds and each of its senders s: thread 0 polls flags[s] >= r until %globaltimer has advanced
// timeout_ns; the block checks bufs[s] against round r (as vis_verify) and thread 0 writes the slot
// res + ((r-1)*senders + s)*8: [0] bad, [1] first (~0 none), [2] last (0 none), [3] prev, [4] polls made,
// [5] 1 if the poll timed out (then [0..3] = n, ~0, 0, 0), [6] 0, and last [7] = r with st.release.sys.
// res is meant to be pinned host memory (cuMemAllocHost, the same address on the device under UVA) that the host
// polls while the kernel runs: plain stores only, no atomics, so no PCIe atomics are needed.
// The variants differ only in how thread 0 loads the flag.
extern "C" __global__ void vis_persistent_plain(const unsigned int* flags, const unsigned long long* bufs,
                                                unsigned int senders, unsigned long long n, unsigned int rounds,
                                                unsigned int seed, unsigned long long timeout_ns,
                                                unsigned long long* res) {
    vis_persistent<PollPlain>(flags, bufs, senders, n, rounds, seed, timeout_ns, res);
}

extern "C" __global__ void vis_persistent_volatile(const unsigned int* flags, const unsigned long long* bufs,
                                                   unsigned int senders, unsigned long long n, unsigned int rounds,
                                                   unsigned int seed, unsigned long long timeout_ns,
                                                   unsigned long long* res) {
    vis_persistent<PollVolatile>(flags, bufs, senders, n, rounds, seed, timeout_ns, res);
}

extern "C" __global__ void vis_persistent_acquire(const unsigned int* flags, const unsigned long long* bufs,
                                                  unsigned int senders, unsigned long long n, unsigned int rounds,
                                                  unsigned int seed, unsigned long long timeout_ns,
                                                  unsigned long long* res) {
    vis_persistent<PollAcquire>(flags, bufs, senders, n, rounds, seed, timeout_ns, res);
}

// ================================================================ shmem (GPU-initiated communication)
// The device functions are in shmem_device.cuh (shared with the CPU test double of libcuda). Kernels below are the
// measurement kernels of io.gdrkit.labs.shmem.CudaShmemPerf; times are %globaltimer nanoseconds.
#include "shmem_device.cuh"

// Thread 0 issues `iters` blocking operations (op: 1 put, 2 get, 4 fetch_add) to `pe`;
// times[2i] = issue, times[2i+1] = completion seen. times[2 iters] = the fetched value of the last atomic.
extern "C" __global__ void shmem_lat(u64* s, u32 op, u32 pe, u64 dst, u64 src, u32 len, u32 iters, u64* times) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    u64 last = 0;
    for (u32 i = 0; i < iters; i++) {
        u64 t0 = shd_now();
        u64 t = shmem_issue(s, op, (int)pe, dst, src, len, 1, 0, 0, 0);
        if (shmem_wait(s, t)) return;
        if (op == SHD_OP_FETCH_ADD) last = shmem_fetched(s, t);
        times[2 * i] = t0;
        times[2 * i + 1] = shd_now();
    }
    times[2 * iters] = last;
}

// Ping-pong of put-with-signal (ADD 1) between this PE and `peer`. The initiator stamps times[2i] = issue,
// times[2i+1] = the answer seen; the responder stamps times[2i] = the signal seen (landing), times[2i+1] = its
// answer issued. The signal word counts from `base`.
extern "C" __global__ void shmem_pingpong(u64* s, u32 peer, u64 dst, u64 src, u32 len, u64 sig, u32 iters,
                                          u32 initiator, u64 base, u64* times) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (u32 i = 0; i < iters; i++) {
        if (initiator) {
            u64 t0 = shd_now();
            if (shmem_wait(s, shmem_issue(s, SHD_OP_PUT_SIGNAL, (int)peer, dst, src, len, 1, 0, sig, 1))) return;
            if (shmem_wait_ge(s, sig, base + i + 1)) return;
            times[2 * i] = t0;
            times[2 * i + 1] = shd_now();
        } else {
            if (shmem_wait_ge(s, sig, base + i + 1)) return;
            times[2 * i] = shd_now();
            times[2 * i + 1] = shd_now();
            if (shmem_wait(s, shmem_issue(s, SHD_OP_PUT_SIGNAL, (int)peer, dst, src, len, 1, 0, sig, 1))) return;
        }
    }
}

// Bandwidth / message rate: every thread (variant 0), every warp's lane 0 for its 32 slots (variant 1, put_warp)
// or every block's thread 0 for its blockDim slots (variant 2, put_block) issues `per` non-blocking puts of its
// slots, then thread 0 of each block waits for all (quiet). times[block] = elapsed ns of that block.
extern "C" __global__ void shmem_put_bw(u64* s, u32 pe, u64 dst, u64 src, u32 len, u32 per, u32 variant,
                                        u64* times) {
    u64 t0 = shd_now();
    u64 gtid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (u32 i = 0; i < per; i++) {
        if (variant == 0) {
            shmem_issue(s, SHD_OP_PUT, (int)pe, dst + gtid * len, src + gtid * len, len, 0, 0, 0, 0);
        } else if (variant == 1) {
            __syncwarp();
            if ((threadIdx.x & 31) == 0) {
                u64 first = gtid;
                u32 lanes = min(32u, blockDim.x - threadIdx.x);
                shmem_issue(s, SHD_OP_PUT, (int)pe, dst + first * len, src + first * len, len * lanes, 0, 0, 0, 0);
            }
            __syncwarp();
        } else {
            __syncthreads();
            if (threadIdx.x == 0) {
                u64 first = (u64)blockIdx.x * blockDim.x;
                shmem_issue(s, SHD_OP_PUT, (int)pe, dst + first * len, src + first * len, len * blockDim.x, 0, 0, 0, 0);
            }
            __syncthreads();
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        shmem_quiet(s);
        times[blockIdx.x] = shd_now() - t0;
    }
}

// The floor: a kernel that only rings host memory and polls for the CPU's answer (one PCIe round trip each).
// times[i] = the round trip of ring i in ns.
extern "C" __global__ void shmem_ring_rtt(u64* ring, u64* answer, u32 iters, u64 timeout_ns, u64* times) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (u32 i = 0; i < iters; i++) {
        u64 t0 = shd_now();
        shd_st_rel(ring, i + 1);
        while (shd_ld_acq(answer) != i + 1) {
            if (shd_now() - t0 > timeout_ns) return;
        }
        times[i] = shd_now() - t0;
    }
}

// Clock pairing: for round i, waits for the host's req == i + 1, writes %globaltimer to reply[i], then acks in
// reply[rounds]. The host pairs each reply with the midpoint of its own nanoTime stamps around the round.
extern "C" __global__ void shmem_clock_sync(u64* req, u64* reply, u32 rounds, u64 timeout_ns) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (u32 i = 0; i < rounds; i++) {
        u64 t0 = shd_now();
        while (shd_ld_acq(req) != i + 1) {
            if (shd_now() - t0 > timeout_ns) return;
        }
        reply[i] = shd_now();
        shd_st_rel(reply + rounds, i + 1);
    }
}

// MoE dispatch/combine (MoeRun on CUDA): thread 0 of the single block runs shmem_moe_body; times[0] = its ns.
extern "C" __global__ void shmem_moe(u64* s, u64 seed, u32 tokens, u32 bytes, u64 in, u64 recv, u64 out,
                                     u64 recv_sig, u64 done_sig, u64* times) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    u64 t0 = shd_now();
    if (shmem_moe_body(s, seed, tokens, bytes, in, recv, out, recv_sig, done_sig)) return;
    times[0] = shd_now() - t0;
}
