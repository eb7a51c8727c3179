"""Per run of oomab.sh: the load's put lock waits (count, ms), munk-full
waits (ms), p99.9 and worst put (ms), throughput.  python3 lockwaits.py ten"""
import glob, json, sys
for name in sorted({f.split('/')[-1].split('-run-')[0] for f in glob.glob(f'{sys.argv[1]}/*-run-*.json')}):
    for f in sorted(glob.glob(f'{sys.argv[1]}/{name}-run-*.json'), key=lambda x: int(x.split('-')[-1][:-5])):
        r = {x['workload']: x for x in json.load(open(f))['results']}
        e, l = r['load']['engine_stats_delta'], r['load']['latency_us']['put']
        print(name, f.split('/')[-1], e['put_lock_waits'], e['put_lock_wait_micros'] // 1000,
              e['put_munk_full_wait_micros'] // 1000, round(l['p999'] / 1000, 2), round(l['max'] / 1000, 1),
              int(r['load']['throughput_ops_per_sec']))
