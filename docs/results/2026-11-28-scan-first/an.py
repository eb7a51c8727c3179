"""Samples per thread, inclusive and leaf frames of `perf script -F comm,tid,ip,sym`
output (profpe.sh). python3 an.py <script.txt> [thread prefix] [rows]"""
import collections, re, sys
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '../2026-11-28-value-blocks/queries'))
from fold import stacks  # noqa: E402
def clean(f): return re.sub(r'<impl [^>]*>::', '', f).split(' (')[0]
threads=collections.Counter(); incl=collections.Counter(); leaf=collections.Counter(); total=0
sel=sys.argv[2] if len(sys.argv)>2 else ''
for comm, st in stacks(sys.argv[1]):
    total+=1; threads[comm]+=1
    if sel and not comm.startswith(sel): continue
    frames=[clean(f) for f in st]
    seen=set()
    for f in frames:
        g=re.sub(r'::h[0-9a-f]{16}$','',f)[:110]
        if g not in seen: seen.add(g); incl[g]+=1
    leaf[re.sub(r'::h[0-9a-f]{16}$','',frames[0])[:110] if frames else '?']+=1
print('samples',total,threads.most_common(8))
print('# inclusive'); [print(v,k) for k,v in incl.most_common(int(sys.argv[3]) if len(sys.argv)>3 else 60)]
print('# leaf'); [print(v,k) for k,v in leaf.most_common(25)]
