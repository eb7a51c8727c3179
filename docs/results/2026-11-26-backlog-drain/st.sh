#!/bin/bash
# usage: st.sh <outdir> <mem> <rounds> bin...
out=$1; mem=$2; rounds=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    rm -rf /tmp/bl; mkdir -p /tmp/bl
    /work/bench/$b --engine evendb --workload stream --records 5000000 \
      --duration 10 --memory-limit $mem --dir /tmp/bl --json $out/st-$mem-$b-$r.json > $out/st-$mem-$b-$r.txt 2>&1
  done
done
