#!/bin/bash
# usage: e2x.sh <out dir> <rounds> name=binary ...  E100,E1000 at 2x the cap, both caps, variants alternating
out=$1; rounds=$2; shift 2
mkdir -p $out
for r in $(seq 1 $rounds); do
  for cap in 256M 1G; do
    rec=$([ $cap = 256M ] && echo 659546 || echo 2638186)
    for nb in "$@"; do
      name=${nb%%=*}; bin=${nb#*=}
      rm -rf /tmp/bw
      $bin --engine evendb --workload E100,E1000 --duration 10 --distribution zipf-composite --records $rec --memory-limit $cap --dir /tmp/bw --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
    done
  done
done
