#!/usr/bin/env bash
J=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java
for t in int8 int32 int64 half bfloat16 float double; do for o in sum prod min max; do
  $J --enable-native-access=ALL-UNNAMED -jar /tmp/c12big-span.jar coll allreduce --np 2 --fabric shm -d $t -o $o \
    -b 300000 -e 4200000 -f 14 -n 2 -w 1 --jit-warmup-ms 0 --json 2>&1 | python3 -c "
import sys, json
for l in sys.stdin:
    if l.startswith('{'):
        o = json.loads(l); print('$t $o', o['bytes'], 'wrong', o['wrong'], 'inplace_wrong', o['inplace_wrong'])
    elif 'rror' in l: print('$t $o ERROR', l.strip())"
done; done
