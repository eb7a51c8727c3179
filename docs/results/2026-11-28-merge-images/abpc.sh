#!/bin/bash
# abpc.sh <outdir> <rounds> "<caps>" name=binary ...: P,C zipf-composite with 100-byte values, 4,000,000 records, alternating binaries
out=$1; rounds=$2; caps=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for nb in "$@"; do
   name=${nb%%=*}; b=${nb#*=}
   rm -rf /tmp/bw; $b --engine evendb --workload P,C --distribution zipf-composite --value-size 100 --records 4000000 --duration 10 \
     --memory-limit $cap --dir /tmp/bw --json $out/pc-$name-$cap-$r.json > $out/pc-$name-$cap-$r.txt 2>&1
  done
 done
done
