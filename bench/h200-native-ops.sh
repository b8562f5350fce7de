#!/usr/bin/env bash
# Issue 17's FFM-cost figure on the H200 host: NativeOpsBench (post_send + poll_cq through the stub provider's ops
# table; c = the loop in C, ffmRaw = the same loop in Java over FFM downcalls, api = gdrkit's verbs API) with 5 forks,
# plus the ABI check. Needs runtime/ (jlink JDK 25) and bench/target/gdrkit-bench.jar; writes under $OUT.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
J="runtime/bin/java --enable-native-access=ALL-UNNAMED"
[ -f cli/target/gdrkit.jar ] && { timeout 60 $J -jar cli/target/gdrkit.jar abi-check; echo "rc=$?"; } > "$OUT/native-abi.txt" 2>&1
timeout 400 $J -jar bench/target/gdrkit-bench.jar NativeOpsBench -wi 3 -i 5 -w 1 -r 1 -f 5 \
  -rf json -rff "$OUT/native-ops.json" > "$OUT/native-ops.txt" 2>&1
echo "bench rc=$?"; tail -7 "$OUT/native-ops.txt"
