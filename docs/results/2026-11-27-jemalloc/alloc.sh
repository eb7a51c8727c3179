#!/bin/bash
# alloc.sh <outdir> <cap> <rounds> : glibc (tuned), jemalloc (defaults, tuned), mimalloc purge 0
out=$1; cap=$2; rounds=$3
mkdir -p $out
run() { name=$1; bin=$2; shift 2
  rm -rf /tmp/bl; env "$@" /work/bench/$bin --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit $cap --dir /tmp/bl --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1; }
for r in $(seq 1 $rounds); do
  run glibc eb-glibc X=1
  run jem eb-jem X=1
  run jemt eb-jem _RJEM_MALLOC_CONF=background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0
  run mim0 eb-mim MIMALLOC_PURGE_DELAY=0
done
