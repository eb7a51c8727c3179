#!/bin/bash
# usage: run.sh <out dir> <rounds> <cap> <value size> <records> <workloads> name=binary ...
# The bench's load then <workloads>, variants alternating.
out=$1; rounds=$2; cap=$3; vs=$4; rec=$5; wl=$6; shift 6
mkdir -p $out
for r in $(seq 1 $rounds); do
  for nb in "$@"; do
    name=${nb%%=*}; bin=${nb#*=}
    rm -rf /tmp/bw
    $bin --engine evendb --workload $wl --duration 10 --distribution zipf-composite --value-size $vs --records $rec --memory-limit $cap --dir /tmp/bw --json $out/$name-$r.json > $out/$name-$r.txt 2>&1
  done
done
