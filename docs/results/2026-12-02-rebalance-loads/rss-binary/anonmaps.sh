#!/bin/bash
B=$1
rm -rf /tmp/sm; $B --engine evendb --workload C --records 10000 --duration 4 --memory-limit 256M --dir /tmp/sm --json /tmp/sm.json > /dev/null 2>&1 &
sleep 3
pid=$(pgrep -f -- "__run-job" | head -1)
ls /proc/$pid/task | wc -l
for t in /proc/$pid/task/*; do cat $t/comm; done | sort | uniq -c | sort -rn | head -20
python3 - $pid <<'PY'
import sys,re
pid=sys.argv[1]; cur=None; out=[]
for line in open(f'/proc/{pid}/smaps'):
    if re.match(r'^[0-9a-f]+-[0-9a-f]+ ', line):
        parts=line.split(); a,b=[int(x,16) for x in parts[0].split('-')]
        cur=[parts[0], (b-a)//1024, 0, parts[5] if len(parts)>5 else '']; out.append(cur)
    elif line.startswith('Rss:'): cur[2]=int(line.split()[1])
for r in out:
    if r[3]=='' and r[2]>=256: print('%s size %7d kB rss %6d kB'%(r[0],r[1],r[2]))
PY
wait
