import json,glob,sys
rows={}
for f in sorted(glob.glob(sys.argv[1]+'/*.json')):
    d=json.load(open(f)); b,cap,r=f.split('/')[-1][:-5].rsplit('-',2)
    e=d['results']
    rows.setdefault((cap,b),[]).append(e)
for (cap,b),runs in sorted(rows.items()):
    f=lambda i,k: [round(x[i]['throughput_ops_per_sec']/k,1 if k==1e3 and i==2 else 0) for x in runs]
    rss=[round(max(p['peak_rss_bytes'] for p in x)/2**20,1) for x in runs]
    pw=[round(x[1]['latency_us']['put']['max']/1e3,1) for x in runs]
    sw=[round(x[2]['latency_us']['scan']['max']/1e3,1) for x in runs]
    sp=[round(x[2]['latency_us']['scan']['p999']/1e3,1) for x in runs]
    print(f"| {cap} | {b} | {f(0,1e3)} | {f(1,1e3)} | {[round(x[2]['throughput_ops_per_sec']) for x in runs]} | {pw} | {sp} / {sw} | {rss} |")
