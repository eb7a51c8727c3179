#!/bin/bash
# prof.sh <bench> <out> [delay]: the stream at a 1 GiB cap, with perf
# recording the job's threads (call graphs by DWARF, 999 Hz) for 9 s from
# `delay` + 2 seconds after the start (19 put it in the query phase here).
B=$1; O=$2; D=${3:-19}
$B --engine evendb --workload stream --records 5000000 --duration 10 --memory-limit 1G \
    --dir /tmp/sq --json $O.json > $O.txt 2>&1 &
sleep $((D + 2))
P=$(pgrep -n -f "__run-job")   # the job runs in a child process (its memory cgroup)
perf record -F 999 -g --call-graph dwarf,32768 -p $P -o $O.data -- sleep 9 2> $O.perf.log
wait
