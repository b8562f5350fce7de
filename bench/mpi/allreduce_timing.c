/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 *
 * OpenMPI's MPI_Allreduce timed the way nccl-tests (and gdrkit coll) time a collective: per size, warm-up
 * iterations, then timed iterations; the slowest rank's average; algbw = bytes / time, busbw = algbw * 2(n-1)/n.
 * Float sum, out-of-place, data checked once per size. One JSON line per size on rank 0.
 *
 *   mpicc -O2 -o allreduce_timing allreduce_timing.c
 *   mpirun --allow-run-as-root --oversubscribe -np 2 ./allreduce_timing MIN MAX FACTOR ITERS WARMUP
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long min = argc > 1 ? atol(argv[1]) : 8;
    long max = argc > 2 ? atol(argv[2]) : 16 << 20;
    long factor = argc > 3 ? atol(argv[3]) : 2;
    int iters = argc > 4 ? atoi(argv[4]) : 20;
    int warmup = argc > 5 ? atoi(argv[5]) : 5;
    if (min < 4 || max < min || factor < 2 || iters < 1 || warmup < 0) {
        if (rank == 0) fprintf(stderr, "usage: MIN>=4 MAX>=MIN FACTOR>=2 ITERS>=1 WARMUP>=0\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    float *send = malloc(max), *recv = malloc(max);
    if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 3);
    for (long bytes = min; bytes <= max; bytes *= factor) {
        long count = bytes / 4;
        for (long i = 0; i < count; i++) send[i] = (float) ((rank * 3 + i * 7) % 7 - 3);
        for (int i = 0; i < warmup; i++) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double us = (MPI_Wtime() - t0) * 1e6 / iters, worst;
        MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        long wrong = 0, all;
        for (long i = 0; i < count; i++) {
            float e = 0;
            for (int r = 0; r < n; r++) e += (float) ((r * 3 + i * 7) % 7 - 3);
            if (recv[i] != e) wrong++;
        }
        MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) {
            double alg = bytes / (worst * 1e-6) / 1e9;
            printf("{\"op\":\"all_reduce\",\"peer\":\"openmpi\",\"bytes\":%ld,\"time_us\":%.3f,\"algbw_gbs\":%.4f,"
                   "\"busbw_gbs\":%.4f,\"wrong\":%ld,\"np\":%d}\n", bytes, worst, alg, alg * 2.0 * (n - 1) / n, all, n);
            fflush(stdout);
        }
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
