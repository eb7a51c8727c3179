#!/bin/bash
out=$1; mem=$2; rounds=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    n=$(basename "$b")
    rm -rf /tmp/bs; mkdir -p /tmp/bs
    $b --engine evendb --workload stream --records 5000000 --duration 10 --memory-limit $mem --dir /tmp/bs --json $out/stream-$mem-$n-$r.json > $out/stream-$mem-$n-$r.txt 2>&1
  done
done
