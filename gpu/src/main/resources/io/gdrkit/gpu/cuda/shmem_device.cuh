/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
// gdrkit shmem device functions (IBGDA and IBRC), included by kernels.cu (nvcc) and by the CPU test double of
// libcuda (cli/src/test/c/fakecuda.c, cc), so the same code is exercised on a machine without a GPU. The Java twins
// are io.gdrkit.labs.shmem.GdaQueue (IBGDA) and ShmemDevice/ProxyRing (IBRC); the layouts are io.gdrkit.verbs.
// DirectQueue's (WQE, doorbell record, CQE) and ProxyRing's. Keep the three in step.
//
// Device state (struct shmem_state, in GPU memory; the host fills it, kernels read it and atomically update the
// reservation counters), every field u64:
//    0 mode (0 IBRC, 1 IBGDA)   8 my_pe   16 n_pes   24 heap (device address of this PE's heap)   32 lkey
//   40 proxy ring (device pointer of the host-mapped ring)   48 proxy depth   56 fence (1: fence before doorbell)
//   64 timeout_ns   72 error (first error: SHD_ERR_* | detail << 8)   80 stale (WQEs posted with the fence left out)
//   88 proxy tickets taken (IBRC; in GPU memory, so taking one is no atomic across PCIe)   96 the proxy's consumed
//      count as last read from the ring (+64 there; read again only when this copy says the ring is full)
//   per PE p at 128 + 128 p: +0 peer heap +8 rkey +16 sq ring +24 sq doorbell record +32 sq depth +40 sq stride
//       +48 inline offset +56 cq ring +64 cq counters +72 cq depth +80 fetch base +88 reserved (WQE counter)
//       +96 inline limit (a put of 1 to this many bytes carries its data in the WQE; 0: none does)
//       +104 doorbells rung (kernels' copy of the doorbell record, in GPU memory; the host writes 0)
//       +112 CQEs reaped (the CQ consumer, kept here; the host record at cq counters +64 follows it)
//       +120 the NIC's send-queue consumer as last read from the doorbell record (+64 there)
// IBRC request flag (in the request's sigop byte of a put): SHD_REQ_INLINE, the data (up to 16 bytes) in a and b.
#ifndef GDRKIT_SHMEM_DEVICE
#define GDRKIT_SHMEM_DEVICE

typedef unsigned long long u64;
typedef unsigned int u32;

#ifdef __CUDACC__
#define SHD __device__ __forceinline__
SHD u64 shd_ld_acq(const u64* p) { u64 v; asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }
SHD void shd_st_rel(u64* p, u64 v) { asm volatile("st.release.sys.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory"); }
// words in GPU memory that only GPU threads write (the queues' copies in the state block): GPU scope is enough, and a
// system-scope acquire or release costs more on the path of every operation
SHD u64 shd_ld_acq_gpu(const u64* p) { u64 v; asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }
SHD void shd_st_rel_gpu(u64* p, u64 v) { asm volatile("st.release.gpu.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory"); }
SHD void shd_fence_sys() { asm volatile("fence.sc.sys;" ::: "memory"); }
// orders this thread's earlier loads and stores before its later stores, for every observer (the NIC on the host): what
// a WQE needs before its doorbell, without the total order of an SC fence
SHD void shd_fence_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
SHD u64 shd_atomic_add(u64* p, u64 v) { return atomicAdd((unsigned long long*)p, (unsigned long long)v); }
SHD u64 shd_cas(u64* p, u64 cmp, u64 v) { return atomicCAS((unsigned long long*)p, cmp, v); }
SHD u64 shd_max(u64* p, u64 v) { return atomicMax((unsigned long long*)p, (unsigned long long)v); }
SHD u64 shd_now() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
SHD void shd_pause() { __nanosleep(32); }
// one 16-byte store: a WQE crosses PCIe as a few 16-byte writes instead of a dozen small ones
SHD void shd_st2(void* p, u64 a, u64 b) { asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" :: "l"(p), "l"(a), "l"(b) : "memory"); }
#else
#include <time.h>
#include <sched.h>
#define SHD static inline
SHD u64 shd_ld_acq(const u64* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
SHD void shd_st_rel(u64* p, u64 v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
SHD u64 shd_ld_acq_gpu(const u64* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
SHD void shd_st_rel_gpu(u64* p, u64 v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
SHD void shd_fence_sys() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
SHD void shd_fence_rel_sys() { __atomic_thread_fence(__ATOMIC_ACQ_REL); }
SHD u64 shd_atomic_add(u64* p, u64 v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); }
SHD u64 shd_cas(u64* p, u64 cmp, u64 v) { __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE); return cmp; }
SHD u64 shd_max(u64* p, u64 v) { u64 o = __atomic_load_n(p, __ATOMIC_ACQUIRE); while (o < v && !__atomic_compare_exchange_n(p, &o, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {} return o; }
SHD u64 shd_now() { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return (u64)ts.tv_sec * 1000000000ull + ts.tv_nsec; }
SHD void shd_pause() { sched_yield(); } /* the CPU playing the GPU shares cores with the NIC threads */
SHD void shd_st2(void* p, u64 a, u64 b) { ((volatile u64*)p)[0] = a; ((volatile u64*)p)[1] = b; }
#endif

#define SHD_ERR_TIMEOUT 1
#define SHD_ERR_CQE 2
#define SHD_ERR_PROXY 3
#define SHD_ERR_RANGE 4
#define SHD_ERR_PE 5

// verbs opcodes and flags (io.gdrkit.verbs.WrOpcode / SendFlags)
#define SHD_WRITE 0
#define SHD_READ 4
#define SHD_CAS 5
#define SHD_FADD 6
#define SHD_SIGNALED 2
#define SHD_INLINE 8
// request ops (io.gdrkit.labs.shmem.Op)
#define SHD_OP_PUT 1
#define SHD_OP_GET 2
#define SHD_OP_PUT_SIGNAL 3
#define SHD_OP_FETCH_ADD 4
#define SHD_OP_COMPARE_SWAP 5
#define SHD_REQ_INLINE 0x40
#define SHD_REQ_INLINE_MAX 16

#define ST(s, off) (((u64*)(s))[(off) / 8])
#define PE_(s, p, off) (((u64*)(s))[(128 + 128 * (u64)(p) + (off)) / 8])

SHD void shd_error(u64* s, u64 code, u64 detail) { shd_cas(&ST(s, 72), 0, code | detail << 8); }
SHD int shd_failed(u64* s) { return shd_ld_acq(&ST(s, 72)) != 0; }

// one bounded wait step: 0 while within the deadline; sets SHD_ERR_TIMEOUT and returns 1 after it
SHD int shd_spin(u64* s, u64 start, u64 what) {
    shd_pause();
    if (shd_now() - start > ST(s, 64)) { shd_error(s, SHD_ERR_TIMEOUT, what); return 1; }
    return shd_failed(s);
}

SHD int shd_check(u64* s, u64 off, u64 len, int pe) {
    if (pe < 0 || (u64)pe >= ST(s, 16)) { shd_error(s, SHD_ERR_PE, (u64)pe); return 1; }
    if (off < 65536 || len > (1ull << 30) || off + len < off) { shd_error(s, SHD_ERR_RANGE, off); return 1; }
    return 0;
}

// ---------------------------------------------------------------- IBGDA: WQE, fence, doorbell; CQ polling

// Reaps the CQEs up to producer pr (read by the caller) on PE p's queue (status check; the last one's is not read
// again when the caller checked it, last_checked) and frees their slots for the NIC. The consumer is kept in GPU
// memory (+112): only GPU threads consume an owned CQ, so the host's record is written, never read back (no PCIe
// round trip, no atomic on host memory); threads that publish out of order republish the newest value until the
// host's record holds it.
SHD void gda_reap_to(u64* s, int p, u64 pr, int last_checked) {
    u64* cqc = (u64*)PE_(s, p, 64);
    const unsigned char* cq = (const unsigned char*)PE_(s, p, 56);
    u64* reaped = &PE_(s, p, 112);
    u64 c = shd_ld_acq_gpu(reaped);
    for (u64 i = c; i + (last_checked ? 1 : 0) < pr; i++) {
        volatile const unsigned char* st = cq + (i & (PE_(s, p, 72) - 1)) * 32 + 24;
        if (*st != 0) shd_error(s, SHD_ERR_CQE, (u64)*st | (u64)p << 8);
    }
    if (pr > c && shd_max(reaped, pr) < pr) {
        u64 v = pr;
        for (;;) {
            *(volatile u64*)(cqc + 8) = v;
            u64 now = shd_ld_acq_gpu(reaped);
            if (now == v) break;
            v = now;
        }
    }
}

SHD void gda_reap(u64* s, int p) { gda_reap_to(s, p, shd_ld_acq((u64*)PE_(s, p, 64)), 0); }

// Copies a put's len bytes from device memory into the WQE's inline area (host memory): 8-byte stores where both
// sides allow, so that a small put is a few posted writes and the NIC never reads the GPU's memory for it.
SHD void gda_inline(unsigned char* to, const unsigned char* from, u32 len) {
    u32 i = 0;
    if ((((u64)to | (u64)from) & 7) == 0) {
        for (; i + 8 <= len; i += 8) *(volatile u64*)(to + i) = *(const volatile u64*)(from + i);
    }
    for (; i < len; i++) *(volatile unsigned char*)(to + i) = *(const volatile unsigned char*)(from + i);
}

// Posts one WQE to PE p's queue; returns its index (~0 on error). Steps: reserve, wait for a slot, write the WQE
// and its stamp, system-scope fence, wait for the doorbell to reach the index (in order), ring it. With
// SHD_INLINE the data is inl_src's len bytes, or (inl_src 0) the 8 bytes of inl.
SHD u64 gda_post(u64* s, int p, u32 opcode, u32 flags, u64 laddr, u32 len, u32 lkey, u64 raddr, u32 rkey,
                 u64 cmp_add, u64 swap, u64 inl, const unsigned char* inl_src) {
    u64 idx = shd_atomic_add(&PE_(s, p, 88), 1);
    u64* db = (u64*)PE_(s, p, 24);
    u64 depth = PE_(s, p, 32), cqd = PE_(s, p, 72), t0 = shd_now();
    // room: the send-queue consumer as last read (+120) and the CQ consumer (+112), both in GPU memory; the host's
    // doorbell record is read only when the copy says the queue is full
    u64* sq_seen = &PE_(s, p, 120);
    u64* reaped = &PE_(s, p, 112);
    while (idx - shd_ld_acq_gpu(sq_seen) >= depth || idx - shd_ld_acq_gpu(reaped) >= cqd) {
        shd_max(sq_seen, shd_ld_acq(db + 8));
        gda_reap(s, p);
        if (idx - shd_ld_acq_gpu(sq_seen) < depth && idx - shd_ld_acq_gpu(reaped) < cqd) break;
        if (shd_spin(s, t0, 1)) return ~0ull;
    }
    unsigned char* w = (unsigned char*)PE_(s, p, 16) + (idx & (depth - 1)) * PE_(s, p, 40);
    int atomic = opcode == SHD_CAS || opcode == SHD_FADD;
    if (atomic) { laddr = PE_(s, p, 80) + (idx & (depth - 1)) * 8; lkey = (u32)ST(s, 32); }
    // little-endian fields packed into 16-byte stores (the ring's slots are 64-byte aligned): +8 opcode, flags,
    // num_sge 1, imm 0; +24 rkey, length; +72 length, lkey; the stamp at +48 goes last, on its own
    shd_st2(w + 0, idx, (u64)(opcode & 0xff) | (u64)((flags | SHD_SIGNALED) & 0xff) << 8 | 1ull << 16);
    shd_st2(w + 16, raddr, (u64)rkey | (u64)len << 32);
    shd_st2(w + 32, cmp_add, swap);
    shd_st2(w + 64, laddr, (u64)len | (u64)lkey << 32);
    if (flags & SHD_INLINE) {
        if (inl_src) gda_inline(w + PE_(s, p, 48), inl_src, len);
        else *(volatile u64*)(w + PE_(s, p, 48)) = inl;
    }
    *(volatile u32*)(w + 48) = (u32)(idx + 1);
    if (ST(s, 56)) shd_fence_rel_sys(); else shd_atomic_add(&ST(s, 80), 1);
    // doorbells go in order: wait for the earlier posters' on the copy in GPU memory (the host's doorbell record
    // is a PCIe round trip away, and only GPU threads ring an owned queue), ring, then count it there
    u64* rung = &PE_(s, p, 104);
    while (shd_ld_acq_gpu(rung) != idx) {
        if (shd_spin(s, t0, 2)) return ~0ull;
    }
    // the doorbell the NIC polls: a plain store, the fence above (or, without it, nothing) orders the WQE before it;
    // the earlier posters' doorbells precede it through rung (release, acquire) and coherence of the one word
    *(volatile u64*)db = idx + 1;
    shd_st_rel_gpu(rung, idx + 1);
    return idx;
}

// Waits for WQE idx of PE p's queue to complete (CQEs of one queue arrive in order, CQE i for WQE i: the CQ is the
// queue's own). It polls the word at +24 of CQE idx, which the NIC stores last: its lap byte (+27) says the CQE is
// there and its status byte comes in the same read, where the producer counter and then the status would be two
// reads across PCIe. The CQEs before it are reaped as before. 0 when it completed.
SHD int gda_wait(u64* s, int p, u64 idx) {
    const u64 cqd = PE_(s, p, 72);
    const u64* w = (const u64*)((const unsigned char*)PE_(s, p, 56) + (idx & (cqd - 1)) * 32 + 24);
    const u64 lap = (idx / cqd) % 255 + 1;
    u64 t0 = shd_now(), v;
    for (u32 polls = 1; (((v = shd_ld_acq(w)) >> 24) & 0xff) != lap; polls++) {
        // another thread may have reaped CQE idx (its status checked there) and the NIC reused the slot since
        if ((polls & 7) == 0 && shd_ld_acq_gpu(&PE_(s, p, 112)) > idx) return shd_failed(s);
        if (shd_spin(s, t0, 3)) return 1;
    }
    if ((v & 0xff) != 0) shd_error(s, SHD_ERR_CQE, (v & 0xff) | (u64)p << 8);
    gda_reap_to(s, p, idx + 1, 1);
    return shd_failed(s);
}

// ---------------------------------------------------------------- IBRC: request ring, proxy counters

SHD u64 proxy_post(u64* s, u32 op, u32 sigop, int pe, u32 len, u64 dst, u64 src, u64 a, u64 b, u64 sig, u64 stamp) {
    unsigned char* ring = (unsigned char*)ST(s, 40);
    u64 depth = ST(s, 48);
    u64 t = shd_atomic_add(&ST(s, 88), 1), t0 = shd_now();
    while (t - shd_ld_acq_gpu(&ST(s, 96)) >= depth) {
        shd_max(&ST(s, 96), shd_ld_acq((u64*)(ring + 64)));
        if (t - shd_ld_acq_gpu(&ST(s, 96)) < depth) break;
        if (shd_spin(s, t0, 4)) return ~0ull;
    }
    unsigned char* r = ring + 256 + (t & (depth - 1)) * 64;
    if (op == SHD_OP_PUT && len > 0 && len <= SHD_REQ_INLINE_MAX) {
        // the data travels in a and b: the proxy posts it inline and the NIC never reads the GPU's memory for it
        u64 d[2] = {0, 0};
        const unsigned char* from = (const unsigned char*)(ST(s, 24) + src);
        for (u32 i = 0; i < len; i++) d[i / 8] |= (u64)from[i] << (8 * (i % 8));
        a = d[0];
        b = d[1];
        sigop = SHD_REQ_INLINE;
    }
    *(volatile unsigned char*)(r + 8) = (unsigned char)op;
    *(volatile unsigned char*)(r + 9) = (unsigned char)sigop;
    *(volatile unsigned short*)(r + 10) = (unsigned short)pe;
    *(volatile u32*)(r + 12) = len;
    *(volatile u64*)(r + 16) = dst;
    *(volatile u64*)(r + 24) = src;
    *(volatile u64*)(r + 32) = a;
    *(volatile u64*)(r + 40) = b;
    *(volatile u64*)(r + 48) = sig;
    *(volatile u64*)(r + 56) = stamp;
    shd_st_rel((u64*)r, t + 1);
    return t;
}

SHD int proxy_check(u64* s) {
    u64 e = shd_ld_acq((u64*)(ST(s, 40) + 192));
    if (e) shd_error(s, SHD_ERR_PROXY, e);
    return e != 0;
}

SHD int proxy_wait(u64* s, u64 t) {
    unsigned char* ring = (unsigned char*)ST(s, 40);
    u64* done = (u64*)(ring + 256 + 64 * ST(s, 48)) + (t & (ST(s, 48) - 1));
    u64 t0 = shd_now();
    // every request gets its done word, a refused or failed one too (the error word is written first), so the error
    // word is read once after it and only now and then before (a proxy that stopped): one PCIe read per poll
    for (u32 polls = 1; shd_ld_acq(done) < t + 1; polls++) {
        if ((polls & 63) == 0 && proxy_check(s)) return 1;
        if (shd_spin(s, t0, 5)) return 1;
    }
    return proxy_check(s);
}

// ---------------------------------------------------------------- the device API (one thread)

// A ticket: IBGDA (WQE index << 6 | pe), IBRC the proxy ticket. ~0 on error (the state's error word says which).
SHD u64 shmem_issue(u64* s, u32 op, int pe, u64 dst, u64 src, u32 len, u64 a, u64 b, u64 sig, u32 sigop) {
    if (shd_check(s, op == SHD_OP_GET ? src : dst, len, pe)) return ~0ull;
    if (op == SHD_OP_PUT_SIGNAL && shd_check(s, sig, 8, pe)) return ~0ull;
    if (ST(s, 0) == 0) return proxy_post(s, op, sigop, pe, len, dst, src, a, b, sig, shd_now());
    u64 heap = ST(s, 24), remote = PE_(s, pe, 0);
    u32 lkey = (u32)ST(s, 32), rkey = (u32)PE_(s, pe, 8);
    u64 idx;
    // a put of up to the inline limit carries its data in the WQE (mlx5's inline send, NVSHMEM's inline puts)
    const u32 inl = len > 0 && len <= PE_(s, pe, 96) ? SHD_INLINE : 0;
    const unsigned char* from = inl ? (const unsigned char*)(heap + src) : 0;
    switch (op) {
    case SHD_OP_GET: idx = gda_post(s, pe, SHD_READ, 0, heap + dst, len, lkey, remote + src, rkey, 0, 0, 0, 0); break;
    case SHD_OP_FETCH_ADD: idx = gda_post(s, pe, SHD_FADD, 0, 0, 8, lkey, remote + dst, rkey, a, 0, 0, 0); break;
    case SHD_OP_COMPARE_SWAP: idx = gda_post(s, pe, SHD_CAS, 0, 0, 8, lkey, remote + dst, rkey, a, b, 0, 0); break;
    case SHD_OP_PUT_SIGNAL:
        if (gda_post(s, pe, SHD_WRITE, inl, heap + src, len, lkey, remote + dst, rkey, 0, 0, 0, from) == ~0ull) return ~0ull;
        idx = sigop == 0 ? gda_post(s, pe, SHD_WRITE, SHD_INLINE, 0, 8, 0, remote + sig, rkey, 0, 0, a, 0)
                         : gda_post(s, pe, SHD_FADD, 0, 0, 8, lkey, remote + sig, rkey, a, 0, 0, 0);
        break;
    default: idx = gda_post(s, pe, SHD_WRITE, inl, heap + src, len, lkey, remote + dst, rkey, 0, 0, 0, from);
    }
    return idx == ~0ull ? ~0ull : idx << 6 | (u64)pe;
}

SHD int shmem_wait(u64* s, u64 ticket) {
    if (ticket == ~0ull) return 1;
    return ST(s, 0) == 0 ? proxy_wait(s, ticket) : gda_wait(s, (int)(ticket & 63), ticket >> 6);
}

SHD int shmem_quiet(u64* s) {
    if (ST(s, 0) == 0) {
        unsigned char* ring = (unsigned char*)ST(s, 40);
        u64 upto = shd_ld_acq_gpu(&ST(s, 88)), t0 = shd_now();
        while (shd_ld_acq((u64*)(ring + 128)) < upto) {
            if (proxy_check(s) || shd_spin(s, t0, 6)) return 1;
        }
        return proxy_check(s);
    }
    for (u64 p = 0; p < ST(s, 16); p++) {
        u64 r = shd_ld_acq_gpu(&PE_(s, p, 88));
        if (r && gda_wait(s, (int)p, r - 1)) return 1;
    }
    return 0;
}

// Fetched value of an atomic ticket (after shmem_wait): its fetch slot in the local heap.
SHD u64 shmem_fetched(u64* s, u64 ticket) {
    u64 off = ST(s, 0) == 0 ? (ticket & 4095) * 8
                            : PE_(s, ticket & 63, 80) - ST(s, 24) + ((ticket >> 6) & (PE_(s, ticket & 63, 32) - 1)) * 8;
    return shd_ld_acq((const u64*)(ST(s, 24) + off));
}

// Polls the local heap word at off until it is >= value (NVSHMEM_CMP_GE); 0 when it is.
SHD int shmem_wait_ge(u64* s, u64 off, u64 value) {
    const u64* w = (const u64*)(ST(s, 24) + off);
    u64 t0 = shd_now();
    while ((long long)shd_ld_acq(w) < (long long)value) {
        if (shd_spin(s, t0, 7)) return 1;
    }
    return 0;
}

// ---------------------------------------------------------------- MoE dispatch / combine (io.gdrkit.labs.shmem.MoeRun)

// The router of MoeRun.route: splitmix-style mixing of (seed, pe, token), modulo the number of PEs.
SHD u32 moe_route(u64 seed, u64 pe, u64 token, u64 n) {
    u64 z = seed * 0x9E3779B97F4A7C15ull + pe * 0xBF58476D1CE4E5B9ull + token * 0x94D049BB133111EBull;
    z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
    return (u32)((z ^ (z >> 29)) % n);
}

// One thread of PE me: dispatch every token to its expert (put-with-signal ADD 1 on the expert's recv_sig[me]),
// act as expert for what arrives (wait for each source's count, add me + 1 to every byte, put the result home with
// ADD 1 on the source's done_sig), then wait until all of its own tokens are back. 0 on success.
SHD int shmem_moe_body(u64* s, u64 seed, u32 tokens, u32 bytes, u64 in, u64 recv, u64 out, u64 recv_sig,
                       u64 done_sig) {
    u64 me = ST(s, 8), n = ST(s, 16);
    for (u32 t = 0; t < tokens; t++) {
        u32 e = moe_route(seed, me, t, n);
        if (shmem_issue(s, SHD_OP_PUT_SIGNAL, (int)e, recv + (me * tokens + t) * bytes, in + (u64)t * bytes, bytes,
                        1, 0, recv_sig + 8 * me, 1) == ~0ull) return 1;
    }
    for (u64 src = 0; src < n; src++) {
        u64 expected = 0;
        for (u32 t = 0; t < tokens; t++) expected += moe_route(seed, src, t, n) == me;
        if (shmem_wait_ge(s, recv_sig + 8 * src, expected)) return 1;
        for (u32 t = 0; t < tokens; t++) {
            if (moe_route(seed, src, t, n) != me) continue;
            u64 slot = recv + (src * tokens + t) * bytes;
            volatile unsigned char* b = (volatile unsigned char*)(ST(s, 24) + slot);
            for (u32 i = 0; i < bytes; i++) b[i] = (unsigned char)(b[i] + me + 1);
            shd_fence_sys(); // the NIC reads the result from GPU memory: make the stores visible first
            if (shmem_issue(s, SHD_OP_PUT_SIGNAL, (int)src, out + (u64)t * bytes, slot, bytes, 1, 0, done_sig, 1)
                == ~0ull) return 1;
        }
    }
    if (shmem_wait_ge(s, done_sig, tokens)) return 1;
    return shmem_quiet(s);
}

#endif
