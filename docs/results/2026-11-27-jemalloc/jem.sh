#!/bin/bash
out=$1; cap=$2; rounds=$3
mkdir -p $out
run() { name=$1; bin=$2; shift 2
  rm -rf /tmp/bl; env "$@" /work/bench/$bin --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit $cap --dir /tmp/bl --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1; }
for r in $(seq 1 $rounds); do
  run jA eb-jem _RJEM_MALLOC_CONF=narenas:2,dirty_decay_ms:0,muzzy_decay_ms:0
  run jB eb-jem _RJEM_MALLOC_CONF=narenas:2,background_thread:true,dirty_decay_ms:200,muzzy_decay_ms:0
  run jC eb-jem _RJEM_MALLOC_CONF=background_thread:true,dirty_decay_ms:100,muzzy_decay_ms:0,tcache_max:1024
done
