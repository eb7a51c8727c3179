#!/usr/bin/env python3
"""Medians of P and E100 (throughput, p99.9, worst, peak RSS) per variant and cap.
Usage: python3 sum.py runs/  (file names: <variant>-<cap>-<round>.json)"""
import json, os, re, statistics, sys
from collections import defaultdict
d = sys.argv[1] if len(sys.argv) > 1 else 'runs'
groups = defaultdict(lambda: defaultdict(list))
for f in sorted(os.listdir(d)):
    m = re.match(r'(.+)-(256M|1G)-(\d+)\.json$', f)
    if not m:
        continue
    var, cap, _ = m.groups()
    for r in json.load(open(os.path.join(d, f)))['results']:
        if r['workload'] in ('P', 'E100') and r['distribution'] != 'sequential':
            lat = r['latency_us']
            op = 'put' if r['workload'] == 'P' else 'scan'
            l = lat.get(op) or {}
            groups[(var, cap)][r['workload']].append(
                (r['throughput_ops_per_sec'], l.get('p999', 0) / 1000, l.get('max', 0) / 1000, r['peak_rss_bytes'] / 2**20))
print('| variant | cap | runs | P puts/s (median; all) | E100 scans/s (median; all) | E100 p99.9 / worst ms (median) | peak RSS MiB (max) |')
print('|---|---|---|---|---|---|---|')
for (var, cap), w in sorted(groups.items()):
    p = [x[0] for x in w['P']]; e = [x[0] for x in w['E100']]
    e9 = statistics.median([x[1] for x in w['E100']]); ew = statistics.median([x[2] for x in w['E100']])
    rss = max(x[3] for x in w['P'] + w['E100'])
    f = lambda v: ', '.join(f'{x/1000:.0f}K' if x > 10000 else f'{x:.0f}' for x in v)
    print(f"| {var} | {cap} | {len(e)} | {statistics.median(p)/1000:.0f}K ({f(p)}) | {statistics.median(e):.0f} ({f(e)}) | {e9:.1f} / {ew:.1f} | {rss:.0f} |")
