import json,sys
for f in sys.argv[1:]:
    d=json.load(open(f))
    for r in d['results']:
        lat=r['latency_us']; s=lat.get('scan') or lat.get('put') or {}
        st=r.get('engine_stats_delta') or {}
        print(f.split('/')[-1][:-5], r['engine'], r['workload'], round(r['throughput_ops_per_sec']), 'p999', round(s.get('p999',0)/1000,2), 'max', round(s.get('max',0)/1000,1), 'rss', r['peak_rss_bytes']>>20, 'help', st.get('helper_tasks'), st.get('helper_task_micros'))
