#!/bin/bash
# ab.sh <outdir> <rounds> <binaries...>: the ten-run check's command, binaries alternating
out=$1; rounds=$2; shift 2
mkdir -p $out
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    rm -rf /tmp/bo; /work/bench/$b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit 256M --dir /tmp/bo --json $out/$b-$r.json > $out/$b-$r.txt 2>&1; echo "$b run $r exit $?" >> $out/exits.txt
  done
done
