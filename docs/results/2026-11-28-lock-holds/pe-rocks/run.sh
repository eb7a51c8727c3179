#!/bin/bash
# run.sh <rounds>: P,E100 zipf-composite at 8x, evendb and both RocksDB configurations, both caps
for r in $(seq 1 $1); do for cap in 256M 1G; do
  rm -rf /tmp/pr
  /work/bench/peer-c940 --engine evendb,rocksdb,rocksdb-universal --workload P,E100 --distribution zipf-composite \
    --records 2638186 --duration 10 --memory-limit $cap --dir /tmp/pr --json pe-$cap-$r.json > pe-$cap-$r.txt 2>&1
done; done
rm -rf /tmp/pr
