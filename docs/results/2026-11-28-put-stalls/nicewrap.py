#!/usr/bin/env python3
"""nicewrap.py <nice> <comm regex> <command...>: runs the command; while it runs, every thread of its process
tree whose comm matches the regex is reniced to <nice> (once each): A/B tests of background threads' priority."""
import os,re,subprocess,sys,time
n=int(sys.argv[1]); rx=re.compile(sys.argv[2]); cmd=sys.argv[3:]
p=subprocess.Popen(cmd); done=set()
def tree(root):
    kids=[root]; out=[]
    while kids:
        k=kids.pop(); out.append(k)
        try:
            for t in os.listdir(f'/proc/{k}/task'):
                try: kids+= [int(x) for x in open(f'/proc/{k}/task/{t}/children').read().split()]
                except OSError: pass
        except OSError: pass
    return out
while p.poll() is None:
    for pid in tree(p.pid):
        try: tasks=os.listdir(f'/proc/{pid}/task')
        except OSError: continue
        for t in tasks:
            tid=int(t)
            if tid in done: continue
            try: c=open(f'/proc/{pid}/task/{t}/comm').read().strip()
            except OSError: continue
            if rx.search(c):
                try: os.setpriority(os.PRIO_PROCESS,tid,n); done.add(tid)
                except OSError: pass
    time.sleep(0.1)
sys.exit(p.returncode)
