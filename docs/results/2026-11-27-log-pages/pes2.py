import json,sys
# Per phase: throughput, put p99.9/worst, the longest counted put wait so far (cumulative), waits by kind.
for f in sys.argv[1:]:
    d=json.load(open(f))
    row=[f.split('/')[-1][:-5]]
    for ph in d['results']:
        s=ph['engine_stats_delta']; c=ph['engine_stats']; lat=ph['latency_us']; ops=ph['throughput_ops_per_sec']
        w=ph['workload']
        p=lat.get('put') or lat.get('insert')
        if w.startswith('E'):
            k=[x for x in lat if x.startswith('scan')][0]
            row.append(f"{w} {ops:.0f} worst {lat[k]['max']/1000:.1f}")
            continue
        row.append(f"{w} {ops/1000:.0f}K p999 {p['p999']/1000:.2f} worst {p['max']/1000:.1f} cmax {c.get('put_wait_max_micros',0)/1000:.1f} pace {s.get('put_pace_wait_micros',0)/1e6:.2f}s lock {s.get('put_lock_wait_micros',0)/1e6:.2f}s full {s.get('put_munk_full_wait_micros',0)/1e6:.2f}s")
    row.append(f"rss {max(ph['peak_rss_bytes'] for ph in d['results'])/2**20:.0f}")
    print(' | '.join(row))
