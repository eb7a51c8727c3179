#!/bin/bash
# ld.sh <outdir> <cap> <rounds> <value-size> <records> <binaries...>: the sequential load and P (zipf-composite), alternating binaries
out=$1; cap=$2; rounds=$3; vs=$4; n=$5; shift 5
mkdir -p $out
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    rm -rf /tmp/bl; /work/bench/$b --engine evendb --workload P --distribution zipf-composite --value-size $vs --records $n --duration 10 \
      --memory-limit $cap --dir /tmp/bl --json $out/$b-$vs-$cap-$r.json > $out/$b-$vs-$cap-$r.txt 2>&1
  done
done
