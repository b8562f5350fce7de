#!/usr/bin/env bash
# The seventh session's second device call (2026-12-02), after the reduction fix: (1) big: 16 MiB allreduce with
# the knobs that gained nothing before the fix (reduce threads, copy engines, NCCL_BUFFSIZE), OpenMPI beside;
# (2) ibsock: IbTransport over shm and over tcp against SocketTransport, 256 KiB .. 16 MiB. bench/coll-peers.sh,
# 3 runs, rotating order. Results tarred to $OUT/r7c.tgz, '=' in names made '-'.
#   JAVA=runtime/bin/java JAR=out/gdrkit.jar bash bench/h200-round7c.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$here"
top="${OUT:-$here/round7c-out}"; R="$top/r7c"; mkdir -p "$R"
export JAVA="${JAVA:-$here/runtime/bin/java}" JAR="${JAR:-$here/out/gdrkit.jar}"
M="$R/allreduce_timing"; command -v mpicc >/dev/null && mpicc -O2 -o "$M" bench/mpi/allreduce_timing.c 2> "$R/mpicc-err.txt"
( OUT="$R/big" MPI_BIN="$M" MIN=16777216 MAX=16777216 F=2 ITERS=20 WARM=5 RUNS=3 ROTATE=1 \
    VARIANTS="${BIG_VARIANTS:-ib ib+gdrkit.coll.reduce.threads=4 ib+gdrkit.nic.copy.engines=4 ib+NCCL_BUFFSIZE=8388608 ib+NCCL_STEPS=4}" \
    timeout 240 bash bench/coll-peers.sh ) > "$R/big.log" 2>&1
[ -n "${SKIP_IBSOCK:-}" ] || ( OUT="$R/ibsock" SKIP_MPI=1 MIN=262144 MAX=16777216 F=4 ITERS=20 WARM=5 RUNS=3 ROTATE=1 \
    VARIANTS="ib ib-tcp socket" timeout 240 bash bench/coll-peers.sh ) > "$R/ibsock.log" 2>&1
rm -f "$M"; find "$R" -name '*=*' | while read -r f; do mv "$f" "${f//=/-}"; done
tar -C "$top" -czf "$top/r7c.tgz" r7c && rm -rf "$R"
