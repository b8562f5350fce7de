#!/usr/bin/env bash
# The lead's H200 run (device tool): issue 11's before/after perf, the native provider's checks on a host with
# libibverbs and no RDMA device, and the FFM ops-table cost. Carry: runtime (jlink'd JDK 25 with
# runtime/gdrkit-before.jar = the jar of commit 7733c8b), cli/target/gdrkit.jar, bench/target/gdrkit-bench.jar.
# Usage on the device: bash bench/h200-lead.sh   (writes under $OUT)
set -u
OUT="${OUT:-out}"; mkdir -p "$OUT"
J="runtime/bin/java --enable-native-access=ALL-UNNAMED"
NOW=cli/target/gdrkit.jar
BEFORE=runtime/gdrkit-before.jar
{ nproc; uname -r; ls /sys/class/infiniband 2>&1; ls -la /usr/lib/x86_64-linux-gnu/libibverbs.so* 2>&1; gcc --version | head -1; } > "$OUT/host.txt" 2>&1
# 1. issue 11: perf before and after the restructuring, 3 runs each, interleaved
for run in 1 2 3; do
  for tag in before after; do
    jar=$NOW; [ $tag = before ] && jar=$BEFORE
    echo "{\"run\":$run,\"jar\":\"$tag\",\"row\":$($J -jar $jar perf write_bw --loopback -s 1048576 --json | tail -1)}" >> "$OUT/arch-perf.jsonl"
    echo "{\"run\":$run,\"jar\":\"$tag\",\"row\":$($J -jar $jar perf write_lat --loopback -s 8 --json | tail -1)}" >> "$OUT/arch-perf.jsonl"
  done
done
# 2. the native provider on a host with libibverbs and no RDMA device
$J -jar $NOW abi-check --json > "$OUT/native-abi.json" 2>&1; echo "rc=$?" >> "$OUT/native-abi.json"
$J -jar $NOW devices --provider native > "$OUT/native-devices.txt" 2>&1; echo "rc=$?" >> "$OUT/native-devices.txt"
$J -jar $NOW devices --provider native --json >> "$OUT/native-devices.txt" 2>&1; echo "rc=$?" >> "$OUT/native-devices.txt"
$J -jar $NOW doctor --provider native > "$OUT/native-doctor.txt" 2>&1; echo "rc=$?" >> "$OUT/native-doctor.txt"
$J -jar $NOW doctor --provider native --json >> "$OUT/native-doctor.txt" 2>&1; echo "rc=$?" >> "$OUT/native-doctor.txt"
# 3. FFM cost of post_send + poll_cq through the ops table against a C loop (stub provider), 3 forks
$J -jar bench/target/gdrkit-bench.jar NativeOpsBench -wi 3 -i 5 -w 1 -r 1 -f 3 -rf json -rff "$OUT/native-ops.json" > "$OUT/native-ops.txt" 2>&1
tail -8 "$OUT/native-ops.txt"
