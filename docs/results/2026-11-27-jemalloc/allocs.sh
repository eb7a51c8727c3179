#!/bin/bash
# allocs.sh <outdir> <cap> <rounds> <name>=<binary>[:<jemalloc options>]...
# P,E100 zipf-composite at 8x the memory, evendb alone, the variants
# alternating; a variant's options go to jemalloc through _RJEM_MALLOC_CONF
# (after the binary's own), MIMALLOC_PURGE_DELAY=0 for every run (only
# mimalloc reads it).
out=$1; cap=$2; rounds=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for v in "$@"; do
    name=${v%%=*}; rest=${v#*=}; bin=${rest%%:*}; conf=""
    [ "$rest" != "$bin" ] && conf=${rest#*:}
    rm -rf /tmp/bl
    env ${conf:+_RJEM_MALLOC_CONF=$conf} MIMALLOC_PURGE_DELAY=0 /work/bench/$bin --engine evendb --workload P,E100 \
      --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit $cap --dir /tmp/bl --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
  done
done
