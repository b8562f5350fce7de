#!/usr/bin/env bash
# The fifth session's one device call (2026-12-01): three measurements the lead needed in one go, into $OUT/r5 and
# then one tarball (the device tool returns few files).
#  1. lat: small allreduce latency, shared-memory direct rounds with and without PAUSE in the spin
#     (gdrkit.coll.spin.pause) and pinned (gdrkit.coll.bind; LAT_VARIANTS), OpenMPI bound to cores (its default) and
#     unbound (bench/h200-coll-lat.sh). LAT_RUNS runs (3).
#  2. big: 16 MiB allreduce, 2 ranks, shm fabric, host buffers, with copy engines and reduce threads on and off
#     (bench/h200-coll.sh HOST_ABLATE), OpenMPI in the same runs.
#     SKIP_BIG=1 leaves it out.
#  3. ibsock: IbTransport against SocketTransport, 256 KiB .. 16 MiB (bench/coll-peers.sh, no OpenMPI);
#     SKIP_IBSOCK=1 leaves it out.
#  4. xover (XOVER=1): where the shared-memory direct round stops beating the ring, 8 KiB .. 1 MiB factor 2, the
#     XOVER_VARIANTS (default: the default, 1 MiB, against nodirect, the ring), OpenMPI beside.
#   JAVA=runtime/bin/java JAR=out/gdrkit.jar bash bench/h200-round5.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$here"
R="${OUT:-$here/round5-out}/r5"; mkdir -p "$R"
export JAVA="${JAVA:-$here/runtime/bin/java}" JAR="${JAR:-$here/out/gdrkit.jar}"
( OUT="$R/lat" VARIANTS="${LAT_VARIANTS:-default nopause}" MPI_BINDS="${MPI_BINDS:-core none}" RUNS="${LAT_RUNS:-3}" \
    timeout "${LAT_LIMIT:-240}" bash bench/h200-coll-lat.sh ) > "$R/lat.log" 2>&1
[ -n "${SKIP_BIG:-}" ] || ( OUT="$R/big" SKIP_GPU=1 MIN=16777216 MAX=16777216 ITERS=20 WARM=5 RUNS=3 \
    HOST_ABLATE="${BIG_ABLATE:-engines4 red4}" timeout 200 bash bench/h200-coll.sh ) > "$R/big.log" 2>&1
[ -n "${SKIP_IBSOCK:-}" ] || ( OUT="$R/ibsock" SKIP_MPI=1 MIN=262144 MAX=16777216 F=4 RUNS=3 VARIANTS="${IBSOCK_VARIANTS:-ib socket}" ROTATE=1 \
    timeout 120 bash bench/coll-peers.sh ) > "$R/ibsock.log" 2>&1
[ -z "${XOVER:-}" ] || ( OUT="$R/xover" MIN=8192 MAX=1048576 F=2 ITERS=500 WARM=100 RUNS=3 MPI_BINDS=core \
    VARIANTS="${XOVER_VARIANTS:-default nodirect}" timeout 300 bash bench/h200-coll-lat.sh ) > "$R/xover.log" 2>&1
find "$R" -type f -perm -u+x -name 'allreduce_timing' -delete
tar -C "${OUT:-$here/round5-out}" -czf "${OUT:-$here/round5-out}/r5.tgz" r5 && rm -rf "$R"
