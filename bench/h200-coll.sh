#!/usr/bin/env bash
# Collectives with buffers on the H200 (issue 12, item 8), for the lead to run on the device host:
#   1 GPU: 2 ranks on cuda:0; with 2 GPUs (nvidia-h200-x2): rank r on cuda:r (GPUS=2, or found by nvidia-smi).
#   `coll allreduce --np 2 --mem gpu` 8 B .. 64 MiB (factor 8), 3 runs each, JSON lines into $OUT, plus OpenMPI's
#   MPI_Allreduce on host buffers in the same run if mpirun and mpicc exist there (else openmpi-skipped.txt says so).
# The NIC is software (simulated, shm fabric between the rank processes); the GPU, its copies and the coll_reduce
# kernel are real. Rows per run: the GDR path as the gates decide it (H200: DMA-BUF, attribute 124 = 1; the software
# NIC imports the fd and writes device memory through the copy engine; JSON data_path gdr, gdr true, nic_mr gpu,
# bounced_bytes_rank0 0), the same forced to host bounce by NCCL_NET_GDR_LEVEL=LOC (data_path host-bounce, the
# setting named in gdr_reason), the GDR path with NCCL_NET_FORCE_FLUSH=1 (flushes_rank0 > 0: the 1-byte READ before
# each received chunk is used), rank r on GPU r where there are 2 GPUs, and host buffers.
#   JAVA=runtime/bin/java JAR=cli/target/gdrkit.jar OUT=/tmp/out bench/h200-coll.sh
# Device call (carry runtime and the jar): bash bench/h200-coll.sh  (OUT defaults to $OUT of the device tool)
# HOST_ABLATE="noeager mtu64k nodirect" adds host-buffer rows with one setting changed each: the eager heads off
# (gdrkit.coll.eager.bytes=0), the opt-in 64 KiB software MTU on (gdrkit.ib.software.mtu=65536), or the one-round
# small allreduce off (gdrkit.coll.direct.bytes=0: the ring at every size; the default rows take it up to 4 KiB), or
# cma64k: the shm fabric's cross-process references only from 64 KiB packets (gdrkit.nic.shm.cma.threshold=65536;
# the direct round's 4 KiB message is a 4096-byte packet plus 8, which cma pulls by default).
# "shmbatch" and "shmbatch128": segment offload across processes on (gdrkit.nic.shm.batch=true, spans of up to 16
# packets per cma record; off by default, one record per 4 KiB packet) or on with 128 packets per record.
# "dedspin" and "dedyield": a NIC thread per rank (gdrkit.nic.progress=dedicated) spinning or yielding when idle,
# instead of the rank's own polling with a backstop: on a host with spare cores the NIC moves data while the rank
# reduces (coll's default since b4b555e with >= 4 processors per rank). "own": the rank's own polling with the 200 us
# backstop (the default with fewer processors). "bs<N>": the default mode (the rank's polling moves its NIC) with the backstop thread stepping it every
# N us instead of 200. "engines<N>": N copy engines per NIC (gdrkit.nic.copy.engines=N: cma pulls of 256 KiB or more,
# gdrkit.nic.copy.threshold, split over the NIC thread and N-1 copy threads; engines1 = off; the default is auto, 4
# on a 16-core host). "red<N>": host reductions of at least gdrkit.coll.reduce.parallel.bytes (256 KiB) split over N
# threads, the rank's own included (gdrkit.coll.reduce.threads=N; red1 is off; auto takes 4 for 2 ranks on 16
# processors, reduce_threads in the JSON). SKIP_GPU=1 leaves the GPU rows out.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$here/bench/coll-variants.sh"
cd "$here"
OUT="${OUT:-$here/h200-coll-out}"
JAVA="${JAVA:-$here/runtime/bin/java}"
JAR="${JAR:-$here/cli/target/gdrkit.jar}"
RUNS="${RUNS:-3}"; MIN="${MIN:-8}"; MAX="${MAX:-67108864}"; F="${F:-8}"; ITERS="${ITERS:-10}"; WARM="${WARM:-3}"
LIMIT="${LIMIT:-150}"; FABRIC="${FABRIC:-shm}"
mkdir -p "$OUT"
GPUS="${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')}"
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
    --format=csv 2>&1; "$JAVA" -version 2>&1; echo "gpus: $GPUS"; } > "$OUT/env.txt"
g() { timeout "$LIMIT" "$JAVA" --enable-native-access=ALL-UNNAMED ${JOPTS:-} -jar "$JAR" "$@"; }
tag() { sed "s/^{/{\"label\":\"$1\",\"run\":$2,/"; }
MPI_BIN="${MPI_BIN:-$OUT/allreduce_timing}"
if command -v mpirun >/dev/null 2>&1 && command -v mpicc >/dev/null 2>&1; then
  mpicc -O2 -o "$MPI_BIN" bench/mpi/allreduce_timing.c 2>> "$OUT/err.txt" || echo "mpicc failed" > "$OUT/openmpi-skipped.txt"
else
  echo "no mpirun/mpicc on this host: OpenMPI rows not run" > "$OUT/openmpi-skipped.txt"
fi
for run in $(seq 1 "$RUNS"); do
  echo "run $run: $(uptime)" >> "$OUT/env.txt"
  [ -n "${SKIP_GPU:-}" ] || g coll allreduce --np 2 --fabric "$FABRIC" --mem gpu --gpu cuda:0 -b "$MIN" -e "$MAX" -f "$F" -n "$ITERS" -w "$WARM" \
    --json 2>> "$OUT/err.txt" | tag "1gpu-2ranks-gdr" "$run" >> "$OUT/coll-gpu.jsonl"
  [ -n "${SKIP_GPU:-}" ] || NCCL_NET_GDR_LEVEL=LOC g coll allreduce --np 2 --fabric "$FABRIC" --mem gpu --gpu cuda:0 -b "$MIN" -e "$MAX" \
    -f "$F" -n "$ITERS" -w "$WARM" --json 2>> "$OUT/err.txt" | tag "1gpu-2ranks-bounce" "$run" >> "$OUT/coll-gpu.jsonl"
  [ -n "${SKIP_GPU:-}" ] || NCCL_NET_FORCE_FLUSH=1 g coll allreduce --np 2 --fabric "$FABRIC" --mem gpu --gpu cuda:0 -b "$MIN" -e "$MAX" \
    -f "$F" -n "$ITERS" -w "$WARM" --json 2>> "$OUT/err.txt" | tag "1gpu-2ranks-gdr-flush" "$run" \
    >> "$OUT/coll-gpu.jsonl"
  if [ "$GPUS" -ge 2 ] && [ -z "${SKIP_GPU:-}" ]; then
    g coll allreduce --np 2 --fabric "$FABRIC" --mem gpu --gpu cuda:rank -b "$MIN" -e "$MAX" -f "$F" -n "$ITERS" \
      -w "$WARM" --json 2>> "$OUT/err.txt" | tag "2gpu-rank-r-on-cuda-r" "$run" >> "$OUT/coll-gpu.jsonl"
  fi
  g coll allreduce --np 2 --fabric "$FABRIC" -b "$MIN" -e "$MAX" -f "$F" -n "$ITERS" -w "$WARM" --json \
    2>> "$OUT/err.txt" | tag "host-buffers" "$run" >> "$OUT/coll-gpu.jsonl"
  for a in ${HOST_ABLATE:-}; do
    if ! p="$(coll_variant_opts "$a")"; then echo "HOST_ABLATE: unknown '$a'" >> "$OUT/err.txt"; continue; fi
    JOPTS="${JOPTS:-} $p" g coll allreduce --np 2 --fabric "$FABRIC" -b "$MIN" -e "$MAX" -f "$F" -n "$ITERS" \
      -w "$WARM" --json 2>> "$OUT/err.txt" | tag "host-buffers-$a" "$run" >> "$OUT/coll-gpu.jsonl"
  done
  if [ ! -f "$OUT/openmpi-skipped.txt" ]; then
    timeout "$LIMIT" mpirun --allow-run-as-root --oversubscribe -np 2 "$MPI_BIN" "$MIN" "$MAX" "$F" "$ITERS" "$WARM" \
      2>> "$OUT/err.txt" | tag "openmpi-host" "$run" >> "$OUT/openmpi.jsonl"
  fi
done
echo "done: $(wc -l < "$OUT/coll-gpu.jsonl") gdrkit rows" >> "$OUT/env.txt"
