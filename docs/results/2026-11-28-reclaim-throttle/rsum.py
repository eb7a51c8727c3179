import json,sys,re
for f in sorted(sys.argv[1:]):
    d=json.load(open(f)); r=d['results'] if isinstance(d,dict) and 'results' in d else d
    out=[]
    for x in r:
        s=x['engine_stats']
        out.append("%s %dK rss %d charged-peak %.1f" % (x['workload'], x['throughput_ops_per_sec']/1000, x['peak_rss_bytes']>>20, s['memory_peak']/2**20))
    print(f.split('/')[-1], ' | '.join(out))
