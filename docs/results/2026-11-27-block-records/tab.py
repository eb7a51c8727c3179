import json,glob,sys,re
# tab.py FILES...: one row per run of P,E100 (load, P, E100)
print("| run | load puts/s | load worst ms | P puts/s | P p99.9 / worst ms | E100 scans/s | E100 p99.9 / worst ms | peak RSS MiB | charged peak MiB | CPU s (load+P+E100) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for f in sys.argv[1:]:
    d=json.load(open(f)); rs=d['results'] if isinstance(d,dict) else d
    L,P,E=rs[:3]
    l=lambda r,op:r['latency_us'].get(op,{})
    cp=max(r['engine_stats'].get('memory_peak',0) for r in rs)/2**20
    cpu=sum(r.get('cpu_seconds') or 0 for r in rs)
    print(f"| {f.split('/')[-1][:-5]} | {L['throughput_ops_per_sec']:,.0f} | {l(L,'put')['max']/1e3:.1f} | {P['throughput_ops_per_sec']:,.0f} | {l(P,'put')['p999']/1e3:.2f} / {l(P,'put')['max']/1e3:.1f} | {E['throughput_ops_per_sec']:,.0f} | {l(E,'scan')['p999']/1e3:.1f} / {l(E,'scan')['max']/1e3:.1f} | {max(r['peak_rss_bytes'] for r in rs)/2**20:.1f} | {cp:.1f} | {cpu:.1f} |")
