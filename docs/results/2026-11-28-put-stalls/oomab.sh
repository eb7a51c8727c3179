#!/bin/bash
# oomab.sh <outdir> <rounds> name=binary ...: issue 22's ten-run command, binaries alternating
out=$1; rounds=$2; shift 2
mkdir -p $out
for r in $(seq 1 $rounds); do
 for nb in "$@"; do
  name=${nb%%=*}; b=${nb#*=}
  rm -rf /tmp/bo; $b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
    --memory-limit 256M --dir /tmp/bo --json $out/$name-run-$r.json > $out/$name-run-$r.txt 2>&1; echo "$name run $r exit $?" >> $out/exits.txt
 done
done
rm -rf /tmp/bo
