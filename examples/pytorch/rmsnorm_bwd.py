#!/usr/bin/env python3
"""Judge a PyTorch RMSNorm backward with kverify, through safetensors files.

  1. ask:     kverify makes a case's inputs and saves them with its float64
              oracle (--no-device --save DIR --save-format safetensors);
  2. compute: PyTorch runs the backward on those inputs (autograd through the
              forward) and saves r, dx and dw with safetensors.torch.save_file;
  3. judge:   kverify judges them against the oracle with its derived error
              bounds (--candidate outputs.safetensors) and exits 0 (pass) or 1.

Needs torch and safetensors for step 2 only. KVERIFY names the binary
[default: kverify on PATH]. Examples:

  python3 rmsnorm_bwd.py --rows 512 --dim 4096 --device cuda
  python3 rmsnorm_bwd.py --bug          # an off-by-one mean: kverify fails it
  python3 rmsnorm_bwd.py --ask-only     # step 1 alone: prints the case folder
  python3 rmsnorm_bwd.py --judge CASE OUTPUTS.safetensors   # step 3 alone
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

KV = os.environ.get("KVERIFY", "kverify")


def ask(rows, dim, seed, work):
    """Step 1: the case's folder, holding inputs.safetensors (its parameters
    in the metadata) and oracle.safetensors."""
    os.makedirs(work, exist_ok=True)
    report = os.path.join(work, "case.json")
    cmd = [KV, "rmsnorm-bwd", "--rows", str(rows), "--dim", str(dim), "--seed", str(seed),
           "--no-device", "--save", work, "--save-format", "safetensors", "--json", report]
    run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode not in (0, 77):  # 77: saved, nothing judged yet
        sys.exit(f"{run.stderr.strip()}\nkverify could not make the case (exit {run.returncode})")
    with open(report) as f:
        return json.load(f)["cases"][0]["saved"]


def compute(case, outputs, device, bug):
    """Step 2: PyTorch's backward on the case's inputs, saved by name."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    path = os.path.join(case, "inputs.safetensors")
    with safe_open(path, framework="pt") as f:
        eps = float(f.metadata()["eps"])
    t = load_file(path, device=device)
    x = t["x"].requires_grad_()
    w = t["w"].requires_grad_()
    dim = x.shape[-1]
    ms = x.pow(2).sum(-1) / (dim - 1) if bug else x.pow(2).mean(-1)
    r = torch.rsqrt(ms + eps)
    y = x * r[:, None] * w
    y.backward(t["dy"])
    save_file({"r": r.detach().cpu(), "dx": x.grad.cpu(), "dw": w.grad.cpu()}, outputs,
              metadata={"format": "pt", "source": f"torch {torch.__version__} on {device}"})


def judge(case, outputs):
    """Step 3: kverify's verdict on the outputs (its exit code)."""
    cmd = [KV, "rmsnorm-bwd", "--inputs", os.path.join(case, "inputs.safetensors"),
           "--candidate", outputs, "--no-device"]
    return subprocess.run(cmd).returncode


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cpu", help="torch device [default: cpu]")
    p.add_argument("--bug", action="store_true", help="divide by dim - 1 in the mean")
    p.add_argument("--work", help="folder for the files [default: a temporary one]")
    p.add_argument("--ask-only", action="store_true", help="step 1 only: print the case folder")
    p.add_argument("--judge", nargs=2, metavar=("CASE", "OUTPUTS"), help="step 3 only")
    a = p.parse_args()
    if a.judge:
        return judge(*a.judge)
    work = a.work or tempfile.mkdtemp(prefix="kverify-")
    case = ask(a.rows, a.dim, a.seed, work)
    if a.ask_only:
        print(case)
        return 0
    outputs = os.path.join(work, "outputs.safetensors")
    compute(case, outputs, a.device, a.bug)
    return judge(case, outputs)


if __name__ == "__main__":
    sys.exit(main())
