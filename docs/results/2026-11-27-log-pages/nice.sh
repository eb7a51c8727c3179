#!/bin/bash
# nice.sh <outdir> <cap> <rounds> <workloads> <nice values...>: eb-nice with XNICE=<n>
out=$1; cap=$2; rounds=$3; wl=$4; shift 4
mkdir -p $out
for r in $(seq 1 $rounds); do
  for n in "$@"; do
    rm -rf /tmp/bl; XNICE=$n /work/bench/eb-nice --engine evendb --workload $wl --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit $cap --dir /tmp/bl --json $out/n$n-$cap-$r.json > $out/n$n-$cap-$r.txt 2>&1
  done
done
