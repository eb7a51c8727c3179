#!/usr/bin/env python3
"""E100 per-second timelines of P,E100 runs: per variant and cap, the median
scans/s of seconds 1-4 and 6-10, and the median second at which a run first
reaches half its best second. Also the engine counters of the phase.
Usage: python3 timeline.py runs/r2 [runs/r3 ...]"""
import json, os, re, statistics, sys
from collections import defaultdict
g = defaultdict(list)
for d in sys.argv[1:]:
    for f in sorted(os.listdir(d)):
        m = re.match(r'(.+)-(256M|1G)-(\d+)\.json$', f)
        if not m:
            continue
        for r in json.load(open(os.path.join(d, f)))['results']:
            if r['workload'] == 'E100':
                t = [x for x in r['timeline'] if x > 10][:10]
                c = r['engine_stats_delta']
                half = next(i for i, x in enumerate(t) if x >= max(t) / 2) + 1
                g[(m.group(1), m.group(2))].append((t, half, c.get('helper_tasks', 0),
                                                    c.get('helper_task_micros', 0) / 1e6,
                                                    c.get('scan_promotions', 0), c.get('scan_helped_tasks', 0),
                                                    c.get('scan_helped_micros', 0) / 1e6))
print('| variant | cap | runs | s 1-4 (median scans/s) | s 6-10 | half-best second (median) | helper tasks / s (median) | promotions | scan-run tasks / s |')
print('|---|---|---|---|---|---|---|---|---|')
for (v, cap), runs in sorted(g.items()):
    med = lambda xs: statistics.median(xs)
    early = med([statistics.mean(t[:4]) for t, *_ in runs])
    late = med([statistics.mean(t[5:10]) for t, *_ in runs])
    print(f"| {v} | {cap} | {len(runs)} | {early:.0f} | {late:.0f} | {med([x[1] for x in runs])} | "
          f"{med([x[2] for x in runs]):.0f} / {med([x[3] for x in runs]):.1f} | {med([x[4] for x in runs]):.0f} | "
          f"{med([x[5] for x in runs]):.0f} / {med([x[6] for x in runs]):.1f} |")
