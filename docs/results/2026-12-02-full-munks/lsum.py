"""Per run of load.sh: load rate, p99.9 and worst put (ms), peak RSS (MiB),
puts that found their munk full and their wait, munk rebuilds, splits,
puts over 12 ms a probe build printed (SLOWPUT), write amplification;
then each variant's median rate and worst put."""
import json, sys, glob, collections, statistics as st
rows = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + '/*.json')):
    name, cap, run = f.split('/')[-1][:-5].rsplit('-', 2)
    d = json.load(open(f))
    r = [r for r in d['results'] if r['workload'] == 'load'][0]
    lat = r['latency_us']['put']
    e = r['engine_stats_delta']
    slow = sum(1 for l in open(f[:-5] + '.txt') if l.startswith('SLOWPUT'))
    rows[(cap, name)].append((r['throughput_ops_per_sec'], lat['p999'] / 1000, lat['max'] / 1000, r['peak_rss_bytes'] / 2**20,
                              e.get('put_munk_full_waits', 0), e.get('put_munk_full_wait_micros', 0) / 1000, e.get('munk_rebalances', 0), e.get('splits', 0), slow, r['write_amplification']))
for k in sorted(rows):
    v = rows[k]
    print(k, 'n=%d' % len(v))
    for x in v:
        print('   %8.0f p99.9 %.2f worst %6.1f rss %4.0f full-waits %4d (%6.0f ms) munk-rebal %4d splits %4d slow>12ms %3d w-amp %.2f' % x)
    print('   median rate %.0f worst %.1f' % (st.median(x[0] for x in v), st.median(x[2] for x in v)))
