"""cats.py stacks.txt worker_comm: per thread of the bench binary (worker_comm), time off the CPU by cause:
runnable (R), sleeping (S) and uninterruptible (D) by the kernel function that names the wait."""
import sys, collections
from perfswitch import off_cpu

path, W = sys.argv[1], sys.argv[2]
CATS = ['filemap_read', 'ext4_da_get_block_prep', 'reclaim_throttle', 'ext4_fsync_nojournal', 'blkdev_issue_discard',
        'ext4_da_write_end', '__filemap_get_folio', 'cgroup_procs_write', '__sched_yield', 'futex_wait']
agg = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0.0, 0.0]))
for tid, t0, t1, st, frames in off_cpu(path, lambda comm, tid: comm == W):
    c = next((k for k in CATS if any(k in f for f in frames)), 'other')
    a = agg[tid][st[0] + ' ' + c]
    d = (t1 - t0) * 1000
    a[0] += 1; a[1] += d; a[2] = max(a[2], d)
for tid in sorted(agg):
    tot = sum(a[1] for a in agg[tid].values())
    if tot < 50:
        continue
    print(tid, f'{tot:.0f} ms off the CPU')
    for c, a in sorted(agg[tid].items(), key=lambda x: -x[1][1])[:9]:
        print(f'    {c:32s} {a[0]:6d} {a[1]:8.0f} ms, longest {a[2]:6.1f}')
