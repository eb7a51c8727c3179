#!/bin/bash
# abst.sh <outdir> <rounds> "<caps>": the stream (5,000,000 events), eb-env with and without EVENDB_NO_INDEX_ROOM, alternating
out=$1; rounds=$2; caps=$3
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for name in room noroom; do
   rm -rf /tmp/bw
   if [ $name = noroom ]; then export EVENDB_NO_INDEX_ROOM=1; else unset EVENDB_NO_INDEX_ROOM; fi
   /work/bench/eb-env --engine evendb --workload stream --records 5000000 --duration 10 \
     --memory-limit $cap --dir /tmp/bw --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
  done
 done
done
