#!/bin/bash
# usage: pe.sh <outdir> <mem> <rounds> <workloads> bin...
out=$1; mem=$2; rounds=$3; wl=$4; shift 4
mkdir -p $out
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    n=$(basename $b)
    rm -rf /tmp/bl; mkdir -p /tmp/bl
    /work/bench/$n --engine evendb --workload $wl --distribution zipf-composite --records 2638186 \
      --duration 10 --memory-limit $mem --dir /tmp/bl --json $out/pe-$mem-$n-$r.json > $out/pe-$mem-$n-$r.txt 2>&1
  done
done
