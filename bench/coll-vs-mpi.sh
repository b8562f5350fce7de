#!/usr/bin/env bash
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
# One collective against OpenMPI on this host: the same op, ranks and sizes, OpenMPI (bench/mpi/coll_timing.c, built
# with mpicc into $OUT) and `gdrkit coll` back to back in each of RUNS runs, the order alternating from run to run.
# JSON lines per size into $OUT/openmpi.jsonl and $OUT/gdrkit.jsonl (each tagged with its run); then
# bench/coll-vs-mpi-table.py prints, per size, the time per call min / median / max of each side and the median of
# the per-run ratios gdrkit / OpenMPI (above 1: gdrkit slower), also into $OUT/table.md.
#   bench/coll-vs-mpi.sh                                   allreduce, 2 ranks, 8 B .. 16 MiB, 3 runs, shm
#   OP=allgather NP=4 MAX=1048576 bench/coll-vs-mpi.sh
#   FABRIC=tcp NP=4 bench/coll-vs-mpi.sh                   OpenMPI --mca btl tcp,self against gdrkit --fabric tcp
#   FABRIC=tcp NETNS=1 NP=2 bench/coll-vs-mpi.sh           half the ranks in a network namespace behind a veth pair
# Environment: OP (allreduce; allgather, reduce_scatter, broadcast, reduce, alltoall, sendrecv), NP (2), MIN (8),
# MAX (16777216), F (8), ITERS (20), WARM (5), RUNS (3), FABRIC (shm: OpenMPI's vader, gdrkit --fabric shm; tcp:
# OpenMPI --mca btl tcp,self, gdrkit --fabric tcp with its shared-memory direct rounds off, so that no byte of either
# goes through shared memory), NETNS (0; 1: ranks 0..NP/2-1 here and the rest in a network namespace joined by a veth
# pair, as two hosts: OpenMPI --mca btl tcp,vader,self, gdrkit over the TCP fabric with each side named a host of
# its own (GDRKIT_HOST_ID), so both use shared memory within a side and TCP between the sides; needs root, iproute2
# and an even NP, implies FABRIC=tcp, skipped with the reason otherwise),
# GDRKIT_ARGS (more `coll` options, e.g. "--transport socket"), MPI_ARGS (more mpirun options), LIMIT (300 s per
# call), JAR (cli/target/gdrkit.jar), OUT (default ${TMPDIR:-/tmp}/gdrkit-bench/coll-vs-mpi-<time>), JAVA /
# JAVA_HOME (bench/lib.sh). Progress on stderr. Exits non-zero when any run failed or any element was wrong.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
OP="${OP:-allreduce}"; NP="${NP:-2}"; MIN="${MIN:-8}"; MAX="${MAX:-16777216}"; F="${F:-8}"; ITERS="${ITERS:-20}"
WARM="${WARM:-5}"; RUNS="${RUNS:-3}"; FABRIC="${FABRIC:-shm}"; NETNS="${NETNS:-0}"; LIMIT="${LIMIT:-300}"
GDRKIT_ARGS="${GDRKIT_ARGS:-}"; MPI_ARGS="${MPI_ARGS:-}"
case "$OP" in
  allreduce|allgather|reduce_scatter|broadcast|reduce|alltoall|sendrecv) ;;
  reduce-scatter) OP=reduce_scatter ;;
  *) die "OP='$OP' is not allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall or sendrecv" 2 ;;
esac
for v in NP MIN MAX F ITERS WARM RUNS LIMIT; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v='${!v}' is not a whole number" 2
done
[ "$NP" -ge 2 ] || die "NP=$NP: at least 2 ranks" 2
[ "$F" -ge 2 ] || die "F=$F: the size factor is at least 2" 2
[ "$MIN" -ge 1 ] && [ "$MAX" -ge "$MIN" ] || die "MIN=$MIN MAX=$MAX: need 1 <= MIN <= MAX" 2
case "$FABRIC" in shm|tcp) ;; *) die "FABRIC='$FABRIC' is not shm or tcp" 2 ;; esac
need mpirun mpicc python3 timeout
bench_jar
bench_out coll-vs-mpi
{ date -u; echo "processors: $(nproc)"; uptime; "$JAVA" -version 2>&1; mpirun --version 2>&1 | head -n 1
  echo "OP=$OP NP=$NP MIN=$MIN MAX=$MAX F=$F ITERS=$ITERS WARM=$WARM RUNS=$RUNS FABRIC=$FABRIC NETNS=$NETNS"
  echo "GDRKIT_ARGS=$GDRKIT_ARGS MPI_ARGS=$MPI_ARGS JAR=$JAR"; } > "$OUT/host.txt"
: > "$OUT/openmpi.jsonl"; : > "$OUT/gdrkit.jsonl"

MPI_BIN="$OUT/coll_timing"
step "building $MPI_BIN with mpicc" mpicc -O2 -o "$MPI_BIN" "$REPO/bench/mpi/coll_timing.c" -lm

read -r -a gargs <<< "$GDRKIT_ARGS"
read -r -a margs <<< "$MPI_ARGS"
mpi_net=(); gdr_net=()
if [ "$FABRIC" = tcp ]; then
  mpi_net=(--mca btl tcp,self)
  gdr_net=(--set gdrkit.coll.shm.direct=false)
fi

# NETNS=1: a namespace and a veth pair, removed on exit; the launchers reach the namespace through an ssh stand-in.
NS=""
netns_cleanup() { [ -z "$NS" ] || ip netns del "$NS" 2>/dev/null || true; }
if [ "$NETNS" = 1 ]; then
  skip() { say "NETNS=1 skipped: $1"; echo "NETNS=1 skipped: $1" >> "$OUT/host.txt"; exit 0; }
  [ "$(id -u)" = 0 ] || skip "needs root to make a network namespace"
  IP="$(command -v ip || true)"; [ -n "$IP" ] || skip "no iproute2 (ip) on PATH"
  [ $((NP % 2)) = 0 ] || die "NETNS=1 needs an even NP (half the ranks on each side), not $NP" 2
  # each side is a host of its own: OpenMPI uses vader within a side and TCP between the sides; gdrkit's ranks name
  # their side (GDRKIT_HOST_ID, set by the ssh stand-in below), so its collectives take shared memory within a side
  # and the TCP fabric between them (the hierarchical path when both sides have as many ranks)
  FABRIC=tcp; mpi_net=(--mca btl tcp,self); gdr_net=()
  NS="gdrkcvm$$"; VETH="gdrkcv$(( $$ % 100000 ))"; NET="10.$(( 90 + $$ % 30 )).$(( $$ / 30 % 250 ))."
  HERE="${NET}1"; THERE="${NET}2"
  "$IP" netns add "$NS" 2>>"$OUT/err.txt" || { NS=""; skip "cannot make a network namespace (see $OUT/err.txt)"; }
  trap netns_cleanup EXIT
  { "$IP" link add "${VETH}a" type veth peer name "${VETH}b" && "$IP" link set "${VETH}b" netns "$NS" \
    && "$IP" addr add "$HERE/30" dev "${VETH}a" && "$IP" -n "$NS" addr add "$THERE/30" dev "${VETH}b" \
    && "$IP" link set "${VETH}a" up && "$IP" -n "$NS" link set "${VETH}b" up && "$IP" -n "$NS" link set lo up; } \
    2>>"$OUT/err.txt" || skip "made a namespace but could not join it by a veth pair (see $OUT/err.txt)"
  # "here" runs the command in this namespace, any other host name is the namespace of that name
  printf '#!/bin/sh\nh=$1; shift\nexport GDRKIT_HOST_ID="netns-$h"\nif [ "$h" = here ]; then exec sh -c "$*"; fi\nexec %s netns exec "$h" sh -c "$*"\n' \
    "$IP" > "$OUT/netns-ssh"
  chmod +x "$OUT/netns-ssh"
  K=$((NP / 2))
  mpi_net+=(--host "here:$K,$NS:$K" --mca plm_rsh_agent "$OUT/netns-ssh" --mca oob_tcp_if_include "${NET}0/30"
    --mca btl_tcp_if_include "${NET}0/30")
  say "NETNS=1: ranks 0..$((K - 1)) here ($HERE), $K..$((NP - 1)) in namespace $NS ($THERE) over ${VETH}a/${VETH}b"
fi

tag() { sed "s/^{/{\"run\":$1,/"; }

mpi_run() { # run
  timeout "$LIMIT" mpirun --allow-run-as-root --oversubscribe -np "$NP" ${mpi_net[@]+"${mpi_net[@]}"} \
    ${margs[@]+"${margs[@]}"} "$MPI_BIN" "$OP" "$MIN" "$MAX" "$F" "$ITERS" "$WARM" 2>> "$OUT/err.txt" \
    > "$OUT/openmpi-run$1.jsonl" || return $?
  [ -s "$OUT/openmpi-run$1.jsonl" ] || { echo "OpenMPI run $1 printed no row" >> "$OUT/err.txt"; return 1; }
  tag "$1" < "$OUT/openmpi-run$1.jsonl" >> "$OUT/openmpi.jsonl"
}

gdrkit_run() { # run
  local coll=(coll "$OP" --fabric "$FABRIC" -b "$MIN" -e "$MAX" -f "$F" -n "$ITERS" -w "$WARM" --json
    ${gdr_net[@]+"${gdr_net[@]}"} ${gargs[@]+"${gargs[@]}"})
  local out="$OUT/gdrkit-run$1.jsonl"
  if [ -n "$NS" ]; then
    # rank 0 prints the rows; each rank writes its own file, the launcher's output goes to err.txt
    local q="" a
    for a in "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" "${coll[@]}" --bind route; do q+=" $(printf '%q' "$a")"; done
    timeout "$LIMIT" "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" launch -n "$K" --hosts "here,$NS" \
      --ssh "$OUT/netns-ssh" --bind "$HERE" -- sh -c "exec$q > '$OUT'/gdrkit-run$1-rank\$GDRKIT_RANK.jsonl" \
      >> "$OUT/err.txt" 2>&1 || return $?
    grep '^{' "$OUT/gdrkit-run$1-rank0.jsonl" > "$out" || true
  else
    timeout "$LIMIT" "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" "${coll[@]}" --np "$NP" \
      2>> "$OUT/err.txt" | grep '^{' > "$out" || return $?
  fi
  [ -s "$out" ] || { echo "gdrkit run $1 printed no row" >> "$OUT/err.txt"; return 1; }
  tag "$1" < "$out" >> "$OUT/gdrkit.jsonl"
}

failed=0
attempt() { # label fn run
  local label="$1" rc=0; shift
  say "$label"
  "$@" || rc=$?
  if [ "$rc" != 0 ]; then failed=$((failed + 1)); say "FAILED (exit $rc): $label; see $OUT/err.txt"; fi
}
for run in $(seq 1 "$RUNS"); do
  echo "run $run start: $(uptime)" >> "$OUT/host.txt"
  m="run $run/$RUNS: OpenMPI $OP, $NP ranks, $FABRIC"; g="run $run/$RUNS: gdrkit $OP, $NP ranks, $FABRIC"
  if [ $((run % 2)) = 1 ]; then attempt "$m" mpi_run "$run"; attempt "$g" gdrkit_run "$run"
  else attempt "$g" gdrkit_run "$run"; attempt "$m" mpi_run "$run"; fi
  echo "run $run end: $(uptime)" >> "$OUT/host.txt"
  # the veth's counters show that the ranks' bytes crossed it
  [ -z "$NS" ] || echo "veth ${VETH}a after run $run: rx $(cat "/sys/class/net/${VETH}a/statistics/rx_bytes") B, tx $(cat "/sys/class/net/${VETH}a/statistics/tx_bytes") B" >> "$OUT/host.txt"
done
rc=0
python3 "$REPO/bench/coll-vs-mpi-table.py" "$OUT" > "$OUT/table.md" || rc=$?
cat "$OUT/table.md"
[ "$rc" = 0 ] || { say "the table says some elements were wrong or a row is missing (exit $rc)"; exit "$rc"; }
[ "$failed" = 0 ] || die "$failed of $((2 * RUNS)) runs failed (see $OUT/err.txt)"
say "done: $OUT/table.md"
