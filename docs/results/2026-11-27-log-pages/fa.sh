#!/bin/bash
out=$1; rounds=$2
mkdir -p $out
for r in $(seq 1 $rounds); do
  for m in off on; do
    rm -rf /tmp/bl
    if [ $m = on ]; then export XFALLOC=1; else unset XFALLOC; fi
    /work/bench/eb-xfalloc --engine evendb --workload P --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit 256M --dir /tmp/bl --json $out/$m-$r.json > $out/$m-$r.txt 2>&1
  done
done
unset XFALLOC
