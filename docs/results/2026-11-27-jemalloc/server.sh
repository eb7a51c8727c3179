#!/bin/bash
# server.sh <outdir> <rounds> <binaries...>: evendb-server with a 64 MiB budget under
# redis-benchmark (800-byte SETs over 2M keys, then GETs, then 10-key RANGEs),
# binaries alternating; the server's VmHWM / VmRSS after each step
out=$1; rounds=$2; shift 2
mkdir -p $out
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    f=$out/$b-$r.txt; : > $f
    rm -rf /tmp/bsrv; /work/bench/$b --dir /tmp/bsrv --port 6411 --log-level warn --memory-budget 64M & pid=$!
    sleep 1
    mem() { echo "$1 $(grep -E 'VmHWM|VmRSS' /proc/$pid/status | tr -s ' \t' ' ' | tr '\n' ' ')" >> $f; }
    redis-benchmark -p 6411 --csv -t set -n 2000000 -c 50 -P 16 -r 2000000 -d 800 >> $f; mem after-set
    redis-benchmark -p 6411 --csv -t get -n 1000000 -c 50 -P 16 -r 2000000 >> $f; mem after-get
    redis-benchmark -p 6411 --csv -n 200000 -c 50 -P 16 -r 2000000 RANGE "[key:__rand_int__" + LIMIT 10 >> $f; mem after-range
    kill $pid; wait $pid 2>/dev/null
  done
done
