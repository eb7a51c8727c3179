#!/bin/bash
# C at 8x (gets of 814-byte records read whole blocks): alternating evendb-only runs, then the peers, one run per cap.
cd /work/bench/s39
mkdir -p pc peers
for r in 1 2; do
  for b in eb-head39 eb-blk; do
    rm -rf /tmp/bpc; mkdir -p /tmp/bpc
    /work/bench/$b --engine evendb --workload P,C --distribution zipf-composite --records 2638186 --duration 10 \
      --memory-limit 256M --dir /tmp/bpc --json pc/pc-256M-$b-$r.json > pc/pc-256M-$b-$r.txt 2>&1
  done
done
for mem in 256M 1G; do
  rm -rf /tmp/bpe; mkdir -p /tmp/bpe
  /work/bench/eb-blk --engine evendb,rocksdb,rocksdb-universal --workload stream --records 5000000 --duration 10 \
    --memory-limit $mem --dir /tmp/bpe --json peers/stream-$mem.json > peers/stream-$mem.txt 2>&1
  rm -rf /tmp/bpe; mkdir -p /tmp/bpe
  /work/bench/eb-blk --engine evendb,rocksdb,rocksdb-universal --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 \
    --memory-limit $mem --dir /tmp/bpe --json peers/pe-$mem.json > peers/pe-$mem.txt 2>&1
done
