#!/bin/bash
# mix.sh <out> <rounds> "<caps>" name=ENV=VAL,...@bin ...: stream, then P,E100, per variant, alternating
out=$1; rounds=$2; caps=$3; shift 3
mkdir -p $out/st $out/pe
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for nb in "$@"; do
   name=${nb%%=*}; rest=${nb#*=}; envs=${rest%@*}; b=${rest##*@}
   rm -rf /tmp/st; env ${envs//,/ } $b --engine evendb --workload stream --records 5000000 --duration 10 \
     --memory-limit $cap --dir /tmp/st --json $out/st/$name-$cap-$r.json > $out/st/$name-$cap-$r.txt 2>&1
   rm -rf /tmp/st; env ${envs//,/ } $b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
     --memory-limit $cap --dir /tmp/st --json $out/pe/$name-$cap-$r.json > $out/pe/$name-$cap-$r.txt 2>&1
  done
 done
done
touch $out/done
