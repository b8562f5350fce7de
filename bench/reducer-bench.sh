#!/usr/bin/env bash
# The host reduction kernel (Reducer) against MemorySegment.copy: JMH on this host, raw output and the load kept.
#   bench/reducer-bench.sh OUTDIR [JAR]        (JAR: default bench/target/gdrkit-bench.jar; build it first with
#                                               mvn -B -q -ntp -pl bench -am package -DskipTests)
# Runs ReducerBench (3 forks, 3 x 1 s warm-up, 5 x 1 s measured), then ReducerVariantsBench (1 fork, the loop
# shapes tried) and the Vector API probe (bench/ReducerVectorApi.java, prints the incubator warning by design).
# SKIP_VARIANTS=1 runs ReducerBench only, SKIP_REDUCER=1 the rest only; JMH_ARGS go to ReducerBench (e.g.
# "-p bytes=524288", the allreduce's chunk). Summarize with bench/reducer-table.py OUTDIR/*.txt.
set -euo pipefail
out=${1:?usage: reducer-bench.sh OUTDIR [JAR]}
jar=${2:-bench/target/gdrkit-bench.jar}
java=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java
mkdir -p "$out"
{ echo "jar $jar"; nproc; grep -m1 'model name' /proc/cpuinfo; "$java" -version 2>&1 | head -1; } > "$out/host.txt"
run() { # name, command...
  local name=$1; shift
  echo "$name start $(uptime)" >> "$out/host.txt"
  "$@" > "$out/$name.txt" 2>&1
  echo "$name end   $(uptime)" >> "$out/host.txt"
}
if [ "${SKIP_REDUCER:-0}" != 1 ]; then
  # shellcheck disable=SC2086
  run reducer "$java" -jar "$jar" ReducerBench -f 3 -wi 3 -i 5 -w 1 -r 1 ${JMH_ARGS:-} -rf json -rff "$out/reducer.json"
fi
if [ "${SKIP_VARIANTS:-0}" != 1 ]; then
  run variants "$java" -jar "$jar" ReducerVariantsBench -f 1 -wi 2 -i 3 -w 1 -r 1 -rf json -rff "$out/variants.json"
  run vectorapi "$java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -cp "$jar" \
    bench/ReducerVectorApi.java
fi
