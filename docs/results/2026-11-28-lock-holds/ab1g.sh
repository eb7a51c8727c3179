#!/bin/bash
# ab1g.sh <out> <rounds> name=bench ...: issue 22's command at a 1 GiB cap, binaries alternating
out=$1; rounds=$2; shift 2; mkdir -p $out
for r in $(seq 1 $rounds); do for nb in "$@"; do n=${nb%%=*}; b=${nb#*=}
  rm -rf /tmp/bo; $b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
    --memory-limit 1G --dir /tmp/bo --json $out/$n-run-$r.json > $out/$n-run-$r.txt 2>&1
done; done; rm -rf /tmp/bo
