#!/usr/bin/env bash
# One node against three: redis-benchmark against a standalone evendb-server (buffered, sync) and the leader of a 3-node cluster.
S=/work/target-srv/release/evendb-server; OUT=$1; mkdir -p $OUT
bench() { # name port
  local name=$1 p=$2
  redis-benchmark -p $p --csv -t set -n 100000 -c 50 -r 1000000 > $OUT/$name-set.csv 2>&1
  redis-benchmark -p $p --csv -t set -n 300000 -c 50 -P 16 -r 1000000 > $OUT/$name-set-p16.csv 2>&1
  redis-benchmark -p $p --csv -t get -n 100000 -c 50 -r 1000000 > $OUT/$name-get.csv 2>&1
  redis-benchmark -p $p --csv -t get -n 300000 -c 50 -P 16 -r 1000000 > $OUT/$name-get-p16.csv 2>&1
}
for round in 1 2; do
  for mode in buffered sync; do
    D=$(mktemp -d /work/benchdata/cb.XXXX)
    $S --dir $D/db --port 6601 --log-level warn --durability $mode > /dev/null 2>&1 & PID=$!; sleep 1
    bench one-$mode-$round 6601
    kill -TERM $PID; wait $PID; rm -rf $D
  done
  D=$(mktemp -d /work/benchdata/cb.XXXX)
  M="1@127.0.0.1:7601/127.0.0.1:6601,2@127.0.0.1:7602/127.0.0.1:6602,3@127.0.0.1:7603/127.0.0.1:6603"
  PIDS=""
  for i in 1 2 3; do $S --dir $D/n$i --port 660$i --log-level warn --cluster --cluster-id $i --cluster-members $M > /dev/null 2>&1 & PIDS="$PIDS $!"; done
  sleep 2
  redis-cli -p 6601 CLUSTER INFO | grep role > $OUT/three-$round-role.txt
  bench three-$round 6601
  kill -TERM $PIDS; wait; rm -rf $D
done
