#!/usr/bin/env bash
# Collectives side by side, same host, same ranks, same sizes, one run (issue 12, item 7):
# OpenMPI MPI_Allreduce, gdrkit coll allreduce over IbTransport (software NICs, shm fabric) and over
# SocketTransport (TCP loopback). Three runs each, interleaved, JSON lines into $OUT (default ./coll-peers-out).
#   JAVA=/path/to/java JAR=cli/target/gdrkit.jar MPI_BIN=bench/mpi/allreduce_timing bench/coll-peers.sh
# VARIANTS picks the gdrkit rows: ib (coll's default progress: chosen by the host's processors, nic_progress), ib-tcp (the same
# over the TCP fabric), socket, and ib-dedicated (the earlier default: a NIC thread per rank, no JIT warm-up) for a
# before/after in the same run. SKIP_MPI=1 leaves the OpenMPI rows out (IbTransport against SocketTransport only).
# ib-before: the ib row with another build's jar (BEFORE_JAR=/path/to/gdrkit.jar), for an A/B of two commits.
# ib-before+KEY=VAL[+...]: the before jar with settings, as ib+KEY=VAL takes them; ib-tcp+KEY=VAL[+...]: the same over
# the TCP fabric. ib-nojit: the ib row without the JIT warm-up.
# ib-nodirect: the ib row with the one-round small collectives off (gdrkit.coll.direct.bytes=0: the ring at every size).
# ib+KEY=VAL[+KEY=VAL...]: the ib row with settings, gdrkit.* as -D properties (the ranks inherit them) and NCCL_* in
# the environment, e.g. VARIANTS="ib ib+gdrkit.nic.batch=1 ib+NCCL_STEPS=4" (rows in gdrkit-<variant>.jsonl);
# copy engines: VARIANTS="ib+gdrkit.nic.copy.engines=1 ib+gdrkit.nic.copy.engines=4 socket" (1 = off).
set -uo pipefail
OUT="${OUT:-./coll-peers-out}"; mkdir -p "$OUT"
JAVA="${JAVA:-java}"; JAR="${JAR:-cli/target/gdrkit.jar}"; MPI_BIN="${MPI_BIN:-bench/mpi/allreduce_timing}"
NP="${NP:-2}"; MIN="${MIN:-8}"; MAX="${MAX:-16777216}"; F="${F:-8}"; ITERS="${ITERS:-10}"; WARM="${WARM:-3}"
RUNS="${RUNS:-3}"; LIMIT="${LIMIT:-150}"; VARIANTS="${VARIANTS:-ib socket ib-dedicated}"
{ nproc; uptime; } > "$OUT/host.txt"
if [ "${SKIP_MPI:-0}" = 1 ]; then
  echo "SKIP_MPI=1: OpenMPI rows not run" > "$OUT/openmpi-skipped.txt"
elif ! command -v mpirun >/dev/null 2>&1 || [ ! -x "$MPI_BIN" ]; then
  echo "no mpirun or no $MPI_BIN (mpicc -O2 -o $MPI_BIN bench/mpi/allreduce_timing.c): OpenMPI rows skipped" \
    | tee "$OUT/openmpi-skipped.txt" >&2
fi
for run in $(seq 1 "$RUNS"); do
  echo "run $run start: $(uptime)" >> "$OUT/host.txt"
  if [ ! -f "$OUT/openmpi-skipped.txt" ]; then
    timeout "$LIMIT" mpirun --allow-run-as-root --oversubscribe -np "$NP" "$MPI_BIN" "$MIN" "$MAX" "$F" "$ITERS" "$WARM" \
      | sed "s/^{/{\"run\":$run,/" >> "$OUT/openmpi.jsonl" 2>> "$OUT/err.txt"
  fi
  # ROTATE=1: run r starts at the r-th variant (wrapping), so no variant always runs first after OpenMPI (an order
  # effect of 2x was seen on the loaded 2-core VM: the same code ran slower as the first variant of every run)
  vs=($VARIANTS)
  if [ "${ROTATE:-0}" = 1 ]; then k=$(( (run - 1) % ${#vs[@]} )); vs=("${vs[@]:k}" "${vs[@]:0:k}"); fi
  for v in "${vs[@]}"; do
    t=ib; fab=shm; props=(); extra=(); envs=(); jar="$JAR"
    spec="$v" # ib-before+KEY=VAL: the before jar, then the ib+KEY=VAL settings
    case "$spec" in ib-before+*) jar="${BEFORE_JAR:?ib-before needs BEFORE_JAR}"; spec="ib+${spec#ib-before+}" ;;
      ib-tcp+*) fab=tcp; spec="ib+${spec#ib-tcp+}" ;; esac
    case "$spec" in
      ib+*) IFS=+ read -r -a kvs <<< "${spec#ib+}"
        for kv in "${kvs[@]}"; do
          case "$kv" in NCCL_*=*) envs+=("$kv") ;; gdrkit.*=*) props+=("-D$kv") ;;
            *) echo "variant $v: $kv is neither NCCL_*=... nor gdrkit.*=..." >&2; exit 2 ;; esac
        done ;;
      ib-before) jar="${BEFORE_JAR:?ib-before needs BEFORE_JAR}" ;;
      ib-nojit) extra=(--jit-warmup-ms 0) ;;
      socket) t=socket; fab=tcp ;;
      ib-tcp) fab=tcp ;;
      ib-nodirect) props=(-Dgdrkit.coll.direct.bytes=0) ;;
      ib-dedicated) props=(-Dgdrkit.nic.progress=dedicated); extra=(--jit-warmup-ms 0) ;;
    esac
    timeout "$LIMIT" env "${envs[@]}" "$JAVA" "${props[@]}" --enable-native-access=ALL-UNNAMED -jar "$jar" coll allreduce --np "$NP" \
      --transport "$t" --fabric "$fab" -b "$MIN" -e "$MAX" -f "$F" -n "$ITERS" -w "$WARM" "${extra[@]}" --json \
      | sed "s/^{/{\"run\":$run,/" >> "$OUT/gdrkit-$v.jsonl" 2>> "$OUT/err.txt"
  done
  echo "run $run end: $(uptime)" >> "$OUT/host.txt"
done
