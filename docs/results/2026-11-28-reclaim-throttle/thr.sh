#!/bin/bash
# usage: thr.sh <out prefix> <bin> [env...]: E100 at 2x 256M under the reclaim-throttle tracepoint, cgroup dirty/writeback sampled every 100 ms
out=$1; bin=$2; shift 2
rm -rf /tmp/bw
env "$@" perf record -q -a -e vmscan:mm_vmscan_throttled -o $out.perf -- $bin --engine evendb --workload E100 --duration 10 --distribution zipf-composite --records 659546 --memory-limit 256M --dir /tmp/bw --json $out.json > $out.txt 2>&1 &
sleep 0.5
: > $out.dirty
for i in $(seq 1 400); do
  pid=$(pgrep -f "__run-job" | tail -1)
  if [ -n "$pid" ]; then
    cg=$(grep ":memory:" /proc/$pid/cgroup 2>/dev/null | cut -d: -f3)
    f=/sys/fs/cgroup/memory$cg/memory.stat
    [ -f $f ] && echo "$(date +%s.%N) $(grep -E '^(dirty|writeback|cache|rss|inactive_file|active_file) ' $f | tr '\n' ' ')" >> $out.dirty
  fi
  sleep 0.1
  pgrep -f "__run-job" > /dev/null || { [ $i -gt 20 ] && break; }
done
wait
perf script -i $out.perf 2>/dev/null > $out.throttle
echo "$out: throttles $(wc -l < $out.throttle), full $(grep -c 'usect_delayed=100000' $out.throttle); $(grep -E '^evendb +E100 .*scan' $out.txt | awk '{print "p99.9", $(NF-1), "max", $NF}')"
