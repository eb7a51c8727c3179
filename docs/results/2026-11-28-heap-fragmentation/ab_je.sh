#!/bin/bash
# ab_je.sh <out> <rounds> "<caps>" <conf-a> <conf-b> <bench>: P,E100 at 8x with
# jemalloc statistics (the probe build), alternating two _RJEM_MALLOC_CONF
# overrides; outputs a-<cap>-<round>.txt and b-<cap>-<round>.txt
O=$1; R=$2; CAPS=$3; A=$4; B=$5; BENCH=$6
mkdir -p $O
for r in $(seq 1 $R); do for c in $CAPS; do for v in a b; do
  conf=$A; [ $v = b ] && conf=$B
  rm -rf /tmp/pe
  EVENDB_JESTATS=1 _RJEM_MALLOC_CONF=$conf $BENCH --engine evendb --workload P,E100 --distribution zipf-composite \
    --records 2638186 --duration 10 --memory-limit $c --dir /tmp/pe > $O/$v-$c-$r.txt 2>&1
done; done; done
