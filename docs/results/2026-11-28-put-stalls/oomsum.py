import json,sys,glob
rows=[]
for f in sorted(sys.argv[1:], key=lambda x:int(x.split('-')[-1].split('.')[0])):
    d=json.load(open(f)); r={x['workload']:x for x in d['results']}
    def w(ph,op): return round(r[ph]['latency_us'].get(op,{}).get('max',0)/1000,1) if ph in r else None
    rss=max(x['peak_rss_bytes'] for x in d['results'])>>20
    pk=max(x['engine_stats'].get('memory_peak',0) for x in d['results'])/1048576
    rows.append((f.split('/')[-1], rss, round(pk,1), w('load','put'), w('P','put'), w('E100','scan'), [int(r[p]['throughput_ops_per_sec']) for p in ('load','P','E100') if p in r]))
for x in rows: print(x)
print('peak RSS', min(x[1] for x in rows), '-', max(x[1] for x in rows), 'within 96:', sum(x[1]<=96 for x in rows), 'of', len(rows))
print('peak charged', min(x[2] for x in rows), '-', max(x[2] for x in rows))
print('load worst put over 20 ms:', sum(x[3]>20 for x in rows), 'P over 20:', sum(x[4]>20 for x in rows), 'E100 worst scan over 100:', sum(x[5]>100 for x in rows))
