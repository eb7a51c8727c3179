#!/usr/bin/env bash
# Server benchmark: evendb-server (release, clean tree) under redis-benchmark, then the embedded store under evendb-bench.
set -u
S=/work/target-srv/release/evendb-server; B=/work/target-srv/release/evendb-bench
OUT=$1; mkdir -p $OUT
for round in 1 2 3; do
  D=$(mktemp -d /work/benchdata/srv.XXXX)
  $S --dir $D/db --port 6401 --log-level warn --memory-budget 1G > $OUT/server$round.out 2>&1 &
  PID=$!; sleep 1
  cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
  run() { local name=$1; shift; local b=$(cpu); local t0=$(date +%s.%N)
    redis-benchmark -p 6401 --csv "$@" > $OUT/$name-$round.csv 2>&1 || true
    echo "$name $round cpu_ticks=$(( $(cpu) - b )) wall=$(echo "$(date +%s.%N) - $t0" | bc)" >> $OUT/cpu.txt; }
  run samekey -t set,get -n 1000000 -c 50 -P 16
  run rand -t set,get -n 1000000 -c 50 -P 16 -r 1000000
  run nopipe -t set,get -n 200000 -c 50 -r 1000000
  run range10 -n 300000 -c 50 -P 16 -r 1000000 RANGE "[key:__rand_int__" + LIMIT 10
  run range10rev -n 300000 -c 50 -P 16 -r 1000000 RANGE - "[key:__rand_int__" LIMIT 10 REV
  echo "round $round $(grep VmHWM /proc/$PID/status)" >> $OUT/cpu.txt
  kill -TERM $PID; wait $PID; rm -rf $D
  $B --engine evendb --workload P,C,E10 --records 1000000 --key-size 16 --value-size 3 --distribution uniform --threads 2 --duration 10 --memory-limit 4G > $OUT/embedded-$round.txt 2>&1
done
