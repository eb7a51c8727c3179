#!/bin/bash
# pe.sh <out> <cap> <vsize> <records> <workloads> <rounds> <bins...>: alternating evendb-only runs
out=$1; cap=$2; vs=$3; n=$4; wl=$5; rounds=$6; shift 6; mkdir -p $out
for r in $(seq 1 $rounds); do for b in "$@"; do
  rm -rf /tmp/bs; /work/bench/$b --engine evendb --workload $wl --distribution zipf-composite --value-size $vs --records $n --duration 10 \
    --memory-limit $cap --dir /tmp/bs --json $out/$b-$cap-$vs-$r.json > $out/$b-$cap-$vs-$r.txt 2>&1
done; done
