/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
// The software NIC's delivery agent (io.gdrkit.gpu.cuda.CudaAgent): a persistent kernel that takes delivery
// descriptors from a ring in pinned, device-mapped host memory and copies each payload into device memory with SM
// loads and stores (from pinned staging, or from the descriptor itself for small ones), then reports completion in
// host-mapped memory, which the NIC polls without a CUDA call. Built into agent.ptx / agent_sm75.ptx by
// gpu/build-ptx.sh (MODULES=agent).
//
// The ring's layout is AgentRing's (the Java flyweight); the offsets below must stay equal to it:
//   header  [0, 64):  magic u64 | slots u32 | blocks u32 | fault u64 | ce_done u64 | (reserved)
//   done    [64, 64 + 8 * slots): one completion word per slot: the seq last completed in that slot
//   descs   [64 + 8 * slots, + 256 * slots): 32 tagged words per descriptor, each (value u32 | tag u32 << 32) with
//           tag = the low 32 bits of the descriptor's seq:
//             0 len | 1 flags | 2-3 dst (low, high) | 4-5 src | 6-7 ce_wait | 8-31 inline payload, 4 bytes a word
// Every word carries its own tag, so the NIC may write them in any order and the agent needs no second read: warp 0
// of block 0 reads the whole descriptor in one 256-byte poll (a lane a word), and it is there when every word it
// needs bears the seq's tag (NCCL's LL protocol makes the same use of 8-byte stores being single-copy atomic). A
// PCIe read from the GPU costs about a microsecond, so the poll, the fields and a small payload in one read is the
// difference between one round trip and four.
// Device-memory state (zeroed by the host): done_seq u64 at 0, mirror_seq u64 at 8, one u32 counter per slot from
// 64, then one 32-byte mirror per slot (dst, src, len | flags << 32, seq).
//
// Small descriptors (INLINE, payload in words 8-31, at most 96 bytes) are delivered by warp 0 of block 0 alone from
// its registers, once every earlier descriptor is complete (so no byte is written out of order with another block's
// copy). Every other descriptor is copied by all blocks: block 0 mirrors it into device memory under the next
// "copy seq" (cseq counts those only) and publishes mirror_seq; the other blocks poll mirror_seq in device memory.
// Many blocks polling host memory would flood PCIe with reads (on the H200, 64 polling blocks cut even a copy-engine
// copy beside them to a tenth).
//
// Work split of a copied descriptor: a byte at device address a is always copied by block (a / GRANULE) % gridDim.x,
// and every block takes the descriptors in ring order, so two writes of the same byte land in the order they were
// posted. It is complete when every block has finished its part: the block that finishes last (a counter per
// mirror slot) publishes its seq in device memory (done_seq, for FENCE) and, after __threadfence_system, in the
// slot's completion word. As descriptors complete in order, a seq being published means every earlier one is
// complete too. A restarted agent continues both numberings (first = the last seq + 1, cfirst = the last cseq + 1,
// from the host's counts): each slot then holds the seq one lap before the one expected in it, or 0, exactly as in an
// agent that never stopped, and done_seq stays valid for FENCE.

typedef unsigned long long u64;
typedef unsigned int u32;

#define GRANULE 4096u
#define THREADS 256u          // GRANULE / 16: one 16-byte vector per thread per granule
#define UNROLL 4u             // granules in flight per block: loads of UNROLL granules are issued before their stores
#define WORDS 32u             // tagged words per descriptor: one per lane of a warp
#define HDR_WORDS 8u
#define INLINE_MAX ((WORDS - HDR_WORDS) * 4u)
#define F_FENCE 1u            // wait until every earlier descriptor is complete
#define F_STOP 2u             // complete, then end the kernel
#define F_WAIT_CE 4u          // wait until the copy engine's completion word reaches ce_wait
#define F_INLINE 8u           // the payload is in words 8-31 (len <= INLINE_MAX), not at src
#define F_ALL (F_FENCE | F_STOP | F_WAIT_CE | F_INLINE)
#define FAULT_BAD_SEQ 1ull    // a descriptor word's tag is neither empty, the one expected, nor the slot's last
#define FAULT_BAD_DESC 2ull   // unknown flags, a zero or oversized length, or a length without addresses
#define MAX_LEN (1ull << 30)
#define FULL 0xffffffffu

__device__ __forceinline__ u64 ld_acquire_sys(const u64 *p) {
    u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ u64 ld_relaxed_sys(const u64 *p) {
    u64 v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
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

__device__ __forceinline__ void fence_acq_rel_sys() {
    asm volatile("fence.acq_rel.sys;" ::: "memory");
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

// This block's part of a copied descriptor (every thread of the block).
__device__ __forceinline__ void copy_share(const u64 dst, const u64 src, const u64 len, const u32 nb) {
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

// Thread 0, after the block's part of copied descriptor cseq (ring seq seq): the last block to finish completes it.
__device__ __forceinline__ void finish_share(u32 *counters, u64 *done_seq, u64 *done, const u64 cseq, const u64 seq,
                                             const u32 slots, const u32 nb) {
    __threadfence();
    const u32 cslot = (u32) ((cseq - 1u) & (u64) (slots - 1u));
    if (atomicAdd(counters + cslot, 1u) == nb - 1u) {
        // last block of this descriptor: every block is past it and every earlier one
        counters[cslot] = 0;
        atomicMax(done_seq, seq);
        __threadfence_system();
        st_release_sys(done + ((seq - 1u) & (u64) (slots - 1u)), seq);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) nic_agent(u64 ring, u64 state, u32 slots, u64 first,
                                                               u64 cfirst) {
    u64 *hdr = reinterpret_cast<u64 *>(ring);
    u64 *done = reinterpret_cast<u64 *>(ring + 64u);
    const u64 *descs = reinterpret_cast<const u64 *>(ring + 64u + 8u * (u64) slots);
    u64 *done_seq = reinterpret_cast<u64 *>(state);
    u64 *mirror_seq = reinterpret_cast<u64 *>(state + 8u);
    u32 *counters = reinterpret_cast<u32 *>(state + 64u);
    u64 *mirror = reinterpret_cast<u64 *>(state + 64u + 4u * (u64) slots);
    __shared__ u64 s_dst, s_src, s_len, s_seq;
    __shared__ u32 s_flags, s_fault, s_inline;
    const u32 nb = gridDim.x;

    if (blockIdx.x != 0) {
        // the other blocks: copied descriptors only, in cseq order, from block 0's mirror in device memory
        for (u64 cseq = cfirst;; cseq++) {
            const u64 *m = mirror + 4u * ((cseq - 1u) & (u64) (slots - 1u));
            if (threadIdx.x == 0) {
                s_fault = 0;
                u32 spins = 0;
                for (;;) {
                    const u64 v = ld_acquire_gpu(mirror_seq);
                    if (v == ~0ull) {
                        s_fault = 1;
                        break;
                    }
                    if (v >= cseq) break;
                    backoff(spins);
                }
                if (!s_fault) {
                    const volatile u64 *vm = m;
                    s_dst = vm[0];
                    s_src = vm[1];
                    const u64 lf = vm[2];
                    s_len = lf & 0xffffffffull;
                    s_flags = (u32) (lf >> 32);
                    s_seq = vm[3];
                }
            }
            __syncthreads();
            if (s_fault) return;
            const u64 dst = s_dst, src = s_src, len = s_len, seq = s_seq;
            const bool stop = (s_flags & F_STOP) != 0; // read before the next descriptor's thread 0 overwrites it
            if (len > 0) copy_share(dst, src, len, nb);
            __syncthreads();
            if (threadIdx.x == 0) finish_share(counters, done_seq, done, cseq, seq, slots, nb);
            if (stop) return;
        }
    }

    // block 0: reads the ring; warp 0 polls and delivers small descriptors itself
    u64 cseq = cfirst;
    // the last seq this warp knows complete without asking device memory: everything before a launch (a restart
    // follows a STOP, which completes only after everything before it), then each inline delivery it made itself
    u64 known = first - 1u;
    for (u64 seq = first;; seq++) {
        const u32 slot = (u32) ((seq - 1u) & (u64) (slots - 1u));
        if (threadIdx.x < 32u) {
            const u32 lane = threadIdx.x;
            const u64 *desc = descs + (u64) WORDS * slot;
            const u32 tag = (u32) seq, before = (u32) (seq - slots);
            u32 spins = 0, len = 0, flags = 0, fault = 0;
            u64 w;
            for (;;) {
                w = ld_relaxed_sys(desc + lane);
                const u32 t = (u32) (w >> 32);
                const u32 mine = __ballot_sync(FULL, t == tag);
                // before its turn a header word holds 0 (never used) or the tag one lap earlier; else corrupt
                if (__ballot_sync(FULL, lane < HDR_WORDS && t != tag && t != before && t != 0) != 0) {
                    fault = (u32) FAULT_BAD_SEQ;
                    break;
                }
                if ((mine & 0xffu) == 0xffu) {
                    len = __shfl_sync(FULL, (u32) w, 0);
                    flags = __shfl_sync(FULL, (u32) w, 1);
                    if (!(flags & F_INLINE)) break;
                    if (len == 0 || len > INLINE_MAX) {
                        fault = (u32) FAULT_BAD_DESC;
                        break;
                    }
                    const u32 words = (len + 3u) / 4u;
                    const u32 need = (words >= 32u - HDR_WORDS ? FULL : ((1u << (words + HDR_WORDS)) - 1u)) & ~0xffu;
                    if ((mine & need) == need) break;
                }
                backoff(spins);
            }
            const u64 dst = (u64) __shfl_sync(FULL, (u32) w, 2) | ((u64) __shfl_sync(FULL, (u32) w, 3) << 32);
            const u64 src = (u64) __shfl_sync(FULL, (u32) w, 4) | ((u64) __shfl_sync(FULL, (u32) w, 5) << 32);
            const u64 ce = (u64) __shfl_sync(FULL, (u32) w, 6) | ((u64) __shfl_sync(FULL, (u32) w, 7) << 32);
            const bool halt = (flags & F_STOP) != 0, inl = (flags & F_INLINE) != 0;
            // a STOP is never inline (it is the blocks' descriptor: each ends on it)
            if (!fault && ((flags & ~F_ALL) != 0 || len > MAX_LEN || (halt && inl)
                           || (!halt && (len == 0 || dst == 0 || (!inl && src == 0))))) {
                fault = (u32) FAULT_BAD_DESC;
            }
            __syncwarp();
            if (lane == 0) {
                s_fault = fault;
                s_inline = inl && !fault;
                if (fault) {
                    hdr[2] = ((u64) fault << 56) | seq;
                    __threadfence_system();
                    st_release_gpu(mirror_seq, ~0ull); // the other blocks end too
                } else {
                    if (!inl) fence_acq_rel_sys(); // the staging bytes written before the descriptor are read after it
                    if (flags & F_WAIT_CE) {
                        spins = 0;
                        while (ld_acquire_sys(hdr + 3) < ce) backoff(spins);
                    }
                    if (((flags & F_FENCE) || inl) && known < seq - 1u) {
                        // an inline delivery is this warp's alone: the blocks' earlier copies must have landed first
                        spins = 0;
                        while (ld_acquire_gpu(done_seq) < seq - 1u) backoff(spins);
                    }
                    if (!inl) {
                        u64 *m = mirror + 4u * ((cseq - 1u) & (u64) (slots - 1u));
                        m[0] = dst;
                        m[1] = src;
                        m[2] = (u64) len | ((u64) flags << 32);
                        m[3] = seq;
                        st_release_gpu(mirror_seq, cseq);
                        s_dst = dst;
                        s_src = src;
                        s_len = len;
                        s_flags = flags;
                        s_seq = seq;
                    }
                }
            }
            __syncwarp();
            if (inl && !fault) {
                if (lane >= HDR_WORDS) {
                    const u32 off = (lane - HDR_WORDS) * 4u;
                    if (off < len) {
                        unsigned char *d = reinterpret_cast<unsigned char *>(dst + off);
                        const u32 v = (u32) w, n = len - off < 4u ? len - off : 4u;
                        if (n == 4u && ((u64) d & 3u) == 0) {
                            *reinterpret_cast<u32 *>(d) = v;
                        } else {
                            for (u32 b = 0; b < n; b++) d[b] = (unsigned char) (v >> (8u * b));
                        }
                    }
                }
                __syncwarp();
                if (lane == 0) {
                    // one system fence behind the warp's stores, then the completion word (the fence orders it);
                    // done_seq after it, off the NIC's path: nothing later is mirrored before this loop goes on
                    __threadfence_system();
                    *reinterpret_cast<volatile u64 *>(done + slot) = seq;
                    atomicMax(done_seq, seq);
                }
                known = seq;
            }
        }
        __syncthreads();
        if (s_fault) return;
        if (s_inline) {
            __syncthreads(); // warp 0 writes the shared words for the next descriptor only after every thread read these
            continue;
        }
        const u64 dst = s_dst, src = s_src, len = s_len, seq_c = s_seq;
        const bool stop = (s_flags & F_STOP) != 0;
        __syncthreads(); // every thread has its copy of the shared words before warp 0 polls the next descriptor
        if (len > 0) copy_share(dst, src, len, nb);
        __syncthreads();
        if (threadIdx.x == 0) finish_share(counters, done_seq, done, cseq, seq_c, slots, nb);
        cseq++;
        if (stop) return;
    }
}
