#!/bin/bash
# ab.sh OUT ROUNDS BIN... : alternating evendb-only runs of five configurations per binary
out=$1; rounds=$2; shift 2
mkdir -p $out
for r in $(seq 1 $rounds); do
  for cfg in stream:256M stream:1G pe:256M pe:1G pc100:256M; do
    w=${cfg%%:*}; mem=${cfg##*:}
    case $w in
      stream) args="--workload stream --records 5000000";;
      pe) args="--workload P,E100 --distribution zipf-composite --records 2638186";;
      pc100) args="--workload P,C --distribution zipf-composite --value-size 100 --records 4000000";;
    esac
    for b in "$@"; do
      rm -rf /tmp/bab; mkdir -p /tmp/bab
      /work/bench/$b --engine evendb $args --duration 10 --memory-limit $mem --dir /tmp/bab \
        --json $out/$w-$mem-$b-$r.json > $out/$w-$mem-$b-$r.txt 2>&1
    done
  done
done
