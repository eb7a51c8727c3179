#!/usr/bin/env python3
"""Tables of README.md from the JSON files here: medians per binary (main = old, branch = new)
and, per run, evendb against RocksDB from the same invocation."""
import json, glob, statistics, os
D=os.path.dirname(os.path.abspath(__file__))
def load(f):
    d=json.load(open(f)); out={}
    for r in d['results']:
        out[(r['engine'], r['workload'])]=r
    return out
def med(xs):
    xs=[x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
def get(res, eng, wl, key, sub=None):
    r=res.get((eng,wl))
    if r is None: return None
    if key=='disk_mib': return r['disk_bytes']/2**20
    if key=='rss_mib': return r['peak_rss_bytes']/2**20
    if key=='put_p999': return r['latency_us']['put']['p999']
    if key=='put_max': return r['latency_us']['put']['max']
    if key=='get_p99': return r['latency_us']['get']['p99']
    if key=='runs_stored': return r['engine_stats'].get('run_bytes_written',0)/2**20
    if key=='runs_records': return r['engine_stats'].get('run_record_bytes',0)/2**20
    return r[key]
rows=[('P','space_amplification','s-amp after P'),('C','space_amplification','s-amp after C'),
      ('P','disk_mib','disk MiB after P'),('C','disk_mib','disk MiB after C'),
      ('P','throughput_ops_per_sec','P ops/s'),('C','throughput_ops_per_sec','C ops/s'),
      ('P','put_p999','P put p99.9 µs'),('P','put_max','P worst put µs'),
      ('C','get_p99','C get p99 µs'),('C','rss_mib','peak RSS MiB (end of C)'),
      ('P','write_amplification','P w-amp')]
for kind in ['json','random']:
  for mem in ['1G','256M']:
    print(f"\n#### {kind} values, --memory-limit {mem}\n")
    print("| metric | main evendb | main ÷ RocksDB | branch evendb | branch ÷ RocksDB | branch ÷ main |")
    print("|---|---|---|---|---|---|")
    data={}
    for which in ['old','new']:
        data[which]=[load(f) for f in sorted(glob.glob(f'{D}/{kind}-{mem}-{which}-*.json'))]
    for wl,key,label in rows:
        cells=[]
        meds={}
        for which in ['old','new']:
            ev=[get(r,'evendb',wl,key) for r in data[which]]
            ro=[get(r,'rocksdb',wl,key) for r in data[which]]
            ratio=[e/o if (e is not None and o) else None for e,o in zip(ev,ro)]
            fmt=lambda x: '-' if x is None else (f"{x:,.0f}" if abs(x)>=100 else f"{x:.2f}")
            m=med(ev); meds[which]=m
            cells.append(f"{fmt(m)} ({', '.join(fmt(x) for x in ev)})")
            cells.append(f"{fmt(med(ratio))}× ({', '.join(fmt(x) for x in ratio)})")
        bm = meds['new']/meds['old'] if meds['old'] else None
        print(f"| {label} | {' | '.join(cells)} | {'-' if bm is None else f'{bm:.2f}×'} |")
    for which in ['old','new']:
        rs=[(get(r,'evendb','P','runs_stored'),get(r,'evendb','P','runs_records'),r[('evendb','P')]['engine_stats'].get('log_runs')) for r in data[which]]
        print(f"\n{which}: runs after P (stored MiB, record MiB, runs): {rs}")
