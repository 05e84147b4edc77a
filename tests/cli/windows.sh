# Tensors longer than a binding reaches (maxStorageBufferRange): the gdn
# kernels' stages run in windows of the sequence, each a dispatch bound from
# the window's first row. The device's range is replaced by the test hook
# (KVERIFY_TEST_MAX_STORAGE_RANGE) so that small cases need windows. A
# windowed run gives the same device outputs, bit for bit, and the same
# report as the whole-tensor run; what cannot be windowed is refused in one line.
. "$(dirname "$0")/lib.bash"
J=(--json "$TMP/report.json")

# same_run NAME RANGE WANT ARGS...: the case run whole and with bindings of at
# most RANGE bytes; the windowed run reports WANT ("stage:count,...") in its
# "windows", or with WANT "addressed:stage,..." those stages in its
# "addressed" (read through device addresses), the same report otherwise (the
# sanitizer, which checks whole bindings, says it did not run), and device
# outputs identical to the byte.
same_run() {
  local name=$1 range=$2 want=$3; shift 3
  expect_exit 0 "$KV" "$@" --save "$TMP/$name-whole" --json "$TMP/$name-whole.json"
  KVERIFY_TEST_MAX_STORAGE_RANGE=$range expect_exit 0 "$KV" "$@" --save "$TMP/$name-win" --json "$TMP/$name-win.json"
  case $want in
    addressed:*) grep -q "bound by address (tensors longer than a binding reaches): ${want#addressed:}" "$TMP/out" ||
                   fail "$name: the table does not show the stages bound by address" ;;
    *) grep -q "windows (tensors longer than a binding reaches):" "$TMP/out" || fail "$name: the table does not show the windows" ;;
  esac
  python3 - "$TMP/$name-whole.json" "$TMP/$name-win.json" "$want" <<'PY' || fail "$name: the windowed report differs"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert "windows" not in a["cases"][0] and "addressed" not in a["cases"][0], "the whole run has windows"
if sys.argv[3].startswith("addressed:"):
    assert b["cases"][0].get("addressed") == sys.argv[3].split(":")[1].split(" "), b["cases"][0].get("addressed")
    assert "windows" not in b["cases"][0]
else:
    want = dict((kv.split(":")[0], int(kv.split(":")[1])) for kv in sys.argv[3].split(","))
    assert b["cases"][0].get("windows") == want, b["cases"][0].get("windows")
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items()
                if k not in ("time_ms", "command", "kverify", "windows", "addressed", "saved", "stress",
                             "sanitizer_note")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
assert strip(a) == strip(b)
for c in b["cases"]:
    assert c["status"] == "pass", c["status"]
PY
  local n=0 f
  for f in "$TMP/$name-whole"/*/device/*; do
    cmp -s "$f" "$TMP/$name-win/${f#"$TMP/$name-whole/"}" || fail "$name: $(basename "$f") differs windowed"
    n=$((n + 1))
  done
  [ "$n" -ge 1 ] || fail "$name: no device outputs saved"
}

# A (f32, 1 KiB a row) in windows of 64 rows: 2 sequences of 4 windows, the last partial
same_run wu-rows 150000 "u:8,w:8" gdn-wu --batch 2 --seq 200 --heads 4 --kv-heads 2 --dk 40 --dv 72
# a whole sequence fits: windows of one sequence each
same_run wu-seqs 300000 "u:2,w:2" gdn-wu --batch 2 --seq 200 --heads 4 --kv-heads 2 --dk 40 --dv 72
# gdn-wy-bwd: stage wy in windows, stage dk (dk_head, 128 B a row) whole; the chained
# rerun and the stress runs windowed too; the sanitized run is not run, and says so
same_run wy-fma 70000 "wy:6" gdn-wy-bwd --batch 2 --seq 130 --heads 2 --kv-heads 1 --dk 32 --dv 48 --stress
grep -Eq '"sanitizer_note":[[:space:]]*"not run: stage wy runs in 6 windows' "$TMP/wy-fma-win.json" ||
  fail "the windowed --stress run does not say why the sanitizer did not run"
same_run wy-ab 40000 "wy_ab:6" gdn-wy-bwd --batch 2 --seq 130 --heads 2 --kv-heads 1 --dk 32 --dv 48 --variant a-bf16
# --bench runs every window of a stage
KVERIFY_TEST_MAX_STORAGE_RANGE=150000 expect_exit 0 "$KV" gdn-wu --batch 2 --seq 200 --heads 4 --kv-heads 2 \
  --dk 40 --dv 72 --bench 2 --bench-warmup 0 "${J[@]}"
grep -q "bench u " "$TMP/out" || fail "--bench with windows printed no stage"

# what cannot run so is refused in one line, exit 2, nothing written
KVERIFY_TEST_MAX_STORAGE_RANGE=60000 expect_error 2 "one chunk of 64 rows of tensor v, with its tail, passes this device's maxStorageBufferRange \(60000 bytes\)" \
  "$KV" gdn-wu --batch 2 --seq 200 --heads 4 --kv-heads 2 "${J[@]}"
# a window of the second sequence would start at row 101: beta's byte 808 (8 a row), not a multiple of 16
KVERIFY_TEST_MAX_STORAGE_RANGE=100000 expect_error 2 "would bind .* from byte [0-9]+, not a multiple of this device's minStorageBufferOffsetAlignment" \
  "$KV" gdn-wu --batch 2 --seq 101 --heads 2 --kv-heads 1 --dk 40 --dv 72 "${J[@]}"

# rmsnorm-bwd has no windows (dw sums every row): its stages read their tensors
# through device addresses in one dispatch each (pipeline/addr.h), the stress
# runs' reversed builds too; the rows held in registers (dim 512), read twice
# (dim 8200) and one at a time (dim 301). On a CPU device addresses are taken
# for the tests alone (the shaders here stay within the guard words).
export KVERIFY_TEST_ADDR_ON_CPU=1
same_run rms-addr 60000 "addressed:r dx dw" rmsnorm-bwd --rows 64 --dim 512 --stress
grep -Eq '"sanitizer_note":[[:space:]]*"not run: stage r reads its tensors by address' "$TMP/rms-addr-win.json" ||
  fail "the addressed --stress run does not say why the sanitizer did not run"
same_run rms-addr2 60000 "addressed:r dx dw" rmsnorm-bwd --rows 5 --dim 8200
same_run rms-addr3 30000 "addressed:r dx dw" rmsnorm-bwd --rows 33 --dim 301 --no-subgroup
# qdq-affine's four stages too: codes as bytes (8-bit storage) and as packed words,
# a partial quad, groups of 2
same_run qdq-addr 10000 "addressed:init forward bwd-scales bwd-biases" qdq-affine --groups 1000 --group-size 64 --stress
same_run qdq-addr2 2000 "addressed:init forward bwd-scales bwd-biases" qdq-affine --groups 333 --group-size 2 --no-8bit
# gemm-bwd's f32 stages: rows read one value at a time (n 77) and as vec4s (n 64),
# and the accumulate variant's dA_acc
same_run gemm-addr 4000 "addressed:dA dB" gemm-bwd --m 100 --n 77 --k 64 --stress
same_run gemm-addr2 4000 "addressed:dA dB" gemm-bwd --m 50 --n 64 --k 64
same_run gemm-addr3 4000 "addressed:dA_acc dB" gemm-bwd --m 64 --n 33 --k 40 --variant accumulate
# a --shader whose source builds with KV_ADDR is bound by address too: the same
# shader passes, and a one-line bug in it (dx's store one element late) fails
cp "$KV_SRC"/shaders/*.glsl "$TMP/"
cp "$KV_SRC/shaders/rmsnorm_bwd_dx.comp" "$TMP/dx.comp"
KVERIFY_TEST_MAX_STORAGE_RANGE=30000 expect_exit 0 "$KV" rmsnorm-bwd --rows 33 --dim 301 --shader "dx=$TMP/dx.comp" "${J[@]}"
grep -q "bound by address (tensors longer than a binding reaches): r dx dw" "$TMP/out" || fail "the --shader was not bound by address"
sed 's/DX\[base + k\] = rb/DX[base + k + 1u] = rb/' "$TMP/dx.comp" > "$TMP/dx-mut.comp"
grep -qF 'DX[base + k + 1u]' "$TMP/dx-mut.comp" || fail "plant: dx's store is not in rmsnorm_bwd_dx.comp (update the test)"
KVERIFY_TEST_MAX_STORAGE_RANGE=30000 expect_exit 1 "$KV" rmsnorm-bwd --rows 33 --dim 301 --shader "dx=$TMP/dx-mut.comp" "${J[@]}"
grep -q "bound by address (tensors longer than a binding reaches): r dx dw" "$TMP/out" || fail "the mutant was not bound by address"
grep -Eq '^  dx .* FAIL' "$TMP/out" || fail "the mutant's dx did not fail"

# A stage without a KV_ADDR build has its bound build rewritten to read through
# addresses (spirv/spirv_addr.h): gemm-bwd's f16 stages, the spec kernels
# (rope-bwd's shader calls exp and cos), a user's shader as it is, .comp or .spv
same_run gemm16-addr 4000 "addressed:cast dA16 dB" gemm-bwd --m 100 --n 77 --k 64 --variant f16 --stress
same_run ln-addr 4000 "addressed:dx dwdb" layernorm-bwd --rows 33 --dim 300 --stress
same_run rope-addr 4000 "addressed:dx" rope-bwd
# an --abi stage too: the file's slots are the addresses, its push constants and
# specialization constants (the strided example's) follow
EX=$KV_SRC/examples
same_run abi-addr 4000 "addressed:r dx dw" rmsnorm-bwd --rows 40 --dim 100 --stress \
  --shader dx="$EX/generic-push/rms_norm_back.comp" --abi "$EX/generic-push/rms_norm_back.abi.json"
same_run abi-addr2 1000 "addressed:dA dB" gemm-bwd --m 70 --n 33 --k 20 --shader dB="$EX/strided/matmul_at_b.comp" \
  --abi "$EX/strided/matmul_at_b.abi.json"
# the bound build alone, as a user's shader without KV_ADDR is
awk '/^#ifdef KV_ADDR/ {skip = 1; next} skip && /^#else/ {skip = 0; bound = 1; next}
  bound && /^#endif/ {bound = 0; next} !skip {print}' "$TMP/dx.comp" > "$TMP/dx-bound.comp"
grep -q KV_ADDR "$TMP/dx-bound.comp" && fail "the bound build still names KV_ADDR"
glslc --target-env=vulkan1.2 -O -DKV_SUBGROUP=1 -I"$TMP" "$TMP/dx-bound.comp" -o "$TMP/dx-bound.spv" || fail "glslc"
for sh in dx-bound.comp dx-bound.spv; do # (a .spv's stress runs keep its one build, bound or not)
  KVERIFY_TEST_MAX_STORAGE_RANGE=60000 expect_exit 0 "$KV" rmsnorm-bwd --rows 64 --dim 512 --shader "dx=$TMP/$sh" --stress "${J[@]}"
  grep -q "bound by address (tensors longer than a binding reaches): r dx dw" "$TMP/out" || fail "$sh was not bound by address"
done
# a buffer's length() by address is its binding's byte range (after the addresses in
# the push constants) as a bound binding's is: here exactly 2n (x's words and its
# tail), or the shader writes nothing
sed 's/i < p.n; i = kv_next/i < p.n \&\& uint(x.length()) == 2u * p.n; i = kv_next/' "$KV_SRC/shaders/silu_bwd.comp" > "$TMP/silu-len.comp"
grep -qF 'x.length()' "$TMP/silu-len.comp" || fail "plant: silu_bwd.comp's loop changed (update the test)"
same_run silu-len 4000 "addressed:dx" silu-bwd --n 5000 --shader "dx=$TMP/silu-len.comp"
# the planted bug in it, rewritten, fails
sed 's/DX\[base + k\] = rb/DX[base + k + 1u] = rb/' "$TMP/dx-bound.comp" > "$TMP/dx-bound-mut.comp"
grep -qF 'DX[base + k + 1u]' "$TMP/dx-bound-mut.comp" || fail "plant: dx's store is not in the bound build (update the test)"
KVERIFY_TEST_MAX_STORAGE_RANGE=30000 expect_exit 1 "$KV" rmsnorm-bwd --rows 33 --dim 301 --shader "dx=$TMP/dx-bound-mut.comp" "${J[@]}"
grep -q "bound by address (tensors longer than a binding reaches): r dx dw" "$TMP/out" || fail "the rewritten mutant was not bound by address"
grep -Eq '^  dx .* FAIL' "$TMP/out" || fail "the rewritten mutant's dx did not fail"

# what cannot be bound by address is refused in one line, exit 2, nothing written:
# a device without buffer addresses (the shaders the rewrite cannot follow:
# unit.spirv_addr)
KVERIFY_TEST_NO_ADDR=1 KVERIFY_TEST_MAX_STORAGE_RANGE=60000 expect_error 2 "tensor x needs [0-9]+ bytes, more than this device's maxStorageBufferRange \(60000 bytes\), and stage r cannot bind it in windows, nor by address: this device lacks bufferDeviceAddress or shaderInt64" \
  "$KV" rmsnorm-bwd --rows 64 --dim 512 "${J[@]}"
unset KVERIFY_TEST_ADDR_ON_CPU
# On a CPU device nothing stops an access past a buffer (a GPU faults): without
# the hook its address builds are the bound builds rewritten guarded, each access
# kept within its binding's range (spirv/spirv_addr.h). The same reports and
# device outputs as whole bindings; a store 400 MB past dx's end or before its
# start, or a read 400 MB past x's, fails the case, where unguarded (the hook)
# it reached kverify's own memory (SIGSEGV).
if "$KV" devices | awk 'NR == 2 {exit $0 !~ / cpu /}'; then
  same_run rms-guard 60000 "addressed:r dx dw" rmsnorm-bwd --rows 64 --dim 512 --stress
  same_run qdq-guard 10000 "addressed:init forward bwd-scales bwd-biases" qdq-affine --groups 1000 --group-size 64
  same_run gemm-guard 4000 "addressed:cast dA16 dB" gemm-bwd --m 100 --n 77 --k 64 --variant f16
  for plant in 's/DX\[base + k\] = rb/DX[base + k + 100000000u] = rb/|written past its end' \
               's/DX\[base + k\] = rb/DX[base + k - 100000000u] = rb/|written past its end' \
               's/X\[base + i\] \* W\[i\];/X[base + i + 100000000u] * W[i];/|NaN where the oracle has none'; do
    sed "${plant%%|*}" "$TMP/dx-bound.comp" > "$TMP/dx-far.comp"
    cmp -s "$TMP/dx-bound.comp" "$TMP/dx-far.comp" && fail "plant: '${plant%%|*}' changed nothing (update the test)"
    KVERIFY_TEST_MAX_STORAGE_RANGE=30000 expect_exit 1 "$KV" rmsnorm-bwd --rows 33 --dim 301 --shader "dx=$TMP/dx-far.comp" "${J[@]}"
    grep -q "bound by address (tensors longer than a binding reaches): r dx dw" "$TMP/out" || fail "the plant was not bound by address"
    grep -Eq "^  dx .* FAIL .*${plant#*|}" "$TMP/out" || { cat "$TMP/out" >&2; fail "'${plant%%|*}': dx did not fail as ${plant#*|}"; }
  done
  # a guarded build whose addresses, ranges and push constants pass the device's
  # push-constant bytes is refused in one line
  KVERIFY_TEST_MAX_STORAGE_RANGE=4000 expect_error 2 "stage step cannot bind it in windows, nor by address: its 164 bytes of addresses, ranges and push constants pass this device's maxPushConstantsSize \(128\)" \
    "$KV" adamw-step --n 5000 "${J[@]}"
fi

# A tensor of exactly the range is bound whole, its tail cut to none (binding.h):
# rmsnorm-bwd's x, dy and dx at 4 x 64, gemm-bwd's A, B, dC, dA and dB at 16^3
# (refused as longer than the range before), stressed and sanitized
for args in "rmsnorm-bwd --rows 4 --dim 64" "gemm-bwd --m 16 --n 16 --k 16"; do
  KVERIFY_TEST_MAX_STORAGE_RANGE=1024 expect_exit 0 "$KV" $args --stress --sanitize "${J[@]}"
  grep -Eq "windows|bound by address" "$TMP/out" && fail "$args: a tensor of exactly the range was not bound whole"
done
# where no tail is poisoned a read past an input's end is the sanitizer's:
# dw's read of x one past its end, its value discarded
sed 's/acc += DY\[i\] \* X\[i\] \* R\[b\];/acc += DY[i] * X[i] * R[b]; if (X[i + 1u] == 1.0e30) acc = 0.0;/' \
  "$KV_SRC/shaders/rmsnorm_bwd_dw.comp" > "$TMP/dw-past.comp"
grep -qF 'X[i + 1u]' "$TMP/dw-past.comp" || fail "plant: dw's sum is not in rmsnorm_bwd_dw.comp (update the test)"
KVERIFY_TEST_MAX_STORAGE_RANGE=1024 expect_exit 1 "$KV" rmsnorm-bwd --rows 4 --dim 64 --shader "dw=$TMP/dw-past.comp" \
  --sanitize "${J[@]}"
grep -Eq '^  memcheck .*dw-past\.comp:[0-9]+.*: index 256 of tensor x' "$TMP/out" || fail "the read past x's end was not memcheck's"
exit 0
