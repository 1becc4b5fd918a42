#!/usr/bin/env python3
"""The one-token kernel's static walk as a model: warp w of G = 132 x 16 takes items w, w + G, ...
over K x I gemm1 items (a gate and an up row of H elements, bf16) then K x ceil(H / R) gemm2 items
(R rows of W2, I elements each); prints each preset's busiest warp and busiest CTA (16 warps)
against the mean, in weight bytes, for gemm2 items of R = 1..8 rows. Counts bytes only: not the
combine, not the waits.

    python3 deal.py
"""
import math

G, WARPS_PER_CTA = 132 * 16, 16


def deal(K, H, I, R, elt=2):
    n1, n2 = K * I, K * math.ceil(H / R)
    per_warp = [0] * G
    for t in range(n1):
        per_warp[t % G] += 2 * H * elt
    for t in range(n1, n1 + n2):
        per_warp[t % G] += R * I * elt
    per_cta = [sum(per_warp[c * WARPS_PER_CTA:(c + 1) * WARPS_PER_CTA]) for c in range(G // WARPS_PER_CTA)]
    return max(per_warp) / (sum(per_warp) / G), max(per_cta) / (sum(per_cta) / len(per_cta)), sum(per_warp) / 1e6


for name, K, H, I in [("Qwen3-30B-A3B", 8, 2048, 768), ("GPT-OSS-120B", 4, 2880, 2880), ("Mixtral-8x7B", 2, 4096, 14336),
                      ("DeepSeek-V3", 8, 7168, 2048)]:
    for R in range(1, 9):
        w, c, mb = deal(K, H, I, R)
        print(f"{name:14} R={R}: busiest warp {w:.3f}x the mean, busiest CTA {c:.3f}x, {mb:.1f} MB")
