#!/bin/bash
# oom10.sh <bench> <out>: issue 22's command ten times at 256M
B=$1; O=$2; mkdir -p $O
for i in $(seq 1 10); do
  rm -rf /tmp/oom
  $B --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
     --memory-limit 256M --dir /tmp/oom --json $O/run-$i.json > $O/run-$i.txt 2>&1
  echo "run $i exit $?" >> $O/exits.txt
done
touch $O.done
