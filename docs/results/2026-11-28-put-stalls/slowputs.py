"""slowputs.py run.txt stacks.txt: for each operation the bench reported slower than 8 ms (XSLOW lines: thread,
start and end on CLOCK_MONOTONIC), the thread's time off the CPU inside it, by state (R runnable, S sleeping,
D uninterruptible) and the stack where it blocked; then totals by cause over all slow operations."""
import re, sys, collections
from perfswitch import off_cpu

slow = []
for l in open(sys.argv[1]):
    m = re.match(r'XSLOW \d+/task/(\d+) Instant \{ tv_sec: (\d+), tv_nsec: (\d+) \} Instant \{ tv_sec: (\d+), tv_nsec: (\d+) \} (\d+) us', l)
    if m:
        tid, a, an, b, bn, us = map(int, m.groups())
        slow.append((tid, a + an / 1e9, b + bn / 1e9, us))
tids = {s[0] for s in slow}
SKIP = ('__schedule', 'schedule', '__traceiter', '__perf', 'perf_', 'preempt_', 'irqentry', 'asm_', 'schedule_')


def key(frames):
    k = [f for f in frames if not f.startswith(SKIP)]
    kern = [f for f in k if not ('::' in f or f.startswith('<') or f == '[unknown]')][:4]
    ev = [re.sub(r'::h[0-9a-f]{16}$', '', f) for f in k if 'evendb' in f and 'core::' not in f][:3]
    return ' < '.join(kern) + ' | ' + ' < '.join(ev)


ivs = collections.defaultdict(list)
for tid, t0, t1, st, frames in off_cpu(sys.argv[2], lambda comm, tid: tid in tids):
    ivs[tid].append((t0, t1, st[0], key(frames)))
tot = collections.defaultdict(float); n = collections.Counter(); oncpu = total = 0.0
for tid, a, b, us in sorted(slow, key=lambda s: -s[3]):
    parts = []; offsum = 0
    for t0, t1, st, k in ivs[tid]:
        lo, hi = max(t0, a), min(t1, b)
        if hi > lo:
            d = (hi - lo) * 1000; offsum += d; parts.append((d, st, k)); tot[(st, k)] += d; n[(st, k)] += 1
    oncpu += us / 1000 - offsum; total += us / 1000
    if us >= 10000:
        print(f'{us/1000:7.1f} ms put on tid {tid}: off-CPU {offsum:.1f} ms')
        for d, st, k in sorted(parts, reverse=True)[:4]:
            print(f'      {d:6.1f} {st} {k}')
print(f'\n{len(slow)} slow ops, {total:.0f} ms; on the CPU {oncpu:.0f} ms')
for (st, k), d in sorted(tot.items(), key=lambda x: -x[1])[:15]:
    print(f'{d:8.1f} ms {n[(st, k)]:5d}x {st} {k}')
