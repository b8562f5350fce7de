#!/usr/bin/env bash
# Collectives across two "hosts": two network namespaces joined by a veth pair (10.78.0.1, 10.78.0.2), each with its
# own network stack, so every byte between the ranks crosses a real (virtual) Ethernet link, not loopback. The
# launcher runs in the first namespace with its root bound to 10.78.0.1; `launch --hosts` starts one rank in each
# namespace through bench/netns-ssh (a stand-in for ssh: `ip netns exec`), and the ranks bind the address their
# namespace uses to reach the root (`coll --bind route`). Root only (ip netns). Writes JSON lines to $OUT.
#   bash bench/coll-netns.sh            # allreduce over --fabric tcp and --transport socket, 8 B .. 4 MiB
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gdrkit-coll-netns}; mkdir -p "$OUT"
IP=/usr/sbin/ip; [ -x $IP ] || IP=/sbin/ip
A=gdrkA$$; B=gdrkB$$
$IP netns add $A; $IP netns add $B
trap '$IP netns del $A 2>/dev/null; $IP netns del $B 2>/dev/null' EXIT
$IP link add vA$$ type veth peer name vB$$
$IP link set vA$$ netns $A; $IP link set vB$$ netns $B
$IP -n $A addr add 10.78.0.1/24 dev vA$$; $IP -n $B addr add 10.78.0.2/24 dev vB$$
for ns in $A $B; do $IP -n $ns link set lo up; done
$IP -n $A link set vA$$ up; $IP -n $B link set vB$$ up
./gdrkit build >/dev/null
JAVA=$(ls -d /usr/lib/jvm/temurin-25*/bin/java | head -1)
G="$JAVA --enable-native-access=ALL-UNNAMED -cp $PWD/cli/target/gdrkit.jar io.gdrkit.cli.Main"
run() { # label, coll args...
  local label=$1; shift
  echo "coll-netns: $label" >&2
  $IP netns exec $A $G launch -n 1 --hosts $A,$B --ssh "$PWD/bench/netns-ssh" --bind 10.78.0.1 --grace-ms 10000 \
    -- $G coll allreduce --bind route --json "$@" > "$OUT/$label.jsonl" 2> "$OUT/$label.err"
  echo "coll-netns: $label rc=$? ($(wc -l < "$OUT/$label.jsonl") sizes)" >&2
}
run ib-tcp --transport ib --fabric tcp -b 8 -e 4M -f 8 -n 20 -w 5
run socket --transport socket --fabric tcp -b 8 -e 4M -f 8 -n 20 -w 5
cat "$OUT"/*.jsonl
