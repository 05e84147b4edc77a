#!/usr/bin/env bash
# On the GPU machine: every kernel's --bench at a large shape, and the same
# computation in PyTorch on the same GPU in the same run, in one table.
#   rmsnorm-bwd 16384x8192   autograd backward of x * rsqrt(mean(x^2) + eps) * w
#   gemm-bwd 4096^3 f32      dC @ B.T and A.T @ dC in fp32 with TF32 off
#   gemm-bwd 4096^3 f16      dC16 @ B16.T in fp16 (the cooperative-matrix
#                            variant where the device has it, else f16)
#   qdq-affine 1M x 64, 4b   min/max, scale and rounding; q * s + b; the two
#                            group sums, elementwise in f32
#   gdn-wu B8 T4096 H16 Hg4  the bf16 stagings and the A @ (.) einsum per
#                            chunk (u and w apart); also --variant
#                            bf16-coopmat where the device has bf16
#                            cooperative matrices
# kverify's times are the fastest of N timed runs after 3 warm-up runs
# (timestamps); PyTorch's the fastest of N after 3 warm-up runs (CUDA events).
# The ceilings come from `kverify devices --measure`, run first unless
# KEEP_CEILINGS=1 and they are cached. Build first if KV is not executable.
# First the GPU is kept busy for WARMUP_S seconds (default 10): an idle GPU
# runs at its idle clocks until it has been loaded a while (on an H100, a
# 0.7 ms stage took 3.2 ms from idle). Each kverify --bench also keeps the
# device busy for 0.5 s before timing (--bench-warmup), because its inputs
# and oracle leave the GPU idle for seconds.
# Usage: scripts/bench-gpu.sh [N]   (env: KV=path to kverify, default build/kverify)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
kv=${KV:-build/kverify}
if [ ! -x "$kv" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j >/dev/null
  kv=build/kverify
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
end=$((SECONDS + ${WARMUP_S:-10}))
while [ "$SECONDS" -lt "$end" ]; do
  "$kv" gemm-bwd --m 2048 --n 2048 --k 2048 --sample 100 --bench 100 >/dev/null 2>&1 || break
done
if [ "${KEEP_CEILINGS:-0}" != 1 ] || ! "$kv" devices | grep -q 'ceilings, measured'; then
  "$kv" devices --measure > "$tmp/measure.txt"
fi
f16=f16-coopmat
"$kv" gemm-bwd --m 64 --n 64 --k 64 --variant f16-coopmat >/dev/null 2>&1 || f16=f16
bench() { # NAME ARGS...: one case with --bench, its JSON report kept
  local name=$1; shift
  "$kv" "$@" --bench "$runs" --json "$tmp/$name.json" > "$tmp/$name.txt" 2>&1 ||
    { echo "kverify $*: exit $? (see below)" >&2; tail -n 20 "$tmp/$name.txt" >&2; }
}
bench rmsnorm rmsnorm-bwd --rows 16384 --dim 8192
bench gemm32 gemm-bwd --m 4096 --n 4096 --k 4096 --sample 500
bench gemm16 gemm-bwd --m 4096 --n 4096 --k 4096 --variant "$f16" --sample 500
bench qdq qdq-affine --groups 1048576 --group-size 64 --bits 4
bench gdn gdn-wu --batch 8 --seq 4096 --heads 16 --kv-heads 4 --dk 128 --dv 128
if "$kv" gdn-wu --seq 64 --heads 1 --kv-heads 1 --dk 8 --dv 8 --variant bf16-coopmat >/dev/null 2>&1; then
  bench gdncm gdn-wu --batch 8 --seq 4096 --heads 16 --kv-heads 4 --dk 128 --dv 128 --variant bf16-coopmat
fi
python3 - "$tmp" "$runs" <<'PY'
import json, os, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
reps = {n: json.load(open(f"{tmp}/{n}.json")) for n in ("rmsnorm", "gemm32", "gemm16", "qdq", "gdn", "gdncm")
        if os.path.exists(f"{tmp}/{n}.json")}
dev = next(iter(reps.values()))["device"]
ceil = dev.get("ceilings") or {}
print(f"device: {dev['name']} ({dev['driver']}); ceilings: copy {ceil.get('copy_gb_per_s', 0):.0f} GB/s, "
      f"f32 matmul {ceil.get('f32_gflop_per_s', 0) / 1e3:.1f} TFLOP/s, f16 matmul {ceil.get('f16_gflop_per_s', 0) / 1e3:.1f} TFLOP/s")
try:
    import torch
except ImportError:
    torch = None
    print("PyTorch: not installed; kverify's figures only")

def timed(fn):
    """Fastest of `runs` CUDA-event timings after 3 warm-up calls, in ms."""
    for _ in range(3): fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        best = min(best, s.elapsed_time(e))
    return best

peer = {}
if torch is not None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cu = "cuda"; g = torch.Generator(device=cu).manual_seed(0)
    rn = lambda *s: torch.randn(*s, device=cu, generator=g)
    # RMSNorm backward via autograd (the forward saved its state, as in training).
    R, D = 16384, 8192
    x = rn(R, D).requires_grad_(); w = (1 + 0.1 * rn(D)).requires_grad_(); dy = rn(R, D)
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    peer[("rmsnorm", "*")] = ("autograd backward (dx, dw)", timed(lambda: torch.autograd.grad(y, (x, w), dy, retain_graph=True)))
    del x, w, dy, y
    n = 4096
    A, B, dC = rn(n, n), rn(n, n), rn(n, n)
    peer[("gemm32", "dA")] = ("fp32 dC @ B.T", timed(lambda: dC @ B.T))
    peer[("gemm32", "dB")] = ("fp32 A.T @ dC", timed(lambda: A.T @ dC))
    dC16, B16 = dC.half(), B.half()
    for st in ("dA16", "dA16cm"):
        peer[("gemm16", st)] = ("fp16 dC16 @ B16.T", timed(lambda: dC16 @ B16.T))
    peer[("gemm16", "cast")] = ("dC.half()", timed(lambda: dC.half()))
    peer[("gemm16", "dB")] = peer[("gemm32", "dB")]
    del A, B, dC, dC16, B16
    G, gs, nb = 1048576, 64, 16
    wq = rn(G, gs); dyq = rn(G, gs)
    def init():
        lo, hi = wq.amin(1), wq.amax(1)
        s = (hi - lo) / (nb - 1); s = torch.where(s > 0, s, torch.ones_like(s))
        q = torch.clamp(torch.floor((wq - lo[:, None]) / s[:, None] + 0.5), 0, nb - 1).to(torch.uint8)
        return q, s, lo
    q, s, b = init()
    peer[("qdq", "init")] = ("min/max, scale, round to u8", timed(init))
    peer[("qdq", "forward")] = ("q * s + b", timed(lambda: q.float() * s[:, None] + b[:, None]))
    peer[("qdq", "bwd-scales")] = ("(q * dy).sum(group)", timed(lambda: (q.float() * dyq).sum(1)))
    peer[("qdq", "bwd-biases")] = ("dy.sum(group)", timed(lambda: dyq.sum(1)))
    del wq, dyq, q, s, b
    Bt, T, H, HG, K, V = 8, 4096, 16, 4, 128, 128
    NT = T // 64
    k = rn(Bt, T, HG, K).bfloat16(); v = rn(Bt, T, H, V).bfloat16()
    beta = torch.rand(Bt, T, H, device=cu, generator=g); gg = -torch.rand(Bt, T, H, device=cu, generator=g)
    A5 = rn(Bt, NT, 64, H, 64).bfloat16()
    def u():
        sv = (v.float() * beta[..., None]).bfloat16()
        return torch.einsum("bnihj,bnjhd->bnihd", A5, sv.view(Bt, NT, 64, H, V))
    def wf():
        sk = (k.repeat_interleave(H // HG, dim=2).float() * (beta * torch.exp(gg))[..., None]).bfloat16()
        return torch.einsum("bnihj,bnjhd->bnihd", A5, sk.view(Bt, NT, 64, H, K))
    peer[("gdn", "u")] = ("bf16 staging + einsum", timed(u))
    peer[("gdn", "w")] = ("bf16 staging + einsum", timed(wf))
    peer[("gdncm", "u_cm")], peer[("gdncm", "w_cm")] = peer[("gdn", "u")], peer[("gdn", "w")]

label = {"rmsnorm": "rmsnorm-bwd 16384x8192", "gemm32": "gemm-bwd 4096^3 f32", "gemm16": "gemm-bwd 4096^3 ",
         "qdq": "qdq-affine 1M x 64, 4 bit", "gdn": "gdn-wu B8 T4096 H16/4 K=V=128",
         "gdncm": "gdn-wu same, bf16-coopmat"}
fmt = "{:30} {:7} {:>9} {:>8} {:>6} {:>9} {:>6} {:>5}  {:28} {:>9} {:>7}"
print(fmt.format("kernel", "stage", "ms", "GB/s", "%copy", "GFLOP/s", "%mm", "regs", "PyTorch peer", "peer ms", "kv/pt"))


def regs(b):
    """The driver's register count per invocation, where it reports one."""
    for k, v in (b.get("compiler") or {}).items():
        if "register" in k.lower():
            return f"{v:.0f}"
    return "-"


for name, rep in reps.items():
    case = rep["cases"][0]
    lab = label[name] + (case["params"].get("variant", "") if name == "gemm16" else "")
    if case["status"] != "pass":
        print(f"{lab}: case {case['status']} {case.get('error', '')}")
    stages = (case.get("bench") or {}).get("stages", {})
    total = 0.0
    for st, b in stages.items():
        total += b["min_ms"]
        pn, pms = peer.get((name, st), ("", None))
        pct = lambda v: f"{v:.0f}" if v is not None else "-"
        print(fmt.format(lab, st, f"{b['min_ms']:.4f}", f"{b['gb_per_s']:.0f}", pct(b["pct_of_copy"]),
                         f"{b['gflop_per_s']:.0f}" if b["flops"] else "-", pct(b["pct_of_matmul"]) if b["flops"] else "-",
                         regs(b), pn, f"{pms:.4f}" if pms else "-", f"{b['min_ms'] / pms:.2f}" if pms else "-"))
    if (name, "*") in peer:
        pn, pms = peer[(name, "*")]
        print(fmt.format(lab, "all", f"{total:.4f}", "", "", "", "", "", pn, f"{pms:.4f}", f"{total / pms:.2f}"))
print("kv/pt: kverify's time over PyTorch's (below 1: kverify is faster)")
PY
