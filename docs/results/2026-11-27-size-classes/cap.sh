#!/bin/bash
# cap.sh <outdir> <cap> <rounds> <binaries...>: P,E100 at 8x, binaries alternating
out=$1; cap=$2; rounds=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    rm -rf /tmp/bo; /work/bench/$b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit $cap --dir /tmp/bo --json $out/$b-$cap-$r.json > $out/$b-$cap-$r.txt 2>&1
  done
done
