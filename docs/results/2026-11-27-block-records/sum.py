"""Medians per configuration and binary of the alternating runs (ab.sh, pp.sh, peers.sh's pc runs).
usage: python3 sum.py DIR... (files NAME-MEM-BIN-ROUND.json)"""
import json, glob, sys, os, statistics as st
from collections import defaultdict
runs = defaultdict(list)
for d in sys.argv[1:]:
    for f in glob.glob(d + '/*.json'):
        base = os.path.basename(f)[:-5]
        w, mem, rest = base.split('-', 2)
        b, r = rest.rsplit('-', 1)
        runs[(w, mem, b)].append(json.load(open(f))['results'])
def worst(x, kinds):
    return max([v['max'] for k, v in x['latency_us'].items() if k in kinds] or [0]) / 1e3
for (w, mem, b), rs in sorted(runs.items()):
    phases = [x['workload'] for x in rs[0]]
    cells = []
    for i, ph in enumerate(phases):
        ops = [r[i]['throughput_ops_per_sec'] for r in rs]
        wa = [r[i]['write_amplification'] or 0 for r in rs]
        ww = [worst(r[i], ('put', 'insert', 'update')) for r in rs]
        wr = [worst(r[i], ('get', 'scan', 'scan-rev')) for r in rs]
        cell = f"{ph} {st.median(ops):,.0f} [{', '.join(f'{o:,.0f}' for o in ops)}]"
        if any(wa) and ph not in ('C', 'E100', 'stream'):
            cell += f" w-amp {st.median(wa):.2f}"
        cell += f" worst write {max(ww):.0f} ms" if any(ww) else ""
        cell += f" worst read {max(wr):.0f} ms" if any(wr) else ""
        cells.append(cell)
    rss = [max(x['peak_rss_bytes'] for x in r) / 2**20 for r in rs]
    filt = [r[-1]['engine_stats'].get('memory_filters', 0) / 2**20 for r in rs]
    munks = [r[-1]['engine_stats'].get('memory_munks', 0) / 2**20 for r in rs]
    print(f"{w} {mem} {b} ({len(rs)} runs): " + "; ".join(cells)
          + f"; peak RSS {st.median(rss):.0f} MiB [{', '.join(f'{x:.0f}' for x in rss)}]"
          + f"; filters at end {st.median(filt):.1f} MiB, munks {st.median(munks):.1f} MiB")
