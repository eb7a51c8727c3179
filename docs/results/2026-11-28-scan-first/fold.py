import sys,collections
# fold perf script output into stacks (leaf first list)
def stacks(path):
    comm=None; st=[]
    for line in open(path, errors='replace'):
        line=line.rstrip('\n')
        if not line.strip():
            if comm is not None: yield comm, st
            comm=None; st=[]; continue
        if not line.startswith(('\t',' ')):
            comm=line.split()[0]; st=[]
        else:
            parts=line.strip().split(None,1)
            st.append(parts[1] if len(parts)>1 else '?')
    if comm is not None: yield comm, st
