# targets.py results.json: evendb vs best RocksDB per phase of the write-path suite
import json,sys
d=json.load(open(sys.argv[1]))['results']
groups={}
for r in d:
    key=(r['dataset'],r['workload'],r['distribution'],r['value_size'])
    groups.setdefault(key,{})[r['engine']]=r
for key,g in groups.items():
    e=g.get('evendb')
    if not e: continue
    peers={k:v for k,v in g.items() if k.startswith('rocksdb')}
    best=max(peers.values(),key=lambda r:r['throughput_ops_per_sec']) if peers else None
    lat=e['latency_us']
    w=[v for k,v in lat.items() if k in ('put','insert','update')]
    worst=max((x['max'] for x in w),default=0)/1000
    p999=max((x['p999'] for x in w),default=0)/1000
    ratio=e['throughput_ops_per_sec']/best['throughput_ops_per_sec'] if best else 0
    print(f"{key[0]:11s} {key[1]:14s} v{key[3]:<4d} evendb {e['throughput_ops_per_sec']:>10,.0f} best {best['engine'] if best else '-':18s} {best['throughput_ops_per_sec'] if best else 0:>10,.0f} {ratio:5.2f}x wamp {(e['write_amplification'] or 0):6.2f} vs {((best or {}).get('write_amplification') or 0):6.2f} worst {worst:6.1f} p999 {p999:5.2f} rss {e['peak_rss_bytes']/2**20:4.0f}/{e['memory_budget_bytes']/2**20:.0f} best-rss {best['peak_rss_bytes']/2**20 if best else 0:4.0f}")
