"""Medians per memory cap, phase and variant over every run under the
directories given: throughput, p99.9 and worst latency (ms), peak RSS
(MiB), write amplification."""
import json, sys, glob, collections, statistics as st

# --pool a=b counts variant a's runs as b's (the same code built two ways).
args, pool = sys.argv[1:], {}
while args and args[0] == '--pool':
    a, b = args[1].split('=')
    pool[a] = b
    args = args[2:]
rows = collections.defaultdict(list)
for d in args:
    for f in sorted(glob.glob(d + '/**/*.json', recursive=True)):
        parts = f.split('/')[-1][:-5].rsplit('-', 2)
        if len(parts) != 3 or 'suite' in f:
            continue  # the ten-run check's and the suite's files
        name, cap, _ = parts
        name = pool.get(name, name)
        d_ = json.load(open(f))
        for r in d_['results']:
            lat = r['latency_us']
            op = 'scan' if 'scan' in lat else ('put' if 'put' in lat else next(iter(lat)))
            rows[(cap, r['workload'], name)].append(
                (r['throughput_ops_per_sec'], lat[op]['p999'] / 1000, lat[op]['max'] / 1000,
                 r['peak_rss_bytes'] / 2**20, r['write_amplification']))
for k in sorted(rows):
    v = rows[k]
    med = lambda i: st.median(x[i] for x in v)
    print('%-5s %-14s %-7s n=%-2d median %8.0f  p99.9 %5.1f  worst %6.1f  rss %4.0f  w-amp %6.2f  | %s' % (
        k[0], k[1], k[2], len(v), med(0), med(1), med(2), med(3), med(4),
        ', '.join('%.0f' % x[0] for x in v)))
