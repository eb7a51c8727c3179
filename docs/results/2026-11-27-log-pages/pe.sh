#!/bin/bash
# pe.sh <outdir> <cap> <rounds> <workloads> <binaries...>
out=$1; cap=$2; rounds=$3; wl=$4; shift 4
mkdir -p $out
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    rm -rf /tmp/bl; /work/bench/$b --engine evendb --workload $wl --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit $cap --dir /tmp/bl --json $out/$b-$cap-$r.json > $out/$b-$cap-$r.txt 2>&1
  done
done
