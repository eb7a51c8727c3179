"""ustacks.py stacks.txt worker_comm kernel_frame: for the worker's D-state sleeps whose kernel stack holds
kernel_frame, the evendb frames of the stack: total and longest sleep by call path."""
import re,sys,collections
path,W,K=sys.argv[1],sys.argv[2],sys.argv[3]
off={}; agg=collections.defaultdict(lambda:[0,0.0,0.0])
def flush(ev):
    if not ev: return
    t,tr,stack=ev
    pm=re.search(r'prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)',tr)
    if not pm: return
    pc,pp,ps,nc,np_=pm.groups(); pp=int(pp); np_=int(np_)
    if pc==W: off[pp]=(t,ps,stack)
    if nc==W and np_ in off:
        t0,st,frames=off.pop(np_)
        if st.startswith('D') and any(K in f for f in frames):
            d=(t-t0)*1000
            ev=[re.sub(r'::h[0-9a-f]{16}$','',f) for f in frames if ('evendb' in f and 'core::' not in f)]
            key=' < '.join(ev[:6])
            a=agg[key]; a[0]+=1; a[1]+=d; a[2]=max(a[2],d)
ev=None
for line in open(path):
    if not line.strip():
        flush(ev); ev=None; continue
    m=re.match(r'\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+sched:sched_switch:\s*(.*)',line)
    if m: flush(ev); ev=(float(m.group(3)),m.group(4),[]); continue
    if ev is not None:
        p=line.split(None,1)
        if len(p)>=2: ev[2].append(re.sub(r'\+0x[0-9a-f]+$','',p[1].strip().split(' (')[0]))
flush(ev)
for k,a in sorted(agg.items(),key=lambda x:-x[1][1])[:8]:
    print(f'{a[1]:8.0f} ms {a[0]:6d} sleeps, max {a[2]:6.1f}: {k}')
