#!/bin/bash
out=$1; cap=$2; rounds=$3; shift 3; mkdir -p $out
for r in $(seq 1 $rounds); do for b in "$@"; do
  rm -rf /tmp/bs; /work/bench/$b --engine evendb --workload stream --records 5000000 --duration 10 \
    --memory-limit $cap --dir /tmp/bs --json $out/$b-$cap-$r.json > $out/$b-$cap-$r.txt 2>&1
done; done
