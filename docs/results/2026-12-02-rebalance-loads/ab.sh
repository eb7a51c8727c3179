#!/bin/bash
# ab.sh <out> <rounds> "<caps>" name=ENV=VAL,ENV=VAL@bin ...: P,E100 zipf-composite at 8x, alternating variants
out=$1; rounds=$2; caps=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for nb in "$@"; do
   name=${nb%%=*}; rest=${nb#*=}; envs=${rest%@*}; b=${rest##*@}
   rm -rf /tmp/bw; env ${envs//,/ } $b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
     --memory-limit $cap --dir /tmp/bw --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
  done
 done
done
touch $out/done
