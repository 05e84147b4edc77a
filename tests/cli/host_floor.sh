# The host memory a case is refused for (kv_case_host_floor: what it will hold
# at least) against what the process holds at its peak, case by case: the floor
# is never above the peak (a case that fits is never refused), and it is most of
# what the case adds to the process (an oracle's arrays the floor forgot would
# let a case be killed for memory where it should be refused). Each kernel's
# oracle share is here: rmsnorm-bwd's blocks, gemm-bwd's widened operands,
# qdq-affine's slack and codes, gdn-wy-bwd's and gdn-wu's slack and overflow
# flags, a spec kernel's bound arrays (--save: its oracle held whole), chained
# reruns and intermediates. The peak beyond a one-element case's (lavapipe and
# the process's own) is the case's share; on two cores it measured 0.80-1.01
# times the floor. Under AddressSanitizer the peak is the allocator's too: the
# floor's upper side alone.
. "$(dirname "$0")/lib.bash"
"$KV" devices >/dev/null 2>&1 || { echo "skipped: no Vulkan device"; exit 77; }
python3 - "$KV" "$TMP" "${KV_SANITIZED:-}" <<'PY' || fail "a host-memory floor is off"
import os, re, subprocess, sys
kv, tmp, sanitized = sys.argv[1], sys.argv[2], sys.argv[3]
cases = [
    "rmsnorm-bwd --rows 2048 --dim 4096",
    "gemm-bwd --m 1024 --n 1024 --k 1024",
    "gemm-bwd --m 1024 --n 1024 --k 1024 --variant f16",
    "qdq-affine --groups 1048576 --group-size 2",
    "gdn-wy-bwd --seq 2048 --heads 16 --kv-heads 4",
    "gdn-wy-bwd --seq 2048 --heads 16 --kv-heads 4 --sample 1000",
    "gdn-wu --seq 2048 --heads 16 --kv-heads 4",
    f"silu-bwd --n 4194304 --save {tmp}/saved",
    "cross-entropy-bwd --rows 256 --classes 32768",
]
if sanitized:
    cases = [cases[1], cases[3], cases[5], cases[7]]

def peak(args):
    p = subprocess.Popen([kv] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    assert rc == 0, (args, rc, p.stderr.read()[-2000:])
    return usage.ru_maxrss * 1024

def floor(args):
    r = subprocess.run([kv] + args, env=dict(os.environ, KVERIFY_TEST_MEM_AVAILABLE="1"), capture_output=True, text=True)
    m = re.search(r"needs at least ([0-9.]+) ([MG])B of host memory", r.stderr)
    assert r.returncode == 2 and m, (args, r.returncode, r.stderr)
    return float(m.group(1)) * (1e6 if m.group(2) == "M" else 1e9)

base = peak(["rmsnorm-bwd", "--rows", "1", "--dim", "1"])
bad = []
for line in cases:
    args = line.split()
    f, p = floor(args), peak(args)
    share = p - base
    print(f"{line}: floor {f / 1e6:.1f} MB, peak {p / 1e6:.1f} MB ({share / 1e6:.1f} beyond a one-element case's)")
    if f > p:
        bad.append(f"{line}: the floor ({f / 1e6:.1f} MB) is above the peak ({p / 1e6:.1f} MB)")
    if not sanitized and f < 0.7 * share:
        bad.append(f"{line}: the floor ({f / 1e6:.1f} MB) is under 0.7 of the case's share ({share / 1e6:.1f} MB)")
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
exit 0
