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
# floor's upper side alone. gemm-bwd's products of A's columns on 16 threads
# with one block of them: one thread's arrays written, not 16 (the upper side
# alone: 16 threads' own memory is in that case's share). In a suite, the
# gemm-bwd scratch an earlier case left is not counted again.
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
    "OMP_NUM_THREADS=16 gemm-bwd --m 32768 --n 16 --k 16",
]
upper_only = {cases[-1]}
if sanitized:
    cases = [cases[1], cases[3], cases[5], cases[7], cases[9]]

def split(line):
    """A case's environment (leading NAME=VALUE words) and its arguments."""
    words = line.split()
    env = dict(os.environ)
    while words and "=" in words[0]:
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    return env, words

def peak(line):
    env, args = split(line)
    p = subprocess.Popen([kv] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    assert rc == 0, (args, rc, p.stderr.read()[-2000:])
    return usage.ru_maxrss * 1024

def refusal(args, available, expect_rc):
    """The floor in a refusal's line, given that much host memory available."""
    env, args = split(args) if isinstance(args, str) else (dict(os.environ), args)
    env["KVERIFY_TEST_MEM_AVAILABLE"] = str(available)
    r = subprocess.run([kv] + args, env=env, capture_output=True, text=True)
    m = re.search(r"needs at least ([0-9.]+) ([MG])B of host memory", r.stderr + r.stdout)
    assert r.returncode == expect_rc and m, (args, r.returncode, r.stderr[-2000:])
    return float(m.group(1)) * (1e6 if m.group(2) == "M" else 1e9)

def floor(line):
    return refusal(line, 1, 2)

base = peak("rmsnorm-bwd --rows 1 --dim 1")
bad = []
for line in cases:
    f, p = floor(line), peak(line)
    share = p - base
    print(f"{line}: floor {f / 1e6:.1f} MB, peak {p / 1e6:.1f} MB ({share / 1e6:.1f} beyond a one-element case's)")
    if f > p:
        bad.append(f"{line}: the floor ({f / 1e6:.1f} MB) is above the peak ({p / 1e6:.1f} MB)")
    if not sanitized and line not in upper_only and f < 0.7 * share:
        bad.append(f"{line}: the floor ({f / 1e6:.1f} MB) is under 0.7 of the case's share ({share / 1e6:.1f} MB)")

# A suite: 512^3 leaves its four scratch slots (512 x 512 doubles each, 8.39 MB)
# to the next case, 512 x 512 x 2048, whose floor is that much less there.
suite = os.path.join(tmp, "two.json")
with open(suite, "w") as f:
    f.write('{"name": "two", "cases": [{"kernel": "gemm-bwd", "name": "a", "params": {"m": 512, "n": 512, "k": 512}},'
            ' {"kernel": "gemm-bwd", "name": "b", "params": {"m": 512, "n": 512, "k": 2048}}]}')
alone = floor("gemm-bwd --m 512 --n 512 --k 2048")
after = refusal(["run", suite], int(alone - 10e6), 2)
held = 4 * 512 * 512 * 8
print(f"gemm-bwd 512 x 512 x 2048: floor {alone / 1e6:.2f} MB alone, {after / 1e6:.2f} MB after 512^3 in a suite")
if abs(after - (alone - held)) > 0.011e6:
    bad.append(f"the second gemm-bwd case's floor in a suite is {after / 1e6:.2f} MB, not {(alone - held) / 1e6:.2f}")
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
exit 0
