#!/usr/bin/env bash
S=/work/target-srv/release/evendb-server; OUT=/tmp/srvb/sync; mkdir -p $OUT
for round in 1 2; do for exec in pool inline; do
  D=$(mktemp -d /work/benchdata/srv.XXXX)
  $S --dir $D/db --port 6403 --log-level warn --durability sync --exec $exec > /dev/null 2>&1 &
  PID=$!; sleep 1
  redis-benchmark -p 6403 --csv -t set -n 40000 -c 50 -r 1000000 > $OUT/$exec-$round.csv 2>&1
  kill -TERM $PID; wait $PID; rm -rf $D
done; done
