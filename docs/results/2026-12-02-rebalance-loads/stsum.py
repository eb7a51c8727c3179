import json,sys,glob,collections,statistics as st
rows=collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1]+'/*.json')):
    name,cap,run=f.split('/')[-1][:-5].rsplit('-',2)
    try: d=json.load(open(f))
    except Exception: continue
    for r in d['results']:
        lat=r['latency_us']
        op=[k for k in lat][0]
        rows[(cap,r['workload'],name)].append((r['throughput_ops_per_sec'], lat[op]['p999']/1000, lat[op]['max']/1000, r['peak_rss_bytes']/2**20, r['write_amplification'], r['bytes_read']/1e9))
for k in sorted(rows):
    v=rows[k]
    print(k, 'med %.0f'%st.median([x[0] for x in v]), ' | '.join('%.0f p999 %.1f max %.1f rss %.0f wa %.2f rd %.1fG'%x for x in v))
