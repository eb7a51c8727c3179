"""Summarise `perf script -F comm,tid,ip,sym` output of prof.sh:
samples per thread name, the scans' leaf calls (first evendb frames) and
maintenance's first evendb frame.  python3 stacks.py <script.txt>"""
import collections, re, sys
from fold import stacks

def clean(f):
    return re.sub(r'<impl [^>]*>::', '', f).split(' (')[0]

threads, scans, maint, total = collections.Counter(), collections.Counter(), collections.Counter(), 0
for comm, st in stacks(sys.argv[1]):
    total += 1
    threads[comm] += 1
    frames = [clean(f) for f in st]
    if any('refill_back' in f for f in frames):
        key = [f[:90] for f in frames if 'evendb::' in f][:4]
        scans[' <- '.join(key)] += 1
    if comm.startswith('evendb-maint'):
        first = next((f[:90] for f in frames if 'evendb::' in f), '?')
        maint[first] += 1
print('samples', total, threads.most_common())
print('\n# scans (reverse windows), first evendb frames')
for k, v in scans.most_common(25):
    print(v, k)
print('\n# maintenance, first evendb frame')
for k, v in maint.most_common(20):
    print(v, k)
