set -u
OUT=${OUT:-out}; mkdir -p $OUT
J="runtime/bin/java --enable-native-access=ALL-UNNAMED"
T() { local s=$1; shift; timeout $s "$@"; }
# native provider (issue 17)
{ T 60 $J -jar cli/target/gdrkit.jar abi-check; echo "rc=$?"; T 60 $J -jar cli/target/gdrkit.jar abi-check --json; echo "rc=$?"; } > $OUT/native-abi.txt 2>&1
{ T 60 $J -jar cli/target/gdrkit.jar devices; echo "rc=$?"; T 60 $J -jar cli/target/gdrkit.jar devices --json; echo "rc=$?"; } > $OUT/native-devices.txt 2>&1
{ T 90 $J -jar cli/target/gdrkit.jar doctor --provider native; echo "rc=$?"; T 90 $J -jar cli/target/gdrkit.jar doctor --provider native --json; echo "rc=$?"; } > $OUT/native-doctor.txt 2>&1
# regtiming (issue 14)
{ T 150 $J -jar cli/target/gdrkit.jar regtiming --gpu cuda:0 --reps 20 --json > $OUT/regtiming-h200.json; echo "rc=$?"; T 120 $J -jar cli/target/gdrkit.jar regtiming --gpu cuda:0 --reps 20; echo "rc=$?"; } > $OUT/regtiming-h200.txt 2>&1
# issue 11 perf before/after, 3 runs interleaved
for run in 1 2 3; do for tag in before after; do jar=cli/target/gdrkit.jar; [ $tag = before ] && jar=runtime/gdrkit-before.jar
  echo "{\"run\":$run,\"jar\":\"$tag\",\"row\":$(T 60 $J -jar $jar perf write_bw --loopback -s 1048576 --json | tail -1)}" >> $OUT/arch-perf.jsonl
  echo "{\"run\":$run,\"jar\":\"$tag\",\"row\":$(T 60 $J -jar $jar perf write_lat --loopback -s 8 --json | tail -1)}" >> $OUT/arch-perf.jsonl
done; done
# FFM ops-table cost (issue 17)
T 150 $J -jar bench/target/gdrkit-bench.jar NativeOpsBench -wi 3 -i 5 -w 1 -r 1 -f 2 -rf json -rff $OUT/native-ops.json > $OUT/native-ops.txt 2>&1
tail -6 $OUT/native-ops.txt
ls $OUT
