#!/bin/bash
# run.sh <rounds> <caps> : alternating default jemalloc options vs slab_sizes:513-1024:2
B=/work/bench/eb-e205
for r in $(seq 1 $1); do for cap in $2; do for conf in def s2; do
  if [ $conf = s2 ]; then export _RJEM_MALLOC_CONF=slab_sizes:513-1024:2; else unset _RJEM_MALLOC_CONF; fi
  $B --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 --memory-limit $cap --dir /tmp/slab --json pe-$cap-$conf-$r.json > pe-$cap-$conf-$r.txt 2>&1
  $B --engine evendb --workload stream --records 5000000 --duration 10 --memory-limit $cap --dir /tmp/slab --json st-$cap-$conf-$r.json > st-$cap-$conf-$r.txt 2>&1
done; done; done
unset _RJEM_MALLOC_CONF
