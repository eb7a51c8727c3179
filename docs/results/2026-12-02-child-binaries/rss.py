"""Per run file: phase, throughput, peak RSS MiB, cgroup peak if present, linked engines."""
import json, sys, glob
for f in sorted(sys.argv[1:]):
    d = json.load(open(f))
    for r in d['results']:
        print('%-22s %-6s %9.0f  rss %6.1f  linked=%s' % (f.split('/')[-1], r['workload'][:6], r['throughput_ops_per_sec'],
              r['peak_rss_bytes']/2**20, r.get('linked_engines','?')))
