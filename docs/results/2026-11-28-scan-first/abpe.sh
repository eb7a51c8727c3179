#!/bin/bash
# abpe.sh <outdir> <rounds> "<caps>" name=binary ...: P,E100 zipf-composite at 8x, alternating binaries
out=$1; rounds=$2; caps=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  if [ $cap = 1G ]; then n=2638186; else n=2638186; fi
  for nb in "$@"; do
   name=${nb%%=*}; b=${nb#*=}
   rm -rf /tmp/bw; $b --engine evendb --workload P,E100 --distribution zipf-composite --records $n --duration 10 \
     --memory-limit $cap --dir /tmp/bw --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
  done
 done
done
