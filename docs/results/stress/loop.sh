#!/bin/bash
# $1 = clone dir, $2 = label, $3 = max runs
d=$1; label=$2; max=$3
[ -d $d ] || git clone -q /work/main $d
cd $d
export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
for i in $(seq 1 $max); do
  [ -f /tmp/stress/STOP ] && break
  git pull -q --ff-only /work/main main 2>/dev/null
  c=$(git rev-parse --short HEAD); t0=$(date +%s)
  ./gdrkit test > /tmp/stress/$label-$i.log 2>&1; rc=$?
  fails=$(grep -E "<<< (FAILURE|ERROR)" /tmp/stress/$label-$i.log | grep -oE "io\.gdrkit[^ ]*" | sort -u | tr '\n' ' ')
  tests=$(grep -E "^\[(INFO|WARNING|ERROR)\] Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$" /tmp/stress/$label-$i.log | awk -F'[ ,]+' '{t+=$4;f+=$6;e+=$8;s+=$10} END {print t" tests, "f" failures, "e" errors, "s" skipped"}')
  echo "$label run $i commit $c rc=$rc $(( $(date +%s)-t0 ))s start $(date -u -d @$t0 +%T) load $(cut -d' ' -f1-3 /proc/loadavg) | $tests | $fails" >> /tmp/stress/results.txt
done
