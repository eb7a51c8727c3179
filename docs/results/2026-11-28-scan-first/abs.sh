#!/bin/bash
# abs.sh <outdir> <rounds> "<caps>" name=binary ...: the stream (5,000,000 events), alternating binaries
out=$1; rounds=$2; caps=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for nb in "$@"; do
   name=${nb%%=*}; b=${nb#*=}
   rm -rf /tmp/bw; $b --engine evendb --workload stream --records 5000000 --duration 10 \
     --memory-limit $cap --dir /tmp/bw --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
  done
 done
done
