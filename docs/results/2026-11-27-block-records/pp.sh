#!/bin/bash
# pp.sh OUT MEM ROUNDS BIN...: alternating load+P runs (P zipf-composite at 8x)
out=$1; mem=$2; rounds=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    rm -rf /tmp/bpp; mkdir -p /tmp/bpp
    /work/bench/$b --engine evendb --workload P --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit $mem --dir /tmp/bpp --json $out/p-$mem-$b-$r.json > $out/p-$mem-$b-$r.txt 2>&1
  done
done
