import json, sys, glob, collections
rows = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] if len(sys.argv) > 1 else '*.json')):
    name = f.rsplit('/', 1)[-1][:-5]
    kind, cap, conf, r = name.split('-')
    d = json.load(open(f))
    for x in d['results']:
        lat = x['latency_us']
        worst = max(v['max'] for v in lat.values()) / 1000
        p999 = max(v['p999'] for v in lat.values()) / 1000
        rows[(kind, cap, x['workload'], conf)].append((round(x['throughput_ops_per_sec']), round(p999, 2), round(worst, 1), round(x['peak_rss_bytes'] / 2**20, 1)))
for k in sorted(rows):
    print(*k, ' | '.join(f'{t:,} p99.9 {p} worst {w} rss {m}' for t, p, w, m in rows[k]))
