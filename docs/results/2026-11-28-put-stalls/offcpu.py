"""offcpu.py stall.txt [ms]: for the bench's worker threads (comm evendb-bench), every interval off the CPU of
at least `ms` (default 8): how long it slept (blocked, state S/D) and how long it waited runnable for a core
(wakeup or preemption to the next switch in), and any memcg reclaim or throttle inside it; then memcg reclaim
durations by thread name."""
import re,sys,collections
WORKER=sys.argv[3] if len(sys.argv)>3 else 'evendb-bench'
path=sys.argv[1]; lim=float(sys.argv[2]) if len(sys.argv)>2 else 8.0
off={}      # tid -> (t_out, state)
woke={}     # tid -> t_wakeup
rec={}      # tid -> t_begin
recl=collections.defaultdict(list)   # comm -> durations ms
names={}
events=[]
inrec=collections.defaultdict(list)  # tid -> [(t0,t1)]
thr=collections.defaultdict(list)
for line in open(path):
    m=re.match(r'\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+(\S+):\s*(.*)',line)
    if not m: continue
    comm,tid,t,ev,tr=m.groups(); tid=int(tid); t=float(t)
    if ev=='sched:sched_switch':
        pm=re.search(r'prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)',tr)
        if not pm: continue
        pc,pp,ps,nc,np_=pm.groups(); pp=int(pp); np_=int(np_)
        names[pp]=pc; names[np_]=nc
        off[pp]=(t,ps)
        if np_ in off:
            t0,st=off.pop(np_); w=woke.pop(np_,None)
            d=(t-t0)*1000
            if names.get(np_)==WORKER and d>=lim:
                if st.startswith('R'): sl,rq=0.0,d
                else:
                    wt=w if w and w>=t0 else t
                    sl,rq=(wt-t0)*1000,(t-wt)*1000
                rc=[ (b-a)*1000 for a,b in inrec[np_] if a>=t0-0.5 and a<=t]
                events.append((t0,np_,d,st,sl,rq,sum(rc)))
    elif ev=='sched:sched_wakeup':
        pm=re.search(r'pid=(\d+)',tr)
        if pm: woke[int(pm.group(1))]=t
    elif ev=='vmscan:mm_vmscan_memcg_reclaim_begin':
        rec[tid]=t
    elif ev=='vmscan:mm_vmscan_memcg_reclaim_end':
        if tid in rec:
            a=rec.pop(tid); recl[comm].append((t-a)*1000); inrec[tid].append((a,t))
    elif ev=='vmscan:mm_vmscan_throttled':
        thr[comm].append(tr)
print(f'worker off-CPU intervals >= {lim} ms: {len(events)}')
for e in sorted(events,key=lambda e:-e[2])[:40]:
    t0,tid,d,st,sl,rq,rc=e
    print(f'  t={t0:.3f} tid={tid} off {d:.1f} ms state {st}: asleep {sl:.1f}, runnable {rq:.1f}; memcg reclaim in it {rc:.1f}')
for c,v in sorted(recl.items()):
    v.sort(); n=len(v)
    print(f'memcg reclaims by {c}: {n}, total {sum(v):.0f} ms, p99 {v[int(n*0.99)-1] if n>1 else v[0]:.2f}, max {v[-1]:.2f}, >=5 ms {sum(1 for x in v if x>=5)}')
for c,v in thr.items(): print('throttled',c,len(v))
