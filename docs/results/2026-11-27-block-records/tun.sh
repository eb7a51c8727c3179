#!/bin/bash
# Alternating runs of issue 22's command with glibc malloc tunables: tun.sh OUT MEM ROUNDS "name=TUNABLES"...
out=$1; mem=$2; rounds=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
  for cfg in "$@"; do
    name=${cfg%%=*}; tun=${cfg#*=}
    rm -rf /tmp/btun; mkdir -p /tmp/btun
    env ${tun:+GLIBC_TUNABLES=$tun} /work/bench/eb-head39 --engine evendb --workload P,E100 --distribution zipf-composite --records 2638186 \
      --duration 10 --memory-limit $mem --dir /tmp/btun --json $out/$name-$mem-$r.json > $out/$name-$mem-$r.txt 2>&1
  done
done
