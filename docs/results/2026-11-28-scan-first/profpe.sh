#!/bin/bash
# profpe.sh <bench> <out> <cap> [delay] [secs]: P,E100 with perf from `delay` s for `secs` s
B=$1; O=$2; C=$3; D=${4:-19}; S=${5:-8}
rm -rf /tmp/pe
$B --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 --memory-limit $C \
    --dir /tmp/pe --json $O.json > $O.txt 2>&1 &
sleep $D
P=$(pgrep -n -f "__run-job")
perf record -F 999 -g --call-graph dwarf,32768 -p $P -o $O.data -- sleep $S 2> $O.perf.log
wait
