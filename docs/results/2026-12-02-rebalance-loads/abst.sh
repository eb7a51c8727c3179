#!/bin/bash
# abst.sh <out> <rounds> "<caps>" name=ENV=VAL,...@bin ...: the 5M-event stream, alternating variants
out=$1; rounds=$2; caps=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for nb in "$@"; do
   name=${nb%%=*}; rest=${nb#*=}; envs=${rest%@*}; b=${rest##*@}
   rm -rf /tmp/st; env ${envs//,/ } $b --engine evendb --workload stream --records 5000000 --duration 10 \
     --memory-limit $cap --dir /tmp/st --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
  done
 done
done
touch $out/done
