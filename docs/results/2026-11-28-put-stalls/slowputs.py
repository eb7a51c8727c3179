"""slowputs.py run.txt stacks.txt: for each operation the bench reported slower than 8 ms (XSLOW lines: thread,
start and end on CLOCK_MONOTONIC), the thread's time off the CPU inside it, by state (R runnable, S sleeping,
D uninterruptible) and the stack where it blocked; then totals by cause over all slow operations."""
import re,sys,collections
slow=[]
for l in open(sys.argv[1]):
    m=re.match(r'XSLOW \d+/task/(\d+) Instant \{ tv_sec: (\d+), tv_nsec: (\d+) \} Instant \{ tv_sec: (\d+), tv_nsec: (\d+) \} (\d+) us',l)
    if m:
        tid,a,an,b,bn,us=map(int,m.groups()); slow.append((tid,a+an/1e9,b+bn/1e9,us))
tids={s[0] for s in slow}
off={}; ivs=collections.defaultdict(list)
def key(frames):
    k=[f for f in frames if not f.startswith(('__schedule','schedule','__traceiter','__perf','perf_','preempt_','irqentry','asm_','schedule_'))]
    kern=[f for f in k if not ('::' in f or f.startswith('<') or f=='[unknown]')][:4]
    ev=[re.sub(r'::h[0-9a-f]{16}$','',f) for f in k if 'evendb' in f and 'core::' not in f][:3]
    return ' < '.join(kern)+' | '+' < '.join(ev)
def flush(ev):
    if not ev: return
    t,tr,stack=ev
    pm=re.search(r'prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)',tr)
    if not pm: return
    pc,pp,ps,nc,np_=pm.groups(); pp=int(pp); np_=int(np_)
    if pp in tids: off[pp]=(t,ps,key(stack))
    if np_ in tids and np_ in off:
        t0,st,k=off.pop(np_); ivs[np_].append((t0,t,st[0],k))
ev=None
for line in open(sys.argv[2]):
    if not line.strip(): flush(ev); ev=None; continue
    m=re.match(r'\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+sched:sched_switch:\s*(.*)',line)
    if m: flush(ev); ev=(float(m.group(3)),m.group(4),[]); continue
    if re.match(r'\s*(.+?)\s+(\d+)\s+(\d+\.\d+):',line): flush(ev); ev=None; continue
    if ev is not None:
        p=line.split(None,1)
        if len(p)>=2: ev[2].append(re.sub(r'\+0x[0-9a-f]+$','',p[1].strip().split(' (')[0]))
flush(ev)
tot=collections.defaultdict(float); n=collections.Counter()
oncpu=0.0; total=0.0
for tid,a,b,us in sorted(slow,key=lambda s:-s[3]):
    parts=[]; offsum=0
    for t0,t1,st,k in ivs[tid]:
        lo,hi=max(t0,a),min(t1,b)
        if hi>lo:
            d=(hi-lo)*1000; offsum+=d; parts.append((d,st,k)); tot[(st,k)]+=d; n[(st,k)]+=1
    oncpu+=us/1000-offsum; total+=us/1000
    if us>=10000:
        print(f'{us/1000:7.1f} ms put on tid {tid}: off-CPU {offsum:.1f} ms')
        for d,st,k in sorted(parts,reverse=True)[:4]: print(f'      {d:6.1f} {st} {k}')
print(f'\n{len(slow)} slow ops, {total:.0f} ms; on the CPU {oncpu:.0f} ms')
for (st,k),d in sorted(tot.items(),key=lambda x:-x[1])[:15]: print(f'{d:8.1f} ms {n[(st,k)]:5d}x {st} {k}')
