"""Per run: load puts/s, p99.9 and worst put (ms), throttles of the job's
threads and how many slept 50 ms or more (PHASE=1: the phase after the
load; the throttles are counted over the whole run)."""
import json, os, sys, glob, re, collections, statistics as st
rows = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + '/*.json')):
    name = f.split('/')[-1][:-5]
    r = json.load(open(f))['results'][int(os.environ.get('PHASE', '0'))]
    put = r['latency_us']['put']
    thr = open(f[:-5] + '.thr').read().splitlines()
    slept = [int(re.search(r'usect_delayed=(\d+)', l).group(1)) for l in thr if 'usect_delayed' in l]
    long_ = sum(1 for s in slept if s >= 50000)
    v = name.rsplit('-', 2)[0]
    rows[v].append((r['throughput_ops_per_sec'], put['p999'] / 1000, put['max'] / 1000, len(slept), long_))
    print('%-16s load %7.0f  p99.9 %5.2f  worst %6.1f  throttles %3d, >=50 ms %d  rss %.0f' % (
        name, r['throughput_ops_per_sec'], put['p999'] / 1000, put['max'] / 1000, len(slept), long_, r['peak_rss_bytes'] / 2**20))
for v, x in rows.items():
    print('%-8s n=%d median load %7.0f worst %6.1f throttles %s' % (v, len(x), st.median(a[0] for a in x), st.median(a[2] for a in x), [a[3] for a in x]))
