#!/bin/bash
# stall.sh <outdir> <bench> [cap]: load and P (zipf-composite, 2,638,186 records) under perf, every context switch
# and wakeup of the machine with kernel and user stacks, on CLOCK_MONOTONIC (the clock of the bench probe's XSLOW
# lines, which a bench patched to print operations slower than 8 ms writes; without it, cats.py and dstacks.py
# still apply), and the memory cgroup's reclaim throttles.
out=$1; b=$2; cap=${3:-256M}
mkdir -p $out; rm -rf /tmp/bw
XSLOW=1 perf record -k CLOCK_MONOTONIC -a -g -e sched:sched_switch -e sched:sched_wakeup \
  -e vmscan:mm_vmscan_throttled -o $out/stall.perf -- \
  $b --engine evendb --workload P --distribution zipf-composite --records 2638186 --duration 10 \
  --memory-limit $cap --dir /tmp/bw --json $out/run.json > $out/run.txt 2>&1
perf script -i $out/stall.perf -F comm,tid,time,event,trace,ip,sym > $out/stacks.txt 2>/dev/null
rm -rf /tmp/bw
# then: python3 slowputs.py $out/run.txt $out/stacks.txt; python3 cats.py $out/stacks.txt <bench's file name>
