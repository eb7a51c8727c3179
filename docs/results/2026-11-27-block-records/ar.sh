#!/bin/bash
# ar.sh OUT MEM ROUNDS ARENAS... : alternating runs with XARENAS=n
out=$1; mem=$2; rounds=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for n in "$@"; do
    rm -rf /tmp/bar; mkdir -p /tmp/bar
    XARENAS=$n /work/bench/eb-xarena --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 \
      --duration 10 --memory-limit $mem --dir /tmp/bar --json $out/a$n-$mem-$r.json > $out/a$n-$mem-$r.txt 2>&1
  done
done
