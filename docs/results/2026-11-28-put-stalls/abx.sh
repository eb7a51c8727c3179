#!/bin/bash
# abx.sh <outdir> <rounds> "<caps>" <tag> "<bench args>" name=binary ...: alternating runs of one command per binary
out=$1; rounds=$2; caps=$3; tag=$4; args=$5; shift 5
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for nb in "$@"; do
   name=${nb%%=*}; b=${nb#*=}
   rm -rf /tmp/bw
   $b --engine evendb $args --memory-limit $cap --dir /tmp/bw --json $out/$tag-$name-$cap-$r.json > $out/$tag-$name-$cap-$r.txt 2>&1
  done
 done
done
rm -rf /tmp/bw
