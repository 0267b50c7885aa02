#!/usr/bin/env python3
"""Which top-level modules of crates/thinkers import each other, directly or through others.

Prints the strongly connected groups of the `use crate::<module>` graph (test code and comments,
whose doc links name modules without importing them, left out) and
what `job`, `tool` and `error` import: the modules a core crate would take must form no group
with the rest. Run from anywhere: `python3 scripts/module-cycles.py`.
"""
import os,re,sys,collections
root=os.path.join(os.path.dirname(os.path.abspath(__file__)),'..','crates','thinkers','src')
mods=set()
for e in os.listdir(root):
    n=e[:-3] if e.endswith('.rs') else e
    if n in ('lib','test_services'): continue
    mods.add(n)
edges=collections.defaultdict(set)
for m in mods:
    paths=[]
    p=os.path.join(root,m)
    if os.path.isdir(p):
        for d,_,fs in os.walk(p):
            paths+= [os.path.join(d,f) for f in fs if f.endswith('.rs')]
    else: paths=[p+'.rs']
    for f in paths:
        if re.search(r'(tests?\.rs|_tests\.rs|/tests/)', f): continue
        s=open(f).read()
        # drop cfg(test) modules crudely
        s=re.split(r'#\[cfg\(test\)\]\s*\n\s*mod tests', s)[0]
        # comments (doc links name modules without importing them)
        s=re.sub(r'//[^\n]*', '', s)
        for t in re.findall(r'crate::([a-z_]+)', s):
            if t in mods and t!=m: edges[m].add(t)
        for t in re.findall(r'use crate::\{([^}]*)\}', s):
            for x in re.findall(r'\b([a-z_]+)::', t)+[w.strip() for w in t.split(',')]:
                if x in mods and x!=m: edges[m].add(x)
# tarjan
idx={};low={};st=[];on=set();sccs=[];i=[0]
def sc(v):
    idx[v]=low[v]=i[0];i[0]+=1;st.append(v);on.add(v)
    for w in edges[v]:
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        c=[]
        while True:
            w=st.pop();on.discard(w);c.append(w)
            if w==v:break
        sccs.append(c)
sys.setrecursionlimit(10000)
for v in sorted(mods):
    if v not in idx: sc(v)
big=[sorted(c) for c in sccs if len(c)>1]
print("modules:",len(mods)); print("cycles (strongly connected groups):",big)
for a in ['job','tool','error']:
    print(a,'->',sorted(edges[a]))
