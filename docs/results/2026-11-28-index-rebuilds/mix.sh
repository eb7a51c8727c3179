#!/bin/bash
# mix.sh <out> <rounds> <cap> name=bin...: stream and P,E100 at one cap, alternating binaries
out=$1; rounds=$2; cap=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for nb in "$@"; do
   name=${nb%%=*}; b=${nb#*=}
   rm -rf /tmp/st; $b --engine evendb --workload stream --records 5000000 --duration 10 \
     --memory-limit $cap --dir /tmp/st --json $out/$name-st$cap-$r.json > $out/$name-st$cap-$r.txt 2>&1
   rm -rf /tmp/st; $b --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
     --memory-limit $cap --dir /tmp/st --json $out/$name-pe$cap-$r.json > $out/$name-pe$cap-$r.txt 2>&1
  done
done
touch $out.done
