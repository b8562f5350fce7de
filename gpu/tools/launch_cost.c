/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
/*
 * Baseline for "a kernel launch through FFM costs <= 1.2x the same launch from C": launches the `noop` kernel of
 * kernels.ptx N times with cuLaunchKernel from C, timed like CudaReport does (host time per call, and per kernel
 * including the drain). Build and run on the GPU host:
 *   nvcc -O2 -o launch_cost gpu/tools/launch_cost.c -lcuda
 *   ./launch_cost gpu/src/main/resources/io/gdrkit/gpu/cuda/kernels.ptx
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *n_ = 0; cuGetErrorName(r_, &n_); \
    fprintf(stderr, "%s failed: %s\n", #x, n_ ? n_ : "?"); return 1; } } while (0)

static double now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "kernels.ptx";
    const int n = 10000;
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return 1; }
    fseek(f, 0, SEEK_END); long len = ftell(f); rewind(f);
    char *ptx = malloc(len + 1);
    if (fread(ptx, 1, len, f) != (size_t)len) { perror("read"); return 1; }
    ptx[len] = 0; fclose(f);
    CUdevice dev; CUcontext ctx; CUmodule mod; CUfunction fn; CUstream s;
    CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, ptx)); CK(cuModuleGetFunction(&fn, mod, "noop")); CK(cuStreamCreate(&s, 0));
    for (int i = 0; i < 1000; i++) CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CK(cuStreamSynchronize(s));
    double t0 = now_ns();
    for (int i = 0; i < n; i++) CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    double t1 = now_ns();
    CK(cuStreamSynchronize(s));
    double t2 = now_ns();
    printf("{\"launchHostNanosPerCall\": %.1f, \"launchThroughputNanosPerKernel\": %.1f, \"launches\": %d}\n",
           (t1 - t0) / n, (t2 - t0) / n, n);
    return 0;
}
