import json,sys,glob,re,statistics as st
# usage: phases.py <dir>: per variant and phase, medians over runs (and every run)
rows={}
for f in sorted(glob.glob(sys.argv[1]+'/*.json')):
    m=re.match(r'(.*)-(\d+)\.json',f.split('/')[-1]); name=m.group(1)
    for x in json.load(open(f))['results']:
        ph=x['workload']; lat=x['latency_us']
        p999=max(v['p999'] for v in lat.values())/1000; worst=max(v['max'] for v in lat.values())/1000
        wput=max([v['max'] for k,v in lat.items() if k in ('put','insert','update','rmw')] or [0])/1000
        rows.setdefault((ph,name),[]).append((x['throughput_ops_per_sec'],p999,worst,wput,x['peak_rss_bytes']/2**20,x['write_amplification'] or 0))
for (ph,name),rs in sorted(rows.items(), key=lambda k:(['load','stream-ingest','P','C','E100','E1000','stream'].index(k[0][0]) if k[0][0] in ['load','stream-ingest','P','C','E100','E1000','stream'] else 9, k[0][1])):
    med=lambda i: st.median([r[i] for r in rs])
    print('%-6s %-5s n=%d ops/s %8.0f (%s) p99.9 %.2f ms worst %.1f ms (max %.1f) worst write %.1f ms (max %.1f) rss %.0f (max %.0f) wamp %.2f' % (ph,name,len(rs),med(0),', '.join('%.0f'%r[0] for r in rs),med(1),med(2),max(r[2] for r in rs),med(3),max(r[3] for r in rs),med(4),max(r[4] for r in rs),med(5)))
