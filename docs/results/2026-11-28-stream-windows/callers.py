"""Callers of a function in `perf script` output: per distinct chain of the
`depth` frames above its outermost frame, the samples that hold it.
python3 callers.py <script.txt> <function substring> [depth]"""
import collections, re, sys
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '../2026-11-28-value-blocks/queries'))
from fold import stacks
def clean(f): return re.sub(r'<impl [^>]*>::', '', f).split(' (')[0]
target=sys.argv[2]; depth=int(sys.argv[3]) if len(sys.argv)>3 else 8
c=collections.Counter(); total=0; hit=0
for comm, st in stacks(sys.argv[1]):
    total+=1
    fr=[clean(f) for f in st]
    idx=[i for i,f in enumerate(fr) if target in f]
    if not idx: continue
    hit+=1
    i=idx[-1]
    c[' <- '.join(f[:60] for f in fr[i+1:i+1+depth])]+=1
print('total',total,'hit',hit)
for k,v in c.most_common(12): print(v,k)
