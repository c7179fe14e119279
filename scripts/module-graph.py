"""Import circles inside one crate: the strongly connected sets of its source files.

Usage: python3 scripts/module-graph.py <crate src dir> [-v] [--deps a,b/c,...]

A file depends on another when it names an item of it through `crate::`, `super::`, a
`use` path or a re-export (followed to where the item is defined); test modules
(`tests`, `*_tests`, `testing`, `#[cfg(test)]` items) are left out. Prints each circle of
more than two files, with -v also the edges inside it; --deps lists what each named file
(a path under the src dir, without `.rs`; `lib` for lib.rs) depends on. A heuristic over the text, not
the compiler's resolution: good for tracking the registry's circles, not for proofs.
"""
import os,re,sys,collections
root=sys.argv[1]
files={}
for d,_,fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p=os.path.join(d,f); rel=os.path.relpath(p,root)[:-3]
            parts=rel.split('/')
            if parts[-1]=='mod': parts=parts[:-1]
            if parts in (['lib'],['main']): parts=[]
            files[tuple(parts)]=p
def is_test(m): return any(x in ('tests','testing','test_support') or x.endswith('_tests') or x.startswith('tests_') for x in m)
def strip(src):
    src=re.sub(r'//[^\n]*','',src)
    # drop #[cfg(test)] items (mod blocks) by brace matching
    res='';i=0
    while True:
        j=src.find('#[cfg(test)]',i)
        if j<0: res+=src[i:];break
        res+=src[i:j]
        k=j+len('#[cfg(test)]')
        # skip to end of item: either ';' before '{' or matching brace
        semi=src.find(';',k); br=src.find('{',k)
        if br<0 or (semi>=0 and semi<br): i=semi+1; continue
        depth=0;t=br
        while t<len(src):
            if src[t]=='{':depth+=1
            elif src[t]=='}':
                depth-=1
                if depth==0:break
            t+=1
        i=t+1
    return res
srcs={m:strip(open(p).read()) for m,p in files.items()}
items={m:set(re.findall(r'^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:struct|enum|fn|trait|type|const|static|union|macro_rules!)\s+(\w+)',s,re.M)) for m,s in srcs.items()}
# use statements: name -> full path (relative resolution performed later)
def parse_uses(m,s):
    out={}
    for mm in re.finditer(r'\buse\s+([^;]+);',s):
        body=re.sub(r'\s+','',mm.group(1))
        def expand(prefix,b):
            # b like a::b::{c,d::e}
            if '{' in b:
                i=b.index('{'); pre=b[:i]; inner=b[i+1:-1]
                # split top-level commas
                parts=[];depth=0;cur=''
                for ch in inner:
                    if ch=='{':depth+=1
                    if ch=='}':depth-=1
                    if ch==',' and depth==0: parts.append(cur);cur=''
                    else: cur+=ch
                if cur: parts.append(cur)
                for pt in parts: expand(prefix+pre,pt)
            else:
                full=prefix+b
                segs=full.split('::')
                name=segs[-1]
                if name=='self': segs=segs[:-1]; name=segs[-1]
                if name!='*': out[name]=segs
        expand('',body)
    return out
uses={m:parse_uses(m,s) for m,s in srcs.items()}
def absolute(m,segs):
    # returns absolute module-path list or None (external)
    is_mod_file=files[m].endswith(('mod.rs','lib.rs','main.rs'))
    here=list(m)
    if segs[0]=='crate': return segs[1:]
    if segs[0]=='self': return here+segs[1:]
    if segs[0]=='super':
        base=here[:-1]; segs=segs[1:]
        while segs and segs[0]=='super': base=base[:-1]; segs=segs[1:]
        return base+segs
    if tuple(here+[segs[0]]) in files: return here+segs
    return None
def resolve(path,depth=0):
    m=()
    for i,s in enumerate(path):
        if m+(s,) in files: m=m+(s,); continue
        if depth<8 and s in uses.get(m,{}) and s not in items.get(m,set()):
            a=absolute(m,uses[m][s])
            if a is not None: return resolve(a+path[i+1:],depth+1)
        return m
    return m
edges=collections.defaultdict(set)
for m,s in srcs.items():
    if is_test(m): continue
    paths=[]
    for name,segs in uses[m].items():
        a=absolute(m,segs)
        if a is not None: paths.append(a)
    for mm in re.finditer(r'\b(crate|super)((?:::\w+)+)',s):
        a=absolute(m,[mm.group(1)]+mm.group(2).strip(':').split('::'))
        if a is not None: paths.append(a)
    for a in paths:
        r=resolve(a)
        if r!=m and r in files and not is_test(r):
            edges[m].add(r)
nodes=[m for m in files if not is_test(m)]
sys.setrecursionlimit(100000)
idx={};low={};st=[];on=set();sccs=[];c=[0]
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges.get(v,()):
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        sccs.append(comp)
for v in nodes:
    if v not in idx: sc(v)
big=[s for s in sccs if len(s)>2]
name=lambda x:'/'.join(x) or 'lib'
print(root,'modules',len(nodes),'circles>2:',[len(s) for s in big])
if '-v' in sys.argv:
    for s in big:
        S=set(s); print(sorted(name(x) for x in s))
        for a in sorted(s):
            print('  ',name(a),'->',sorted(name(b) for b in edges[a] if b in S))
if '--deps' in sys.argv:
    for want in sys.argv[sys.argv.index('--deps')+1].split(','):
        m=tuple(x for x in want.split('/') if x and x!='lib')
        print(want,'->',sorted(name(b) for b in edges.get(m,())))
