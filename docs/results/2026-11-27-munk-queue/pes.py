import json,sys
for f in sys.argv[1:]:
    d=json.load(open(f))
    row=[f.split('/')[-1][:-5]]
    for ph in d['results']:
        s=ph['engine_stats_delta']; lat=ph['latency_us']; ops=ph['throughput_ops_per_sec']
        w=ph['workload']
        if 'put' in lat or 'insert' in lat:
            p=lat.get('put') or lat.get('insert')
            row.append(f"{w} {ops/1000:.1f}K p999 {p['p999']/1000:.2f} worst {p['max']/1000:.1f} full {s.get('put_munk_full_waits',0)} mem {s.get('put_memory_waits',0)} wamp {ph['write_amplification']:.2f}")
        else:
            k=[x for x in lat if x.startswith('scan') or x=='read'][0]
            row.append(f"{w} {ops:.0f} p999 {lat[k]['p999']/1000:.1f} worst {lat[k]['max']/1000:.1f}")
    row.append(f"rss {max(ph['peak_rss_bytes'] for ph in d['results'])/2**20:.0f}")
    print(' | '.join(row))
