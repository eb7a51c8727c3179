#!/bin/bash
# abcap.sh <outdir> <rounds> name=binary ...: the stream at 256 MiB, then P,E100 at 256 MiB and 1 GiB, alternating binaries
out=$1; rounds=$2; shift 2
mkdir -p $out
for r in $(seq 1 $rounds); do
  for nb in "$@"; do
   name=${nb%%=*}; b=${nb#*=}
   rm -rf /tmp/bw; $b --engine evendb --workload stream --records 5000000 --duration 10 \
     --memory-limit 256M --dir /tmp/bw --json $out/st-$name-256M-$r.json > $out/st-$name-256M-$r.txt 2>&1
  done
  for cap in 256M 1G; do
   for nb in "$@"; do
    name=${nb%%=*}; b=${nb#*=}
    rm -rf /tmp/bw; $b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit $cap --dir /tmp/bw --json $out/pe-$name-$cap-$r.json > $out/pe-$name-$cap-$r.txt 2>&1
   done
  done
done
