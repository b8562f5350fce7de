#!/usr/bin/env bash
# Issue 16 on a CUDA host, second series (about 4-5 minutes on the H200 host): 3 runs of each, JSON lines under $OUT.
#   perf-gpu.jsonl   perf write_bw/read_bw --mem gpu:0 at 64 KiB .. 64 MiB (software NIC, both buffers on the GPU)
#   gpu-path.jsonl   gpu-path --json at the same sizes: GDR, host bounce (and, since p16gpu, the pipelined bounce)
#                    and the pinned cuMemcpyHtoD limit, same run
#                    (these lines are the crossover model's input: gdrkit model crossover --input gpu-path.jsonl)
#   injvm.jsonl      in-JVM rows: write_bw 1 MiB beside MemorySegment.copy (--baseline), write_bw 64 B message
#                    rate, write_lat 8 B (t_typical) beside the cache-line ping-pong
#   sim.jsonl        (part sim) the simulated-GPU WRITE (sim:h200) beside the host-memory WRITE, 1 and 4 MiB, and
#                    tcp/shm write_bw 1 MiB across processes beside the raw SocketChannel stream
#   check.jsonl      --check on GPU memory (the vis_verify kernel on the H200) for write/read/send_bw, and -b
#   model-*.txt/json gdrkit model crossover/topology on gpu-path.jsonl, model qps measured live (in-JVM, 1..16 QPs)
#   env.txt          GPU, driver, CPUs, load before and after
# Needs cli/target/gdrkit.jar (JAR=...) and a Java 25 runtime (JAVA=..., default ./runtime/bin/java), as
# bench/h200-perf.sh. RUNS (3), SIZES and PARTS (gpu path injvm sim check model) narrow it down.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
OUT="${OUT:-$here/h200-out}"
JAVA="${JAVA:-$here/runtime/bin/java}"
JAR="${JAR:-$here/cli/target/gdrkit.jar}"
RUNS="${RUNS:-3}"
PARTS="${PARTS:-gpu path injvm check model}"
SIZES="${SIZES:-65536 1048576 4194304 67108864}"
mkdir -p "$OUT"
g() { timeout "${T:-90}" "$JAVA" --enable-native-access=ALL-UNNAMED -jar "$JAR" "$@"; }
# messages per size: about 128 MiB .. 768 MiB per run; the warm-up is as long as the run (perf's default warm-up,
# up to 16 GiB, would take minutes on the GPU path)
iters() { case "$1" in 65536) echo 2000;; 1048576) echo 400;; 4194304) echo 100;; *) echo 12;; esac; }
has() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
tag() { sed "s/^{/{\"label\":\"$1\",\"run\":$2,/"; }
t0=$(date +%s)
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
    --format=csv 2>&1; "$JAVA" -version 2>&1; echo "parts: $PARTS  sizes: $SIZES  runs: $RUNS"; } > "$OUT/env.txt"
for run in $(seq 1 "$RUNS"); do
  for s in $SIZES; do
    n=$(iters "$s")
    buf=$((2 * s > 8388608 ? 2 * s : 8388608))
    if has gpu; then
      for t in write_bw read_bw; do
        g perf "$t" --loopback --mem gpu:0 -s "$s" -n "$n" --warmup "$n" --buffer "$buf" --json \
          2>> "$OUT/perf-gpu.err" | tag "${t}_gpu_$s" "$run" >> "$OUT/perf-gpu.jsonl"
      done
    fi
    if has path; then
      g gpu-path --gpu cuda:0 -s "$s" -n "$n" --json 2>> "$OUT/gpu-path.err" | tag "gpu_path_$s" "$run" \
        >> "$OUT/gpu-path.jsonl"
    fi
  done
  if has injvm; then
    g perf write_bw --loopback -s 1048576 -n 5000 --baseline --json 2>> "$OUT/injvm.err" \
      | tag write_bw_1m "$run" >> "$OUT/injvm.jsonl"
    g perf write_bw --loopback -s 64 -n 2000000 --json 2>> "$OUT/injvm.err" | tag write_bw_64 "$run" >> "$OUT/injvm.jsonl"
    g perf write_lat --loopback -s 8 -n 100000 --baseline --json 2>> "$OUT/injvm.err" \
      | tag write_lat_8 "$run" >> "$OUT/injvm.jsonl"
  fi
  if has sim; then
    for s in 1048576 4194304; do
      g perf write_bw --loopback -s "$s" -n 2000 --json 2>> "$OUT/sim.err" | tail -n 1 | tag "host_$s" "$run" \
        >> "$OUT/sim.jsonl"
      g perf write_bw --loopback -s "$s" -n 2000 --mem gpu --gpu sim:h200 --json 2>> "$OUT/sim.err" | tail -n 1 \
        | tag "simgpu_$s" "$run" >> "$OUT/sim.jsonl"
    done
    g socket-bw -s 1048576 -D 3 --json 2>> "$OUT/sim.err" | tag socket_bw "$run" >> "$OUT/sim.jsonl"
    for f in tcp shm; do
      g perf write_bw --fabric "$f" --loopback -s 1048576 -n 2000 --json 2>> "$OUT/sim.err" | tail -n 1 \
        | tag "${f}_1m" "$run" >> "$OUT/sim.jsonl"
    done
    g perf write_lat --fabric tcp --loopback -s 8 -n 20000 --json 2>> "$OUT/sim.err" | tail -n 1 \
      | tag tcp_lat8 "$run" >> "$OUT/sim.jsonl"
  fi
done
if has check; then
  # once each: the data checked on the H200 by the vis_verify kernel, and -b in host and GPU memory
  for t in write_bw read_bw send_bw; do
    g perf "$t" --loopback --mem gpu:0 -s 1048576 -n 100 --warmup 100 --check --json 2>> "$OUT/check.err" \
      | tag "check_gpu_$t" 1 >> "$OUT/check.jsonl"
    g perf "$t" --loopback --mem gpu:0 -b -s 1048576 -n 100 --warmup 100 --check --json 2>> "$OUT/check.err" \
      | tag "check_gpu_bidi_$t" 1 >> "$OUT/check.jsonl"
    g perf "$t" --loopback -b -s 1048576 -n 2000 --check --json 2>> "$OUT/check.err" \
      | tag "bidi_host_$t" 1 >> "$OUT/check.jsonl"
  done
fi
if has model; then
  if [ -s "$OUT/gpu-path.jsonl" ]; then
    g model crossover --input "$OUT/gpu-path.jsonl" > "$OUT/model-crossover.txt" 2>&1
    g model crossover --input "$OUT/gpu-path.jsonl" --json > "$OUT/model-crossover.json" 2>&1
    g model crossover --input "$OUT/gpu-path.jsonl" --hold-back 1048576 > "$OUT/model-crossover-hb1m.txt" 2>&1
    g model topology --input "$OUT/gpu-path.jsonl" > "$OUT/model-topology.txt" 2>&1
  fi
  T=120 g model qps --qps 1,2,4,8,16 -s 65536 -n 20000 --runs 3 > "$OUT/model-qps.txt" 2>&1
  T=120 g model crossover --gpu sim:h200 --runs 3 > "$OUT/model-crossover-sim.txt" 2>&1
fi
{ uptime; echo "done $(date -u), $(( $(date +%s) - t0 )) s"; } >> "$OUT/env.txt"
