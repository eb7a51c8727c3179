import json,sys,glob,os
for f in sorted(sys.argv[1:]):
    try: d=json.load(open(f))
    except Exception as e: print(f,'ERR',e); continue
    res=d['results'] if isinstance(d,dict) else d
    out=[]
    for x in res:
        lat=x['latency_us']; k='put' if 'put' in lat and x['workload']!='E100' else ('scan' if 'scan' in lat else list(lat)[0])
        out.append("%s %.0fK w%.1f rss%.0f" % (x['workload'], x['throughput_ops_per_sec']/1000, lat[k]['max']/1000, x['peak_rss_bytes']/2**20))
    print(os.path.basename(f), ' | '.join(out))
