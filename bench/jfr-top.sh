#!/usr/bin/env bash
# top.sh FILE.jfr [N]: self-time top frames of Java (ExecutionSample) and native (NativeMethodSample) samples
J=/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr
f=$1; n=${2:-25}
for ev in jdk.ExecutionSample jdk.NativeMethodSample; do
  $J print --events $ev --stack-depth 1 "$f" | awk -v ev=$ev '
    /sampledThread|eventThread/ { th=$0; sub(/.*= "/,"",th); sub(/".*/,"",th) }
    /line:/ { fr=$0; sub(/^ +/,"",fr); sub(/ line:.*/,"",fr); sub(/\(.*/,"",fr); c[th" | "fr]++; tot[th]++ }
    END { for (k in c) { split(k,a," \\| "); printf "%6d %5.1f%% %s %s\n", c[k], 100*c[k]/tot[a[1]], ev, k } }' | sort -rn | head -$n
done
