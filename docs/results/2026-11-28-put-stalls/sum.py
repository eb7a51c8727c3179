import json,sys,re,statistics as st
# sum.py files...: per (tag, cap, workload, binary): throughput, op p99.9/max (ms), w-amp, peak RSS, peak charged, adoptions/runs
rows={}
for f in sorted(sys.argv[1:]):
    m=re.match(r'.*/(\w+)-(\w+)-(\w+)-(\d+)\.json',f)
    if not m: continue
    tag,name,cap,r=m.groups()
    d=json.load(open(f))
    for x in d['results']:
        lat=x['latency_us']; op='scan-rev' if 'scan-rev' in lat else 'scan' if 'scan' in lat else ('put' if 'put' in lat else 'get')
        s=lat.get(op,{}); e=x['engine_stats_delta']; E=x['engine_stats']; M=lambda k: round(E.get(k,0)/1048576,1)
        wamp=x.get('write_amplification') or (x['bytes_written']/max(1,x['user_bytes_written']))
        rows.setdefault((tag,cap,x['workload'],name),[]).append((int(x['throughput_ops_per_sec']), round(s.get('p999',0)/1000,2), round(s.get('max',0)/1000,1), round(wamp,2), x['peak_rss_bytes']>>20, M('memory_peak'), e.get('log_adoptions',0), e.get('log_runs',0)))
for k in sorted(rows):
    v=rows[k]
    print(*k, 'ops/s', [a[0] for a in v], 'med', int(st.median([a[0] for a in v])), op if False else '', 'p999', [a[1] for a in v], 'max', [a[2] for a in v], 'wamp', [a[3] for a in v], 'rss', [a[4] for a in v], 'peakch', [a[5] for a in v], 'adopt/runs', [(a[6],a[7]) for a in v])
