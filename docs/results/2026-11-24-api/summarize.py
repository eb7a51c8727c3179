#!/usr/bin/env python3
"""Tables of docs/results/2026-11-24-api/README.md from json/*.json: the
median of the repetitions (r1-r3) of every figure."""
import glob, json, os, re, statistics, sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))

def load(pattern):
    """{(config, engine, workload): [result per repetition]}"""
    out = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(HERE, 'json', pattern))):
        config = re.sub(r'-r\d+\.json$', '', os.path.basename(path))
        for r in json.load(open(path))['results']:
            out[(config, r['engine'], r['workload'])].append(r)
    return out

def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None

def fig(rs, f):
    return med([f(r) for r in rs])

def spread(rs, f):
    """median [min-max] of a throughput."""
    vals = [f(r) for r in rs]
    m = statistics.median(vals)
    if len(vals) == 1:
        return f'{m:,.0f}'
    return f'{m:,.0f} [{min(vals):,.0f}-{max(vals):,.0f}]'

def lat(op, p):
    return lambda r: r['latency_us'].get(op, {}).get(p)

def delta(name):
    return lambda r: r.get('engine_stats_delta', {}).get(name)

def stat(name):
    return lambda r: r.get('engine_stats', {}).get(name)

def n(v, d=0):
    if v is None:
        return '-'
    if d == 0:
        return f'{v:,.0f}'
    return f'{v:,.{d}f}'

def mib(v):
    return '-' if v is None else f'{v / 1048576:,.0f}'

def t1():
    data = load('t1-*.json')
    rows = []
    print('| values | engine (compression) | phase | ops/s | w-amp | s-amp | disk MiB | peak RSS MiB | cgroup peak MiB | put p99.9 µs | put max µs | get p50 µs | get p99 µs | get p99.9 µs | device reads MiB | reps |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for kind in ['random', 'json']:
        for config, engine, label in [(f't1-{kind}-lz4', 'evendb', 'evendb (lz4)'),
                                      (f't1-{kind}-evendb-none', 'evendb', 'evendb (none)'),
                                      (f't1-{kind}-lz4', 'rocksdb', 'rocksdb (lz4)')]:
            for w in ['load', 'P', 'C']:
                rs = data.get((config, engine, w))
                if not rs:
                    continue
                print(f"| {kind} | {label} | {w} | {spread(rs, lambda r: r['throughput_ops_per_sec'])} | "
                      f"{n(fig(rs, lambda r: r['write_amplification']), 2)} | {n(fig(rs, lambda r: r['space_amplification']), 2)} | "
                      f"{mib(fig(rs, lambda r: r['disk_bytes']))} | {mib(fig(rs, lambda r: r['peak_rss_bytes']))} | "
                      f"{mib(fig(rs, lambda r: r['cgroup_peak_bytes']))} | "
                      f"{n(fig(rs, lat('put', 'p999')))} | {n(fig(rs, lat('put', 'max')))} | "
                      f"{n(fig(rs, lat('get', 'p50')), 1)} | {n(fig(rs, lat('get', 'p99')), 1)} | {n(fig(rs, lat('get', 'p999')), 1)} | "
                      f"{mib(fig(rs, lambda r: r['bytes_read']))} | {len(rs)} |")
    print()
    print('evendb, where the bytes went (median of the phase\'s counter growth, MiB) and where gets were served (%):')
    print()
    print('| values | compression | phase | user | log | run | table | table of rebalances | gets munk % | row cache % | log % | table % |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|')
    for kind in ['random', 'json']:
        for config, label in [(f't1-{kind}-lz4', 'lz4'), (f't1-{kind}-evendb-none', 'none')]:
            for w in ['load', 'P', 'C']:
                rs = data.get((config, 'evendb', w))
                if not rs:
                    continue
                g = fig(rs, delta('gets')) or 0
                share = lambda k: '-' if not g else n(100 * fig(rs, lambda r: r['engine_stats_delta'].get(k, 0)) / g, 1)
                print(f"| {kind} | {label} | {w} | {mib(fig(rs, delta('user_bytes_written')))} | {mib(fig(rs, delta('log_bytes_written')))} | "
                      f"{mib(fig(rs, delta('run_bytes_written')))} | {mib(fig(rs, delta('table_bytes_written')))} | "
                      f"{mib(fig(rs, delta('rebalance_table_bytes')))} | {share('gets_munk')} | {share('gets_row_cache')} | {share('gets_log')} | {share('gets_table')} |")
    print()
    print('RocksDB SST bytes at the end of each phase (MiB, median):')
    for kind in ['random', 'json']:
        for w in ['load', 'P', 'C']:
            rs = data.get((f't1-{kind}-lz4', 'rocksdb', w))
            if rs:
                print(f"- {kind} {w}: {mib(fig(rs, stat('total_sst_files_size')))}")

def t3():
    data = load('t3-*.json')
    print('| workload | engine | direction | scans/s | records/scan | scan p50 µs | p99 µs | p99.9 µs | max µs | insert p99.9 µs | reps |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    ops = {}
    for w in ['E', 'stream']:
        for engine in ['evendb', 'rocksdb']:
            for d in ['fwd', 'rev']:
                rs = data.get((f't3-{w}-{d}', engine, w))
                if not rs:
                    continue
                per_s = lambda r: r['throughput_ops_per_sec'] * r['latency_us']['scan']['count'] / max(1, r['operations'])
                scans = fig(rs, per_s)
                ops[(w, engine, d)] = scans
                print(f"| {w} | {engine} | {'reverse' if d == 'rev' else 'forward'} | {spread(rs, per_s)} | "
                      f"{n(fig(rs, lambda r: r['scanned_records'] / max(1, r['latency_us']['scan']['count'])), 1)} | "
                      f"{n(fig(rs, lat('scan', 'p50')), 1)} | {n(fig(rs, lat('scan', 'p99')), 1)} | {n(fig(rs, lat('scan', 'p999')), 1)} | "
                      f"{n(fig(rs, lat('scan', 'max')))} | {n(fig(rs, lat('insert', 'p999')))} | {len(rs)} |")
    print()
    print('| workload | direction | evendb / rocksdb (scans/s) |')
    print('|---|---|---|')
    for w in ['E', 'stream']:
        for d in ['fwd', 'rev']:
            a, b = ops.get((w, 'evendb', d)), ops.get((w, 'rocksdb', d))
            if a and b:
                print(f"| {w} | {'reverse' if d == 'rev' else 'forward'} | {a / b:.2f}× |")
    print()
    print('| workload | engine | reverse / forward (scans/s) |')
    print('|---|---|---|')
    for w in ['E', 'stream']:
        for engine in ['evendb', 'rocksdb']:
            a, b = ops.get((w, engine, 'rev')), ops.get((w, engine, 'fwd'))
            if a and b:
                print(f"| {w} | {engine} | {a / b:.2f}× |")

def t4():
    data = load('t4-*.json')
    print('| threads × batch | engine | ops/s | put p99 µs | p99.9 µs | max µs | w-amp | load ops/s | reps |')
    print('|---|---|---|---|---|---|---|---|---|')
    ops = {}
    for config, label in [('t4-t8-b1', '8 × 1'), ('t4-t8-b100', '8 × 100'), ('t4-t2-b100', '2 × 100')]:
        for engine in ['evendb', 'rocksdb']:
            rs = data.get((config, engine, 'P'))
            if not rs:
                continue
            loaded = data.get((config, engine, "load"))
            ops[(config, engine)] = fig(rs, lambda r: r['throughput_ops_per_sec'])
            print(f"| {label} | {engine} | {spread(rs, lambda r: r['throughput_ops_per_sec'])} | {n(fig(rs, lat('put', 'p99')))} | {n(fig(rs, lat('put', 'p999')))} | "
                  f"{n(fig(rs, lat('put', 'max')))} | {n(fig(rs, lambda r: r['write_amplification']), 2)} | "
                  f"{n(fig(loaded, lambda r: r['throughput_ops_per_sec'])) if loaded else '-'} | {len(rs)} |")
    print()
    print('| threads × batch | evendb / rocksdb | evendb: batch 100 / batch 1 | rocksdb: batch 100 / batch 1 |')
    print('|---|---|---|---|')
    for config, label in [('t4-t8-b1', '8 × 1'), ('t4-t8-b100', '8 × 100'), ('t4-t2-b100', '2 × 100')]:
        a, b = ops.get((config, 'evendb')), ops.get((config, 'rocksdb'))
        ea, eb = ops.get((config, 'evendb')), ops.get(('t4-t8-b1', 'evendb'))
        ra, rb = ops.get((config, 'rocksdb')), ops.get(('t4-t8-b1', 'rocksdb'))
        if a and b:
            print(f"| {label} | {a / b:.2f}× | {ea / eb:.1f}× | {ra / rb:.1f}× |")

def t2(pattern='t2-range-delete-r*.json'):
    runs = defaultdict(list)
    for path in sorted(glob.glob(os.path.join(HERE, 'json', pattern))):
        for f in json.load(open(path)):
            runs[f['engine']].append(f)
    if not runs:
        return
    rows = [
        ('load 1M keys (s)', lambda f: f['load_s'], 1),
        ('compaction after the load (s)', lambda f: f['compact_after_load_s'], 2),
        ('delete app 1 by one range delete (ms)', lambda f: f['range_delete_one_app_ms'], 3),
        ('delete app 2 key by key, 10,000 deletes (ms)', lambda f: f['delete_one_app_key_by_key_ms'], 1),
        ('delete apps 50-99 by one range delete (ms)', lambda f: f['range_delete_50_apps_ms'], 3),
    ]
    for when, key in [('before reclaiming', 'reads_before_reclaim'), ('after reclaiming', 'reads_after_reclaim'), ('after reopening', 'reads_after_reopen')]:
        for i, app in enumerate([1, 2, 75]):
            how = {1: 'range-deleted app 1', 2: 'app 2 deleted key by key', 75: 'app 75 (range of 50 apps)'}[app]
            rows.append((f'{when}: get of a deleted key, {how}: first / mean of 1,000 (µs)',
                         (lambda k, i: lambda f: (f[k]['get_deleted_first_us'][i][1], f[k]['get_deleted_mean_us'][i][1]))(key, i), 'pair'))
            rows.append((f'{when}: prefix scan, {how}: first / mean of 100 (µs)',
                         (lambda k, i: lambda f: (f[k]['scan_deleted_first_us'][i][1], f[k]['scan_deleted_mean_us'][i][1]))(key, i), 'pair'))
        rows.append((f'{when}: live app: get mean / scan of 1,000 events mean (µs)',
                     (lambda k: lambda f: (f[k]['get_live_mean_us'], f[k]['scan_live_1000_mean_us']))(key), 'pair'))
    rows += [
        ('disk after the load (MiB)', lambda f: f['disk_after_load'] / 1048576, 1),
        ('disk after the deletes (MiB)', lambda f: f['disk_after_deletes'] / 1048576, 1),
        ('reclaiming: evendb flush + compact; RocksDB compact_range × 3 (s)', lambda f: f['reclaim_s'], 2),
        ('disk after reclaiming (MiB)', lambda f: f['disk_after_reclaim'] / 1048576, 1),
    ]
    engines = list(runs)
    print('| figure (median of %d runs) | ' % len(runs[engines[0]]) + ' | '.join(engines) + ' |')
    print('|---|' + '---|' * len(engines))
    for label, f, d in rows:
        cells = []
        for e in engines:
            if d == 'pair':
                a = med([f(x)[0] for x in runs[e]]); b = med([f(x)[1] for x in runs[e]])
                cells.append(f'{a:,.1f} / {b:,.2f}')
            else:
                cells.append(n(med([f(x) for x in runs[e]]), d))
        print(f'| {label} | ' + ' | '.join(cells) + ' |')

def t2_bb19f09():
    """evendb at bb19f09, before f418d7f dropped deleted cells from munks."""
    t2('t2-bb19f09-range-delete-r*.json')

if __name__ == '__main__':
    which = sys.argv[1:] or ['t1', 't2', 't3', 't4']
    for w in which:
        print(f'### {w}\n')
        globals()[w]()
        print()
