#!/usr/bin/env python3
"""What cuBLAS itself reaches on the MoE layer's two GEMMs where every expert gets the same rows
(uniform routing, the best case for a dense batched GEMM): torch.bmm of [E, M, K] x [E, K, N] in bf16
with M = T*K_top/E, for gemm1 (K = H, N = 2I) and gemm2 (K = I, N = H), timed with CUDA events
(median of 10 after 3 warm-ups; the weights exceed the L2 at every point). Against the bench's floor
of the same two GEMMs (weights / read bandwidth, flops / dense peak; the larger), with the ceilings
given on the command line (the bench's, measured in the same session). No routing, expand,
activation or combine: an upper bound for what a grouped GEMM could do there, not a layer."""
import json, statistics, sys
import torch

bw = float(sys.argv[1]) if len(sys.argv) > 1 else 3093e9     # bytes/s
peak = float(sys.argv[2]) if len(sys.argv) > 2 else 804e12    # flop/s
presets = {  # E, top_k, H, I
    "qwen3-30b-a3b": (128, 8, 2048, 768),
    "mixtral-8x7b": (8, 2, 4096, 14336),
    "gpt-oss-120b": (128, 4, 2880, 2880),
    "deepseek-v3": (256, 8, 7168, 2048),
}
POINTS = __import__("os").environ.get("POINTS")  # e.g. "qwen3-30b-a3b:4096,mixtral-8x7b:16384"
points = [("qwen3-30b-a3b", t) for t in (256, 1024, 4096, 16384)] + [("mixtral-8x7b", t) for t in (256, 1024, 4096, 16384)] + \
         [("gpt-oss-120b", t) for t in (1024, 4096, 16384)] + [("deepseek-v3", t) for t in (1024, 4096, 16384)]

SUSTAIN_MS = float(__import__("os").environ.get("SUSTAIN_MS", "0"))  # load before timing (the bench's replays run ~0.1-1 s)

if POINTS: points = [(p.split(":")[0], int(p.split(":")[1])) for p in POINTS.split(",")]

def timed(fn, iters=10, warm=3):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    if SUSTAIN_MS > 0:  # run back to back for SUSTAIN_MS first, so the clock settles under the power limit
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        for _ in range(int(SUSTAIN_MS / max(a.elapsed_time(b), 1e-3))): fn()
        torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)
    return statistics.median(ts)

dev = torch.device("cuda")
print("# device", torch.cuda.get_device_name(0), "torch", torch.__version__, "cuda", torch.version.cuda)
x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16); y = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
t = timed(lambda: x @ y)
print("# dense 8192^3 bf16: %.1f us, %.0f TFLOP/s (torch.matmul)" % (t, 2 * 8192**3 / t / 1e6))
del x, y
out = []
for name, T in points:
    E, K, H, I = presets[name]
    M = T * K // E
    w13 = torch.randn(E, 2 * I, H, device=dev, dtype=torch.bfloat16)
    w2 = torch.randn(E, H, I, device=dev, dtype=torch.bfloat16)
    a1 = torch.randn(E, M, H, device=dev, dtype=torch.bfloat16)
    a2 = torch.randn(E, M, I, device=dev, dtype=torch.bfloat16)
    t1 = timed(lambda: torch.bmm(a1, w13.transpose(1, 2)))
    t2 = timed(lambda: torch.bmm(a2, w2.transpose(1, 2)))
    wbytes = E * 3 * H * I * 2
    act = (T * H * 2) * 2  # the bench's floor counts the layer's input and output once
    flops = 2 * T * K * (2 * I + I) * H
    fl = max((wbytes + act) / bw, flops / peak) * 1e6
    r = dict(preset=name, T=T, rows_per_expert=M, gemm1_us=round(t1, 1), gemm2_us=round(t2, 1), both_us=round(t1 + t2, 1),
             floor_us=round(fl, 1), bound="memory" if (wbytes + act) / bw > flops / peak else "compute",
             pct_floor=round(100 * fl / (t1 + t2), 1),
             gemm1_tflops=round(2 * T * K * 2 * I * H / t1 / 1e6, 0), gemm2_tflops=round(2 * T * K * I * H / t2 / 1e6, 0),
             gemm1_tbps=round(E * 2 * I * H * 2 / t1 / 1e6, 2), gemm2_tbps=round(E * I * H * 2 / t2 / 1e6, 2))
    r["sustain_ms"] = SUSTAIN_MS
    if __import__("os").environ.get("KERNELS"):  # the cuBLAS kernels each GEMM ran (torch.profiler)
        from torch.profiler import profile, ProfilerActivity
        for tag, fn in (("gemm1", lambda: torch.bmm(a1, w13.transpose(1, 2))), ("gemm2", lambda: torch.bmm(a2, w2.transpose(1, 2)))):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn(); torch.cuda.synchronize()
            r[tag + "_kernels"] = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
            print("  %s kernels: %s" % (tag, r[tag + "_kernels"]))
    out.append(r)
    print("%-14s T=%-5d M=%-5d gemm1 %8.1f us (%4.0f TFLOP/s, %.2f TB/s)  gemm2 %8.1f us (%4.0f, %.2f)  both %8.1f  floor %8.1f (%s)  %5.1f%%" % (
        name, T, M, t1, r["gemm1_tflops"], r["gemm1_tbps"], t2, r["gemm2_tflops"], r["gemm2_tbps"], t1 + t2, fl, r["bound"], r["pct_floor"]))
    sys.stdout.flush()
    del w13, w2, a1, a2
    torch.cuda.empty_cache()
json.dump(out, open(sys.argv[3] if len(sys.argv) > 3 else "batched_ceiling.json", "w"), indent=1)
