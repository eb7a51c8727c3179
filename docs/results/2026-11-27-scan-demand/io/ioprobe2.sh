#!/bin/bash
# usage: ioprobe2.sh binary engine cap start_after_s : device reads and read calls per thread name over 5 s
bin=$1; eng=$2; cap=$3; at=$4
rm -rf /tmp/bw; mkdir -p /tmp/bw
$bin --engine $eng --workload P,E100 --distribution zipf-composite --records 2638186 --duration 10 --memory-limit $cap --dir /tmp/bw --json /tmp/io2-$eng-$cap.json > /tmp/io2-$eng-$cap.txt 2>&1 &
sleep $at
pid=$(pgrep -n -f "__run-job")
snap() { for t in /proc/$pid/task/*; do echo "$(cat $t/comm) $(awk '/^syscr|^read_bytes/ {printf "%s ", $2}' $t/io)"; done; }
snap > /tmp/io2-a
sleep 5
snap > /tmp/io2-b
python3 - <<'PY'
from collections import defaultdict
def load(p):
    d=defaultdict(lambda:[0,0])
    for l in open(p):
        f=l.split()
        if len(f)<3: continue
        name=' '.join(f[:-2]); d[name][0]+=int(f[-2]); d[name][1]+=int(f[-1])
    return d
a,b=load('/tmp/io2-a'),load('/tmp/io2-b')
for k in sorted(b):
    sc=b[k][0]-a[k][0]; rb=(b[k][1]-a[k][1])/2**20
    if sc or rb: print(f"{k:20s} read calls {sc:8d}  device MB {rb:8.0f}")
PY
wait
