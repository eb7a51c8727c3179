"""dstacks.py stacks.txt worker_comm: off-CPU time of the worker threads in D state (uninterruptible), by the
kernel stack at which they blocked: count, total and longest sleep."""
import sys, collections
from perfswitch import off_cpu

path, W = sys.argv[1], sys.argv[2]
SKIP = ('__schedule', 'schedule', '__traceiter', '__perf', 'perf_')
agg = collections.defaultdict(lambda: [0, 0.0, 0.0])
for tid, t0, t1, st, frames in off_cpu(path, lambda comm, tid: comm == W):
    if not st.startswith('D'):
        continue
    key = ' < '.join([f for f in frames if not f.startswith(SKIP)][:7])
    d = (t1 - t0) * 1000
    a = agg[key]; a[0] += 1; a[1] += d; a[2] = max(a[2], d)
print(f'D-state off-CPU of {W}: {sum(a[1] for a in agg.values()):.0f} ms in {sum(a[0] for a in agg.values())} sleeps')
for k, a in sorted(agg.items(), key=lambda x: -x[1][1])[:14]:
    print(f'{a[1]:8.0f} ms {a[0]:6d} sleeps, max {a[2]:6.1f} ms: {k}')
