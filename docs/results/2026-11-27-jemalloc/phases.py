"""Per phase of the write-path suite: evendb / best RocksDB, then write and
read p99.9 / worst latency (ms) and peak RSS (MiB) of evendb and of that
RocksDB. python3 phases.py suite/results.json"""
import json, sys
d = json.load(open(sys.argv[1]))['results']
groups = {}
for r in d:
    groups.setdefault((r['dataset'], r['workload'], r['value_size']), {})[r['engine']] = r
def lat(x):
    l = x['latency_us']
    w = [v for k, v in l.items() if k in ('put', 'insert', 'update')]
    r = [v for k, v in l.items() if k not in ('put', 'insert', 'update')]
    f = lambda xs: (max((v['p999'] for v in xs), default=0) / 1000, max((v['max'] for v in xs), default=0) / 1000)
    return f(w), f(r)
print('| run | phase | value | evendb / best RocksDB | writes p99.9 / worst, evendb vs RocksDB | reads p99.9 / worst | peak RSS MiB, evendb vs RocksDB |')
print('|---|---|---|---|---|---|---|')
for key, g in groups.items():
    e = g['evendb']
    b = max((v for k, v in g.items() if k.startswith('rocksdb')), key=lambda v: v['throughput_ops_per_sec'])
    (ew, er), (bw, br) = lat(e), lat(b)
    fmt = lambda a, c: '-' if a == (0, 0) and c == (0, 0) else f'{a[0]:.2f} / {a[1]:.1f} vs {c[0]:.2f} / {c[1]:.1f}'
    print(f"| {key[0]} | {key[1]} | {key[2]} | {e['throughput_ops_per_sec']/b['throughput_ops_per_sec']:.2f}× ({b['engine']}) "
          f"| {fmt(ew, bw)} | {fmt(er, br)} | {e['peak_rss_bytes']>>20} vs {b['peak_rss_bytes']>>20} |")
