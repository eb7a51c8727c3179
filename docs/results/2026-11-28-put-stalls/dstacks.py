"""dstacks.py stacks.txt worker_comm: off-CPU time of the worker threads in D state (uninterruptible), by the
kernel and user stack at which they blocked: count, total and longest sleep."""
import re,sys,collections
path,W=sys.argv[1],sys.argv[2]
off={}; agg=collections.defaultdict(lambda:[0,0.0,0.0])
cur=None
def flush(ev):
    if not ev: return
    t,tr,stack=ev
    pm=re.search(r'prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)',tr)
    if not pm: return
    pc,pp,ps,nc,np_=pm.groups(); pp=int(pp); np_=int(np_)
    if pc==W:
        frames=[s for s in stack if not s.startswith(('__schedule','schedule','__traceiter','__perf','perf_'))]
        off[pp]=(t,ps,frames)
    if nc==W and np_ in off:
        t0,st,frames=off.pop(np_)
        if st.startswith('D'):
            d=(t-t0)*1000
            key=' < '.join(frames[:7])
            a=agg[key]; a[0]+=1; a[1]+=d; a[2]=max(a[2],d)
ev=None
for line in open(path):
    if not line.strip():
        flush(ev); ev=None; continue
    m=re.match(r'\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+sched:sched_switch:\s*(.*)',line)
    if m: flush(ev); ev=(float(m.group(3)),m.group(4),[]); continue
    if ev is not None:
        p=line.split()
        if len(p)>=2: ev[2].append(re.sub(r'\+0x[0-9a-f]+$','',p[1]))
flush(ev)
tot=sum(a[1] for a in agg.values())
print(f'D-state off-CPU of {W}: {tot:.0f} ms in {sum(a[0] for a in agg.values())} sleeps')
for k,a in sorted(agg.items(),key=lambda x:-x[1][1])[:14]:
    print(f'{a[1]:8.0f} ms {a[0]:6d} sleeps, max {a[2]:6.1f} ms: {k}')
