#!/usr/bin/env bash
# The eighth session's device calls (2026-12-02): rails. IbTransport with gdrkit.coll.nics software NICs per rank
# (each NIC its own thread and, on tcp, its own fabric port; channel c on NIC c mod nics) over shm and over tcp,
# against SocketTransport, bench/coll-peers.sh, 3 runs, rotating order.
#   MODE=rails (default): 256 KiB .. 16 MiB factor 4, no OpenMPI (the goal is IbTransport against SocketTransport);
#     VARIANTS picks the rows (default: nics 1, 2, 4 over shm and tcp, more channels on one NIC, socket).
#   MODE=final: 16 B .. 16 MiB factor 4 with OpenMPI beside: the defaults (auto NICs and reduce threads) over shm and
#     tcp, the same with one NIC and one reduce thread (the defaults before), and socket; GPU=1 adds the defaults
#     with buffers on cuda:0 (every operation over shm, allreduce over tcp), wrong elements counted; GPU=reduce
#     instead isolates coll reduce's failure at 16 MiB on cuda:0 (NICs, channels, GDR on and off).
# Results tarred to $OUT/$TAG.tgz (TAG default r8), '=' in names made '-'.
#   JAVA=runtime/bin/java JAR=out/gdrkit.jar bash bench/h200-round8.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"; cd "$here"
tag="${TAG:-r8}"; top="${OUT:-$here/round8-out}"; R="$top/$tag"; mkdir -p "$R"
export JAVA="${JAVA:-$here/runtime/bin/java}" JAR="${JAR:-$here/out/gdrkit.jar}"
if [ "${MODE:-rails}" = final ]; then
  M="$R/allreduce_timing"; command -v mpicc >/dev/null && mpicc -O2 -o "$M" bench/mpi/allreduce_timing.c 2> "$R/mpicc-err.txt"
  ( OUT="$R/final" MPI_BIN="$M" MIN=16 MAX=16777216 F=4 ITERS=20 WARM=5 RUNS=3 ROTATE=1 LIMIT=90 \
      VARIANTS="${VARIANTS:-ib ib+gdrkit.coll.nics=1+gdrkit.coll.reduce.threads=1 ib-tcp ib-tcp+gdrkit.coll.nics=1+gdrkit.coll.reduce.threads=1 socket}" \
      timeout "${TOTAL:-520}" bash bench/coll-peers.sh ) > "$R/final.log" 2>&1
  rm -f "$M"
  if [ "${GPU:-}" = reduce ]; then
    # coll reduce with buffers on cuda:0 failed at 16 MiB with 2 NICs (r8d: CUDA_ERROR_INVALID_VALUE in the NIC's
    # write): the same with 1 NIC, 1 NIC and 2 channels, 2 NICs, 4 and 16 MiB, to see what it needs
    for v in "gdrkit.coll.nics=1" "gdrkit.coll.nics=1 NCCL_MIN_NCHANNELS=2" "gdrkit.coll.nics=2" \
             "gdrkit.coll.nics=2 gdrkit.coll.cuda.gdr=false"; do
      p=(); e=(); for kv in $v; do case "$kv" in NCCL_*) e+=("$kv") ;; *) p+=("-D$kv") ;; esac; done
      timeout 100 env "${e[@]}" "$JAVA" "${p[@]}" --enable-native-access=ALL-UNNAMED -jar "$JAR" coll reduce --np 2 \
        --mem gpu --gpu cuda:0 --fabric shm -b 4194304 -e 16777216 -f 4 -n 5 -w 2 --json 2>> "$R/gpu-err.txt" \
        | sed "s/^{/{\"label\":\"reduce $v\",/" >> "$R/gpu.jsonl"
      echo "rc=$? $v" >> "$R/gpu-err.txt"
    done
  elif [ -n "${GPU:-}" ]; then
    # the same defaults with buffers on the H200 (2 ranks on cuda:0): every operation over shm, allreduce over tcp;
    # wrong elements counted by coll itself, nics/channels in every row
    for op in allreduce reduce-scatter allgather broadcast reduce alltoall sendrecv; do
      timeout 120 "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" coll "$op" --np 2 --mem gpu --gpu cuda:0 \
        --fabric shm -b 8 -e 16777216 -f 8 -n 10 -w 3 --json 2>> "$R/gpu-err.txt" \
        | sed "s/^{/{\"label\":\"gpu-$op-shm\",/" >> "$R/gpu.jsonl"
    done
    timeout 120 "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" coll allreduce --np 2 --mem gpu --gpu cuda:0 \
      --fabric tcp -b 8 -e 16777216 -f 8 -n 10 -w 3 --json 2>> "$R/gpu-err.txt" \
      | sed "s/^{/{\"label\":\"gpu-allreduce-tcp\",/" >> "$R/gpu.jsonl"
  fi
else
  ( OUT="$R/rails" SKIP_MPI=1 MIN=262144 MAX=16777216 F=4 ITERS=20 WARM=5 RUNS=3 ROTATE=1 LIMIT=90 \
      VARIANTS="${VARIANTS:-ib ib+gdrkit.coll.nics=2 ib+gdrkit.coll.nics=4 ib+NCCL_MIN_NCHANNELS=4 ib-tcp ib-tcp+gdrkit.coll.nics=2 ib-tcp+gdrkit.coll.nics=4 ib-tcp+gdrkit.coll.nics=4+gdrkit.ib.software.mtu=65536 socket}" \
      timeout "${TOTAL:-480}" bash bench/coll-peers.sh ) > "$R/rails.log" 2>&1
fi
find "$R" -name '*=*' | while read -r f; do mv "$f" "${f//=/-}"; done
tar -C "$top" -czf "$top/$tag.tgz" "$tag" && rm -rf "$R"
