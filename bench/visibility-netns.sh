#!/bin/bash
# Usage (root, iproute2, after ./gdrkit builds the jar): bash bench/visibility-netns.sh
# receiver in one network namespace, sender in another, joined by a veth pair: "another host" over TCP
set -e
IP=/usr/sbin/ip; [ -x $IP ] || IP=/sbin/ip
$IP netns add visA; $IP netns add visB
trap '$IP netns del visA; $IP netns del visB' EXIT
$IP link add visva type veth peer name visvb
$IP link set visva netns visA; $IP link set visvb netns visB
$IP -n visA addr add 10.77.0.1/24 dev visva; $IP -n visB addr add 10.77.0.2/24 dev visvb
$IP -n visA link set visva up; $IP -n visB link set visvb up; $IP -n visA link set lo up; $IP -n visB link set lo up
J="$(ls -d /usr/lib/jvm/temurin-25*/bin/java | head -1) --enable-native-access=ALL-UNNAMED -cp cli/target/gdrkit.jar io.gdrkit.cli.Main"
$IP netns exec visB $J visibility --fabric tcp --listen --port 18600 --gpu sim:v100,sim:h200 --flag receiver,sender-same-qp,imm --readback off,on --size 256K --rounds 10 --no-progress &
RECV=$!
sleep 3
$IP netns exec visA $J visibility-sender --connect 10.77.0.2:18600
wait $RECV
