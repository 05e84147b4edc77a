#!/usr/bin/env python3
"""gdn-wy-bwd beside flash-linear-attention on a CUDA GPU, in one run.

1. Judge: kverify makes the inputs of a case (--variant a-bf16, --save), FLA's
   Triton prepare_wy_repr_bwd computes the gradients from them (g given as
   g / ln 2: FLA gates in log2 space), and kverify judges FLA's dk, dk_head
   (FLA's per-head dk: the same kernel with k repeated over each group), dv,
   dbeta and dg against its a-bf16 spec with --candidate.
2. Bench: at one shape, kverify's --bench (each stage's device time, GB/s
   and GFLOP/s against the measured ceilings), FLA's kernel and PyTorch
   autograd of a bf16 einsum implementation (A solved in f32), timed with
   CUDA events on the same inputs: the fastest of N after warm-up. FLA's
   kernel autotunes (num_warps, num_stages) in each process, and the config
   it settles on varies from one process to the next (seen on an H100:
   0.67-0.80 ms at the default shape), so it is timed in P fresh processes
   (--fla-procs) and its fastest is the reference, with the spread shown.

3. --fla-configs instead: FLA's kernel alone at each num_warps x num_stages
   at --shape, with the registers, spills and shared memory Triton compiled
   it to (which fix its occupancy), then the dk sum its call adds; random
   inputs at FLA's scales (timing only), no kverify needed.

usage: bench-gdn-wy.py --kv KVERIFY --fla DIR [--runs N] [--fla-procs P] [--shape B,T,H,Hg,K,V] [--judge B,T,H,Hg,K,V]
       bench-gdn-wy.py --fla-configs --fla DIR [--runs N] [--shape B,T,H,Hg,K,V]
DIR holds the fla package (its ops/gated_delta_rule, ops/utils, ops/backends, utils).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch


def shape(text):
    return dict(zip(("batch", "seq", "heads", "kv-heads", "dk", "dv"), map(int, text.split(","))))


def kv_args(s):
    return [f"--{k}={v}" for k, v in s.items()]


def load(path, bf16=False):
    x = np.load(path)
    t = torch.from_numpy(x.astype(np.int16) if bf16 else x)
    return (t.view(torch.bfloat16) if bf16 else t).cuda()


def save(path, t):
    if t.dtype == torch.bfloat16:
        np.save(path, t.contiguous().view(torch.int16).cpu().numpy().astype(np.uint16))
    else:
        np.save(path, t.float().cpu().numpy())


def fla_bwd(x):
    from fla.ops.gated_delta_rule.wy_fast import prepare_wy_repr_bwd
    return prepare_wy_repr_bwd(x["k"], x["v"], x["beta"], x["A"], x["dw"], x["du"], g=x["g2"])


def inputs_of(case_dir):
    d = os.path.join(case_dir, "inputs")
    x = {n: load(f"{d}/{n}.npy", bf16=n in ("k", "v", "A", "dw", "du")) for n in ("k", "v", "A", "dw", "du")}
    x.update({n: load(f"{d}/{n}.npy") for n in ("beta", "g")})
    x["g2"] = x["g"] * (1 / math.log(2))
    return x


def judge(kv, s, tmp):
    out = os.path.join(tmp, "judge")
    subprocess.run([kv, "gdn-wy-bwd", "--variant", "a-bf16", *kv_args(s), "--save", out], check=True,
                   stdout=subprocess.DEVNULL)
    case = os.path.join(out, os.listdir(out)[0])
    x = inputs_of(case)
    dk, dv, db, dg = fla_bwd(x)
    ratio = s["heads"] // s["kv-heads"]
    xh = dict(x, k=x["k"].repeat_interleave(ratio, dim=2))
    dkh = fla_bwd(xh)[0]
    cand = os.path.join(tmp, "fla")
    os.makedirs(cand, exist_ok=True)
    args = []
    for name, t in (("dk", dk), ("dk_head", dkh), ("dv", dv), ("dbeta", db), ("dg", dg)):
        save(f"{cand}/{name}.npy", t)
        args += ["--candidate", f"{name}={cand}/{name}.npy"]
    r = subprocess.run([kv, "gdn-wy-bwd", "--variant", "a-bf16", "--inputs", os.path.join(case, "inputs"),
                        "--no-device", "--oracle", "both", *args], capture_output=True, text=True)
    print(f"## FLA's outputs judged by kverify gdn-wy-bwd --variant a-bf16 {' '.join(kv_args(s))} (exit {r.returncode})")
    print(r.stdout + r.stderr)


def cuda_time(fn, runs):
    for _ in range(3):
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


def torch_autograd(x, s):
    """w = A bf16(k beta e^g), u = A bf16(v beta), A = (I + L)^-1 (f32 solve),
    L from bf16 einsums; the backward of sum(dw w + du u) by autograd."""
    B, T, H, Hg = s["batch"], s["seq"], s["heads"], s["kv-heads"]
    NT = T // 64
    k = x["k"].detach().clone().requires_grad_()
    v = x["v"].detach().clone().requires_grad_()
    beta = x["beta"].detach().clone().requires_grad_()
    g = x["g"].detach().clone().requires_grad_()

    def chunks(t):  # [B, T, H, D] -> [B, H, NT, 64, D]
        return t.reshape(B, NT, 64, t.shape[2], -1).permute(0, 3, 1, 2, 4)

    def step():
        kk = chunks(k.repeat_interleave(H // Hg, dim=2))
        bc, gc = chunks(beta.unsqueeze(-1))[..., 0], chunks(g.unsqueeze(-1))[..., 0]
        kkt = torch.einsum("bhnik,bhnjk->bhnij", kk, kk).float()
        L = (bc[..., :, None] * kkt * torch.exp(gc[..., :, None] - gc[..., None, :])).tril(-1)
        eye = torch.eye(64, device=k.device).expand_as(L)
        A = torch.linalg.solve_triangular(eye + L, eye, upper=False).to(torch.bfloat16)
        kbg = (kk.float() * (bc * torch.exp(gc))[..., None]).to(torch.bfloat16)
        vb = (chunks(v).float() * bc[..., None]).to(torch.bfloat16)
        w = torch.einsum("bhnij,bhnjk->bhnik", A, kbg)
        u = torch.einsum("bhnij,bhnjk->bhnik", A, vb)
        loss = (w.float() * chunks(x["dw"]).float()).sum() + (u.float() * chunks(x["du"]).float()).sum()
        loss.backward()
        k.grad = v.grad = beta.grad = g.grad = None

    return step


def bench(kv, s, runs, tmp, procs, fla_dir):
    reports = {}
    for variant in ("fma", "a-bf16", "bf16-coopmat"):
        rep = os.path.join(tmp, f"bench-{variant}.json")
        save = ["--save", os.path.join(tmp, f"save-{variant}")] if variant == "a-bf16" else []
        r = subprocess.run([kv, "gdn-wy-bwd", "--variant", variant, *kv_args(s), "--bench", str(runs), "--json", rep,
                            *save], stdout=subprocess.DEVNULL)
        if r.returncode == 77:  # bf16-coopmat on a device without bf16 cooperative matrices
            continue
        if r.returncode != 0:
            sys.exit(f"kverify gdn-wy-bwd --variant {variant}: exit {r.returncode}")
        reports[variant] = json.load(open(rep))
    save_dir = os.path.join(tmp, "save-a-bf16")
    case = os.path.join(save_dir, os.listdir(save_dir)[0])
    x = inputs_of(case)
    fla = []
    for _ in range(procs):  # each process autotunes FLA's kernel anew
        r = subprocess.run([sys.executable, __file__, "--fla-time", case, "--fla", fla_dir, "--runs", str(runs)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"FLA timing process: exit {r.returncode}\n{r.stderr[-2000:]}")
        fla.append(float(r.stdout.split()[-1]))
    t_fla = min(fla)
    t_torch = cuda_time(torch_autograd(x, s), runs)
    moved = sum(os.path.getsize(os.path.join(case, "inputs", f))
                for f in ("k", "v", "beta", "g", "A", "dw", "du") for f in [f + ".npy"])
    print(f"## gdn-wy-bwd {' '.join(kv_args(s))} on {torch.cuda.get_device_name()}: fastest of {runs}")
    print(f"{'implementation':44s} {'ms':>9s} {'vs FLA':>8s}  notes")
    for variant, r in reports.items():
        case = r["cases"][0]
        total = 0.0
        for name, st in ((case.get("bench") or {}).get("stages") or {}).items():
            total += st["min_ms"]
            pct = st.get("pct_of_matmul") or st.get("pct_of_copy")
            print(f"  kverify {variant:12s} stage {name:7s}      {st['min_ms']:9.3f} {'':8s}  "
                  f"{st['gb_per_s']:.0f} GB/s, {st['gflop_per_s']:.0f} GFLOP/s"
                  + (f" ({pct:.1f}% of its ceiling)" if pct else ""))
        print(f"{'kverify ' + variant + ' (all stages)':44s} {total:9.3f} {total / t_fla:7.2f}x")
    print(f"{'FLA prepare_wy_repr_bwd (Triton, bf16 A)':44s} {t_fla:9.3f} {1:7.2f}x  inputs {moved / 1e6:.0f} MB; "
          f"fastest of {procs} processes: " + ", ".join(f"{t:.3f}" for t in fla))
    print(f"{'PyTorch autograd (bf16 einsum, f32 solve)':44s} {t_torch:9.3f} {t_torch / t_fla:7.2f}x  forward + backward")


def fla_configs(s, runs):
    import fla.ops.gated_delta_rule.wy_fast as wf
    B, T, H, Hg, K, V = (s[n] for n in ("batch", "seq", "heads", "kv-heads", "dk", "dv"))
    gen = torch.Generator(device="cuda").manual_seed(0)
    rn = lambda *sh: torch.randn(*sh, device="cuda", generator=gen)
    k = torch.nn.functional.normalize(rn(B, T, Hg, K), dim=-1).bfloat16()
    v = (rn(B, T, H, V) * 0.25).bfloat16()
    beta = torch.sigmoid(rn(B, T, H))
    g = torch.nn.functional.logsigmoid(rn(B, T, H)).view(B, T // 64, 64, H).cumsum(2).view(B, T, H) / math.log(2)
    A = (rn(B, T, H, 64) * 0.1).bfloat16()
    dw, du = (rn(B, T, H, K) * 0.25).bfloat16(), (rn(B, T, H, V) * 0.25).bfloat16()
    whole = cuda_time(lambda: wf.prepare_wy_repr_bwd(k, v, beta, A, dw, du, g=g), runs)
    tuner = wf.prepare_wy_repr_bwd_kernel.fn  # heuristics -> autotuner -> jit
    picked = "; ".join(str(c) for c in getattr(tuner, "cache", {}).values())
    print(f"## FLA's kernel, {' '.join(kv_args(s))} on {torch.cuda.get_device_name()}: fastest of {runs}")
    print(f"prepare_wy_repr_bwd, autotuned (kernel + dk sum): {whole:.4f} ms  [{picked}]")
    out = dict(dk=k.new_empty(B, T, H, K), dv=torch.empty_like(v), dg=torch.empty_like(g), db=torch.empty_like(beta))
    bk, bv = min(max(1 << (K - 1).bit_length(), 16), 64), min(max(1 << (V - 1).bit_length(), 16), 64)
    args = dict(k=k, v=v, beta=beta, g=g, A=A, dw=dw, du=du, **out, cu_seqlens=None, chunk_indices=None, T=T,
                H=Hg, HV=H, K=K, V=V, BT=64, BK=bk, BV=bv, USE_G=True, IS_VARLEN=False)
    grid = (T // 64, B * H)
    print(f"{'num_warps':>9} {'num_stages':>10} {'ms':>8} {'regs':>5} {'spills':>6} {'shared':>7}")
    for w in (2, 4, 8):
        for st in (1, 2, 3, 4):
            try:
                ck = tuner.fn[grid](**args, num_warps=w, num_stages=st)
                t = cuda_time(lambda: tuner.fn[grid](**args, num_warps=w, num_stages=st), runs)
                print(f"{w:9d} {st:10d} {t:8.4f} {ck.n_regs:5d} {ck.n_spills:6d} {ck.metadata.shared:7d}")
            except Exception as e:  # a configuration the compiler or the device refuses
                print(f"{w:9d} {st:10d} error: {type(e).__name__}: {str(e)[:100]}")
    dkh = k.new_empty(B, T, H, K).normal_()
    print(f"dk sum over the value heads (torch, bf16): {cuda_time(lambda: dkh.view(B, T, Hg, H // Hg, K).sum(3), runs):.4f} ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kv")
    ap.add_argument("--fla", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--fla-procs", type=int, default=3)
    ap.add_argument("--fla-time", metavar="CASE", help=argparse.SUPPRESS)  # one process's FLA timing
    ap.add_argument("--shape", type=shape, default=shape("8,4096,16,4,128,128"))
    ap.add_argument("--judge", type=shape, default=shape("2,1000,8,4,128,128"))
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--fla-configs", action="store_true")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    sys.path.insert(0, a.fla)
    if a.fla_configs:
        if a.shape["seq"] % 64 or a.shape["heads"] % a.shape["kv-heads"]:
            ap.error("--fla-configs: T must be a multiple of 64 and H of Hg")
        fla_configs(a.shape, a.runs)
        return
    if a.fla_time:
        x = inputs_of(a.fla_time)
        print(f"{cuda_time(lambda: fla_bwd(x), a.runs):.6f}")
        return
    if not a.kv or a.fla_procs < 1:
        ap.error("--kv is required, and --fla-procs must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        judge(a.kv, a.judge, tmp)
        if not a.skip_bench:
            bench(a.kv, a.shape, a.runs, tmp, a.fla_procs, a.fla)


if __name__ == "__main__":
    main()
