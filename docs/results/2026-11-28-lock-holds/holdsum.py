import sys,re,collections
for f in sys.argv[1:]:
    tot=collections.defaultdict(lambda:[0,0,0])
    for line in open(f):
        if not line.startswith('XHOLD'): continue
        t=int(re.search(r't=(\d+)',line).group(1))
        ph='load' if t<=8 else ('P' if t<=19 else 'E100')
        for s,ms,n,mx in re.findall(r's(\d):(\d+)ms/(\d+)/max(\d+)us',line):
            a=tot[(ph,s)]; a[0]+=int(ms); a[1]+=int(n); a[2]=max(a[2],int(mx))
    worst={m.group(1):m.group(2) for m in re.finditer(r'^evendb +(\w+) +\S+ +put +\d+ +\S+ +\S+ +\S+ +\S+ +\S+ +(\S+)', open(f).read(), re.M)}
    print(f, 'worst put', worst, ' '.join(f"{k[0]}/s{k[1]}:{v[0]}ms/{v[1]}/max{v[2]/1000:.1f}" for k,v in sorted(tot.items()) if v[1] and k[1] in '146'))
