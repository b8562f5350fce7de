#!/usr/bin/env bash
# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
# Two gdrkit jars side by side on one machine: the same `coll allreduce` sweeps with each jar in turn, RUNS rounds,
# alternating A and B within a round so that drift in the machine hits both alike. JSON lines (one per row, labelled
# jar/config/round) in $OUT/ab.jsonl, stderr and exit codes in $OUT/ab-err.txt; summarize with
# python3 bench/ab-jars-table.py $OUT/ab.jsonl.
#   JAVA=runtime/bin/java A=out/old.jar B=out/new.jar OUT=/tmp/ab bash bench/ab-jars.sh  (A and B are class paths)
# JAVA / JAVA_HOME: a Java 25 runtime, found as bench/lib.sh says. A row that fails is recorded (rc=... in
# ab-err.txt) and the sweep goes on; the script then exits 1, naming how many rows failed.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
set +e
here="$REPO"; cd "$here"
A="${A:?jar A}"; B="${B:?jar B}"; OUT="${OUT:-${TMPDIR:-/tmp}/gdrkit-bench/ab-jars}"
failed=0
RUNS="${RUNS:-3}"; ITERS="${ITERS:-50}"; CONFIGS="${CONFIGS:-2:shm 4:shm 2:tcp}"
mkdir -p "$OUT"; : > "$OUT/ab.jsonl"; { date -u; nproc; uname -r; } > "$OUT/env.txt"
for round in $(seq 1 "$RUNS"); do
  for cfg in $CONFIGS; do
    np="${cfg%%:*}"; fab="${cfg##*:}"
    for side in A B; do
      jar="$A"; [ "$side" = B ] && jar="$B"
      timeout 170 "$JAVA" --enable-native-access=ALL-UNNAMED -cp "$jar" io.gdrkit.cli.Main coll allreduce --np "$np" --fabric "$fab" \
        -b "${MIN:-8}" -e "${MAX:-16777216}" -f 8 -n "$ITERS" -w 5 --json 2>> "$OUT/ab-err.txt" \
        | sed "s/^{/{\"jar\":\"$side\",\"np\":$np,\"fab\":\"$fab\",\"round\":$round,/" >> "$OUT/ab.jsonl"
      rc=${PIPESTATUS[0]}
      echo "rc=$rc $side np=$np $fab round $round" >> "$OUT/ab-err.txt"
      echo "ab-jars: round $round/$RUNS $side np=$np $fab: rc=$rc" >&2
      [ "$rc" = 0 ] || failed=$((failed + 1))
    done
  done
done
if [ "$failed" -gt 0 ]; then echo "ab-jars: $failed row(s) failed; see $OUT/ab-err.txt" >&2; exit 1; fi
