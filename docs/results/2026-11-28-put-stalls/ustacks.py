"""ustacks.py stacks.txt worker_comm kernel_frame: for the worker's D-state sleeps whose kernel stack holds
kernel_frame, the evendb frames of the stack: total and longest sleep by call path."""
import re, sys, collections
from perfswitch import off_cpu

path, W, K = sys.argv[1], sys.argv[2], sys.argv[3]
agg = collections.defaultdict(lambda: [0, 0.0, 0.0])
for tid, t0, t1, st, frames in off_cpu(path, lambda comm, tid: comm == W):
    if not st.startswith('D') or not any(K in f for f in frames):
        continue
    ev = [re.sub(r'::h[0-9a-f]{16}$', '', f) for f in frames if 'evendb' in f and 'core::' not in f]
    d = (t1 - t0) * 1000
    a = agg[' < '.join(ev[:6])]; a[0] += 1; a[1] += d; a[2] = max(a[2], d)
for k, a in sorted(agg.items(), key=lambda x: -x[1][1])[:8]:
    print(f'{a[1]:8.0f} ms {a[0]:6d} sleeps, max {a[2]:6.1f}: {k}')
