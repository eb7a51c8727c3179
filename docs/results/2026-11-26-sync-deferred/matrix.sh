#!/bin/bash
# The Sync matrix of docs/results/2026-11-25-sync-journal, one binary.
B=${B:-target/release/evendb-bench}; E=evendb,rocksdb,rocksdb-universal,rocksdb-default
cd ${OUT:-.}
for r in 1 2; do for t in 2 8 32; do
  $B --engine $E --sync --threads $t --workload P --distribution zipf-composite --records 5000 \
     --duration 10 --memory-limit 1G --dir /tmp/bs --json p-5k-$t-r$r.json > p-5k-$t-r$r.txt 2>&1
done; done
for t in 8 32; do
  $B --engine $E --sync --threads $t --workload P --distribution zipf-composite --records 200000 \
     --duration 10 --memory-limit 1G --dir /tmp/bs --json p-200k-$t.json > p-200k-$t.txt 2>&1
done
for t in 2 8 32; do
  $B --engine $E --sync --threads $t --workload P --distribution zipf-composite --records 5000 \
     --duration 10 --memory-limit 256M --dir /tmp/bs --json p-5k-$t-256m.json > p-5k-$t-256m.txt 2>&1
done
for t in 8 32; do
  $B --engine $E --sync --threads $t --workload P --distribution zipf-composite --records 200000 \
     --duration 10 --memory-limit 256M --dir /tmp/bs --json p-200k-$t-256m.json > p-200k-$t-256m.txt 2>&1
done
$B --engine $E --sync --threads 8 --workload stream --records 300000 --duration 10 \
   --memory-limit 1G --dir /tmp/bs --json stream-8.json > stream-8.txt 2>&1
$B --engine $E --sync --threads 8 --workload stream --records 300000 --duration 10 \
   --memory-limit 256M --dir /tmp/bs --json stream-8-256m.json > stream-8-256m.txt 2>&1
echo done
