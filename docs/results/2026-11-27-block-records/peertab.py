"""Per phase: each engine's ops/s, evendb / best RocksDB, p99.9 and worst (ms), w-amp, peak RSS.
usage: python3 peertab.py FILE.json..."""
import json, sys
for f in sys.argv[1:]:
    rs = json.load(open(f))['results']
    print(f"\n{f}")
    phases = []
    for r in rs:
        if r['workload'] not in phases:
            phases.append(r['workload'])
    for ph in phases:
        rows = [r for r in rs if r['workload'] == ph]
        best = max((r for r in rows if r['engine'] != 'evendb'), key=lambda r: r['throughput_ops_per_sec'], default=None)
        ev = next(r for r in rows if r['engine'] == 'evendb')
        ratio = ev['throughput_ops_per_sec'] / best['throughput_ops_per_sec'] if best else float('nan')
        cells = []
        for r in rows:
            lat = r['latency_us']
            p999 = max(v['p999'] for v in lat.values()) / 1e3
            mx = max(v['max'] for v in lat.values()) / 1e3
            ww = max([v['max'] for k, v in lat.items() if k in ('put', 'insert', 'update')] or [0]) / 1e3
            cells.append(f"{r['engine']} {r['throughput_ops_per_sec']:,.0f} (p99.9 {p999:.1f}, worst {mx:.1f}, worst write {ww:.1f} ms, w-amp {r['write_amplification'] or 0:.2f}, RSS {r['peak_rss_bytes']/2**20:.0f} MiB)")
        print(f"  {ph}: evendb / best RocksDB ({best['engine'] if best else '-'}) {ratio:.2f}x | " + " | ".join(cells))
