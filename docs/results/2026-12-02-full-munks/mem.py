"""Per `JE` line of a probe run (EVENDB_JESTATS=1, probe.diff): RSS, what
jemalloc's `allocated` holds beyond the budget's charge, pages holding
freed small objects (`active - allocated`), freed pages not yet purged
(`resident - active - metadata`), and the charge by kind (munks, row
cache, filters, indexes, working memory, write buffers), MiB."""
import sys
for f in sys.argv[1:]:
    for l in open(f):
        if not l.startswith('JE ') or 'alloc=0.6 ' in l:
            continue  # the parent process's lines
        d = dict(kv.split('=', 1) for kv in l[3:].split() if '=' in kv)
        k = [float(x) for x in d['kinds'].split(',')]
        g = lambda n: float(d[n])
        print('%s t=%5s rss %6.1f alloc %5.1f charged %5.1f uncharged %5.1f frag %4.1f dirty %5.1f kinds %s' % (
            f, d['t'], g('rss'), g('alloc'), sum(k), g('alloc') - sum(k), g('active') - g('alloc'),
            g('resident') - g('active') - g('meta'), d['kinds']))
