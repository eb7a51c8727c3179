"""Per run: each phase's throughput, worst operation (ms), p99.9 (ms) and
peak RSS (MiB) per engine, and evendb's ratio to the best RocksDB.
python3 ratios.py pe-*.json"""
import json, sys
for f in sorted(sys.argv[1:]):
    res = {}
    for x in json.load(open(f))['results']:
        lat = x['latency_us'].values()
        res.setdefault(x['workload'], {})[x['engine']] = (
            round(x['throughput_ops_per_sec']), round(max(v['max'] for v in lat) / 1000, 1),
            round(max(v['p999'] for v in lat) / 1000, 2), x['peak_rss_bytes'] >> 20)
    for phase in ('load', 'P', 'E100'):
        r = res.get(phase, {})
        if 'evendb' not in r:
            continue
        best = max((v[0], k) for k, v in r.items() if k != 'evendb')
        print(f.split('/')[-1], phase, f'{r["evendb"][0] / best[0]:.2f}x {best[1]}', r)
