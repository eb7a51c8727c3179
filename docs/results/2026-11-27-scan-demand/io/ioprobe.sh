#!/bin/bash
# usage: ioprobe.sh engine cap start_after_s
eng=$1; cap=$2; at=$3
rm -rf /tmp/bw; mkdir -p /tmp/bw
/work/bench/peer-6cc --engine $eng --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 --memory-limit $cap --dir /tmp/bw --json /tmp/io-$eng-$cap.json > /tmp/io-$eng-$cap.txt 2>&1 &
sleep $at
pid=$(pgrep -n -f "__run-job")
read a b < <(awk '/^read_bytes|^syscr/ {printf "%s ", $2}' /proc/$pid/io)
t0=$(date +%s.%N)
sleep 5
read c d < <(awk '/^read_bytes|^syscr/ {printf "%s ", $2}' /proc/$pid/io)
echo "$eng $cap syscr=$((c-a)) read_MB=$(( (d-b)/1048576 ))"
wait
