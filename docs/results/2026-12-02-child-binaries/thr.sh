#!/bin/bash
# thr.sh <out> <rounds> <cap> name=ENV=VAL@bench ...: a sequential load of
# 2,638,186 x 814 B (then 1 s of C), variants alternating, with perf
# recording the kernel's reclaim throttles (vmscan:mm_vmscan_throttled);
# ENGINE=rocksdb runs another engine of the bench binary, WORKLOAD=P
# DURATION=10 a phase of P after the load, VALUE_SIZE=100 RECORDS=4000000
# the 100-byte load, PERF=0 without perf.
out=$1; rounds=$2; cap=$3; shift 3
mkdir -p $out
for r in $(seq 1 $rounds); do
 for nb in "$@"; do
  name=${nb%%=*}; rest=${nb#*=}; envs=${rest%@*}; b=${rest##*@}
  rm -rf /tmp/bw
  perf=(perf record -q -a -e vmscan:mm_vmscan_throttled -o $out/$name-$cap-$r.perf --)
  [ "${PERF:-1}" = 0 ] && perf=()
  env ${envs//,/ } "${perf[@]}" \
    $b --engine ${ENGINE:-evendb} --workload ${WORKLOAD:-C} --duration ${DURATION:-1} --distribution zipf-composite \
    --records ${RECORDS:-2638186} ${VALUE_SIZE:+--value-size $VALUE_SIZE} \
    --memory-limit $cap --dir /tmp/bw --json $out/$name-$cap-$r.json > $out/$name-$cap-$r.txt 2>&1
  if [ -f $out/$name-$cap-$r.perf ]; then
    perf script -i $out/$name-$cap-$r.perf > $out/$name-$cap-$r.thr 2>/dev/null; rm -f $out/$name-$cap-$r.perf
  fi
 done
done
