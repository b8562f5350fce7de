#!/bin/bash
# Real-GPU shmem measurements (docs/SHMEM.md): builds nothing. Runs gdrkit's shmem-perf with the CUDA kernels
# (kernels.cu: shmem_device.cuh) against software NICs on this host, both control paths, 3 runs each, and writes
# raw JSON lines plus a text summary under $OUT.
#
#   JAVA=/path/to/jlink-runtime/bin/java JAR=/path/to/gdrkit.jar OUT=/some/dir bench/h200-shmem.sh [GPU]
#
# GPU defaults to cuda:0 (PACK=1 leaves one tar file in OUT). SECTIONS picks parts (default "floor lat bw moe nofence sim"), RUNS the repeats (3). Every
# run is bounded by `timeout`; a failed run is recorded (rc and its output) and the script goes on. Each measurement
# is JSON only (3 runs; no extra text run): `shmem-perf ... --report DIR` renders one as a report folder. All
# sections take about 6 minutes: under a per-command limit run SECTIONS="floor lat nofence moe", then
# SECTIONS="bw sim", with the same OUT (files append).
set -u
GPU=${1:-cuda:0}
JAVA=${JAVA:-java}
JAR=${JAR:-cli/target/gdrkit.jar}
OUT=${OUT:-out/h200-shmem}
mkdir -p "$OUT"
RUNS=${RUNS:-3}
# NIC threads and the proxy spin: the host has cores to spare, and parking would be measured instead of the path
IDLE=${IDLE:-spin}
SECTIONS=${SECTIONS:-"floor lat bw moe nofence sim"}
# JAVA_OPTS: extra JVM options (the test double of libcuda: -Dgdrkit.cuda.library=/path/libfakecuda.so)
G() { timeout 240 "$JAVA" --enable-native-access=ALL-UNNAMED ${JAVA_OPTS:-} -jar "$JAR" "$@"; }
on() { case " $SECTIONS " in *" $1 "*) return 0;; esac; return 1; }
log() { echo "$*" | tee -a "$OUT/summary.txt"; }

{
  date -u; uname -a; nproc
  nvidia-smi -L 2>&1; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
  "$JAVA" -version 2>&1
} > "$OUT/host.txt"

# one measurement: NAME, then shmem-perf arguments; appends JSON lines to $OUT/NAME.jsonl and text to summary
m() {
  local name=$1; shift
  for r in $(seq 1 "$RUNS"); do
    local t0=$(date +%s%N)
    G shmem-perf "$@" --gpu "$GPU" --idle "$IDLE" --json > "$OUT/tmp.json" 2> "$OUT/$name.run$r.err"
    local rc=$?
    printf '{"name":"%s","gpu":"%s","run":%d,"rc":%d,"args":"%s","wall_ms":%d,"out":' "$name" "$GPU" "$r" "$rc" \
      "$*" $(( ($(date +%s%N) - t0) / 1000000 )) >> "$OUT/$name.jsonl"
    if [ -s "$OUT/tmp.json" ] && head -c 1 "$OUT/tmp.json" | grep -q '{'; then
      tr -d '\n' < "$OUT/tmp.json" >> "$OUT/$name.jsonl"
    else
      echo -n 'null' >> "$OUT/$name.jsonl"
    fi
    echo '}' >> "$OUT/$name.jsonl"
    [ -s "$OUT/$name.run$r.err" ] || rm -f "$OUT/$name.run$r.err"
    log "$name run $r rc=$rc"
    [ "$rc" = 0 ] || break # a failure is recorded once, not waited out three times
  done
}

if on floor; then
log "== floor: a kernel that only rings pinned host memory and polls for the CPU's answer"
m ring_rtt ring_rtt -n 10000
fi

for mode in ibrc ibgda; do
  if on lat; then
  log "== $mode latency"
  m "put_lat_$mode" put_lat --mode "$mode" -b 8 -e 65536 -n 1000
  m "get_lat_$mode" get_lat --mode "$mode" -b 8 -e 65536 -n 1000
  m "put_signal_lat_$mode" put_signal_lat --mode "$mode" -b 8 -e 4096 -n 1000
  m "atomic_lat_$mode" atomic_lat --mode "$mode" -n 1000
  fi
  on bw || continue
  log "== $mode bandwidth and message rate"
  m "put_bw_$mode" put_bw --mode "$mode" -b 64 -e 262144 -n 2048 --blocks 4 --threads 32
  for th in 1 4 16 64 256; do
    m "msg_rate_${mode}_t$th" msg_rate --mode "$mode" -b 8 -e 8 -n 8192 --blocks 1 --threads "$th"
  done
  for v in warp block; do
    m "put_bw_${mode}_$v" put_bw --mode "$mode" -b 64 -e 65536 -n 2048 --blocks 4 --threads 64 --variant "$v"
  done
done

if on moe; then
log "== MoE dispatch/combine (kernel shmem_moe), PEs as threads of one JVM on the one GPU"
for np in 2 4 8; do for mode in ibrc ibgda; do
  for r in $(seq 1 "$RUNS"); do
    G shmem-moe --gpu "$GPU" --np "$np" --mode "$mode" --tokens 64 --bytes 4096 --json >> "$OUT/moe.jsonl" 2>> "$OUT/moe.err"
    log "moe np=$np $mode run $r rc=$?"
  done
done; done
log "== MoE with the PEs as 2 processes sharing the one GPU (a CUDA context each), NICs on the shm fabric"
for mode in ibrc ibgda; do
  for r in $(seq 1 "$RUNS"); do
    # 90 s: two contexts on one GPU are time-sliced, not concurrent; a run that hangs is not repeated
    timeout 90 "$JAVA" --enable-native-access=ALL-UNNAMED ${JAVA_OPTS:-} -jar "$JAR" shmem-moe --gpu "$GPU" --np 2 \
      --fabric shm --mode "$mode" --tokens 64 --bytes 4096 --json >> "$OUT/moe_procs.jsonl" 2>> "$OUT/moe_procs.err"
    rc=$?
    log "moe procs np=2 $mode run $r rc=$rc"
    [ "$rc" = 0 ] || break
  done
done
fi

if on nofence; then
log "== negative control: no fence between the WQE and the doorbell (IBGDA); does a stale WQE show on this GPU?"
m put_lat_ibgda_nofence put_lat --mode ibgda --no-fence -b 8 -e 4096 -n 2000
m put_bw_ibgda_nofence put_bw --mode ibgda --no-fence -b 8 -e 64 -n 8192 --blocks 8 --threads 128
fi

if on sim; then
log "== the same tests on the simulated H200 on this host, for comparison"
GPU=sim:h200 m sim_put_lat_ibrc put_lat --mode ibrc -b 8 -e 4096 -n 300
GPU=sim:h200 m sim_put_lat_ibgda put_lat --mode ibgda -b 8 -e 4096 -n 300
fi

rm -f "$OUT/tmp.json"
log "done: $(date -u)"
# PACK=1: one file instead of many (the device tool brings back only a few files of a run)
if [ "${PACK:-0}" = 1 ]; then
  tar -C "$OUT" -czf /tmp/h200-shmem.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/h200-shmem.tgz "$OUT/"
fi
