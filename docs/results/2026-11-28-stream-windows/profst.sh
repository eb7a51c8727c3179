#!/bin/bash
# profst.sh <bench> <out> <cap> [delay] [secs]: stream 5M with perf from `delay` s for `secs` s
B=$1; O=$2; C=$3; D=${4:-28}; S=${5:-8}
rm -rf /tmp/st
$B --engine evendb --workload stream --records 5000000 --duration 10 --memory-limit $C \
    --dir /tmp/st --json $O.json > $O.txt 2>&1 &
sleep $D
P=$(pgrep -n -f "__run-job")
perf record -F 999 -g --call-graph dwarf,32768 -p $P -o $O.data -- sleep $S 2> $O.perf.log
wait
