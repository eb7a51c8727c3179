#!/bin/bash
out=$1; mem=$2; rounds=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    rm -rf /tmp/bl; mkdir -p /tmp/bl
    /work/bench/$b --engine evendb --workload C --distribution zipf-composite --records 2638186 \
      --duration 2 --memory-limit $mem --dir /tmp/bl --json $out/ld-$mem-$b-$r.json > $out/ld-$mem-$b-$r.txt 2>&1
  done
done
