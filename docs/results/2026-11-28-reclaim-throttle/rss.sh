#!/bin/bash
# usage: rss.sh <out dir> <rounds> name=binary ...: P,C 100 B and P,E100 800 B at 256M, evendb alone, binaries alternating
out=$1; rounds=$2; shift 2
mkdir -p $out
for r in $(seq 1 $rounds); do
  for nb in "$@"; do
    name=${nb%%=*}; bin=${nb#*=}
    rm -rf /tmp/bw
    $bin --engine evendb --workload P,C --duration 10 --distribution zipf-composite --value-size 100 --records 4000000 --memory-limit 256M --dir /tmp/bw --json $out/$name-pc-$r.json > $out/$name-pc-$r.txt 2>&1
    rm -rf /tmp/bw
    $bin --engine evendb --workload P,E100 --duration 10 --distribution zipf-composite --records 2638186 --memory-limit 256M --dir /tmp/bw --json $out/$name-pe-$r.json > $out/$name-pe-$r.txt 2>&1
  done
done
