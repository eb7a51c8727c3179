#!/bin/bash
# usage: ld.sh <out dir> <rounds> <cap> <value size> <records> name=binary ...
# Loads the store in key order (the bench's load before a 1 s C phase) and
# prints the load's figures and the put-wait counters.
out=$1; rounds=$2; cap=$3; vs=$4; rec=$5; shift 5
mkdir -p $out
for r in $(seq 1 $rounds); do
  for nb in "$@"; do
    name=${nb%%=*}; bin=${nb#*=}
    rm -rf /tmp/bw
    $bin --engine evendb --workload C --duration 1 --distribution zipf-composite --value-size $vs --records $rec --memory-limit $cap --dir /tmp/bw --json $out/$name-$r.json > $out/$name-$r.txt 2>&1
    python3 - $out/$name-$r.json $name $r <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); x=d['results'][0]; s=x['engine_stats_delta']; p=x['latency_us']['put']
print('%-6s %s puts/s=%7d p99.9=%6.0fus worst=%6.1fms rss=%5.1fMiB full=%4d fullms=%5d lockms=%5d reb=%4d rebms=%5d splits=%3d waitmax=%5.1fms' % (sys.argv[2], sys.argv[3], x['throughput_ops_per_sec'], p['p999'], p['max']/1000, x['peak_rss_bytes']/2**20, s['put_munk_full_waits'], s['put_munk_full_wait_micros']//1000, s['put_lock_wait_micros']//1000, s['munk_rebalances'], s['munk_rebalance_micros']//1000, s['splits'], x['engine_stats']['put_wait_max_micros']/1000))
PY
  done
done
