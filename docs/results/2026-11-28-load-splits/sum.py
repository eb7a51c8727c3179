import json,sys,glob,re,statistics as st
# usage: sum.py <dir>: per variant, every run and the medians
rows={}
for f in sorted(glob.glob(sys.argv[1]+'/*.json')):
    m=re.match(r'(.*)-(\d+)\.json',f.split('/')[-1]); name,r=m.group(1),m.group(2)
    x=json.load(open(f))['results'][0]; s=x['engine_stats_delta']; p=x['latency_us']['put']
    row=dict(puts=x['throughput_ops_per_sec'],p999=p['p999'],worst=p['max']/1000,rss=x['peak_rss_bytes']/2**20,full=s['put_munk_full_waits'],fullms=s['put_munk_full_wait_micros']/1000,lockms=s['put_lock_wait_micros']/1000,reb=s['munk_rebalances'],rebms=s['munk_rebalance_micros']/1000,splits=s['splits'],wamp=x['write_amplification'])
    rows.setdefault(name,[]).append(row)
    print('%-6s %s '%(name,r)+' '.join('%s=%.1f'%(k,v) for k,v in row.items()))
for name,rs in rows.items():
    print('MEDIAN %-6s n=%d '%(name,len(rs))+' '.join('%s=%.1f'%(k,st.median([r[k] for r in rs])) for k in rs[0]))
