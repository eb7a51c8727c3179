#!/usr/bin/env python3
"""Per file: the write phase (P or stream ingestion) of evendb against the
best RocksDB configuration by throughput; latencies in ms."""
import json, sys
rows = []
for f in sys.argv[1:]:
    d = json.load(open(f))
    res = [r for r in d['results'] if r['workload'] != 'load' and not r['workload'].endswith('queries')]
    phases = sorted({r['workload'] for r in res})
    for ph in phases:
        rs = [r for r in res if r['workload'] == ph]
        ev = [r for r in rs if r['engine'] == 'evendb']
        rk = [r for r in rs if r['engine'].startswith('rocksdb')]
        if not ev or not rk:
            continue
        e = ev[0]; b = max(rk, key=lambda r: r['throughput_ops_per_sec'])
        op = next(iter(e['latency_us']))
        le, lb = e['latency_us'][op], b['latency_us'][op]
        ms = lambda x: x / 1000
        print(f"{f:28} {ph:8} t={e['threads']:2} rec={e['records']:>7} "
              f"{e['throughput_ops_per_sec']:>9,.0f} vs {b['throughput_ops_per_sec']:>8,.0f} ({b['engine']:17}) "
              f"{e['throughput_ops_per_sec']/b['throughput_ops_per_sec']:.2f}x  "
              f"p99 {ms(le['p99']):.2f}/{ms(lb['p99']):.2f} p99.9 {ms(le['p999']):.2f}/{ms(lb['p999']):.2f} "
              f"max {ms(le['max']):.1f}/{ms(lb['max']):.1f}  wamp {e['write_amplification']:.2f}/{b['write_amplification']:.2f} "
              f"(rocks min {min(r['write_amplification'] for r in rk):.2f})  rss {e['peak_rss_bytes']>>20}/{b['peak_rss_bytes']>>20}")
