#!/bin/bash
# ar2.sh OUT MEM ROUNDS NAME:ARENAS:MMAP... : alternating runs of issue 22's command with malloc settings
out=$1; mem=$2; rounds=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for cfg in "$@"; do
    IFS=: read name arenas mmap <<< "$cfg"
    rm -rf /tmp/bar; mkdir -p /tmp/bar
    XARENAS=$arenas XMMAP=$mmap /work/bench/eb-xarena2 --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 \
      --duration 10 --memory-limit $mem --dir /tmp/bar --json $out/$name-$mem-$r.json > $out/$name-$mem-$r.txt 2>&1
  done
done
