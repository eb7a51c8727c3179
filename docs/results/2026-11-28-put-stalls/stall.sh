#!/bin/bash
# stall.sh <outdir> <bench> [cap]: load and P (zipf-composite, 2,638,186 records) under perf: the store's
# memory-cgroup reclaims, reclaim throttles and every context switch and wakeup, for off-CPU analysis
out=$1; b=$2; cap=${3:-256M}
mkdir -p $out; rm -rf /tmp/bw
perf record -a -e vmscan:mm_vmscan_memcg_reclaim_begin -e vmscan:mm_vmscan_memcg_reclaim_end \
  -e vmscan:mm_vmscan_throttled -e sched:sched_switch -e sched:sched_wakeup -o $out/stall.perf -- \
  $b --engine evendb --workload P --distribution zipf-composite --records 2638186 --duration 10 \
  --memory-limit $cap --dir /tmp/bw --json $out/run.json > $out/run.txt 2>&1
perf script -i $out/stall.perf -F comm,tid,time,event,trace > $out/stall.txt 2>/dev/null
rm -rf /tmp/bw
