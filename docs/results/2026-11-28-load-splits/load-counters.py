import json,sys,glob
# usage: load-counters.py <run dir>...: the load's put waits and munk work, per run
keys=['put_munk_full_waits','put_munk_full_wait_micros','put_lock_wait_micros','put_pace_wait_micros','munk_rebalances','munk_rebalance_micros','splits','munk_loads','munk_evictions']
for d in sys.argv[1:]:
    for f in sorted(glob.glob(d+'/*.json')):
        x=json.load(open(f))['results'][0]; s=x['engine_stats_delta']
        print('/'.join(f.split('/')[-2:]), int(x['throughput_ops_per_sec']), 'worst=%.1f'%(x['latency_us']['put']['max']/1000),
              ' '.join('%s=%d'%(k.replace('put_','').replace('_micros','_ms').replace('munk_',''),s.get(k,0)//(1000 if 'micros' in k else 1)) for k in keys),
              'cpu=%.1f'%x['cpu_seconds'])
