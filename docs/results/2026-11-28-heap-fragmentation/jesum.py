import sys, re, glob, os
for f in sorted(glob.glob(sys.argv[1] + '/*.txt')):
    s = open(f).read()
    rows = []
    for l in s.splitlines():
        if l.startswith('JE ') and 'alloc=0.6 ' not in l:
            try:
                d = dict(kv.split('=') for kv in l[3:].split())
                rows.append({k: float(v) for k, v in d.items()})
            except Exception:
                pass
    frag = max((r['active'] - r['alloc'] for r in rows), default=0)
    alloc = max((r['alloc'] for r in rows), default=0)
    res = {}
    for l in s.splitlines():
        m = re.match(r'^evendb\s+(load|P|E100)\s+\S+\s+[\d,]+\s+([\d,]+)\s.*?([\d.]+) MiB\s+[\d.]+ MiB$', l)
        if m: res[m.group(1)] = (m.group(2), m.group(3))
    worst = re.findall(r'^evendb\s+E100\s+\S+\s+scan\s+.*', s, re.M)
    print(os.path.basename(f), 'frag-max %.1f alloc-max %.1f' % (frag, alloc), ' '.join('%s %s/%s' % (k, v[0], v[1]) for k, v in res.items()), worst[0].split()[-2:] if worst else '')
