"""The ten-run check: per run, peak RSS, the worst put of the load and of
P, the worst scan of E100. python3 oomsum.py oom/*.json"""
import json, sys
for f in sorted(sys.argv[1:], key=lambda f: int(f.rsplit('-', 1)[1].split('.')[0])):
    d = json.load(open(f))
    cells = []
    for x in d['results']:
        lat = x['latency_us']
        worst = {k: v['max'] / 1000 for k, v in lat.items()}
        cells.append('%s %.0f/s %s' % (x['workload'], x['throughput_ops_per_sec'],
                     ' '.join('%s worst %.1f ms' % kv for kv in sorted(worst.items()))))
    rss = max(x['peak_rss_bytes'] for x in d['results']) / 2**20
    print('%s  peak RSS %.1f MiB | %s' % (f, rss, ' | '.join(cells)))
