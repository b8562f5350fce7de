#!/usr/bin/env bash
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
# The GPU data paths on a host with a CUDA GPU (or a simulated one, GPU=sim:h200), RUNS runs each; the NIC is
# software, the GPU, its copies and kernels are real. PARTS picks what runs (default "perf path coll check"):
#   perf   perf write_bw / read_bw with both buffers on the GPU, SIZES      -> $OUT/perf-gpu.jsonl
#   path   gpu-path: GDR against host bounce and the pinned-copy limit    -> $OUT/gpu-path.jsonl
#          (gdrkit model crossover --input $OUT/gpu-path.jsonl fits the crossover to these lines)
#   coll   coll allreduce --mem gpu, 2 ranks: GDR as the gates decide, forced host bounce (NCCL_NET_GDR_LEVEL=LOC),
#          GDR with a flush per chunk (NCCL_NET_FORCE_FLUSH=1), rank r on GPU r when GPUS >= 2, and host buffers;
#          with MPS=1 also the GPU rows under CUDA MPS (nvidia-cuda-mps-control -d with private pipe and log
#          folders, stopped after; the rows' gpu_sharing says mps)        -> $OUT/coll-gpu.jsonl
#   check  perf --check (the data verified on the GPU) for write/read/send_bw, once -> $OUT/check.jsonl
#   agent  the software NIC's delivery agent (docs/GPU.md, "The delivery agent"): perf write_bw --mem gpu at
#          AGENT_SIZES with --set gdrkit.cuda.agent=off and =on, beside gpu-path's pinned host-to-device copy of the
#          same run; then perf --check with the agent on         -> $OUT/agent.jsonl, $OUT/agent-table.txt (medians)
#   direct the NIC's writes into the GPU from pinned host memory (docs/GPU.md, "The NIC's path into device memory"):
#          perf write_bw --mem gpu --client-mem host (the client's buffer in host memory, pinned: the copy engine
#          reads it directly) and perf write_bw --mem gpu (both buffers on the GPU: staged) at DIRECT_SIZES, beside
#          gpu-path's pinned host-to-device copy of the same run; perf --check of the direct path. The perf runs
#          take DIRECT_ITERS iterations (5000, perftest's default for bandwidth tests) and perf's own warm-up
#                                                          -> $OUT/direct.jsonl, $OUT/direct-table.txt (medians)
#   GPU=cuda:0 PARTS=agent RUNS=3 bench/gpu-paths.sh
#   GPU=cuda:0 PARTS=direct RUNS=3 bench/gpu-paths.sh   the direct path at 64K/1M/16M against the pinned copy
#   GPU=cuda:0 bench/gpu-paths.sh                   output under ${TMPDIR:-/tmp}/gdrkit-bench/gpu-paths-<time>
#   GPU=sim:h200 RUNS=1 PARTS="perf coll" bench/gpu-paths.sh
# Environment: GPU (cuda:0), GPUS (count, from nvidia-smi), RUNS (3), SIZES ("65536 1048576 4194304 67108864"),
# AGENT_SIZES ("65536 1048576 16777216"), DIRECT_SIZES ("65536 1048576 16777216"), DIRECT_ITERS (5000), AGENT_SET (extra --set NAME=VALUE for the agent-on runs, e.g.
# "gdrkit.cuda.agent.blocks=32"),
# MIN/MAX/F/ITERS/WARM for coll (8, 67108864, 8, 10, 3), MPS (0; 1: the coll part also under MPS), FABRIC (shm),
# LIMIT (150 s per call), JOPTS (extra JVM
# options), OUT, JAR, JAVA / JAVA_HOME (bench/lib.sh). Exits non-zero when any step fails.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
GPU="${GPU:-cuda:0}"; RUNS="${RUNS:-3}"; PARTS="${PARTS:-perf path coll check}"
SIZES="${SIZES:-65536 1048576 4194304 67108864}"
AGENT_SIZES="${AGENT_SIZES:-65536 1048576 16777216}"; AGENT_SET="${AGENT_SET:-}"
DIRECT_ITERS="${DIRECT_ITERS:-5000}"
DIRECT_SIZES="${DIRECT_SIZES:-65536 1048576 16777216}"
MIN="${MIN:-8}"; MAX="${MAX:-67108864}"; F="${F:-8}"; ITERS="${ITERS:-10}"; WARM="${WARM:-3}"; MPS="${MPS:-0}"
case "$MPS" in 0|1) ;; *) die "MPS must be 0 or 1, not '$MPS'" 2 ;; esac
LIMIT="${LIMIT:-150}"; FABRIC="${FABRIC:-shm}"
case "$GPU" in
  cuda:*) need nvidia-smi; GPUS="${GPUS:-$(nvidia-smi -L | grep -c '^GPU ' || true)}"
    [ "$GPUS" -ge 1 ] || die "GPU=$GPU but nvidia-smi lists no GPU (GPU=sim:h200 runs on a simulated one)" ;;
  sim:*) GPUS="${GPUS:-1}" ;;
  *) die "GPU must be cuda:N or sim:<model>, not '$GPU'" ;;
esac
has() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
bench_jar
bench_out gpu-paths
{ date -u; nproc; uptime; [ "${GPU#sim:}" != "$GPU" ] || nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
    --format=csv; "$JAVA" -version 2>&1; echo "gpu: $GPU  gpus: $GPUS  parts: $PARTS  sizes: $SIZES  runs: $RUNS"; } > "$OUT/env.txt" 2>&1

# g [VAR=VALUE...] ARGS...: a gdrkit command with JOPTS, under the time limit; leading settings go to its environment
g() {
  local envs=()
  while [ $# -gt 0 ] && [[ "$1" == NCCL_*=* || "$1" == GDRKIT_*=* ]]; do envs+=("$1"); shift; done
  timeout "$LIMIT" env ${envs[@]+"${envs[@]}"} "$JAVA" --enable-native-access=ALL-UNNAMED ${JOPTS:-} -jar "$JAR" "$@"
}
# row FILE LABEL RUN ARGS...: the JSON lines of a gdrkit command, tagged with label and run, appended to $OUT/FILE
row() {
  local file=$1 label=$2 run=$3; shift 3
  g "$@" --json 2>> "$OUT/err.txt" | grep '^{' | sed "s/^{/{\"label\":\"$label\",\"run\":$run,/" >> "$OUT/$file"
}
iters() { case "$1" in 65536) echo 2000;; 1048576) echo 400;; 4194304) echo 100;; 16777216) echo 40;; *) echo 12;; esac; }
# agent_sets: the --set flags of the agent-on runs
agent_sets() { echo "--set gdrkit.cuda.agent=on"; for kv in $AGENT_SET; do echo "--set $kv"; done; }
# the awk functions both tables use: a JSON number field, the median of a label's values, GB/s, a ratio
AWK_LIB='
    function val(line, key,   m) {
      if (!match(line, "\"" key "\":[-0-9.eE]+")) return ""
      m = substr(line, RSTART, RLENGTH); sub(/^[^:]*:/, "", m); return m
    }
    function median(l,   i, j, t, a, c) {
      c = n[l]; if (!c) return -1
      for (i = 1; i <= c; i++) a[i] = vals[l, i] + 0
      for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
    }
    function gb(m) { return m < 0 ? "-" : sprintf("%.2f", m * 1048576 / 1e9) }
    function ratio(a, b) { return a < 0 || b <= 0 ? "-" : sprintf("%.2fx", a / b) }
'
# agent_table: medians over the runs of agent.jsonl, GB/s (10^9 B/s), and the ratios the agent is judged by
agent_table() {
  awk -v sizes="$AGENT_SIZES" -v runs="$RUNS" -v gpu="$GPU" "$AWK_LIB"'
    {
      if (!match($0, /"label":"[^"]*"/)) next
      l = substr($0, RSTART + 9, RLENGTH - 10)
      if (l ~ /^pinned_/) { if ($0 !~ /"path":"pinned"/) next; v = val($0, "mib_s") } else v = val($0, "bw_avg_mib_s")
      if (v == "") next
      n[l]++; vals[l, n[l]] = v
    }
    END {
      printf "perf write_bw --loopback --mem gpu --gpu %s: medians of %s runs, GB/s; pinned = gpu-path pinned HtoD copy\n", gpu, runs
      printf "%-10s %10s %10s %12s %8s %11s %10s\n", "bytes", "agent off", "agent on", "pinned HtoD", "on/off", "off/pinned", "on/pinned"
      split(sizes, S, " ")
      for (k = 1; k in S; k++) {
        s = S[k]; off = median("agent_off_" s); on = median("agent_on_" s); p = median("pinned_" s)
        printf "%-10s %10s %10s %12s %8s %11s %10s\n", s, gb(off), gb(on), gb(p), ratio(on, off), ratio(off, p), ratio(on, p)
      }
    }' "$OUT/agent.jsonl"
}
# direct_table: medians over the runs of direct.jsonl, GB/s, against the pinned copy; the share of bytes that went
# direct (the nic_writes objects: direct_bytes / (direct_bytes + staged_bytes))
direct_table() {
  awk -v sizes="$DIRECT_SIZES" -v runs="$RUNS" -v gpu="$GPU" "$AWK_LIB"'
    {
      if (!match($0, /"label":"[^"]*"/)) next
      l = substr($0, RSTART + 9, RLENGTH - 10)
      if ($0 ~ /"nic_writes":/) { db[l] += val($0, "direct_bytes"); sb[l] += val($0, "staged_bytes"); next }
      if (l ~ /^pinned_/) { if ($0 !~ /"path":"pinned"/) next; v = val($0, "mib_s") } else v = val($0, "bw_avg_mib_s")
      if (v == "") next
      n[l]++; vals[l, n[l]] = v
    }
    END {
      printf "perf write_bw --loopback --mem gpu --gpu %s: medians of %s runs, GB/s; pinned = gpu-path pinned HtoD copy\n", gpu, runs
      printf "client host = --client-mem host (the copy engine reads the pinned client buffer); both gpu = staged\n"
      printf "%-10s %12s %10s %12s %14s %13s %8s\n", "bytes", "client host", "both gpu", "pinned HtoD", "host/pinned", "gpu/pinned", "direct"
      split(sizes, S, " ")
      for (k = 1; k in S; k++) {
        s = S[k]; h = median("direct_host_" s); g = median("direct_gpu_" s); p = median("pinned_" s)
        t = db["direct_host_" s] + sb["direct_host_" s]
        printf "%-10s %12s %10s %12s %14s %13s %8s\n", s, gb(h), gb(g), gb(p), ratio(h, p), ratio(g, p), \
          (t > 0 ? sprintf("%.0f%%", 100 * db["direct_host_" s] / t) : "-")
      }
    }' "$OUT/direct.jsonl"
}
# coll_row LABEL RUN [VAR=VALUE...] [OPTIONS...]: one allreduce sweep, 2 ranks
coll_row() {
  local label=$1 run=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [[ "$1" == NCCL_*=* ]]; do envs+=("$1"); shift; done
  row coll-gpu.jsonl "$label" "$run" ${envs[@]+"${envs[@]}"} coll allreduce --np 2 --fabric "$FABRIC" -b "$MIN" -e "$MAX" \
    -f "$F" -n "$ITERS" -w "$WARM" "$@"
}

for run in $(seq 1 "$RUNS"); do
  for s in $SIZES; do
    n=$(iters "$s"); buf=$((2 * s > 8388608 ? 2 * s : 8388608))
    if has perf; then
      for t in write_bw read_bw; do
        step "run $run/$RUNS: perf $t --mem gpu $s B" row perf-gpu.jsonl "${t}_gpu_$s" "$run" \
          perf "$t" --loopback --mem gpu --gpu "$GPU" -s "$s" -n "$n" --warmup "$n" --buffer "$buf"
      done
    fi
    if has path; then
      step "run $run/$RUNS: gpu-path $s B" row gpu-path.jsonl "gpu_path_$s" "$run" gpu-path --gpu "$GPU" -s "$s" -n "$n"
    fi
  done
  if has agent; then
    for s in $AGENT_SIZES; do
      n=$(iters "$s"); buf=$((2 * s > 8388608 ? 2 * s : 8388608))
      step "run $run/$RUNS: perf write_bw --mem gpu $s B, agent off" row agent.jsonl "agent_off_$s" "$run" \
        perf write_bw --loopback --mem gpu --gpu "$GPU" -s "$s" -n "$n" --warmup "$n" --buffer "$buf" --set gdrkit.cuda.agent=off
      # shellcheck disable=SC2046 # agent_sets is a list of words
      step "run $run/$RUNS: perf write_bw --mem gpu $s B, agent on" row agent.jsonl "agent_on_$s" "$run" \
        perf write_bw --loopback --mem gpu --gpu "$GPU" -s "$s" -n "$n" --warmup "$n" --buffer "$buf" $(agent_sets)
      step "run $run/$RUNS: gpu-path $s B (the pinned copy)" row agent.jsonl "pinned_$s" "$run" \
        gpu-path --gpu "$GPU" -s "$s" -n "$n"
    done
  fi
  if has direct; then
    for s in $DIRECT_SIZES; do
      n=$(iters "$s"); buf=$((2 * s > 8388608 ? 2 * s : 8388608))
      step "run $run/$RUNS: perf write_bw --mem gpu --client-mem host $s B" row direct.jsonl "direct_host_$s" "$run" \
        perf write_bw --loopback --mem gpu --gpu "$GPU" --client-mem host -s "$s" -n "$DIRECT_ITERS" --buffer "$buf"
      step "run $run/$RUNS: perf write_bw --mem gpu $s B (both buffers on the GPU)" row direct.jsonl "direct_gpu_$s" "$run" \
        perf write_bw --loopback --mem gpu --gpu "$GPU" -s "$s" -n "$DIRECT_ITERS" --buffer "$buf"
      step "run $run/$RUNS: gpu-path $s B (the pinned copy)" row direct.jsonl "pinned_$s" "$run" \
        gpu-path --gpu "$GPU" -s "$s" -n "$n"
    done
  fi
  if has coll; then
    step "run $run/$RUNS: coll allreduce, GPU buffers, GDR" coll_row 1gpu-2ranks-gdr "$run" --mem gpu --gpu "$GPU"
    step "run $run/$RUNS: coll allreduce, GPU buffers, host bounce" coll_row 1gpu-2ranks-bounce "$run" \
      NCCL_NET_GDR_LEVEL=LOC --mem gpu --gpu "$GPU"
    step "run $run/$RUNS: coll allreduce, GPU buffers, GDR with flush" coll_row 1gpu-2ranks-gdr-flush "$run" \
      NCCL_NET_FORCE_FLUSH=1 --mem gpu --gpu "$GPU"
    if [ "$GPUS" -ge 2 ] && [ "${GPU#cuda:}" != "$GPU" ]; then
      step "run $run/$RUNS: coll allreduce, rank r on cuda:r" coll_row 2gpu-rank-r-on-cuda-r "$run" --mem gpu --gpu cuda:rank
    fi
    step "run $run/$RUNS: coll allreduce, host buffers" coll_row host-buffers "$run"
    if [ "$MPS" = 1 ] && [ "${GPU#cuda:}" != "$GPU" ]; then
      if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
        # the pipe folder is a short private one (a unix socket path has 108 bytes); the log stays with the results
        CUDA_MPS_PIPE_DIRECTORY="$(mktemp -d "${TMPDIR:-/tmp}/gdrkit-mps.XXXXXX")"
        export CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY="$OUT/mps-log"
        mkdir -p "$CUDA_MPS_LOG_DIRECTORY"
        nvidia-cuda-mps-control -d || die "nvidia-cuda-mps-control -d failed (see $CUDA_MPS_LOG_DIRECTORY)"
        # a failing step exits the script: the daemon is stopped then too
        trap 'echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true; rm -rf "$CUDA_MPS_PIPE_DIRECTORY"' EXIT
        step "run $run/$RUNS: coll allreduce, GPU buffers, MPS" coll_row 1gpu-2ranks-mps "$run" --mem gpu --gpu "$GPU"
        echo quit | nvidia-cuda-mps-control
        trap - EXIT
        rm -rf "$CUDA_MPS_PIPE_DIRECTORY"
        unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
      else
        echo "gpu-paths: MPS=1 but nvidia-cuda-mps-control is not on PATH: no MPS rows" >&2
      fi
    fi
  fi
done
if has check; then
  for t in write_bw read_bw send_bw; do
    step "perf $t --check on the GPU" row check.jsonl "check_gpu_$t" 1 \
      perf "$t" --loopback --mem gpu --gpu "$GPU" -s 1048576 -n 100 --warmup 100 --check
  done
fi
if has direct; then
  step "perf write_bw --check on the GPU, client buffer in pinned host memory" row direct.jsonl "direct_check" 1 \
    perf write_bw --loopback --mem gpu --gpu "$GPU" --client-mem host -s 1048576 -n 100 --warmup 100 --check
  step "direct table" direct_table > "$OUT/direct-table.txt"
  cat "$OUT/direct-table.txt" >&2
fi
if has agent; then
  # shellcheck disable=SC2046
  step "perf write_bw --check on the GPU, agent on" row agent.jsonl "agent_on_check" 1 \
    perf write_bw --loopback --mem gpu --gpu "$GPU" -s 1048576 -n 100 --warmup 100 --check $(agent_sets)
  step "agent table" agent_table > "$OUT/agent-table.txt"
  cat "$OUT/agent-table.txt" >&2
fi
say "done: $(cat "$OUT"/*.jsonl 2>/dev/null | wc -l) rows under $OUT"
