"""cats.py stacks.txt worker_comm: per thread of the bench binary (worker_comm), time off the CPU by cause:
runnable (R), sleeping (S) and uninterruptible (D) by the kernel function that names the wait."""
import re,sys,collections
path,W=sys.argv[1],sys.argv[2]
off={}; agg=collections.defaultdict(lambda:collections.defaultdict(lambda:[0,0.0,0.0]))
cats=['filemap_read','ext4_da_get_block_prep','reclaim_throttle','ext4_fsync_nojournal','blkdev_issue_discard','ext4_da_write_end','__filemap_get_folio','cgroup_procs_write','__sched_yield','futex_wait']
def flush(ev):
    if not ev: return
    t,tr,stack=ev
    pm=re.search(r'prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)',tr)
    if not pm: return
    pc,pp,ps,nc,np_=pm.groups(); pp=int(pp); np_=int(np_)
    if pc==W: off[pp]=(t,ps,stack)
    if nc==W and np_ in off:
        t0,st,frames=off.pop(np_)
        d=(t-t0)*1000
        c='other'
        for k in cats:
            if any(k in f for f in frames): c=k; break
        a=agg[np_][st[0]+' '+c]; a[0]+=1; a[1]+=d; a[2]=max(a[2],d)
ev=None
for line in open(path):
    if not line.strip(): flush(ev); ev=None; continue
    m=re.match(r'\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+sched:sched_switch:\s*(.*)',line)
    if m: flush(ev); ev=(float(m.group(3)),m.group(4),[]); continue
    if ev is not None:
        p=line.split(None,1)
        if len(p)>=2: ev[2].append(p[1].strip().split(' (')[0])
flush(ev)
for tid in sorted(agg):
    tot=sum(a[1] for a in agg[tid].values())
    if tot<50: continue
    print(tid, f'{tot:.0f} ms off the CPU')
    for c,a in sorted(agg[tid].items(),key=lambda x:-x[1][1])[:9]: print(f'    {c:32s} {a[0]:6d} {a[1]:8.0f} ms, longest {a[2]:6.1f}')
