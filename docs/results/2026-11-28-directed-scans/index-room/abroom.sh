#!/bin/bash
# abroom.sh <outdir> <rounds> "<caps>" <pe|stream>: eb-env with and without EVENDB_NO_INDEX_ROOM,
# alternating; pe = P,E100 zipf-composite, 2,638,186 records; stream = the stream, 5,000,000 events
out=$1; rounds=$2; caps=$3; what=$4
if [ "$what" = stream ]; then
  args="--workload stream --records 5000000"
else
  args="--workload P,E100 --distribution zipf-composite --records 2638186"
fi
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for name in room noroom; do
   rm -rf /tmp/bw
   if [ $name = noroom ]; then export EVENDB_NO_INDEX_ROOM=1; else unset EVENDB_NO_INDEX_ROOM; fi
   /work/bench/eb-env --engine evendb $args --duration 10 \
     --memory-limit $cap --dir /tmp/bw --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
  done
 done
done
