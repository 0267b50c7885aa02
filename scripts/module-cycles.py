#!/usr/bin/env python3
"""Which top-level modules of crates/thinkers and crates/thinkers-core import each other,
directly or through others.

Prints, for each crate, the strongly connected groups of the `use crate::<module>` graph (test
code and comments, whose doc links name modules without importing them, left out), and exits 1
when either crate has one. (thinkers-core cannot import thinkers at all: Cargo refuses the cycle.)
Run from anywhere: `python3 scripts/module-cycles.py`.
"""
import os,re,sys,collections
def graph(crate):
  root=os.path.join(os.path.dirname(os.path.abspath(__file__)),'..','crates',crate,'src')
  mods=set()
  for e in os.listdir(root):
      n=e[:-3] if e.endswith('.rs') else e
      if n in ('lib','test_services','tool_null_tests'): continue
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
  return mods,edges

# tarjan
def groups(mods,edges):
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
    for v in sorted(mods):
        if v not in idx: sc(v)
    return [sorted(c) for c in sccs if len(c)>1]
sys.setrecursionlimit(10000)
bad=0
for crate in ('thinkers-core','thinkers'):
    mods,edges=graph(crate)
    big=groups(mods,edges)
    print(f"{crate}: {len(mods)} modules, cycles (strongly connected groups): {big}")
    bad|=bool(big)
sys.exit(1 if bad else 0)
