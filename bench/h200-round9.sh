#!/usr/bin/env bash
# The ninth session's device calls (2026-12-02).
#   MODE=staging: the NIC stand-in's staged writes across neighbouring allocations (CudaNicStagingTest, JUnit
#     console launcher) with the gpu jar before the fix (out/before/gdrkit-gpu.jar) and after (out/gdrkit-gpu.jar),
#     CudaBindingTest after; then the defaults with buffers on cuda:0: every operation 8 B .. 16 MiB over shm,
#     coll reduce 4 and 16 MiB REPEAT times (it failed once at 16 MiB in the eighth session), allreduce over tcp
#     (the connect messages carry the software MTU since 4366902); then 8 B .. 4 KiB allreduce latency with the
#     defaults against OpenMPI (bench/h200-coll-lat.sh, 3 runs).
#   MODE=jfr: a JFR profile (settings=profile) of every process of `coll allreduce --np 2`, 16 MiB, -n ITERS, with
#     the defaults over shm and over tcp: $R/jfr-<fabric>/<pid>.jfr, plus the command's JSON lines.
#   MODE=final: MODE=tcp's sweep (set MIN, ITERS, VARIANTS), then bench/h200-coll-lat.sh with LAT_VARIANTS (default
#     "default direct256k"), 8 B .. 4 KiB, 5000 iterations, 3 runs, OpenMPI beside.
#     (MIN, MAX, F, ITERS and WARM are set for it: the tenth session's first call let the sweep's leak in, and it failed)
#   MODE=tcp: VARIANTS over bench/coll-peers.sh, 16 B .. 16 MiB, OpenMPI beside, RUNS (3) runs, rotating order.
# Results tarred to $OUT/$TAG.tgz (TAG default r9), '=' in names made '-'.
#   JAVA=runtime/bin/java JAR=out/gdrkit.jar bash bench/h200-round9.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$here"
tag="${TAG:-r9}"; top="${OUT:-$here/round9-out}"; R="$top/$tag"; mkdir -p "$R"
export JAVA="${JAVA:-$here/runtime/bin/java}" JAR="${JAR:-$here/out/gdrkit.jar}"
{ date -u; nproc; uptime; nvidia-smi -L 2>&1; } > "$R/env.txt"
if [ "${MODE:-staging}" = staging ]; then
  for which in before after; do
    gj=out/gdrkit-gpu.jar; [ "$which" = before ] && gj=out/before/gdrkit-gpu.jar
    sel=(--select-class io.gdrkit.gpu.cuda.CudaNicStagingTest)
    [ "$which" = after ] && sel+=(--select-class io.gdrkit.gpu.cuda.CudaBindingTest)
    timeout 120 "$JAVA" --enable-native-access=ALL-UNNAMED -jar out/junit.jar execute --disable-banner \
      --details=tree --class-path "$gj:out/gdrkit-verbs.jar:out/gdrkit-core.jar:out/gpu-test-classes" "${sel[@]}" \
      > "$R/junit-$which.txt" 2>&1
    echo "rc=$?" >> "$R/junit-$which.txt"
  done
  for op in allreduce reduce-scatter allgather broadcast reduce alltoall sendrecv; do
    timeout 120 "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" coll "$op" --np 2 --mem gpu --gpu cuda:0 \
      --fabric shm -b 8 -e 16777216 -f 8 -n 10 -w 3 --json 2>> "$R/gpu-err.txt" \
      | sed "s/^{/{\"label\":\"gpu-$op-shm\",/" >> "$R/gpu.jsonl"
    echo "rc=$? $op" >> "$R/gpu-err.txt"
  done
  for i in $(seq 1 "${REPEAT:-4}"); do
    timeout 100 "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" coll reduce --np 2 --mem gpu --gpu cuda:0 \
      --fabric shm -b 4194304 -e 16777216 -f 4 -n 5 -w 2 --json 2>> "$R/gpu-err.txt" \
      | sed "s/^{/{\"label\":\"gpu-reduce-repeat-$i\",/" >> "$R/gpu.jsonl"
    echo "rc=$? reduce repeat $i" >> "$R/gpu-err.txt"
  done
  timeout 120 "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" coll allreduce --np 2 --mem gpu --gpu cuda:0 \
    --fabric tcp -b 8 -e 16777216 -f 8 -n 10 -w 3 --json 2>> "$R/gpu-err.txt" \
    | sed "s/^{/{\"label\":\"gpu-allreduce-tcp\",/" >> "$R/gpu.jsonl"
  echo "rc=$? allreduce tcp" >> "$R/gpu-err.txt"
  ( OUT="$R/lat" RUNS=3 VARIANTS=default LIMIT=100 timeout "${LAT_TOTAL:-200}" bash bench/h200-coll-lat.sh ) \
    > "$R/lat.log" 2>&1
elif [ "${MODE}" = jfr ]; then
  for fab in shm tcp; do
    mkdir -p "$R/jfr-$fab"
    JDK_JAVA_OPTIONS="-XX:StartFlightRecording=settings=profile,filename=$R/jfr-$fab/%p.jfr" timeout 150 \
      "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" coll allreduce --np 2 --fabric "$fab" -b 16777216 \
      -e 16777216 -n "${ITERS:-200}" -w 20 --json > "$R/jfr-$fab/coll.jsonl" 2> "$R/jfr-$fab/err.txt"
    echo "rc=$?" >> "$R/jfr-$fab/err.txt"
  done
else
  M="$R/allreduce_timing"; command -v mpicc >/dev/null && mpicc -O2 -o "$M" bench/mpi/allreduce_timing.c 2> "$R/mpicc-err.txt"
  ( OUT="$R/final" MPI_BIN="$M" MIN="${MIN:-16}" MAX=16777216 F=4 ITERS="${ITERS:-20}" WARM=5 RUNS="${RUNS:-3}" ROTATE=1 LIMIT=90 \
      VARIANTS="${VARIANTS:-ib ib-tcp socket}" \
      timeout "${TOTAL:-520}" bash bench/coll-peers.sh ) > "$R/final.log" 2>&1
  rm -f "$M"
  if [ "${MODE}" = final ]; then
    ( OUT="$R/lat" RUNS=3 MIN=8 MAX=4096 F=8 ITERS=5000 WARM=5000 VARIANTS="${LAT_VARIANTS:-default direct256k}" LIMIT=100 \
        timeout "${LAT_TOTAL:-200}" bash bench/h200-coll-lat.sh ) > "$R/lat.log" 2>&1
    rm -f "$R/lat/allreduce_timing"
  fi
fi
find "$R" -name '*=*' | while read -r f; do mv "$f" "${f//=/-}"; done
tar -C "$top" -czf "$top/$tag.tgz" "$tag" && rm -rf "$R"
