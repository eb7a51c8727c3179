import json,sys
for f in sys.argv[1:]:
    d=json.load(open(f))
    row=[f.split('/')[-1][:-5]]
    for ph in d['results']:
        s=ph['engine_stats_delta']; lat=ph['latency_us']
        ops=ph['throughput_ops_per_sec']
        if ph['workload']=='stream-ingest':
            put=lat.get('put',{})
            row.append(f"ingest {ops/1000:.1f}K p999 {put.get('p999',0)/1000:.2f} worst {put.get('max',0)/1000:.1f} full {s.get('put_munk_full_waits',0)}/{s.get('put_munk_full_wait_micros',0)/1e6:.2f}s mem {s.get('put_memory_waits',0)}/{s.get('put_memory_wait_micros',0)/1e6:.2f}s pace {s.get('put_pace_waits',0)}/{s.get('put_pace_wait_micros',0)/1e6:.2f}s lock {s.get('put_lock_wait_micros',0)/1e6:.2f}s wamp {ph['write_amplification']:.2f}")
        else:
            sc=lat.get('scan',{})
            row.append(f"q {ops:.0f} p999 {sc.get('p999',0)/1000:.1f} worst {sc.get('max',0)/1000:.1f} rss {ph['peak_rss_bytes']/2**20:.0f}")
    print(' | '.join(row))
