#!/usr/bin/env python3
"""FLA's Triton prepare_wy_repr_bwd_kernel at each launch configuration, on a CUDA GPU.

FLA autotunes num_warps and num_stages per process (scripts/bench-gdn-wy.py
times the whole call); this times the kernel alone at each configuration,
with the registers, spills and shared memory Triton compiled it to (which
fix its occupancy), then the dk sum over the value heads that FLA's call
adds. Inputs are random at FLA's realistic scales (timing only).

usage: fla-wy-configs.py --fla DIR [--shape B,T,H,Hg,K,V] [--runs N]
DIR holds the fla package (its ops/gated_delta_rule, ops/utils, ops/backends, utils).
"""
import argparse
import math
import sys

import torch


def timed(fn, runs):
    """Fastest of `runs` CUDA-event timings after 5 warm-up calls, in ms."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        best = min(best, a.elapsed_time(b))
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fla", required=True)
    ap.add_argument("--shape", default="8,4096,16,4,128,128")
    ap.add_argument("--runs", type=int, default=30)
    a = ap.parse_args()
    B, T, H, Hg, K, V = map(int, a.shape.split(","))
    if T % 64 or H % Hg or a.runs < 1:
        ap.error("T must be a multiple of 64, H of Hg, and --runs at least 1")
    sys.path.insert(0, a.fla)
    import fla.ops.gated_delta_rule.wy_fast as wf

    gen = torch.Generator(device="cuda").manual_seed(0)
    rn = lambda *s: torch.randn(*s, device="cuda", generator=gen)
    k = torch.nn.functional.normalize(rn(B, T, Hg, K), dim=-1).bfloat16()
    v = (rn(B, T, H, V) * 0.25).bfloat16()
    beta = torch.sigmoid(rn(B, T, H))
    g = torch.nn.functional.logsigmoid(rn(B, T, H)).view(B, T // 64, 64, H).cumsum(2).view(B, T, H) / math.log(2)
    A = (rn(B, T, H, 64) * 0.1).bfloat16()
    dw, du = (rn(B, T, H, K) * 0.25).bfloat16(), (rn(B, T, H, V) * 0.25).bfloat16()
    whole = timed(lambda: wf.prepare_wy_repr_bwd(k, v, beta, A, dw, du, g=g), a.runs)
    tuner = wf.prepare_wy_repr_bwd_kernel.fn  # heuristics -> autotuner -> jit
    picked = "; ".join(str(c) for c in getattr(tuner, "cache", {}).values())
    print(f"B={B} T={T} H={H} Hg={Hg} K={K} V={V} on {torch.cuda.get_device_name()}, fastest of {a.runs}")
    print(f"prepare_wy_repr_bwd, autotuned (kernel + dk sum): {whole:.4f} ms  [{picked}]")
    out = dict(dk=k.new_empty(B, T, H, K), dv=torch.empty_like(v), dg=torch.empty_like(g), db=torch.empty_like(beta))
    bk, bv = min(max(1 << (K - 1).bit_length(), 16), 64), min(max(1 << (V - 1).bit_length(), 16), 64)
    args = dict(k=k, v=v, beta=beta, g=g, A=A, dw=dw, du=du, **out, cu_seqlens=None, chunk_indices=None, T=T,
                H=Hg, HV=H, K=K, V=V, BT=64, BK=bk, BV=bv, USE_G=True, IS_VARLEN=False)
    grid = (T // 64, B * H)
    print(f"{'num_warps':>9} {'num_stages':>10} {'ms':>8} {'regs':>5} {'spills':>6} {'shared':>7}")
    for w in (2, 4, 8):
        for s in (1, 2, 3, 4):
            try:
                ck = tuner.fn[grid](**args, num_warps=w, num_stages=s)
                t = timed(lambda: tuner.fn[grid](**args, num_warps=w, num_stages=s), a.runs)
                print(f"{w:9d} {s:10d} {t:8.4f} {ck.n_regs:5d} {ck.n_spills:6d} {ck.metadata.shared:7d}")
            except Exception as e:  # a configuration the compiler or the device refuses
                print(f"{w:9d} {s:10d} error: {type(e).__name__}: {str(e)[:100]}")
    dkh = k.new_empty(B, T, H, K).normal_()
    print(f"dk sum over the value heads (torch, bf16): {timed(lambda: dkh.view(B, T, Hg, H // Hg, K).sum(3), a.runs):.4f} ms")


if __name__ == "__main__":
    main()
