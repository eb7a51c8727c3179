#!/bin/bash
# pad.sh <outdir> <cap> <rounds> <workloads>: eb-xpad without and with XPAD, alternating
out=$1; cap=$2; rounds=$3; wl=$4
mkdir -p $out
for r in $(seq 1 $rounds); do
  for m in off on; do
    rm -rf /tmp/bl
    if [ $m = on ]; then export XPAD=1; else unset XPAD; fi
    /work/bench/eb-xpad --engine evendb --workload $wl --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit $cap --dir /tmp/bl --json $out/$m-$cap-$r.json > $out/$m-$cap-$r.txt 2>&1
  done
done
unset XPAD
