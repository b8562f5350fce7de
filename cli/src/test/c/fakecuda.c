/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/*
 * A test double of libcuda.so.1 for CudaFakeDriverTest: the driver API entry points gdrkit binds, implemented on
 * host memory, so that the FFM signatures, parameter marshalling (cuLaunchKernel's void** params) and error-name
 * mapping are exercised on a machine without a GPU. It is NOT a GPU: its device name says "fake".
 * fill_pattern and verify_pattern are computed on the host with the same pattern as kernels.cu.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <fcntl.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>

/*
 * FAKECUDA_DEFER=1 models the copy engine's asynchrony for the NIC staging test: cuMemcpyHtoDAsync only queues
 * the copy and reads its source when the queue runs (a DMA reads pinned memory after the call returns), and the
 * queue runs only at a synchronisation point: a stream or event synchronize, a successful event query, or any
 * other copy. An event query answers CUDA_ERROR_NOT_READY once after each record, so the non-blocking path is
 * taken too. One queue for all streams: it is in order, as one stream is.
 */
struct pending { unsigned long long d; const void *s; size_t n; int pinned; };
static int registered(const void *s, size_t n); /* host registration, below */
static long long hazards[2];
/* a queued stream write of a 64-bit value (cuStreamWriteValue64): s is this marker, d the address, n the value */
static const char write_value_marker;
static struct pending *queue;
static size_t queued, queue_cap;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static void run_legacy(void); /* FAKECUDA_LEGACY_ASYNC, below */
static int defer_mode = -1;
static int deferring(void) {
    if (defer_mode < 0) { const char *e = getenv("FAKECUDA_DEFER"); defer_mode = e && e[0] == '1'; }
    return defer_mode;
}
static void run_queue(void) {
    pthread_mutex_lock(&queue_lock);
    for (size_t i = 0; i < queued; i++) {
        if (queue[i].s == &write_value_marker) __atomic_store_n((unsigned long long *)queue[i].d, (unsigned long long)queue[i].n, __ATOMIC_RELEASE);
        else {
            /* a DMA from registered memory that was unregistered while the copy waited: the hazard a pin prevents */
            if (queue[i].pinned && !registered(queue[i].s, queue[i].n)) __atomic_add_fetch(&hazards[1], 1, __ATOMIC_ACQ_REL);
            memcpy((void *)queue[i].d, queue[i].s, queue[i].n);
        }
    }
    queued = 0;
    pthread_mutex_unlock(&queue_lock);
}
static int enqueue(unsigned long long d, const void *s, size_t n) {
    pthread_mutex_lock(&queue_lock);
    if (queued == queue_cap) {
        queue_cap = queue_cap ? queue_cap * 2 : 64;
        queue = realloc(queue, queue_cap * sizeof *queue);
        if (!queue) { pthread_mutex_unlock(&queue_lock); return 2; }
    }
    queue[queued].d = d; queue[queued].s = s; queue[queued].n = n;
    queue[queued].pinned = s != &write_value_marker && registered(s, n);
    queued++;
    pthread_mutex_unlock(&queue_lock);
    return 0;
}

/*
 * FAKECUDA_LAZY=1 models CUDA's lazy loading hazard (programming guide, "Lazy Loading", concurrent execution):
 * loading a module or a kernel may synchronize the context, so cuModuleLoadData and cuModuleGetFunction wait here
 * until no kernel runs. Code that loads one PE's kernel while another PE's kernel spins waiting for it then hangs
 * until the spinning kernel's own timeout, as the ping-pong did on the H200.
 */
static volatile int running_kernels;
static int lazy_mode = -1;
static void lazy_load_waits(void) {
    if (lazy_mode < 0) { const char *e = getenv("FAKECUDA_LAZY"); lazy_mode = e && e[0] == '1'; }
    while (lazy_mode && __atomic_load_n(&running_kernels, __ATOMIC_ACQUIRE) > 0) sched_yield();
}

/*
 * FAKECUDA_SERIALIZE=1 models the calls CUDA lists as serializing with running work (allocating and freeing device
 * and page-locked memory, registering host memory): each waits until no delivery agent runs, as a real free waits for
 * a persistent kernel of its context. Bounded here (3 s), then CUDA_ERROR_UNKNOWN (999), so a test sees a named
 * failure where a GPU would hang.
 */
static volatile int running_agents;
static int serialize_mode = -1;
static int serialize_waits(void) {
    if (serialize_mode < 0) { const char *e = getenv("FAKECUDA_SERIALIZE"); serialize_mode = e && e[0] == '1'; }
    if (!serialize_mode) return 0;
    for (int i = 0; i < 3000 && __atomic_load_n(&running_agents, __ATOMIC_ACQUIRE) > 0; i++) usleep(1000);
    return __atomic_load_n(&running_agents, __ATOMIC_ACQUIRE) > 0 ? 999 : 0;
}

/* the shmem device functions of kernels.cu, compiled for the CPU (see shmem_device.cuh) */
#include "../../../../gpu/src/main/resources/io/gdrkit/gpu/cuda/shmem_device.cuh"

typedef int CUresult;
static int inited;
static int sync_memops;
static int last_flush_target = -1, last_flush_scope = -1;

static unsigned char pattern_at(unsigned long long i, unsigned int round, unsigned int seed) {
    unsigned int m = (unsigned int)i * 2654435761u + seed;
    m ^= m >> 16;
    return (unsigned char)((m >> 8) + round * 157u);
}

CUresult cuInit(unsigned int flags) { if (flags != 0) return 1; inited = 1; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { if (!inited) return 3; *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) { if (ordinal != 0) return 101; *d = 0; return 0; }
CUresult cuDeviceGetName(char *name, int len, int dev) { snprintf(name, len, "gdrkit fake CUDA device (test double, not a GPU)"); return dev == 0 ? 0 : 101; }
CUresult cuDeviceGetAttribute(int *pi, int attr, int dev) {
    if (dev != 0) return 101;
    switch (attr) {
        case 116: *pi = 1; return 0;
        case 117: *pi = 1; return 0;
        case 118: *pi = 100; return 0;
        case 124: *pi = 1; return 0;
        case 75: *pi = 9; return 0;
        case 76: *pi = 0; return 0;
        case 133: { /* MPS_ENABLED: FAKECUDA_MPS=1 says MPS is on; =unknown plays a driver that predates it */
            const char *e = getenv("FAKECUDA_MPS");
            if (e && strcmp(e, "unknown") == 0) return 1; /* CUDA_ERROR_INVALID_VALUE, as an older driver */
            *pi = e && e[0] == '1' ? 1 : 0;
            return 0;
        }
        default: return 1;
    }
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) { *bytes = 1ull << 30; return dev == 0 ? 0 : 101; }
CUresult cuDeviceGetPCIBusId(char *id, int len, int dev) { snprintf(id, len, "0000:fa:ce:0"); return 0; }
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { *ctx = (void *)0xC0FFEE; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx == (void *)0xC0FFEE ? 0 : 201; }
CUresult cuCtxSynchronize(void) { run_legacy(); run_queue(); return 0; }
CUresult cuCtxEnablePeerAccess(void *peer, unsigned int flags) { return 101; /* one device: no peer */ }
CUresult cuDeviceCanAccessPeer(int *can, int dev, int peer) { *can = 0; return dev == 0 && peer == 0 ? 0 : 101; }
/*
 * FAKECUDA_ALLOC_ARENA=1: device memory comes from one arena, each allocation right after the one before (as the
 * H200's driver placed two 2 MiB buffers next to each other), and a copy to or from device memory must lie inside
 * one allocation: one that runs from an allocation into its neighbour fails with CUDA_ERROR_INVALID_VALUE (1), as
 * the real driver's does. Freed arena memory is not reused.
 */
#define ARENA_BYTES (64u << 20)
#define ARENA_ALLOCS 1024
static unsigned char *arena;
static size_t arena_used;
static unsigned long long alloc_base[ARENA_ALLOCS];
static size_t alloc_size[ARENA_ALLOCS];
static int arena_mode = -1;
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static int arena_on(void) {
    if (arena_mode < 0) { const char *e = getenv("FAKECUDA_ALLOC_ARENA"); arena_mode = e && e[0] == '1'; }
    return arena_mode;
}
/* 1 when [d, d + n) is not arena memory, or lies inside one live allocation of it */
static int in_one_alloc(unsigned long long d, size_t n) {
    if (!arena_on() || !arena || n == 0) return 1;
    unsigned long long lo = (unsigned long long)arena, hi = lo + ARENA_BYTES;
    if (d + n <= lo || d >= hi) return 1;
    int ok = 0;
    pthread_mutex_lock(&arena_lock);
    for (int i = 0; i < ARENA_ALLOCS && !ok; i++) {
        ok = alloc_size[i] && d >= alloc_base[i] && d + n <= alloc_base[i] + alloc_size[i];
    }
    pthread_mutex_unlock(&arena_lock);
    return ok;
}
/* FAKECUDA_DIRTY_ALLOC=1: new device memory holds 0xff bytes, as memory that was freed and allocated again may hold
   anything (cuMemAlloc does not clear) */
CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) {
    if (serialize_waits()) return 999;
    size_t size = (n + 4095) / 4096 * 4096;
    void *m;
    if (arena_on()) {
        pthread_mutex_lock(&arena_lock);
        if (!arena) arena = aligned_alloc(4096, ARENA_BYTES);
        int slot = -1;
        for (int i = 0; i < ARENA_ALLOCS && slot < 0; i++) if (!alloc_size[i]) slot = i;
        if (!arena || slot < 0 || size > ARENA_BYTES - arena_used) { pthread_mutex_unlock(&arena_lock); return 2; }
        m = arena + arena_used;
        arena_used += size;
        alloc_base[slot] = (unsigned long long)m;
        alloc_size[slot] = size;
        pthread_mutex_unlock(&arena_lock);
    } else {
        m = aligned_alloc(4096, size);
        if (!m) return 2;
    }
    const char *dirty = getenv("FAKECUDA_DIRTY_ALLOC");
    if (dirty && dirty[0] == '1') memset(m, 0xff, size);
    *p = (unsigned long long)m;
    return 0;
}
CUresult cuMemFree_v2(unsigned long long p) {
    if (serialize_waits()) return 999;
    if (arena_on() && arena && p >= (unsigned long long)arena && p < (unsigned long long)arena + ARENA_BYTES) {
        pthread_mutex_lock(&arena_lock);
        for (int i = 0; i < ARENA_ALLOCS; i++) if (alloc_size[i] && alloc_base[i] == p) alloc_size[i] = 0;
        pthread_mutex_unlock(&arena_lock);
        return 0;
    }
    free((void *)p);
    return 0;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags) {
    if (flags & ~7u) return 1;
    *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096); return *p ? 0 : 2;
}
CUresult cuMemAllocHost_v2(void **p, size_t n) { if (serialize_waits()) return 999; *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096); return *p ? 0 : 2; }
CUresult cuMemFreeHost(void *p) { if (serialize_waits()) return 999; free(p); return 0; }
CUresult cuMemHostGetDevicePointer_v2(unsigned long long *d, void *p, unsigned int flags) { *d = (unsigned long long)p; return flags ? 1 : 0; }
/*
 * FAKECUDA_LEGACY_ASYNC=1 models what CUDA documents for the "synchronous" copies on the legacy NULL stream: a
 * device-to-device cuMemcpyDtoD returns before the copy has run, and so may a host-to-device copy from pageable
 * memory (its source is staged at the call). Such a copy lands only when the legacy stream is synchronized or
 * queried, when a later synchronous copy or a kernel or copy on a blocking stream (which the legacy stream orders)
 * runs; work on a non-blocking stream (the NIC's) does not wait for it. The H200 showed it: the NIC read a
 * collective's output before the device-to-device copy of its input had landed there.
 */
struct legacy_op { unsigned long long d; const void *s; void *owned; size_t n; };
static struct legacy_op *lqueue;
static size_t lqueued, lqueue_cap;
static int legacy_mode = -1;
static int legacy_async(void) {
    if (legacy_mode < 0) { const char *e = getenv("FAKECUDA_LEGACY_ASYNC"); legacy_mode = e && e[0] == '1'; }
    return legacy_mode;
}
static void run_legacy(void) {
    pthread_mutex_lock(&queue_lock);
    for (size_t i = 0; i < lqueued; i++) {
        memmove((void *)lqueue[i].d, lqueue[i].s, lqueue[i].n);
        free(lqueue[i].owned);
    }
    lqueued = 0;
    pthread_mutex_unlock(&queue_lock);
}
static int legacy_enqueue(unsigned long long d, const void *s, size_t n, int snapshot) {
    void *owned = NULL;
    if (snapshot) { owned = malloc(n ? n : 1); if (!owned) return 2; memcpy(owned, s, n); s = owned; }
    pthread_mutex_lock(&queue_lock);
    if (lqueued == lqueue_cap) {
        lqueue_cap = lqueue_cap ? lqueue_cap * 2 : 64;
        lqueue = realloc(lqueue, lqueue_cap * sizeof *lqueue);
        if (!lqueue) { pthread_mutex_unlock(&queue_lock); free(owned); return 2; }
    }
    lqueue[lqueued].d = d; lqueue[lqueued].s = s; lqueue[lqueued].owned = owned; lqueue[lqueued].n = n; lqueued++;
    pthread_mutex_unlock(&queue_lock);
    return 0;
}
/* a stream handle holds its creation flags; NULL is the legacy stream, which the blocking streams are ordered with */
static int orders_with_legacy(void *st) { return st == NULL || (*(unsigned int *)st & 1) == 0; }

CUresult cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n) {
    if (!in_one_alloc(d, n)) return 1;
    run_queue();
    if (legacy_async()) return legacy_enqueue(d, s, n, 1);
    memcpy((void *)d, s, n);
    return 0;
}
/* FAKECUDA_DTOH_LOG=path appends the size of each device-to-host copy, one per line: a test sees which reads of GPU
 * memory happened (a put whose data travels inline must cause none of its size). */
static void log_dtoh(size_t n) {
    const char *path = getenv("FAKECUDA_DTOH_LOG");
    if (!path || !path[0]) return;
    char line[32];
    int k = snprintf(line, sizeof line, "%zu\n", n);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) { if (write(fd, line, (size_t)k) < 0) { /* a test log: nothing to do */ } close(fd); }
}
CUresult cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n) { if (!in_one_alloc(s, n)) return 1; log_dtoh(n); run_legacy(); run_queue(); memcpy(d, (void *)s, n); return 0; }
CUresult cuMemcpyDtoD_v2(unsigned long long d, unsigned long long s, size_t n) {
    if (!in_one_alloc(d, n) || !in_one_alloc(s, n)) return 1;
    run_queue();
    if (legacy_async()) return legacy_enqueue(d, (const void *)s, n, 0);
    memmove((void *)d, (void *)s, n);
    return 0;
}
CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void *s, size_t n, void *st) {
    if (!in_one_alloc(d, n)) return 1;
    if (orders_with_legacy(st)) run_legacy();
    if (deferring()) return enqueue(d, s, n);
    run_queue(); memcpy((void *)d, s, n); return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *d, unsigned long long s, size_t n, void *st) {
    if (!in_one_alloc(s, n)) return 1;
    log_dtoh(n);
    if (orders_with_legacy(st)) run_legacy();
    run_queue(); memcpy(d, (void *)s, n); return 0;
}
CUresult cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long s, size_t n, void *st) {
    if (!in_one_alloc(d, n) || !in_one_alloc(s, n)) return 1;
    if (orders_with_legacy(st)) run_legacy();
    run_queue(); memmove((void *)d, (void *)s, n); return 0;
}
/* a stream handle: its creation flags, then what runs on it: 0 nothing, -1 the agent kernel, > 0 the error it
   ended with (sticky, as a failed kernel's stream reports it) */
CUresult cuStreamCreate(void **s, unsigned int flags) { *s = calloc(2, 4); if (!*s) return 2; *(unsigned int *)*s = flags; return 0; }
static int stream_state(void *s) { return s ? __atomic_load_n((int *)s + 1, __ATOMIC_ACQUIRE) : 0; }
CUresult cuStreamQuery(void *s) {
    int st = stream_state(s);
    if (st < 0) return 600; /* NOT_READY: a kernel runs */
    if (st > 0) return st;
    if (orders_with_legacy(s)) run_legacy();
    run_queue();
    return 0;
}
CUresult cuStreamSynchronize(void *s) {
    while (stream_state(s) < 0) sched_yield();
    if (stream_state(s) > 0) return stream_state(s);
    if (orders_with_legacy(s)) run_legacy();
    run_queue();
    return 0;
}
/* stream memory operations: a write lands in stream order (queued behind deferred copies); a wait is made at the
   call, which orders everything after it behind the value (stricter than a real stream, never looser) */
CUresult cuStreamWriteValue64_v2(void *st, unsigned long long addr, unsigned long long value, unsigned int flags) {
    if (flags != 0) return 1;
    if (deferring()) return enqueue(addr, &write_value_marker, (size_t)value);
    run_queue();
    __atomic_store_n((unsigned long long *)addr, value, __ATOMIC_RELEASE);
    return 0;
}
CUresult cuStreamWaitValue64_v2(void *st, unsigned long long addr, unsigned long long value, unsigned int flags) {
    if (flags != 0) return 1; /* GEQ only */
    for (long i = 0; __atomic_load_n((unsigned long long *)addr, __ATOMIC_ACQUIRE) < value; i++) {
        if (i > 20000000) return 999; /* CUDA_ERROR_UNKNOWN rather than a hang */
        sched_yield();
    }
    return 0;
}
CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
static long long fake_clock;
/* an event: its fake timestamp, then whether it was queried since its record (FAKECUDA_DEFER) */
CUresult cuEventCreate(void **e, unsigned int flags) { *e = calloc(2, 8); return 0; }
CUresult cuEventRecord(void *e, void *s) { ((long long *)e)[0] = (fake_clock += 1000000); ((long long *)e)[1] = 0; return 0; }
/* fakecuda_hold_events(1): every event query answers NOT_READY (the copy engine is slow) until (0); for the test that
   a completion waits for the copy's event, not merely for a query */
static volatile int events_held;
void fakecuda_hold_events(int on) { events_held = on; }
CUresult cuEventQuery(void *e) {
    if (events_held) return 600; /* NOT_READY */
    if (deferring() && !((long long *)e)[1]) { ((long long *)e)[1] = 1; return 600; /* NOT_READY */ }
    run_queue();
    return 0;
}
CUresult cuEventSynchronize(void *e) { run_queue(); return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { *ms = (float)((*(long long *)b - *(long long *)a) / 1e6); return 0; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
#define P64(i) (*(u64 *)params[i])
#define P32(i) (*(u32 *)params[i])
/* The shmem kernels of kernels.cu, one CPU thread playing every GPU thread in turn, over the same device functions. */
static CUresult fake_shmem(void *f, unsigned gx, unsigned bx, void **params) {
    if (f == (void *)5) { /* shmem_lat(s, op, pe, dst, src, len, iters, times) */
        u64 *s = (u64 *)P64(0), *times = (u64 *)P64(7), last = 0;
        u32 op = P32(1), iters = P32(6);
        for (u32 i = 0; i < iters; i++) {
            u64 t0 = shd_now(), t = shmem_issue(s, op, (int)P32(2), P64(3), P64(4), P32(5), 1, 0, 0, 0);
            if (shmem_wait(s, t)) return 0;
            if (op == SHD_OP_FETCH_ADD) last = shmem_fetched(s, t);
            times[2 * i] = t0;
            times[2 * i + 1] = shd_now();
        }
        times[2 * iters] = last;
    } else if (f == (void *)6) { /* shmem_pingpong(s, peer, dst, src, len, sig, iters, initiator, base, times) */
        u64 *s = (u64 *)P64(0), *times = (u64 *)P64(9), sig = P64(5), base = P64(8);
        for (u32 i = 0; i < P32(6); i++) {
            if (P32(7)) {
                u64 t0 = shd_now();
                if (shmem_wait(s, shmem_issue(s, SHD_OP_PUT_SIGNAL, (int)P32(1), P64(2), P64(3), P32(4), 1, 0, sig, 1))) return 0;
                if (shmem_wait_ge(s, sig, base + i + 1)) return 0;
                times[2 * i] = t0;
                times[2 * i + 1] = shd_now();
            } else {
                if (shmem_wait_ge(s, sig, base + i + 1)) return 0;
                times[2 * i] = times[2 * i + 1] = shd_now();
                if (shmem_wait(s, shmem_issue(s, SHD_OP_PUT_SIGNAL, (int)P32(1), P64(2), P64(3), P32(4), 1, 0, sig, 1))) return 0;
            }
        }
    } else if (f == (void *)7) { /* shmem_put_bw(s, pe, dst, src, len, per, variant, times): thread variant only */
        u64 *s = (u64 *)P64(0), *times = (u64 *)P64(7), len = P32(4);
        for (unsigned b = 0; b < gx; b++) {
            u64 t0 = shd_now();
            for (u32 i = 0; i < P32(5); i++) {
                for (unsigned t = 0; t < bx; t++) {
                    u64 g = (u64)b * bx + t;
                    shmem_issue(s, SHD_OP_PUT, (int)P32(1), P64(2) + g * len, P64(3) + g * len, (u32)len, 0, 0, 0, 0);
                }
            }
            shmem_quiet(s);
            times[b] = shd_now() - t0;
        }
    } else if (f == (void *)8) { /* shmem_ring_rtt(ring, answer, iters, timeout, times) */
        u64 *ring = (u64 *)P64(0), *answer = (u64 *)P64(1), *times = (u64 *)P64(4);
        for (u32 i = 0; i < P32(2); i++) {
            u64 t0 = shd_now();
            shd_st_rel(ring, i + 1);
            while (shd_ld_acq(answer) != i + 1) if (shd_now() - t0 > P64(3)) return 0;
            times[i] = shd_now() - t0;
        }
    } else { /* shmem_clock_sync(req, reply, rounds, timeout) */
        u64 *req = (u64 *)P64(0), *reply = (u64 *)P64(1);
        u32 rounds = P32(2);
        for (u32 i = 0; i < rounds; i++) {
            u64 t0 = shd_now();
            while (shd_ld_acq(req) != i + 1) if (shd_now() - t0 > P64(3)) return 0;
            reply[i] = shd_now();
            shd_st_rel(reply + rounds, i + 1);
        }
    }
    return 0;
}

/*
 * Host memory registration, tracked by range: registering a range that overlaps a registered one fails with
 * CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED (712), unregistering an address that starts none with
 * CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED (713), as the driver's do. FAKECUDA_HOSTREGISTER=refuse refuses every range
 * of 64 KiB or more with CUDA_ERROR_NOT_SUPPORTED (801), as a host without the memlock to pin it would: small
 * registrations (the rings mapHost pins) still succeed. The hazard a pin guards against is counted: unregistering a
 * range while a deferred copy still reads it (fakecuda_hazards(0)), and a deferred copy that, when it finally runs,
 * reads host memory registered at the call but unregistered since (fakecuda_hazards(1)): either is a DMA from memory
 * that is no longer pinned, which a real GPU would read after the application freed or reused it.
 * fakecuda_registered(0) is the number of live registrations, (1) registrations made so far.
 */
#define REGS 256
static unsigned long long reg_base[REGS], reg_len[REGS];
static long long reg_made;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
long long fakecuda_hazards(int which) { return which >= 0 && which < 2 ? __atomic_load_n(&hazards[which], __ATOMIC_ACQUIRE) : -1; }
long long fakecuda_registered(int which) {
    long long n = 0;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < REGS; i++) n += reg_len[i] != 0;
    pthread_mutex_unlock(&reg_lock);
    return which == 0 ? n : which == 1 ? reg_made : -1;
}
/* 1 when [s, s + n) lies in a live registration */
static int registered(const void *s, size_t n) {
    unsigned long long a = (unsigned long long)s;
    int found = 0;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < REGS && !found; i++) found = reg_len[i] && a >= reg_base[i] && a + n <= reg_base[i] + reg_len[i];
    pthread_mutex_unlock(&reg_lock);
    return found;
}
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags) {
    if (serialize_waits()) return 999;
    if (!p || !n || !(flags & 2)) return 1;
    const char *refuse = getenv("FAKECUDA_HOSTREGISTER");
    if (refuse && !strcmp(refuse, "refuse") && n >= 65536) return 801;
    unsigned long long a = (unsigned long long)p;
    pthread_mutex_lock(&reg_lock);
    int slot = -1;
    for (int i = 0; i < REGS; i++) {
        if (reg_len[i] && a < reg_base[i] + reg_len[i] && reg_base[i] < a + n) { pthread_mutex_unlock(&reg_lock); return 712; }
        if (!reg_len[i] && slot < 0) slot = i;
    }
    if (slot < 0) { pthread_mutex_unlock(&reg_lock); return 2; }
    reg_base[slot] = a; reg_len[slot] = n; reg_made++;
    pthread_mutex_unlock(&reg_lock);
    return 0;
}
CUresult cuMemHostUnregister(void *p) {
    if (serialize_waits()) return 999;
    unsigned long long a = (unsigned long long)p, len = 0;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < REGS && !len; i++) if (reg_len[i] && reg_base[i] == a) { len = reg_len[i]; reg_len[i] = 0; }
    pthread_mutex_unlock(&reg_lock);
    if (!len) return 713;
    pthread_mutex_lock(&queue_lock);
    for (size_t i = 0; i < queued; i++) {
        unsigned long long s = (unsigned long long)queue[i].s;
        if (queue[i].s != &write_value_marker && s < a + len && a < s + queue[i].n) __atomic_add_fetch(&hazards[0], 1, __ATOMIC_ACQ_REL);
    }
    pthread_mutex_unlock(&queue_lock);
    return 0;
}

/*
 * The delivery agent (agent.cu's nic_agent) played by a host thread over the same ring layout (AgentRing): it takes
 * descriptors in order, checks them as the kernel does, copies, and writes the slot's completion word. One thread
 * copies in ring order, so a FENCE is met by construction; counters of what it saw are read by the tests through
 * fakecuda_agent_count. FAKECUDA_AGENT picks a misbehaviour at the first data descriptor: stall (takes it and never
 * completes it), fault (writes the fault word and ends), corrupt (writes a completion word of another slot and
 * goes on), die (ends with CUDA_ERROR_ILLEGAL_ADDRESS, 700, and no fault word). FAKECUDA_AGENT_DELAY_US=N sleeps
 * before each copy, so a completion raised before the agent's shows up as a mismatch.
 */
struct agent_args { unsigned long long ring, state, first; unsigned int slots; int *stream_state; };
static long long agent_counts[8]; /* 0 descriptors, 1 FENCE, 2 WAIT_CE, 3 STOP, 4 launches, 5 bytes, 6 threads, 7 INLINE */
long long fakecuda_agent_count(int which) { return which >= 0 && which < 8 ? __atomic_load_n(&agent_counts[which], __ATOMIC_ACQUIRE) : -1; }
static void agent_end(struct agent_args *a, int state) {
    __atomic_sub_fetch(&running_agents, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(a->stream_state, state, __ATOMIC_RELEASE);
    free(a);
}
static void *fake_agent(void *arg) {
    struct agent_args *a = arg;
    unsigned long long *hdr = (unsigned long long *)a->ring, *done = hdr + 8, *descs = done + a->slots;
    const char *mode = getenv("FAKECUDA_AGENT");
    mode = mode ? mode : "";
    const char *delay = getenv("FAKECUDA_AGENT_DELAY_US"); /* a slow agent: completions must wait for it */
    long delay_us = delay ? atol(delay) : 0;
    unsigned long polls = 0;
    for (unsigned long long seq = a->first;; seq++) {
        unsigned int slot = (unsigned int)((seq - 1) & (a->slots - 1));
        unsigned long long *d = descs + 32 * slot, w[32];
        unsigned int tag = (unsigned int)seq, before = (unsigned int)(seq - a->slots), len, flags;
        /* a descriptor is 32 words of (value | tag << 32); it is there when every word needed bears seq's tag */
        for (;;) {
            int ready = 1, bad = 0;
            for (int i = 0; i < 32; i++) w[i] = __atomic_load_n(&d[i], __ATOMIC_ACQUIRE);
            for (int i = 0; i < 8; i++) {
                unsigned int t = (unsigned int)(w[i] >> 32);
                if (t != tag) { ready = 0; if (t != before && t != 0) bad = 1; }
            }
            if (bad) { __atomic_store_n(&hdr[2], (1ull << 56) | seq, __ATOMIC_RELEASE); agent_end(a, 0); return 0; }
            if (ready && ((unsigned int)w[1] & 8u)) {
                len = (unsigned int)w[0];
                if (len == 0 || len > 96) { __atomic_store_n(&hdr[2], (2ull << 56) | seq, __ATOMIC_RELEASE); agent_end(a, 0); return 0; }
                for (unsigned int i = 0; i < (len + 3) / 4; i++) if ((unsigned int)(w[8 + i] >> 32) != tag) ready = 0;
            }
            if (ready) break;
            if (++polls % 64 == 0) run_queue(); /* the copy engine runs on its own while a kernel runs */
            sched_yield();
        }
        len = (unsigned int)w[0]; flags = (unsigned int)w[1];
        unsigned long long dst = (w[2] & 0xffffffffull) | (w[3] << 32), src = (w[4] & 0xffffffffull) | (w[5] << 32),
            ce = (w[6] & 0xffffffffull) | (w[7] << 32);
        int stop = (flags & 2) != 0, inl = (flags & 8) != 0;
        if ((flags & ~15u) || (stop && inl) || (!stop && (len == 0 || dst == 0 || (!inl && src == 0)))) {
            __atomic_store_n(&hdr[2], (2ull << 56) | seq, __ATOMIC_RELEASE); agent_end(a, 0); return 0;
        }
        if (!stop && !strcmp(mode, "stall")) { for (;;) pause(); }
        if (!stop && !strcmp(mode, "fault")) { __atomic_store_n(&hdr[2], (2ull << 56) | seq, __ATOMIC_RELEASE); agent_end(a, 0); return 0; }
        if (!stop && !strcmp(mode, "die")) { agent_end(a, 700); return 0; }
        while ((flags & 4) && __atomic_load_n(&hdr[3], __ATOMIC_ACQUIRE) < ce) { run_queue(); sched_yield(); }
        if (delay_us > 0 && len) usleep((useconds_t)delay_us);
        if (inl) {
            unsigned char *to = (unsigned char *)dst;
            for (unsigned int i = 0; i < len; i++) to[i] = (unsigned char)(w[8 + i / 4] >> (8 * (i % 4)));
        } else if (len) {
            memcpy((void *)dst, (const void *)src, len);
        }
        __atomic_add_fetch(&agent_counts[0], 1, __ATOMIC_ACQ_REL);
        if (flags & 1) __atomic_add_fetch(&agent_counts[1], 1, __ATOMIC_ACQ_REL);
        if (flags & 4) __atomic_add_fetch(&agent_counts[2], 1, __ATOMIC_ACQ_REL);
        if (stop) __atomic_add_fetch(&agent_counts[3], 1, __ATOMIC_ACQ_REL);
        if (inl) __atomic_add_fetch(&agent_counts[7], 1, __ATOMIC_ACQ_REL);
        __atomic_add_fetch(&agent_counts[5], len, __ATOMIC_ACQ_REL);
        *(unsigned long long *)a->state = seq; /* done_seq */
        if (!stop && !strcmp(mode, "corrupt")) {
            __atomic_store_n(&done[slot], seq + 1, __ATOMIC_RELEASE); /* seq + 1 belongs to the next slot */
            continue;
        }
        __atomic_store_n(&done[slot], seq, __ATOMIC_RELEASE);
        if (stop) { agent_end(a, 0); return 0; }
    }
}
static CUresult fake_agent_launch(unsigned gx, unsigned bx, void *stream, void **params) {
    if (bx != 256 || stream == NULL || stream_state(stream) != 0) return 1;
    struct agent_args *a = malloc(sizeof *a);
    if (!a) return 2;
    a->ring = P64(0); a->state = P64(1); a->slots = P32(2); a->first = P64(3); a->stream_state = (int *)stream + 1;
    if (a->slots < 2 || (a->slots & (a->slots - 1)) || a->first == 0 || P64(4) == 0) { free(a); return 1; } /* cfirst from 1 */
    __atomic_store_n(a->stream_state, -1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&running_agents, 1, __ATOMIC_ACQ_REL);
    pthread_t t;
    if (pthread_create(&t, NULL, fake_agent, a)) {
        __atomic_sub_fetch(&running_agents, 1, __ATOMIC_ACQ_REL);
        __atomic_store_n(a->stream_state, 0, __ATOMIC_RELEASE); free(a); return 2;
    }
    pthread_detach(t);
    __atomic_add_fetch(&agent_counts[4], 1, __ATOMIC_ACQ_REL);
    return 0;
}

CUresult cuModuleLoadData(void **m, const void *image) {
    lazy_load_waits();
    if (strstr((const char *)image, ".entry coll_reduce")) { *m = (void *)0x2; return 0; } /* module coll */
    if (strstr((const char *)image, ".entry nic_agent")) { *m = (void *)0x3; return 0; } /* module agent */
    if (!strstr((const char *)image, ".entry fill_pattern")) return 218;
    *m = (void *)0x1; return 0;
}

/* coll_reduce(u8* dst, u64 dst_off, const u8* src, u64 src_off, u64 count, u32 type, u32 op) on the host, as
 * coll.cu computes it; type codes of io.gdrkit.gpu.ReduceKernel. Half (3) is not emulated here: 1 (INVALID_VALUE). */
#define RED(a, b) (op == 0 ? (a) + (b) : op == 1 ? (a) * (b) : op == 2 ? ((b) < (a) ? (b) : (a)) : ((a) < (b) ? (b) : (a)))
static float bf16_to_f(unsigned short h) { unsigned int u = (unsigned int) h << 16; float f; memcpy(&f, &u, 4); return f; }
static unsigned short f_to_bf16(float f) {
    unsigned int u; memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return 0x7fc0;
    return (unsigned short) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static int coll_reduce_host(void **params) {
    unsigned char *d = *(unsigned char **) params[0] + *(unsigned long long *) params[1];
    const unsigned char *s = *(const unsigned char **) params[2] + *(unsigned long long *) params[3];
    unsigned long long n = *(unsigned long long *) params[4];
    unsigned int type = *(unsigned int *) params[5], op = *(unsigned int *) params[6];
    for (unsigned long long i = 0; i < n; i++) {
        switch (type) {
            case 0: { signed char a = ((signed char *) d)[i], b = ((const signed char *) s)[i]; ((signed char *) d)[i] = (signed char) RED(a, b); break; }
            case 1: { int a = ((int *) d)[i], b = ((const int *) s)[i]; ((int *) d)[i] = RED(a, b); break; }
            case 2: { long long a = ((long long *) d)[i], b = ((const long long *) s)[i]; ((long long *) d)[i] = RED(a, b); break; }
            case 4: { float a = bf16_to_f(((unsigned short *) d)[i]), b = bf16_to_f(((const unsigned short *) s)[i]); ((unsigned short *) d)[i] = f_to_bf16(RED(a, b)); break; }
            case 5: { float a = ((float *) d)[i], b = ((const float *) s)[i]; ((float *) d)[i] = RED(a, b); break; }
            case 6: { double a = ((double *) d)[i], b = ((const double *) s)[i]; ((double *) d)[i] = RED(a, b); break; }
            default: return 1;
        }
    }
    return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    lazy_load_waits();
    if (!strcmp(name, "fill_pattern")) *f = (void *)1;
    else if (!strcmp(name, "verify_pattern")) *f = (void *)2;
    else if (!strcmp(name, "noop")) *f = (void *)3;
    else if (!strcmp(name, "poll_flag_verify")) *f = (void *)4;
    else if (!strcmp(name, "shmem_lat")) *f = (void *)5;
    else if (!strcmp(name, "shmem_pingpong")) *f = (void *)6;
    else if (!strcmp(name, "shmem_put_bw")) *f = (void *)7;
    else if (!strcmp(name, "shmem_ring_rtt")) *f = (void *)8;
    else if (!strcmp(name, "shmem_clock_sync")) *f = (void *)9;
    else if (!strcmp(name, "shmem_moe")) *f = (void *)10;
    else if (!strcmp(name, "coll_reduce") && m == (void *)0x2) *f = (void *)11;
    else if (!strcmp(name, "nic_agent") && m == (void *)0x3) *f = (void *)12;
    else if (!strcmp(name, "vis_verify")) *f = (void *)13;
    else return 500;
    return 0;
}
CUresult cuModuleUnload(void *m) { return 0; }
/*
 * FAKECUDA_LAUNCH_LOG=path appends one line per kernel launch, "<kernel> <bytes>" (bytes: the shmem kernels' message
 * size argument, 0 for the others), in launch order: a test reads which kernels ran before the first timed one.
 */
static const char *const kernel_names[] = {"?", "fill_pattern", "verify_pattern", "noop", "poll_flag_verify",
    "shmem_lat", "shmem_pingpong", "shmem_put_bw", "shmem_ring_rtt", "shmem_clock_sync", "shmem_moe", "coll_reduce",
    "nic_agent", "vis_verify"};
static void log_launch(void *f, void **params) {
    const char *path = getenv("FAKECUDA_LAUNCH_LOG");
    if (!path || !path[0]) return;
    unsigned long id = (unsigned long)f;
    unsigned bytes = id == 5 ? *(unsigned *)params[5] : id == 6 || id == 7 ? *(unsigned *)params[4] : 0;
    char line[64];
    int n = snprintf(line, sizeof line, "%s %u\n", id < 14 ? kernel_names[id] : "?", bytes);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) { if (write(fd, line, (size_t)n) < 0) { /* a test log: nothing to do */ } close(fd); }
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, void *stream, void **params, void **extra) {
    if (gx == 0 || bx == 0 || bx * by * bz > 1024) return 1;
    log_launch(f, params);
    if (orders_with_legacy(stream)) run_legacy();
    if (f == (void *)1) {
        unsigned char *buf = *(unsigned char **)params[0];
        unsigned long long n = *(unsigned long long *)params[1];
        unsigned int round = *(unsigned int *)params[2], seed = *(unsigned int *)params[3];
        for (unsigned long long i = 0; i < n; i++) buf[i] = pattern_at(i, round, seed);
    } else if (f == (void *)2) {
        const unsigned char *buf = *(const unsigned char **)params[0];
        unsigned long long n = *(unsigned long long *)params[1];
        unsigned int round = *(unsigned int *)params[2], seed = *(unsigned int *)params[3];
        unsigned long long *res = *(unsigned long long **)params[4];
        for (unsigned long long i = 0; i < n; i++) {
            if (buf[i] != pattern_at(i, round, seed)) { res[0]++; if (i < res[1]) res[1] = i; }
        }
    } else if (f == (void *)10) { /* shmem_moe(s, seed, tokens, bytes, in, recv, out, recv_sig, done_sig, times) */
        /* FAKECUDA_MOE_WAIT_TIMEOUT=N: the kernel ends at once with a timeout at wait site N, as PE 3's did on
           the H200 (run 3), so the host's reporting of it is tested without waiting for a real timeout */
        const char *fail = getenv("FAKECUDA_MOE_WAIT_TIMEOUT");
        if (fail && fail[0]) { shd_error((u64 *)P64(0), SHD_ERR_TIMEOUT, (u64)atoi(fail)); return 0; }
        __atomic_add_fetch(&running_kernels, 1, __ATOMIC_ACQ_REL);
        u64 t0 = shd_now();
        if (!shmem_moe_body((u64 *)P64(0), P64(1), P32(2), P32(3), P64(4), P64(5), P64(6), P64(7), P64(8)))
            *(u64 *)P64(9) = shd_now() - t0;
        __atomic_sub_fetch(&running_kernels, 1, __ATOMIC_ACQ_REL);
    } else if (f == (void *)12) {
        return fake_agent_launch(gx, bx, stream, params);
    } else if (f == (void *)13) { /* vis_verify(buf, n, round, seed, result), as kernels.cu counts (perf --check) */
        const unsigned char *buf = *(const unsigned char **)params[0];
        unsigned long long n = *(unsigned long long *)params[1];
        unsigned int round = *(unsigned int *)params[2], seed = *(unsigned int *)params[3];
        unsigned long long *res = *(unsigned long long **)params[4];
        for (unsigned long long i = 0; i < n; i++) {
            if (buf[i] == pattern_at(i, round, seed)) { if (i + 1 > res[2]) res[2] = i + 1; continue; }
            res[0]++;
            if (i < res[1]) res[1] = i;
            if (buf[i] == pattern_at(i, round - 1, seed)) res[3]++;
        }
    } else if (f == (void *)11) {
        run_queue();
        return coll_reduce_host(params);
    } else if (f == (void *)5 || f == (void *)6 || f == (void *)7 || f == (void *)8 || f == (void *)9) {
        __atomic_add_fetch(&running_kernels, 1, __ATOMIC_ACQ_REL);
        CUresult rc = fake_shmem(f, gx, bx, params);
        __atomic_sub_fetch(&running_kernels, 1, __ATOMIC_ACQ_REL);
        return rc;
    } else if (f != (void *)3) {
        return 400;
    }
    return 0;
}
CUresult cuPointerGetAttribute(void *data, int attr, unsigned long long p) { if (attr != 6) return 1; *(int *)data = sync_memops; return 0; }
CUresult cuPointerSetAttribute(const void *value, int attr, unsigned long long p) { if (attr != 6) return 1; sync_memops = *(const int *)value; return 0; }
CUresult cuMemGetHandleForAddressRange(void *handle, unsigned long long p, size_t size, int type, unsigned long long flags) {
    if (type != 1 || flags != 0 || (p % 4096) || (size % 4096)) return 1;
    *(int *)handle = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return 0;
}
CUresult cuFlushGPUDirectRDMAWrites(int target, int scope) {
    last_flush_target = target; last_flush_scope = scope;
    return target == 0 && (scope == 100 || scope == 200) ? 0 : 1;
}
CUresult cuGetErrorName(CUresult e, const char **s) {
    switch (e) {
        case 0: *s = "CUDA_SUCCESS"; return 0;
        case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
        case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
        case 3: *s = "CUDA_ERROR_NOT_INITIALIZED"; return 0;
        case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; return 0;
        case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
        case 400: *s = "CUDA_ERROR_INVALID_HANDLE"; return 0;
        case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
        case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0;
        case 712: *s = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; return 0;
        case 713: *s = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; return 0;
        case 801: *s = "CUDA_ERROR_NOT_SUPPORTED"; return 0;
        default: *s = 0; return 1;
    }
}
