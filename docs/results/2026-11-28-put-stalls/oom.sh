#!/bin/bash
# oom.sh <outdir> <runs> <binary>: issue 22's ten-run check (P,E100 zipf-composite, 2,638,186 records, 256 MiB)
out=$1; runs=$2; b=$3
mkdir -p $out
for r in $(seq 1 $runs); do
  rm -rf /tmp/bo; $b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
    --memory-limit 256M --dir /tmp/bo --json $out/run-$r.json > $out/run-$r.txt 2>&1; echo "run $r exit $?" >> $out/exits.txt
done
