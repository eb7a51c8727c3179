import json,sys
txt=open(sys.argv[1]).read()
docs=[];dec=json.JSONDecoder();i=0
while True:
    j=txt.find('{"jemalloc"',i)
    if j<0: break
    o,e=dec.raw_decode(txt,j); docs.append(o); i=e
print(len(docs))
for n,d in enumerate(docs):
    s=d['jemalloc'].get('stats',{})
    m=d['jemalloc'].get('stats.arenas',{}).get('merged',{})
    sizes=d['jemalloc']['arenas']['bin']; lsizes=d['jemalloc']['arenas'].get('lextent',[])
    small_live=small_slab=0; top=[]
    for b,sz in zip(m.get('bins',[]),sizes):
        cur=b['curregs']*sz['size']; slabs=b['curslabs']*sz['slab_size']
        small_live+=cur; small_slab+=slabs; top.append((slabs-cur,sz['size']))
    large=0
    for l,sz in zip(m.get('lextents',[]),lsizes):
        large+=l['curlextents']*sz['size']
    top.sort(reverse=True)
    M=lambda v: round(v/2**20,1)
    print(n,'alloc',M(s['allocated']),'active',M(s['active']),'resident',M(s['resident']),'meta',M(s['metadata']),'| small live',M(small_live),'slabs',M(small_slab),'large',M(large),'| waste by class',[(c,M(w)) for w,c in top[:3]])
