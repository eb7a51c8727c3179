#!/bin/bash
bin=$1; out=$2
rm -rf /tmp/bl
/work/bench/$bin --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
  --memory-limit 256M --dir /tmp/bl --json $out.json > $out.txt 2>$out.err &
top=$!
sleep 4
: > $out.gdb
for i in $(seq 1 12); do
  c=$(pgrep -P $top | head -1); [ -z "$c" ] && c=$(pgrep -f "/work/bench/$bin" | tail -1)
  echo "=== t=$((4+i*3)) pid=$c $(grep -E '^(Rss|Anonymous)' /proc/$c/smaps_rollup | tr -s ' ' | tr '\n' ' ')" >> $out.gdb
  timeout 20 gdb -p $c -batch -ex 'call (void) malloc_stats()' >/dev/null 2>&1
  sleep 3
done
wait $top
