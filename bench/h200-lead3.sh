set -u
OUT=${OUT:-out}; mkdir -p $OUT/shmem
JAVA=runtime/bin/java JAR=cli/target/gdrkit.jar OUT=$OUT/shmem SECTIONS="floor lat" RUNS=${RUNS:-3} timeout 420 bash bench/h200-shmem.sh cuda:0 > $OUT/shmem-run.log 2>&1
echo "shmem rc=$?"; grep -v "^#" $OUT/shmem/summary.txt | head -60
cd $OUT/shmem && tar czf ../shmem.tgz . && ls -la ../shmem.tgz
