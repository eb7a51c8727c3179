#!/bin/bash
# l100.sh <out> <rounds> <cap> name=ENV=VAL@bench ...: a load of 4,000,000
# records of 100-byte values (then 1 s of C), variants alternating.
out=$1; rounds=$2; cap=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
 for nb in "$@"; do
  name=${nb%%=*}; rest=${nb#*=}; envs=${rest%@*}; b=${rest##*@}
  rm -rf /tmp/bw
  env ${envs//,/ } $b --engine evendb --workload C --duration 1 --distribution zipf-composite \
    --value-size 100 --records 4000000 --memory-limit $cap --dir /tmp/bw \
    --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
 done
done
