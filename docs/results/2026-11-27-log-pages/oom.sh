#!/bin/bash
# oom.sh <outdir> <runs> <binary>: the memory issue's ten-run check
out=$1; runs=$2; b=$3
mkdir -p $out
for r in $(seq 1 $runs); do
  rm -rf /tmp/bo; /work/bench/$b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
    --memory-limit 256M --dir /tmp/bo --json $out/$b-$r.json > $out/$b-$r.txt 2>&1; echo "run $r exit $?" >> $out/exits.txt
done
