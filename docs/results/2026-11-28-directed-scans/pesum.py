import json,sys,re,statistics as st
rows={}
for f in sorted(sys.argv[1:]):
    m=re.match(r'.*/(\w+)-(\w+)-(\d+)\.json',f)
    if not m: continue
    name,cap,r=m.groups()
    d=json.load(open(f))
    for x in d['results']:
        if x['workload']=='load': continue
        lat=x['latency_us']; op='scan' if 'scan' in lat else ('put' if 'put' in lat else 'get')
        s=lat.get(op,{})
        tl=[round(t['ops_per_sec']) if isinstance(t,dict) else t for t in x['timeline']][:4]
        rows.setdefault((cap,x['workload'],name),[]).append((x['throughput_ops_per_sec'], x['bytes_read']/max(1,x['operations'])/1024, s.get('p999',0)/1000, s.get('max',0)/1000, x['peak_rss_bytes']>>20, tl))
for k in sorted(rows):
    v=rows[k]
    print(k, 'ops/s', [int(a[0]) for a in v], 'med', int(st.median([a[0] for a in v])), 'KiB/op', [round(a[1],1) for a in v], 'p999', [round(a[2],2) for a in v], 'max', [round(a[3],1) for a in v], 'rss', [a[4] for a in v], 'first s', [a[5] for a in v] if k[1]!='P' else '')
