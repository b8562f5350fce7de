/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 *
 * OpenMPI's collectives timed the way nccl-tests (and gdrkit coll) time them: per size, warm-up iterations, a
 * barrier, then timed iterations; the time of a row is the slowest rank's average per call; algbw = bytes / time and
 * busbw = algbw x nccl-tests' factor. Float, sum, out of place, root 0; every element checked once per size.
 * Sizes follow `gdrkit coll` (CollRun.sizes): MIN, then ceil(size x FACTOR) up to MAX, each rounded down to whole
 * floats, and to n floats for the ops that cut the buffer into one block per rank (allgather, reduce_scatter,
 * alltoall), so that both sides time the same buffers. A size is the largest buffer: allgather the gathered
 * output, reduce_scatter the input, alltoall each rank's whole send buffer. One JSON line per size on rank 0.
 *
 *   mpicc -O2 -o coll_timing coll_timing.c
 *   mpirun --allow-run-as-root --oversubscribe -np 4 ./coll_timing OP MIN MAX FACTOR ITERS WARMUP
 *   OP: allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall, sendrecv
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { ALLREDUCE, ALLGATHER, REDUCE_SCATTER, BROADCAST, REDUCE, ALLTOALL, SENDRECV, NOPS };
static const char *names[NOPS] = {"allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall",
                                  "sendrecv"};
/* nccl-tests' names, as gdrkit coll writes them in its JSON rows */
static const char *test_names[NOPS] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                       "alltoall", "sendrecv"};

/* the value rank r holds at element i of its send buffer: small integers, so float sums are exact */
static float in(int r, long i) { return (float) ((r * 3 + i * 7) % 7 - 3); }

static double bus_factor(enum op o, int n) {
    switch (o) {
    case ALLREDUCE: return 2.0 * (n - 1) / n;
    case ALLGATHER: case REDUCE_SCATTER: case ALLTOALL: return (double) (n - 1) / n;
    default: return 1.0;
    }
}

/* one call; count is the size in floats (the largest buffer), block = count / n */
static void call(enum op o, float *send, float *recv, long count, int rank, int n) {
    int block = (int) (count / n);
    switch (o) {
    case ALLREDUCE: MPI_Allreduce(send, recv, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(send, block, MPI_FLOAT, recv, block, MPI_FLOAT, MPI_COMM_WORLD); break;
    case REDUCE_SCATTER: MPI_Reduce_scatter_block(send, recv, block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case BROADCAST:
        /* as an MPI program calls it: the root sends from its buffer, the others receive into theirs */
        MPI_Bcast(rank == 0 ? send : recv, (int) count, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    case REDUCE: MPI_Reduce(send, recv, (int) count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(send, block, MPI_FLOAT, recv, block, MPI_FLOAT, MPI_COMM_WORLD); break;
    case SENDRECV:
        MPI_Sendrecv(send, (int) count, MPI_FLOAT, (rank + 1) % n, 0, recv, (int) count, MPI_FLOAT,
                     (rank + n - 1) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
    default: break;
    }
}

/* the number of wrong elements in this rank's receive buffer after one call */
static long check(enum op o, const float *recv, long count, int rank, int n) {
    long wrong = 0, block = count / n;
    switch (o) {
    case ALLREDUCE:
    case REDUCE:
        if (o == REDUCE && rank != 0) return 0;
        for (long i = 0; i < count; i++) {
            float e = 0;
            for (int r = 0; r < n; r++) e += in(r, i);
            if (recv[i] != e) wrong++;
        }
        break;
    case ALLGATHER:
        for (long i = 0; i < count; i++) if (recv[i] != in((int) (i / block), i % block)) wrong++;
        break;
    case REDUCE_SCATTER:
        for (long i = 0; i < block; i++) {
            float e = 0;
            for (int r = 0; r < n; r++) e += in(r, rank * block + i);
            if (recv[i] != e) wrong++;
        }
        break;
    case BROADCAST:
        if (rank == 0) return 0;
        for (long i = 0; i < count; i++) if (recv[i] != in(0, i)) wrong++;
        break;
    case ALLTOALL:
        /* block r of the receive buffer is block `rank` of rank r's send buffer */
        for (long i = 0; i < count; i++) if (recv[i] != in((int) (i / block), rank * block + i % block)) wrong++;
        break;
    case SENDRECV:
        for (long i = 0; i < count; i++) if (recv[i] != in((rank + n - 1) % n, i)) wrong++;
        break;
    default: break;
    }
    return wrong;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    enum op o = NOPS;
    if (argc > 1) {
        for (int k = 0; k < NOPS; k++) {
            if (strcmp(argv[1], names[k]) == 0 || strcmp(argv[1], test_names[k]) == 0) o = (enum op) k;
        }
        if (strcmp(argv[1], "reduce-scatter") == 0) o = REDUCE_SCATTER;
    }
    long min = argc > 2 ? atol(argv[2]) : 8;
    long max = argc > 3 ? atol(argv[3]) : 16 << 20;
    double factor = argc > 4 ? atof(argv[4]) : 2;
    int iters = argc > 5 ? atoi(argv[5]) : 20;
    int warmup = argc > 6 ? atoi(argv[6]) : 5;
    if (o == NOPS || min < 1 || max < min || max > (1L << 31) || !(factor > 1) || iters < 1 || warmup < 0) {
        if (rank == 0) {
            fprintf(stderr, "usage: coll_timing OP MIN MAX FACTOR ITERS WARMUP\n"
                            "  OP allreduce|allgather|reduce_scatter|broadcast|reduce|alltoall|sendrecv, "
                            "1<=MIN<=MAX<=2G, FACTOR>1, ITERS>=1, WARMUP>=0\n");
        }
        MPI_Finalize();
        return 2;
    }
    long unit = (long) sizeof(float) * (o == ALLGATHER || o == REDUCE_SCATTER || o == ALLTOALL ? n : 1);
    float *send = malloc(max > 4 ? max : 4), *recv = malloc(max > 4 ? max : 4);
    if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 3);
    for (long s = min; s <= max;) {
        long bytes = s / unit * unit, count = bytes / (long) sizeof(float);
        /* the send buffer: allgather sends one block, the others their whole buffer */
        long sent = o == ALLGATHER ? count / n : count;
        for (long i = 0; i < sent; i++) send[i] = in(rank, i);
        memset(recv, 0, bytes);
        for (int i = 0; i < warmup; i++) call(o, send, recv, count, rank, n);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) call(o, send, recv, count, rank, n);
        double us = (MPI_Wtime() - t0) * 1e6 / iters, worst;
        MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        long wrong = check(o, recv, count, rank, n), all;
        MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) {
            double alg = worst > 0 ? bytes / (worst * 1e-6) / 1e9 : 0;
            printf("{\"op\":\"%s\",\"peer\":\"openmpi\",\"bytes\":%ld,\"time_us\":%.3f,\"algbw_gbs\":%.4f,"
                   "\"busbw_gbs\":%.4f,\"wrong\":%ld,\"np\":%d}\n",
                   test_names[o], bytes, worst, alg, alg * bus_factor(o, n), all, n);
            fflush(stdout);
        }
        long next = (long) ceil(s * factor);
        if (next <= s) break;
        s = next;
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
