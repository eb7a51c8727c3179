#!/bin/bash
# usage: ab.sh <out dir> <rounds> <caps> <value size> <records> <workloads> name=binary ...: variants alternating
out=$1; rounds=$2; caps=$3; vs=$4; rec=$5; wl=$6; shift 6
mkdir -p $out
for r in $(seq 1 $rounds); do
  for cap in $caps; do
    for nb in "$@"; do
      name=${nb%%=*}; bin=${nb#*=}
      rm -rf /tmp/bw
      $bin --engine evendb --workload $wl --duration 10 --distribution zipf-composite --value-size $vs --records $rec --memory-limit $cap --dir /tmp/bw --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
    done
  done
done
