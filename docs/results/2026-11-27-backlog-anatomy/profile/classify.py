#!/usr/bin/env python3
"""Share of one thread's samples whose stack contains each marker.
perf script -i p1g.perf --tid <maintenance tid> -F tid,ip,sym > stacks.txt
python3 classify.py stacks.txt"""
import collections, sys
stacks = [s for s in open(sys.argv[1]).read().split('\n\n') if s.strip()]
keys = ['exc_page_fault', 'madvise', 'memcpy', 'pread', 'pwrite', 'pay_all', 'HybridStrategy',
        'openat', 'fsync', 'statx', 'fdatasync', 'KeyGroups', 'crc32c', 'from_versions',
        'drop_in_place<evendb::munk::Munk>', 'load_munk', 'lz4', 'munk_split', 'pruned_snapshot',
        'sort', 'sync_dir', 'rename']
c = collections.Counter(k for s in stacks for k in keys if k in s)
print(f'{len(stacks)} samples')
for k, v in c.most_common():
    print(f'{v:5d} {100 * v / len(stacks):5.1f}% {k}')
