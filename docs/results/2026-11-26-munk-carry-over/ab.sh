#!/bin/bash
# Alternating evendb-only sequential loads: ab.sh <outdir> <memory limit> <rounds> <binary>...
# Each binary is an evendb-bench built with
#   CARGO_TARGET_DIR=... cargo build --release -p evendb-bench --features rocksdb,fjall
out=$1; mem=$2; rounds=$3; shift 3
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for b in "$@"; do
    n=$(basename "$b")
    rm -rf /tmp/bl; mkdir -p /tmp/bl
    "$b" --engine evendb --workload C --distribution zipf-composite --records 2638186 \
      --duration 2 --memory-limit "$mem" --dir /tmp/bl --json "$out/load-$mem-$n-$r.json" \
      > "$out/load-$mem-$n-$r.txt" 2>&1
  done
done
