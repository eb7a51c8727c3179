#!/bin/bash
# smaps.sh <bench> <out>: per-mapping RSS of an evendb job's child process, 2 s into a C run on 10,000 records
B=$1; O=$2
rm -rf /tmp/sm; $B --engine evendb --workload C --records 10000 --duration 4 --memory-limit 256M --dir /tmp/sm --json /tmp/sm.json > /dev/null 2>&1 &
sleep 3
pid=$(pgrep -f -- "__run-job" | head -1)
[ -z "$pid" ] && pid=$(pgrep -n -f "$(basename $B)")
cat /proc/$pid/smaps_rollup > $O.rollup
python3 - $pid > $O.maps <<'PY'
import sys,re
pid=sys.argv[1]; cur=None; rows={}
for line in open(f'/proc/{pid}/smaps'):
    if re.match(r'^[0-9a-f]+-[0-9a-f]+ ', line):
        parts=line.split(); cur=parts[5] if len(parts)>5 else '[anon]'
        rows.setdefault(cur,[0,0])
    elif line.startswith('Rss:'): rows[cur][0]+=int(line.split()[1])
    elif line.startswith('Anonymous:'): rows[cur][1]+=int(line.split()[1])
for k,v in sorted(rows.items(), key=lambda kv:-kv[1][0])[:12]:
    print('%8d kB rss %8d kB anon  %s'%(v[0],v[1],k))
PY
wait
