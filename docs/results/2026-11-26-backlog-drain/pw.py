import json,sys
keys=['put_lock_wait_micros','put_munk_full_waits','put_munk_full_wait_micros','put_memory_waits','put_memory_wait_micros','put_pace_waits','put_pace_wait_micros','put_wait_max_micros','munk_evictions','munk_evictions_reclaimed']
for f in sys.argv[1:]:
    d=json.load(open(f))
    for r in d['results']:
        st=r.get('engine_stats_delta') or {}
        lat=r['latency_us'].get('put') or {}
        if not lat: continue
        print(f.split('/')[-1][:-5], r['workload'], 'max', round(lat.get('max',0)/1000,1), ' '.join(f"{k.replace('put_','').replace('_micros','_us')}={st.get(k)}" for k in keys))
