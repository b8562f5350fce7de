/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/*
 * The delivery agent kernel (agent.ptx, nic_agent) on a real GPU without the JVM: drives its descriptor ring as
 * NicStaging does (AgentRing's layout), checks the delivered bytes (odd sizes and alignments, FENCE, wrap-around,
 * small deliveries carried in their descriptors over bytes a copied one wrote just before, STOP and a restart that
 * continues the sequence), then times deliveries of 64 KiB, 1 MiB and 16 MiB cut into
 * 128 KiB descriptors against a pinned cuMemcpyHtoDAsync of the same size. Prints JSON lines; exit 0 when every
 * check passed. Build and run on the GPU host:
 *   nvcc -O2 -o agent_check gpu/tools/agent_check.c -lcuda
 *   ./agent_check gpu/src/main/resources/io/gdrkit/gpu/cuda/agent.ptx [blocks]
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *n_ = 0; cuGetErrorName(r_, &n_); \
    fprintf(stderr, "%s failed: %s\n", #x, n_ ? n_ : "?"); exit(1); } } while (0)

typedef unsigned long long u64;
#define SLOTS 1024u
#define STAGE (64ull << 20)
#define DEVB (64ull << 20)

static double now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }

static volatile u64 *ring;
static u64 ring_dev, posted, state_dev;
static CUfunction fn;
static CUstream agent_stream;
static unsigned blocks = 16;

static volatile u64 *done_word(u64 seq) { return ring + 8 + ((seq - 1) & (SLOTS - 1)); }
/* a descriptor: 32 words of (value | tag << 32), tag = the low half of seq (AgentRing) */
static volatile u64 *desc(u64 seq) { return ring + 8 + SLOTS + 32 * ((seq - 1) & (SLOTS - 1)); }
static u64 copied;

static void wait_done(u64 seq) {
    double t0 = now_ns();
    while (*done_word(seq) < seq) {
        if (ring[2]) { fprintf(stderr, "agent fault word 0x%llx\n", (u64)ring[2]); exit(1); }
        if (now_ns() - t0 > 5e9) { fprintf(stderr, "stalled at %llu (word %llu)\n", seq, (u64)*done_word(seq)); exit(1); }
    }
}

static void header(volatile u64 *d, u64 seq, u64 dst, u64 src, unsigned len, unsigned flags) {
    u64 tag = seq << 32;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    d[2] = tag | (dst & 0xffffffffu); d[3] = tag | (dst >> 32);
    d[4] = tag | (src & 0xffffffffu); d[5] = tag | (src >> 32);
    d[6] = tag; d[7] = tag; d[1] = tag | flags; d[0] = tag | len;
}

static u64 post(u64 dst, u64 src, unsigned len, unsigned flags) {
    u64 seq = posted + 1;
    if (seq > SLOTS) wait_done(seq - SLOTS);
    header(desc(seq), seq, dst, src, len, flags);
    posted = seq;
    copied++;
    return seq;
}

/* a small delivery carried in the descriptor (INLINE = 8): len <= 96 bytes of data */
static u64 post_inline(u64 dst, const unsigned char *data, unsigned len, unsigned flags) {
    u64 seq = posted + 1;
    if (seq > SLOTS) wait_done(seq - SLOTS);
    volatile u64 *d = desc(seq);
    for (unsigned w = 0; w < (len + 3) / 4; w++) {
        unsigned v = 0;
        for (unsigned b = 0; b < 4 && 4 * w + b < len; b++) v |= (unsigned)data[4 * w + b] << (8 * b);
        d[8 + w] = (seq << 32) | v;
    }
    header(d, seq, dst, 0, len, flags | 8);
    posted = seq;
    return seq;
}

static void launch(void) {
    unsigned slots = SLOTS; u64 first = posted + 1, cfirst = copied + 1;
    void *params[] = {&ring_dev, &state_dev, &slots, &first, &cfirst};
    CK(cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, agent_stream, params, NULL));
}

static void stop(void) {
    wait_done(post(0, 0, 0, 2));
    CK(cuStreamSynchronize(agent_stream));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "agent.ptx";
    if (argc > 2) blocks = (unsigned)atoi(argv[2]);
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return 1; }
    fseek(f, 0, SEEK_END); long len = ftell(f); rewind(f);
    char *ptx = malloc(len + 1);
    if (fread(ptx, 1, len, f) != (size_t)len) { perror("read"); return 1; }
    ptx[len] = 0; fclose(f);
    CUdevice dev; CUcontext ctx; CUmodule mod; CUstream cs;
    CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, ptx)); CK(cuModuleGetFunction(&fn, mod, "nic_agent"));
    CK(cuStreamCreate(&agent_stream, CU_STREAM_NON_BLOCKING)); CK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    size_t rb = 64 + 8 * SLOTS + 256 * SLOTS;
    void *rh, *stage_h;
    CK(cuMemHostAlloc(&rh, rb, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    memset(rh, 0, rb);
    ring = rh;
    CK(cuMemHostGetDevicePointer(&ring_dev, rh, 0));
    CK(cuMemAlloc(&state_dev, 64 + 36 * SLOTS)); CK(cuMemsetD8(state_dev, 0, 64 + 36 * SLOTS));
    CK(cuMemHostAlloc(&stage_h, STAGE, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    u64 stage_d; CK(cuMemHostGetDevicePointer(&stage_d, stage_h, 0));
    CUdeviceptr dst; CK(cuMemAlloc(&dst, DEVB)); CK(cuMemsetD8(dst, 0, DEVB));
    unsigned char *expect = calloc(1, DEVB), *back = malloc(DEVB), *sh = stage_h;
    for (u64 i = 0; i < STAGE; i++) sh[i] = (unsigned char)(i * 2654435761u >> 13);
    CK(cuCtxSynchronize());
    launch();
    /* correctness: odd sizes and offsets (source and destination agree modulo 16 or not), some fenced, 3000 of them
       so the ring wraps, plus overlapping rewrites of one place that must end with the last */
    int fails = 0;
    srand(7);
    for (int i = 0; i < 3000; i++) {
        unsigned n = (unsigned)(rand() % 70000) + 1;
        u64 doff = (u64)rand() % (DEVB - n), soff = (u64)rand() % (STAGE - n);
        if (i % 3 == 0) soff = (soff & ~15ull) | (doff & 15);
        post(dst + doff, stage_d + soff, n, i % 5 == 0 ? 1 : 0);
        memcpy(expect + doff, sh + soff, n);
    }
    /* small deliveries in their descriptors, mixed with copied ones over the same bytes: every size 1-96 at every
       alignment, each after a copied write that covers it (the inline one must land last) */
    for (int i = 0; i < 3000; i++) {
        unsigned n = (unsigned)(i % 96) + 1;
        u64 doff = (u64)rand() % (DEVB - 8192), soff = (u64)rand() % (STAGE - 8192);
        if (i % 2 == 0) {
            post(dst + doff, stage_d + soff, 4096, 0);
            memcpy(expect + doff, sh + soff, 4096);
        }
        u64 at = doff + (u64)(rand() % 4000);
        post_inline(dst + at, sh + soff + 5000, n, i % 7 == 0 ? 1 : 0);
        memcpy(expect + at, sh + soff + 5000, n);
    }
    wait_done(posted);
    CK(cuMemcpyDtoH(back, dst, DEVB));
    for (u64 i = 0; i < DEVB; i++) if (back[i] != expect[i]) { printf("{\"check\":\"random\",\"mismatch\":%llu}\n", i); fails++; break; }
    /* STOP, then a restart continuing the sequence */
    stop();
    launch();
    post(dst, stage_d + 5, 4096, 1);
    memcpy(expect, sh + 5, 4096);
    wait_done(posted);
    CK(cuMemcpyDtoH(back, dst, 8192));
    if (memcmp(back, expect, 8192)) { printf("{\"check\":\"restart\",\"ok\":false}\n"); fails++; }
    printf("{\"check\":\"bytes\",\"descriptors\":%llu,\"ok\":%s,\"blocks\":%u}\n", posted, fails ? "false" : "true", blocks);
    /* bandwidth: one message = size bytes in 128 KiB descriptors, the first fenced (as NicStaging posts a message
       that does not continue the one before) */
    u64 sizes[] = {65536, 1 << 20, 16 << 20};
    for (int k = 0; k < 3; k++) {
        u64 size = sizes[k];
        int iters = size <= 65536 ? 4000 : size <= (1 << 20) ? 500 : 40;
        for (int pass = 0; pass < 2; pass++) {
            double t0 = now_ns();
            for (int it = 0; it < iters; it++) {
                for (u64 o = 0; o < size; o += 131072) {
                    unsigned n = (unsigned)(size - o < 131072 ? size - o : 131072);
                    post(dst + o, stage_d + ((u64)it * size + o) % (STAGE - size), n, o == 0 ? 1 : 0);
                }
            }
            wait_done(posted);
            double agent_ns = now_ns() - t0;
            t0 = now_ns();
            for (int it = 0; it < iters; it++) CK(cuMemcpyHtoDAsync(dst, (char *)stage_h + ((u64)it * size) % (STAGE - size), size, cs));
            CK(cuStreamSynchronize(cs));
            double ce_ns = now_ns() - t0;
            if (pass == 1) {
                printf("{\"bytes\":%llu,\"iters\":%d,\"blocks\":%u,\"agent_gb_s\":%.2f,\"pinned_htod_gb_s\":%.2f,\"ratio\":%.2f}\n",
                       size, iters, blocks, size * (double)iters / agent_ns, size * (double)iters / ce_ns,
                       ce_ns / agent_ns);
            }
        }
    }
    /* latency: one 64-byte descriptor, post to completion word */
    double t0 = now_ns();
    for (int i = 0; i < 10000; i++) wait_done(post(dst + 64 * (i % 64), stage_d, 64, 1));
    printf("{\"latency_64B_us\":%.2f}\n", (now_ns() - t0) / 10000 / 1000);
    /* the same with the payload in the descriptor, 8 and 64 bytes */
    unsigned sizes_inline[] = {8, 64};
    for (int k = 0; k < 2; k++) {
        t0 = now_ns();
        for (int i = 0; i < 10000; i++) wait_done(post_inline(dst + 64 * (i % 64), sh, sizes_inline[k], 1));
        printf("{\"latency_%uB_inline_us\":%.2f}\n", sizes_inline[k], (now_ns() - t0) / 10000 / 1000);
    }
    stop();
    return fails ? 1 : 0;
}
