#!/bin/bash
# usage: stream.sh <out dir> <rounds> <cap> name=binary ...
# The stream: 5,000,000 events ingested in time order, then 10 s of its queries.
out=$1; rounds=$2; cap=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for nb in "$@"; do
    name=${nb%%=*}; bin=${nb#*=}
    rm -rf /tmp/bw
    $bin --engine evendb --workload stream --records 5000000 --duration 10 --memory-limit $cap --dir /tmp/bw --json $out/$name-$r.json > $out/$name-$r.txt 2>&1
  done
done
