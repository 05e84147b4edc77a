#!/usr/bin/env bash
# On the GPU machine: gdn-wu's device time per stage at B=8, T=4096, H=16,
# Hg=4, K=V=128 (or the given shape), as GB/s of the fewest bytes each stage
# must move against the copy ceiling (CEILING GB/s; 2960 measured on the H100
# with a Vulkan compute copy), beside the same computation in PyTorch on the
# same GPU in the same run: the bf16 stagings and a bf16 einsum over chunks
# (f32 accumulation), timed with CUDA events. kverify's times are the fastest
# of the --repeat runs (timestamps).
# Usage: scripts/bench-gdn-gpu.sh [B T H HG K V] [CEILING] [KVERIFY]
set -euo pipefail
B=${1:-8} T=${2:-4096} H=${3:-16} HG=${4:-4} K=${5:-128} V=${6:-128} ceil=${7:-2960} kv=${8:-build/kverify}
out=$("$kv" gdn-wu --batch "$B" --seq "$T" --heads "$H" --kv-heads "$HG" --dk "$K" --dv "$V" --repeat 5 \
      --json - 2>/dev/null) || true
python3 - "$B" "$T" "$H" "$HG" "$K" "$V" "$ceil" "$out" <<'PY'
import json, sys
B, T, H, HG, K, V = map(int, sys.argv[1:7]); ceil = float(sys.argv[7])
rep = json.loads(sys.argv[8]); case = rep["cases"][0]; st = case["time_ms"]["stages_min"]  # the fastest run: later runs of a process measured up to 3x slower
rows = B * T
need = {"u": rows * H * V * 2 + rows * H * 4 + rows * H * 64 * 4 + rows * H * V * 2,
        "w": rows * HG * K * 2 + 2 * rows * H * 4 + rows * H * 64 * 4 + rows * H * K * 2}
print(f"device: {rep['device']['name']} ({rep['device']['driver']}); B={B} T={T} H={H} Hg={HG} K={K} V={V}; "
      f"case status {case['status']}")
for s in ("u", "w"):
    gbs = need[s] / st[s] / 1e6
    print(f"kverify stage {s}: {st[s]:.4f} ms, {need[s] / 1e6:.1f} MB, {gbs:.1f} GB/s = {100 * gbs / ceil:.1f}% of the copy ceiling")
kv_ms = st["u"] + st["w"]
print(f"kverify u + w: {kv_ms:.4f} ms")
try:
    import torch
except ImportError:
    print("PyTorch: not installed"); sys.exit(0)
dev = "cuda"; NT = (T + 63) // 64; Tp = NT * 64
g = torch.Generator(device=dev).manual_seed(0)
k = torch.randn(B, Tp, HG, K, device=dev, generator=g).to(torch.bfloat16)
v = torch.randn(B, Tp, H, V, device=dev, generator=g).to(torch.bfloat16)
beta = torch.rand(B, Tp, H, device=dev, generator=g)
gg = -torch.rand(B, Tp, H, device=dev, generator=g)
A = torch.randn(B, Tp, H, 64, device=dev, generator=g)
def run():
    sv = (v.float() * beta[..., None]).to(torch.bfloat16)
    kh = k.repeat_interleave(H // HG, dim=2)
    sk = (kh.float() * (beta * torch.exp(gg))[..., None]).to(torch.bfloat16)
    A5 = A.view(B, NT, 64, H, 64).to(torch.bfloat16)
    u = torch.einsum("bnihj,bnjhd->bnihd", A5, sv.view(B, NT, 64, H, V)).reshape(B, Tp, H, V)
    w = torch.einsum("bnihj,bnjhd->bnihd", A5, sk.view(B, NT, 64, H, K)).reshape(B, Tp, H, K)
    return u, w
for _ in range(3): run()
torch.cuda.synchronize()
times = []
for _ in range(10):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); run(); e.record(); torch.cuda.synchronize()
    times.append(s.elapsed_time(e))
t, tmin = sorted(times)[len(times) // 2], min(times)
print(f"PyTorch bf16 stagings + einsum (torch {torch.__version__}): median {t:.4f} ms, fastest {tmin:.4f} ms; "
      f"kverify (fastest) takes {kv_ms / tmin:.2f}x PyTorch's fastest")
PY
