import json,sys,glob,re,statistics as st
rows={}
for f in sorted(sys.argv[1:]):
    m=re.match(r'.*/(\w+)-(\w+)-(\d+)\.json',f)
    if not m: continue
    name,cap,r=m.groups()
    d=json.load(open(f))
    res=d['results'] if isinstance(d,dict) and 'results' in d else d
    for x in res:
        if x['workload'] in ('load',): continue
        s=x['latency_us'].get('scan',{})
        key=(cap,x['workload'],name)
        rows.setdefault(key,[]).append((x['throughput_ops_per_sec'], x['bytes_read']/max(1,x['operations'])/1024, s.get('p999',0)/1000, s.get('max',0)/1000, x['peak_rss_bytes']>>20, x['cpu_seconds']))
for k in sorted(rows):
    v=rows[k]
    print(k, 'ops/s', [int(a[0]) for a in v], 'median', int(st.median([a[0] for a in v])), 'KiB dev/op', [round(a[1],1) for a in v], 'p99.9', [round(a[2],2) for a in v], 'max', [round(a[3],1) for a in v], 'rss', [a[4] for a in v], 'cpu', [round(a[5],1) for a in v])
