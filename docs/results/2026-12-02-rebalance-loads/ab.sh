#!/bin/bash
# ab.sh <out> <rounds> "<caps>" pe|stream name=ENV=VAL,...@bench ...: evendb alone,
# P,E100 zipf-composite at 8x (pe) or the 5M-event stream, variants alternating;
# each variant is a bench binary and the environment it runs with.
out=$1; rounds=$2; caps=$3; kind=$4; shift 4
case $kind in
  pe) args="--workload P,E100 --distribution zipf-composite --records 2638186" ;;
  stream) args="--workload stream --records 5000000" ;;
  *) echo "kind: pe or stream" >&2; exit 2 ;;
esac
mkdir -p $out
for r in $(seq 1 $rounds); do
 for cap in $caps; do
  for nb in "$@"; do
   name=${nb%%=*}; rest=${nb#*=}; envs=${rest%@*}; b=${rest##*@}
   rm -rf /tmp/bw; env ${envs//,/ } $b --engine evendb $args --duration 10 \
     --memory-limit $cap --dir /tmp/bw --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
  done
 done
done
touch $out/done
