import json,sys,os
for f in sorted(sys.argv[1:]):
    d=json.load(open(f))
    for r in d['results']:
        l=r['latency_us']; s=r.get('engine_stats_delta') or {}
        lat=' '.join(f"{k} p99.9 {v['p999']/1e3:.2f} max {v['max']/1e3:.1f}" for k,v in l.items())
        print(f"{os.path.basename(f)[:-5]:24} {r['workload']:6} {r['throughput_ops_per_sec']/1e3:8.1f}K cpu {r['cpu_seconds']:5.1f} wamp {r['write_amplification'] or 0:4.2f} rss {r['peak_rss_bytes']/2**20:4.0f}  {lat}")
