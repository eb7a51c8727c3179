import re,sys,os,statistics
from collections import defaultdict
d=sys.argv[1]
g=defaultdict(lambda: defaultdict(list))
for f in sorted(os.listdir(d)):
    m=re.match(r'(.+)-(256M|1G)-(\d+)\.txt$',f)
    if not m: continue
    v,cap,_=m.groups()
    t=open(os.path.join(d,f)).read()
    for w,op in (('P','put'),('E100','scan')):
        m1=re.search(r'^evendb +%s +zipf-composite +2,638,186 +([\d,]+) .* ([\d.]+) MiB +[\d.]+ MiB$'%w,t,re.M)
        m2=re.search(r'^evendb +%s +zipf-composite +%s +\d+ .* ([\d.]+) +([\d.]+)$'%(w,op),t,re.M)
        if m1 and m2:
            g[(v,cap)][w].append((int(m1.group(1).replace(',','')),float(m2.group(1))/1000,float(m2.group(2))/1000,float(m1.group(2))))
    h=re.search(r'scan-helped +(\d+)',t)
print('| variant | cap | runs | P puts/s median (all) | E100 scans/s median (all) | E100 p99.9/worst ms median | P worst put ms max | peak RSS max |')
print('|---|---|---|---|---|---|---|---|')
for (v,cap),w in sorted(g.items()):
    P=[x[0] for x in w['P']];E=[x[0] for x in w['E100']]
    if not E: continue
    print(f"| {v} | {cap} | {len(E)} | {statistics.median(P)/1000:.0f}K ({', '.join(f'{x/1000:.0f}' for x in P)}) | {statistics.median(E):.0f} ({', '.join(str(x) for x in E)}) | {statistics.median([x[1] for x in w['E100']]):.1f} / {statistics.median([x[2] for x in w['E100']]):.1f} | {max(x[2] for x in w['P']):.1f} | {max(x[3] for x in w['P']+w['E100']):.0f} |")
