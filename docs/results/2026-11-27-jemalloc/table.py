"""Per allocator configuration: the phases' throughput (K ops/s), worst put
(ms) and the peak RSS (MiB) at the end of the run, one line per run.
python3 table.py runs/<dir>/<name>-<cap>-<round>.json ..."""
import json, sys, os, collections
rows = collections.defaultdict(list)
for f in sorted(sys.argv[1:]):
    d = json.load(open(f))
    name = os.path.basename(f).rsplit('-', 2)[0]
    cap = os.path.basename(f).rsplit('-', 2)[1]
    cells = []
    for x in d['results']:
        lat = x['latency_us']
        put = lat.get('put', {}).get('max', 0) / 1000
        cells.append('%s %.0fK%s' % (x['workload'], x['throughput_ops_per_sec'] / 1000,
                                      ' (worst put %.1f)' % put if put else ''))
    rss = max(x['peak_rss_bytes'] for x in d['results']) / 2**20
    rows[(cap, name)].append('; '.join(cells) + '; peak RSS %.0f' % rss)
for (cap, name), rs in sorted(rows.items()):
    for r in rs:
        print('%-5s %-8s %s' % (cap, name, r))
