import json,glob,sys,statistics
# Summarizes the load phase of ab.sh's runs: python3 table.py ab ab2 fin
names={'eb-base35':'before (7ee7335)','eb-cr':'rebalance (3748a3c)','eb-cr2':'split, first try (not kept)','eb-cr6':'rebalance + split (38382b5)'}
rows={}
for d in sys.argv[1:]:
    for f in sorted(glob.glob(d+'/*.json')):
        base=f.split('/')[-1][:-5]  # load-256M-eb-x-1
        _,mem,rest=base.split('-',2)
        binname,rnd=rest.rsplit('-',1)
        r=json.load(open(f))['results'][0]; dl=r['engine_stats_delta']
        p=r['latency_us']['put']
        rows.setdefault((mem,binname),[]).append((d,rnd,r['throughput_ops_per_sec'],dl['put_lock_wait_micros']/1e6,dl['put_munk_full_wait_micros']/1e6,p['p999']/1000,p['max']/1000,r['peak_rss_bytes']>>20,r['cpu_seconds']))
print("| cap | build | load puts/s, each run | median | puts' lock waits s | munk-full waits s | p99.9 put ms | worst put ms | peak RSS MiB | CPU s |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (mem,b),v in sorted(rows.items(), key=lambda kv:(kv[0][0]!='256M', list(names).index(kv[0][1]))):
    t=[x[2] for x in v]
    rng=lambda i,fmt: f"{fmt(min(x[i] for x in v))}-{fmt(max(x[i] for x in v))}"
    print(f"| {mem} | {names[b]} | {', '.join(f'{x:,.0f}' for x in t)} | {statistics.median(t):,.0f} | {rng(3,lambda a:f'{a:.1f}')} | {rng(4,lambda a:f'{a:.1f}')} | {rng(5,lambda a:f'{a:.2f}')} | {rng(6,lambda a:f'{a:.1f}')} | {rng(7,str)} | {rng(8,lambda a:f'{a:.1f}')} |")
