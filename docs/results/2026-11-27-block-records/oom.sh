#!/bin/bash
# Ten runs of issue 22's command at a 256 MiB cap.
out=/work/bench/s39/oom
for r in $(seq 1 10); do
  rm -rf /tmp/boom; mkdir -p /tmp/boom
  /work/bench/eb-head39 --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 \
    --duration 10 --memory-limit 256M --dir /tmp/boom --json $out/r$r.json > $out/r$r.txt 2>&1
  echo "run $r rc=$?" >> $out/rc.txt
done
