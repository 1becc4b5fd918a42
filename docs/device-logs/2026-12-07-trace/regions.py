#!/usr/bin/env python3
"""Sums ncu's stall samples of the one-token kernel (the source page CSV, run3.sh) by code region:
the prologue, gemm1's setup and loop, gemm2, the combine. The regions are offsets in
decode_token_kernel<bf16, 4, 3> as built at 93add43 (cuobjdump of the CPU machine's build, the
same compiler and flags as the device's pack); another build moves them.

    python3 regions.py <(xzcat call3/r/src-qwen3-30b-a3b-sass.csv.xz)
"""
import csv,sys,collections
f=sys.argv[1]
r=list(csv.reader(open(f)))
hi=next(i for i,row in enumerate(r) if row and row[0]=='Address')
h=r[hi]; rows=r[hi+1:]
ix={c:i for i,c in enumerate(h)}
num=lambda s: float(s.replace(',','')) if s not in ('','-') else 0.0
base=int(rows[0][0],16)
# regions by offset, from this machine's cuobjdump of <bf16,4,3>: gemm1 loop 0x3b600-0x3ec50, gemm2 0x3ed40-0x41400, combine 0x414f0-0x43b70
regions=[(0,0x38000,'prologue: routing, hidden row, barrier'),(0x38000,0x3b600,'gemm1 setup (early loads, first step)'),(0x3b600,0x3ec50,'gemm1 loop'),(0x3ec50,0x414f0,'gemm2'),(0x414f0,0x43b80,'combine'),(0x43b80,0x60000,'divergent-path fallbacks')]
reasons=[c for c in h if c.startswith('stall_') and 'Not Issued' not in c]
tot=collections.Counter(); per={}
for name in [x[2] for x in regions]: per[name]=collections.Counter()
execd=collections.Counter(); distinct=collections.Counter()
for row in rows:
    if not row or not row[0].startswith('0x'): continue
    off=int(row[0],16)-base
    name=next(n for lo,hi_,n in regions if lo<=off<hi_)
    s=num(row[ix['Warp Stall Sampling (All Samples)']])
    per[name]['samples']+=s
    for c in reasons: per[name][c]+=num(row[ix[c]])
    e=num(row[ix['Instructions Executed']])
    execd[name]+=e
    if e>0: distinct[name]+=1
allS=sum(p['samples'] for p in per.values())
print(f"{f}: {allS:.0f} samples")
for lo,hi_,name in regions:
    p=per[name]
    top=sorted(((p[c],c) for c in reasons),reverse=True)[:4]
    print(f"  {name:42s} {p['samples']:6.0f} ({100*p['samples']/allS:4.1f}%)  executed {execd[name]:9.0f} distinct {distinct[name]:5d}  " + ", ".join(f"{c[6:]} {v:.0f}" for v,c in top))
