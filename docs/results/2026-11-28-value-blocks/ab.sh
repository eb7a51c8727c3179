#!/bin/bash
# ab.sh <rounds> <caps> <kinds: pe st> name=bench ... : alternating runs, evendb alone
R=$1; CAPS=$2; KINDS=$3; shift 3
for r in $(seq 1 $R); do for cap in $CAPS; do for kind in $KINDS; do for nb in "$@"; do
  n=${nb%%=*}; b=${nb#*=}
  case $kind in
    pe) W="--workload P,E100 --distribution zipf-composite --records 2638186";;
    st) W="--workload stream --records 5000000";;
  esac
  $b --engine evendb $W --duration 10 --memory-limit $cap --dir /tmp/pk --json $kind-$cap-$n-$r.json > $kind-$cap-$n-$r.txt 2>&1
done; done; done; done
