#!/usr/bin/env bash
# Small-message allreduce latency on the device host (issue 12's "8-byte allreduce <= OpenMPI's"), with enough
# iterations for the JIT to have compiled the path (bench/h200-coll.sh runs -n 10 -w 3, which times the interpreter
# at 8 B). Per run: gdrkit `coll allreduce --np 2 --fabric shm`, host buffers, 8 B .. 4 KiB, -n ITERS -w WARM, with
# the default direct round and with it off (gdrkit.coll.direct.bytes=0: the ring; VARIANTS also takes dedspin, bs<N>
# as bench/h200-coll.sh's HOST_ABLATE does, or one -D option), then OpenMPI's MPI_Allreduce with
# the same sizes and iterations. JSON lines into $OUT/lat.jsonl and $OUT/openmpi-lat.jsonl. MPI_BINDS (default
# "core", mpirun's own default for 2 ranks) lists the --bind-to values OpenMPI runs with, one row set each
# (label openmpi-host for core, openmpi-bind-<value> for the others): "core none" shows what pinning is worth.
#   JAVA=runtime/bin/java JAR=cli/target/gdrkit.jar OUT=/tmp/out bench/h200-coll-lat.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$here/bench/coll-variants.sh"
cd "$here"
OUT="${OUT:-$here/h200-coll-lat-out}"
JAVA="${JAVA:-$here/runtime/bin/java}"
JAR="${JAR:-$here/cli/target/gdrkit.jar}"
RUNS="${RUNS:-3}"; MIN="${MIN:-8}"; MAX="${MAX:-4096}"; F="${F:-8}"; ITERS="${ITERS:-5000}"; WARM="${WARM:-5000}"
LIMIT="${LIMIT:-150}"; FABRIC="${FABRIC:-shm}"; VARIANTS="${VARIANTS:-default nodirect}"
mkdir -p "$OUT"
{ date -u; nproc; uptime; "$JAVA" -version 2>&1; lscpu 2>&1; } > "$OUT/lat-env.txt"
g() { timeout "$LIMIT" "$JAVA" --enable-native-access=ALL-UNNAMED ${JOPTS:-} -jar "$JAR" "$@"; }
tag() { sed "s/^{/{\"label\":\"$1\",\"run\":$2,/"; }
MPI_BIN="${MPI_BIN:-$OUT/allreduce_timing}"
if [ ! -x "$MPI_BIN" ] && command -v mpicc >/dev/null 2>&1; then
  mpicc -O2 -o "$MPI_BIN" bench/mpi/allreduce_timing.c 2>> "$OUT/lat-err.txt"
fi
for run in $(seq 1 "$RUNS"); do
  echo "run $run: $(uptime)" >> "$OUT/lat-env.txt"
  for v in $VARIANTS; do
    if ! p="$(coll_variant_opts "$v")"; then echo "VARIANTS: unknown '$v'" >> "$OUT/lat-err.txt"; continue; fi
    JOPTS="${JOPTS:-} $p" g coll allreduce --np 2 --fabric "$FABRIC" -b "$MIN" -e "$MAX" -f "$F" -n "$ITERS" \
      -w "$WARM" --json 2>> "$OUT/lat-err.txt" | tag "lat-$v" "$run" >> "$OUT/lat.jsonl"
  done
  if [ -x "$MPI_BIN" ] && command -v mpirun >/dev/null 2>&1; then
    for b in ${MPI_BINDS:-core}; do
      l=openmpi-host; [ "$b" = core ] || l="openmpi-bind-$b"
      timeout "$LIMIT" mpirun --allow-run-as-root --oversubscribe --bind-to "$b" -np 2 "$MPI_BIN" "$MIN" "$MAX" "$F" \
        "$ITERS" "$WARM" 2>> "$OUT/lat-err.txt" | tag "$l" "$run" >> "$OUT/openmpi-lat.jsonl"
    done
  else
    echo "no mpirun/mpicc: OpenMPI rows not run" > "$OUT/openmpi-skipped.txt"
  fi
done
echo "done: $(wc -l < "$OUT/lat.jsonl") gdrkit rows" >> "$OUT/lat-env.txt"
