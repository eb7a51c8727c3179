import json,sys,re,statistics as st
rows={}
for f in sorted(sys.argv[1:]):
    m=re.match(r'.*/(st|pe|pc)-(\w+)-(\w+)-(\d+)\.json',f)
    if not m: continue
    kind,name,cap,r=m.groups()
    d=json.load(open(f))
    for x in d['results']:
        lat=x['latency_us']; op='scan' if 'scan' in lat else ('put' if 'put' in lat else 'get')
        s=lat.get(op,{}); e=x['engine_stats']; M=lambda k: round(e.get(k,0)/1048576,1)
        rows.setdefault((cap,x['workload'],name),[]).append((int(x['throughput_ops_per_sec']), round(s.get('p999',0)/1000,2), round(s.get('max',0)/1000,1), x['peak_rss_bytes']>>20, M('memory_peak'), M('memory_peak_background')))
for k in sorted(rows):
    v=rows[k]
    print(k, 'ops/s', [a[0] for a in v], 'med', int(st.median([a[0] for a in v])), 'p999', [a[1] for a in v], 'max', [a[2] for a in v], 'rss', [a[3] for a in v], 'peak charged', [a[4] for a in v], 'bg at peak', [a[5] for a in v])
