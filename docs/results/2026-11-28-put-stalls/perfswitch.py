"""Reading `perf script -F comm,tid,time,event,trace,ip,sym` output of `sched:sched_switch` events recorded with
call stacks (`perf record -g`): the scripts of this directory import it."""
import re

SWITCH = re.compile(r'prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
EVENT = re.compile(r'\s*(.+?)\s+(\d+)\s+(\d+\.\d+):\s+(\S+):\s*(.*)')


def switches(path):
    """Yields (time, prev_comm, prev_tid, prev_state, next_comm, next_tid, stack) for each switch; the stack is the
    symbol names of the thread leaving the CPU, innermost first."""
    ev = None
    for line in open(path):
        if not line.strip():
            if ev:
                yield ev
            ev = None
            continue
        m = EVENT.match(line)
        if m:
            if ev:
                yield ev
            ev = None
            if m.group(4) == 'sched:sched_switch':
                pm = SWITCH.search(m.group(5))
                if pm:
                    ev = (float(m.group(3)), pm.group(1), int(pm.group(2)), pm.group(3), pm.group(4), int(pm.group(5)), [])
            continue
        if ev is not None:
            p = line.split(None, 1)
            if len(p) >= 2:
                ev[6].append(re.sub(r'\+0x[0-9a-f]+$', '', p[1].strip().split(' (')[0]))
    if ev:
        yield ev


def off_cpu(path, keep):
    """Yields (tid, t_out, t_in, state, stack) for each interval off the CPU of the threads for which
    keep(comm, tid) is true: from the switch that took the thread off to the one that put it back."""
    off = {}
    for t, pc, pp, ps, nc, np_, stack in switches(path):
        if keep(pc, pp):
            off[pp] = (t, ps, stack)
        if np_ in off and keep(nc, np_):
            t0, st, frames = off.pop(np_)
            yield np_, t0, t, st, frames
