#!/bin/bash
# usage: thr-b.sh <out prefix> <mode: pgrep|stat|none> <bin>
out=$1; mode=$2; bin=$3
rm -rf /tmp/bw
perf record -q -a -e vmscan:mm_vmscan_throttled -o $out.perf -- $bin --engine evendb --workload E100 --duration 10 --distribution zipf-composite --records 659546 --memory-limit 256M --dir /tmp/bw --json $out.json > $out.txt 2>&1 &
sleep 0.5
pid=""; while [ -z "$pid" ]; do pid=$(pgrep -f "__run-job" | tail -1); sleep 0.05; done
cg=$(grep ":memory:" /proc/$pid/cgroup | cut -d: -f3); f=/sys/fs/cgroup/memory$cg/memory.stat
while kill -0 $pid 2>/dev/null; do
  case $mode in
    pgrep) pgrep -f "__run-job" > /dev/null ;;
    stat) cat $f > /dev/null 2>&1 ;;
    usage) cat ${f%memory.stat}memory.usage_in_bytes > /dev/null 2>&1 ;;
    stat1s) [ $((RANDOM % 10)) = 0 ] && cat $f > /dev/null 2>&1 ;;
  esac
  sleep 0.1
done
wait
echo "$out $mode: throttles $(perf script -i $out.perf 2>/dev/null | wc -l); worst scan $(grep -E '^evendb +E100 .*scan' $out.txt | awk '{print $NF}')"
