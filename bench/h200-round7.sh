#!/usr/bin/env bash
# The seventh session's device call (2026-12-02): does the fix for the ring's slowdown after 1 MiB direct rounds
# hold on the H200 host, and what does it change? Results into $OUT/r7, then one tarball $OUT/r7.tgz (the device
# tool refuses file names with '=', and returns few files).
#  1. sweep: bench/coll-peers.sh, 8 B .. 16 MiB factor 8 (SWEEP_MIN, SWEEP_F), RUNS=3, OpenMPI in the same runs, variants
#     ib (this jar, default 64 KiB direct rounds), ib+gdrkit.coll.direct.bytes=1048576 (this jar, 1 MiB rounds),
#     ib-before+gdrkit.coll.direct.bytes=1048576 (BEFORE_JAR: the build that slowed down), ib-before, socket.
#  2. lat (SKIP_LAT=1 leaves it out): 8 B .. 4 KiB latency, bench/h200-coll-lat.sh, this jar, default and 1 MiB.
#   JAVA=runtime/bin/java JAR=out/gdrkit.jar BEFORE_JAR=out/before.jar bash bench/h200-round7.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$here"
top="${OUT:-$here/round7-out}"; R="$top/r7"; mkdir -p "$R"
export JAVA="${JAVA:-$here/runtime/bin/java}" JAR="${JAR:-$here/out/gdrkit.jar}"
export BEFORE_JAR="${BEFORE_JAR:-$here/out/before.jar}"
MPI_BIN="$R/allreduce_timing"
command -v mpicc >/dev/null 2>&1 && mpicc -O2 -o "$MPI_BIN" bench/mpi/allreduce_timing.c 2> "$R/mpicc-err.txt"
( OUT="$R/sweep" MPI_BIN="$MPI_BIN" MIN="${SWEEP_MIN:-8}" MAX=16777216 F="${SWEEP_F:-8}" ITERS="${ITERS:-20}" WARM="${WARM:-5}" RUNS=3 ROTATE=1 \
    VARIANTS="${SWEEP_VARIANTS:-ib ib+gdrkit.coll.direct.bytes=1048576 ib-before+gdrkit.coll.direct.bytes=1048576 ib-before socket}" \
    timeout "${SWEEP_LIMIT:-420}" bash bench/coll-peers.sh ) > "$R/sweep.log" 2>&1
[ -n "${SKIP_LAT:-}" ] || ( OUT="$R/lat" MPI_BIN="$MPI_BIN" VARIANTS="default direct1m" \
    MPI_BINDS=core RUNS=3 timeout "${LAT_LIMIT:-150}" bash bench/h200-coll-lat.sh ) > "$R/lat.log" 2>&1
rm -f "$MPI_BIN"
# '=' is refused in returned names
find "$R" -name '*=*' | while read -r f; do mv "$f" "${f//=/-}"; done
tar -C "$top" -czf "$top/r7.tgz" r7 && rm -rf "$R"
