import json,sys
for f in sys.argv[1:]:
    d=json.load(open(f))
    out=[]
    for r in d['results']:
        lat=r['latency_us']; 
        s=lat.get('scan') or lat.get('put') or {}
        st=r.get('engine_stats_delta') or {}
        out.append(f"{r['workload']}:{round(r['throughput_ops_per_sec'])} p999={round(s.get('p999',0)/1000,1)} max={round(s.get('max',0)/1000,1)} wr={r.get('bytes_written',0)>>20}M help={st.get('helper_tasks')}")
    print(f.split('/')[-1][:-5], ' | '.join(out), 'rss', max(r['peak_rss_bytes'] for r in d['results'])>>20)
