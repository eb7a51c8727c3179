#!/bin/bash
# bg.sh <outdir> <rounds>: the default options against a background thread doing the purging
out=$1; rounds=$2
mkdir -p $out
for r in $(seq 1 $rounds); do
  for v in inline bg; do
    if [ $v = bg ]; then c=narenas:2,background_thread:true,max_background_threads:1,dirty_decay_ms:5,muzzy_decay_ms:0; else c=narenas:2; fi
    rm -rf /tmp/bo; _RJEM_MALLOC_CONF=$c /work/bench/eb-jdef --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit 256M --dir /tmp/bo --json $out/$v-$r.json > $out/$v-$r.txt 2>&1
  done
done
