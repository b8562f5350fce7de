#!/usr/bin/env bash
# latency-only session: before / after2 interleaved, UCX tcp ucp_put_lat beside
cd /work/wt/p16tcp
OUT=docs/results/p16-tcp/lat.jsonl
J=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java
for run in 1 2 3; do
  for which in before after; do
    jar=${BEFORE:-/tmp/p16tcp-base.jar}; [ $which = after ] && jar=${AFTER:-cli/target/gdrkit.jar}
    l=$(cut -d' ' -f1 /proc/loadavg)
    $J --enable-native-access=ALL-UNNAMED -jar $jar perf write_lat --fabric tcp --loopback --port 14531 -s 8 -n 20000 --json 2>/dev/null | tail -n 1 | sed "s/^{/{\"jar\":\"$which\",\"load\":\"$l\",/" >> $OUT
  done
  UCX_TLS=tcp timeout 60 ucx_perftest -p 14536 >/dev/null 2>&1 &
  srv=$!; sleep 0.7
  l=$(cut -d' ' -f1 /proc/loadavg)
  line=$(UCX_TLS=tcp timeout 60 ucx_perftest 127.0.0.1 -p 14536 -t ucp_put_lat -s 8 -n 5000 2>/dev/null | grep '^Final:')
  wait $srv
  set -- $line
  [ -n "$line" ] && echo "{\"peer\":\"ucx_perftest\",\"load\":\"$l\",\"transport\":\"tcp\",\"test\":\"ucp_put_lat\",\"bytes\":8,\"lat_typical_us\":$3,\"lat_avg_us\":$4}" >> $OUT
done
