#!/usr/bin/env bash
# Runs the docs/PERFORMANCE.md measurements: each command REPEATS times (default 3), JSON lines to $OUT.
# Every bandwidth/latency run carries --baseline, so its ratio comes from memcpy / ping-pong measured in
# the same JVM a moment before. Summarize with: python3 docs/perf-summary.py $OUT
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-/tmp/gdrkit-perf.jsonl}"
REPEATS="${REPEATS:-3}"
: > "$OUT"
run() {
  local label="$1"; shift
  for i in $(seq 1 "$REPEATS"); do
    echo "== $label (run $i): ./gdrkit $*" >&2
    "$here/gdrkit" "$@" --json | sed "s/^{/{\"label\":\"$label\",\"run\":$i,/" >> "$OUT"
  done
}
run write_bw_1m          perf write_bw --loopback -s 1048576 -n 5000 --baseline
run write_bw_4m          perf write_bw --loopback -s 4194304 -n 2000 --baseline
run write_bw_1m_mtu64k   perf write_bw --loopback -s 1048576 -n 5000 --mtu 65536 --baseline
run write_bw_4m_mtu64k   perf write_bw --loopback -s 4194304 -n 2000 --mtu 65536 --baseline
run write_bw_64          perf write_bw --loopback -s 64 -n 2000000
run write_lat_8          perf write_lat --loopback -s 8 -n 100000 --baseline
run read_lat_8           perf read_lat --loopback -s 8 -n 100000
run atomic_lat           perf atomic_lat --loopback -n 100000
run write_bw_1m_dedicated perf write_bw --loopback -s 1048576 -n 5000 --progress dedicated
run write_lat_8_dedicated perf write_lat --loopback -s 8 -n 20000 --progress dedicated
echo "wrote $OUT" >&2
