#!/bin/bash
# usage: run.sh outdir rounds variant=binary...
out=$1; rounds=$2; shift 2
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in ${CAPS:-256M 1G}; do
  for vb in "$@"; do
   v=${vb%%=*}; b=${vb#*=}
   rm -rf /tmp/bw; mkdir -p /tmp/bw
   $b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 --memory-limit $cap --dir /tmp/bw --json $out/$v-$cap-$r.json > $out/$v-$cap-$r.txt 2>&1
  done
 done
done
echo done > $out/DONE
