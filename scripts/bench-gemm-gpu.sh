#!/usr/bin/env bash
# On the GPU machine: gemm-bwd's device time (dA + dB, f32) at SIZE^3 and its
# TFLOP/s, beside PyTorch's fp32 matmuls of the same two products with TF32
# disabled, measured in the same run. kverify's stage times are timestamp
# medians over --repeat runs; PyTorch's are CUDA-event medians.
# Usage: scripts/bench-gemm-gpu.sh [SIZE] [KVERIFY]
set -euo pipefail
n=${1:-4096}; kv=${2:-build/kverify}
out=$("$kv" gemm-bwd --m "$n" --n "$n" --k "$n" --sample 2000 --repeat 5 --json - 2>/dev/null)
python3 - "$n" "$out" <<'PY'
import json, sys
n, rep = int(sys.argv[1]), json.loads(sys.argv[2])
case = rep["cases"][0]
st = case["time_ms"]["stages"]
kv_ms = st["dA"] + st["dB"]
flops = 2 * 2 * n**3
print(f"device: {rep['device']['name']} ({rep['device']['driver']}); case status {case['status']}")
print(f"kverify gemm-bwd f32 {n}^3: dA {st['dA']:.3f} ms + dB {st['dB']:.3f} ms = {kv_ms:.3f} ms, {flops / kv_ms / 1e9:.2f} TFLOP/s")
try:
    import torch
except ImportError:
    print("PyTorch: not installed"); sys.exit(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
g = torch.Generator(device="cuda").manual_seed(0)
A = torch.randn(n, n, device="cuda", generator=g); B = torch.randn(n, n, device="cuda", generator=g)
dC = torch.randn(n, n, device="cuda", generator=g)
for _ in range(3): dA = dC @ B.T; dB = A.T @ dC
torch.cuda.synchronize()
times = []
for _ in range(10):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); dA = dC @ B.T; dB = A.T @ dC; e.record(); torch.cuda.synchronize()
    times.append(s.elapsed_time(e))
t = sorted(times)[len(times) // 2]
print(f"PyTorch fp32 (TF32 off) dC@B.T + A.T@dC: {t:.3f} ms, {flops / t / 1e9:.2f} TFLOP/s; kverify takes {kv_ms / t:.2f}x PyTorch's time")
PY
