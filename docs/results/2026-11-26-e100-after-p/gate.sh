#!/bin/bash
# usage: gate.sh <outdir> <mem> <rounds> <workloads>
out=$1; mem=$2; rounds=$3; wl=$4
mkdir -p $out
for r in $(seq 1 $rounds); do
  for cfg in "eb-cr6 lz4" "eb-gate lz4" "eb-cr6 none"; do
    set -- $cfg
    rm -rf /tmp/bl; mkdir -p /tmp/bl
    /work/bench/$1 --engine evendb --evendb-compression $2 --workload $wl --distribution zipf-composite --records 2638186 \
      --duration 10 --memory-limit $mem --dir /tmp/bl --json $out/g-$mem-$1-$2-$r.json > $out/g-$mem-$1-$2-$r.txt 2>&1
  done
done
