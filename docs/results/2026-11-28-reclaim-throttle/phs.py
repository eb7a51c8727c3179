import json,sys,re,statistics as st
rows={}
for f in sorted(sys.argv[1:]):
    m=re.match(r'.*/(\w+)-(\w+)-(\d+)\.json',f)
    if not m: continue
    name,cap,r=m.groups()
    d=json.load(open(f)); res=d['results'] if isinstance(d,dict) and 'results' in d else d
    for x in res:
        L=x['latency_us']; op=[k for k in L][0] if L else None
        w=[L[k] for k in L if k in ('put','insert','update')]; rd=[L[k] for k in L if k in ('get','scan')]
        rows.setdefault((cap,x['workload'],name),[]).append((x['throughput_ops_per_sec'], max([a['max'] for a in w],default=0)/1000, max([a['p999'] for a in w],default=0)/1000, max([a['max'] for a in rd],default=0)/1000, x['peak_rss_bytes']>>20, x['cpu_seconds']))
for k in sorted(rows):
    v=rows[k]
    print(k, [int(a[0]/1000) for a in v], 'med %dK'%(st.median([a[0] for a in v])/1000), 'wmax', [round(a[1],1) for a in v], 'wp999', [round(a[2],2) for a in v], 'rmax', [round(a[3],1) for a in v], 'rss', [a[4] for a in v], 'cpu', [round(a[5],1) for a in v])
