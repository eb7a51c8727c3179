#!/bin/bash
out=$1; rounds=$2
mkdir -p $out
G0=narenas:2,background_thread:true,dirty_decay_ms:0,muzzy_decay_ms:0
G20=narenas:2,background_thread:true,dirty_decay_ms:20,muzzy_decay_ms:0
run() { name=$1; bin=$2; cap=$3; args=$4; shift 4
  rm -rf /tmp/bl; env "$@" /work/bench/$bin --engine evendb $args --duration 10 \
      --memory-limit $cap --dir /tmp/bl --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1; }
PE="--workload P,E100 --distribution zipf-composite --records 2638186"
PC="--workload P,C --distribution zipf-composite --value-size 100 --records 4000000"
for r in $(seq 1 $rounds); do
  run glibc eb-glibc 1G "$PE" X=1
  run j0 eb-jem 1G "$PE" _RJEM_MALLOC_CONF=$G0
  run j20 eb-jem 1G "$PE" _RJEM_MALLOC_CONF=$G20
  run s-glibc eb-glibc 256M "$PC" X=1
  run s-j0 eb-jem 256M "$PC" _RJEM_MALLOC_CONF=$G0
  run s-j20 eb-jem 256M "$PC" _RJEM_MALLOC_CONF=$G20
done
