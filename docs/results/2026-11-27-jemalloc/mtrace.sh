#!/bin/bash
# mtrace.sh <out>: P,E100 256M on eb-jdef with madvise/munmap calls over 2 ms traced
out=$1
rm -rf /tmp/bo
/work/bench/eb-jdef --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
  --memory-limit 256M --dir /tmp/bo --json $out.json > $out.txt 2>&1 &
top=$!
sleep 1
c=$(pgrep -P $top | head -1)
perf trace -e madvise,munmap,mmap --duration 2 -p $c -o $out.trace 2>/dev/null &
tp=$!
wait $top
kill $tp 2>/dev/null; wait $tp 2>/dev/null
