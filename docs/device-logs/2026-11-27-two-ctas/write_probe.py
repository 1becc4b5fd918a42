#!/usr/bin/env python3
"""Call 4: what the expand's DRAM pattern can reach on this GPU (step 34 e). Times, with CUDA events
(median of 20 after 5 warm-ups): a plain write of B bytes (fill_), a copy of B bytes, and torch's
row gather out = x[idx] with the expand's shape (T tokens of H bf16, each row routed K times to
random places), against the expand stage's time from call 3 (printed by the caller)."""
import torch
def t(fn, n=20):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for a, b in ev:
        a.record(); fn(); b.record()
    torch.cuda.synchronize()
    xs = sorted(a.elapsed_time(b) * 1e3 for a, b in ev)
    return xs[n // 2]
print(torch.cuda.get_device_name())
for name, T, K, H in [("qwen3 T=16384", 16384, 8, 2048), ("qwen3 T=4096", 4096, 8, 2048), ("gpt-oss T=8192", 8192, 4, 2880)]:
    rows = T * K
    out = torch.empty(rows, H, dtype=torch.bfloat16, device="cuda")
    src = torch.randn(rows, H, dtype=torch.bfloat16, device="cuda")
    x = torch.randn(T, H, dtype=torch.bfloat16, device="cuda")
    idx = torch.randperm(rows, device="cuda") // K  # every token K times, in random order
    b = rows * H * 2
    us_fill = t(lambda: out.fill_(1.0))
    us_copy = t(lambda: out.copy_(src))
    us_gather = t(lambda: torch.index_select(x, 0, idx, out=out))
    print(f"{name}: {b / 1e6:.0f} MB of rows: fill {us_fill:.1f} us ({b / us_fill / 1e6:.2f} TB/s), "
          f"copy {us_copy:.1f} us ({2 * b / us_copy / 1e6:.2f} TB/s read+write), "
          f"gather x[idx] {us_gather:.1f} us ({b / us_gather / 1e6:.2f} TB/s written)")
