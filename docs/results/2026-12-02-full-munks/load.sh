#!/bin/bash
# load.sh <out> <rounds> "<caps>" <value-size> <records> name=ENV=VAL,...@bench ...: a load (C for 1 s after), variants alternating
out=$1; rounds=$2; caps=$3; vs=$4; recs=$5; shift 5
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for nb in "$@"; do
   name=${nb%%=*}; rest=${nb#*=}; envs=${rest%@*}; b=${rest##*@}
   rm -rf /tmp/bw; env ${envs//,/ } $b --engine evendb --workload C --duration 1 --distribution zipf-composite --value-size $vs --records $recs \
     --memory-limit $cap --dir /tmp/bw --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
  done
 done
done
touch $out/done
