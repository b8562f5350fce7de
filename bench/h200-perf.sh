#!/usr/bin/env bash
# Every GPU measurement of issue 16 (and the in-JVM rows) on a CUDA host, 3 runs each; results under $OUT.
# Needs: cli/target/gdrkit.jar (JAR=...) and a Java 25 runtime (JAVA=..., default ./runtime/bin/java), e.g.
#   $JAVA_HOME/bin/jlink --add-modules java.base,java.logging,java.management,jdk.unsupported,java.naming,jdk.jfr \
#     --output runtime --strip-debug --no-header-files --no-man-pages --compress=zip-9
# PARTS picks what runs (default all): gpu (gpu-path: GDR, host bounce and the pinned cuMemcpy limit, same run,
# into gpu-path.txt; perf write_bw/read_bw --mem gpu:0 into perf-gpu.jsonl), sim (simulated-GPU WRITE beside the
# host WRITE, sim.jsonl), injvm (the in-JVM rows with --baseline, injvm.jsonl), profile (JFR of the real-GPU WRITE,
# gpu-write.jfr). env.txt: GPU, driver, CPUs. Summarize with python3 docs/perf-summary.py.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
OUT="${OUT:-$here/h200-out}"
JAVA="${JAVA:-$here/runtime/bin/java}"
JAR="${JAR:-$here/cli/target/gdrkit.jar}"
RUNS="${RUNS:-3}"
PARTS="${PARTS:-gpu sim injvm profile}"
SIZES="${SIZES:-65536 1048576 4194304 67108864}"
mkdir -p "$OUT"
g() { timeout "${T:-120}" "$JAVA" --enable-native-access=ALL-UNNAMED ${JOPTS:-} -jar "$JAR" "$@"; }
iters() { case "$1" in 65536) echo 2000;; 1048576) echo 400;; 4194304) echo 100;; *) echo 12;; esac; }
has() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
tag() { sed "s/^{/{\"label\":\"$1\",\"run\":$2,/"; }
{ date -u; nproc; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
    --format=csv 2>&1; "$JAVA" -version 2>&1; echo "parts: $PARTS"; } > "$OUT/env.txt"
profile() {
  JOPTS="-XX:StartFlightRecording=filename=$OUT/gpu-write.jfr,settings=profile" \
    g perf write_bw --loopback --mem gpu:0 -s 1048576 -n 2000 --json >> "$OUT/jfr-run.jsonl" 2>&1
}
for run in $(seq 1 "$RUNS"); do
  if has gpu; then
    for s in $SIZES; do
      n=$(iters "$s")
      echo "== run $run gpu-path -s $s -n $n" >> "$OUT/gpu-path.txt"
      g gpu-path --gpu cuda:0 -s "$s" -n "$n" >> "$OUT/gpu-path.txt" 2>&1 || echo "rc=$? (gpu-path $s)" >> "$OUT/gpu-path.txt"
      for t in write_bw read_bw; do
        g perf "$t" --loopback --mem gpu:0 -s "$s" -n "$n" --buffer $((2 * s > 8388608 ? 2 * s : 8388608)) --json \
          2>> "$OUT/perf-gpu.err" | tag "${t}_gpu_$s" "$run" >> "$OUT/perf-gpu.jsonl"
      done
    done
  fi
  if has sim; then
    g perf write_bw --loopback -s 1048576 -n 2000 --json 2>> "$OUT/sim.err" | tag write_bw_host_1m "$run" >> "$OUT/sim.jsonl"
    g perf write_bw --loopback --mem gpu -s 1048576 -n 2000 --json 2>> "$OUT/sim.err" | tag write_bw_simgpu_1m "$run" >> "$OUT/sim.jsonl"
  fi
  if has injvm; then
    # the in-JVM rows (host memory), each with its MemorySegment.copy / cache-line baseline from the same JVM
    for spec in "write_bw_1m perf write_bw --loopback -s 1048576 -n 5000 --baseline" \
                "write_bw_64 perf write_bw --loopback -s 64 -n 2000000" \
                "write_lat_8 perf write_lat --loopback -s 8 -n 100000 --baseline"; do
      set -- $spec; label=$1; shift
      g "$@" --json 2>> "$OUT/injvm.err" | tag "$label" "$run" >> "$OUT/injvm.jsonl"
    done
  fi
  [ "$run" = 1 ] && has profile && profile # after the first run: if time runs out, the profile is there
done
echo "done $(date -u)" >> "$OUT/env.txt"
