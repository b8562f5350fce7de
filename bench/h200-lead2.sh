set -u
OUT=${OUT:-out}; mkdir -p $OUT/shmem
J="runtime/bin/java --enable-native-access=ALL-UNNAMED"
{ timeout 60 $J -jar cli/target/gdrkit.jar abi-check; echo "rc=$?"; } > $OUT/native-abi-after-fix.txt 2>&1
timeout 120 $J -jar bench/target/gdrkit-bench.jar NativeOpsBench -wi 3 -i 5 -w 1 -r 1 -f 2 -rf json -rff $OUT/native-ops-after-fix.json > $OUT/native-ops-after-fix.txt 2>&1
tail -5 $OUT/native-ops-after-fix.txt
JAVA=runtime/bin/java JAR=cli/target/gdrkit.jar OUT=$OUT/shmem SECTIONS="floor lat" timeout 330 bash bench/h200-shmem.sh cuda:0 > $OUT/shmem-run.log 2>&1
echo "shmem rc=$?"; tail -30 $OUT/shmem/summary.txt 2>/dev/null
cd $OUT/shmem && tar czf ../shmem.tgz . && ls -la ../shmem.tgz
