# A case's transfers three ways: every tensor staged whole, streamed through
# a bounded staging buffer (a plan past 64 MB of transfers; here through 4 KB,
# in many chunks), and as the plan chooses (on a CPU device such as lavapipe,
# direct: its buffers mapped, no staging). The reports are the same, and a
# write past an output's end reaches its guard words every way.
. "$(dirname "$0")/lib.bash"
EX="$KV_SRC/examples"
# same REPORT_A REPORT_B: equal apart from times and the command line
same() {
  python3 - "$1" "$2" <<'PY' || fail "streamed and staged reports differ: $1 $2"
import json, sys
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if k not in ("time_ms", "command", "kverify", "bench")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
a, b = (strip(json.load(open(p))) for p in sys.argv[1:3])
if a != b:
    sys.exit(1)
PY
}
run_both() { # NAME ARGS...: the case staged at once, streamed, and as the plan chooses (direct on lavapipe)
  local name=$1; shift
  KVERIFY_TEST_TRANSFERS=staged expect_exit 0 "$KV" "$@" --json "$TMP/$name-staged.json"
  KVERIFY_TEST_TRANSFERS=streamed KVERIFY_TEST_STAGE_BYTES=4096 expect_exit 0 "$KV" "$@" --json "$TMP/$name-streamed.json"
  expect_exit 0 "$KV" "$@" --json "$TMP/$name-auto.json"
  same "$TMP/$name-staged.json" "$TMP/$name-streamed.json"
  same "$TMP/$name-staged.json" "$TMP/$name-auto.json"
}
# a case with its stress runs (which compare their downloads with the first run's): inputs,
# intermediates, chained outputs
run_both rms rmsnorm-bwd --rows 31 --dim 4099 --stress --no-sanitize
# --abi products (generic-push binds w and a product of its own)
run_both abi rmsnorm-bwd --rows 40 --dim 100 --shader dx="$EX/generic-push/rms_norm_back.comp" \
  --abi "$EX/generic-push/rms_norm_back.abi.json"
# f16 staging of B, several outputs
run_both gemm gemm-bwd --m 70 --n 33 --k 65 --variant f16
# u8 codes (odd byte counts)
run_both qdq qdq-affine --groups 37 --group-size 32
# parts of a copy past 8 MiB on 2 MiB bounds (staging halves of 10 MiB, tensors of 19 MB)
KVERIFY_TEST_TRANSFERS=staged expect_exit 0 "$KV" rmsnorm-bwd --rows 1200 --dim 4000 --no-stress --json "$TMP/big-staged.json"
KVERIFY_TEST_TRANSFERS=streamed KVERIFY_TEST_STAGE_BYTES=20971520 expect_exit 0 "$KV" rmsnorm-bwd --rows 1200 --dim 4000 \
  --no-stress --json "$TMP/big-streamed.json"
same "$TMP/big-staged.json" "$TMP/big-streamed.json"
# streamed, the last case's device buffers and then the device itself are released while it is
# judged (a thread of their own): with three cases, under the validation layer in CI's pass
KVERIFY_TEST_TRANSFERS=staged expect_exit 0 "$KV" rmsnorm-bwd --rows 31 --dim 4099 --seeds 3 --no-stress --json "$TMP/three-staged.json"
KVERIFY_TEST_TRANSFERS=streamed KVERIFY_TEST_STAGE_BYTES=4096 expect_exit 0 "$KV" rmsnorm-bwd --rows 31 --dim 4099 --seeds 3 \
  --no-stress --verbose --json "$TMP/three-streamed.json"
same "$TMP/three-staged.json" "$TMP/three-streamed.json"
grep -q 'teardown [0-9.]* ms (the device released while the last case was judged)' "$TMP/err" ||
  { cat "$TMP/err"; fail "streamed: the device was not released during the last case"; }
KVERIFY_TEST_TRANSFERS=staged expect_exit 0 "$KV" rmsnorm-bwd --rows 31 --dim 4099 --seeds 3 --no-stress --verbose
grep -q 'teardown [0-9.]* ms, total' "$TMP/err" || { cat "$TMP/err"; fail "staged: no --verbose time line"; }
grep -q 'the device released while' "$TMP/err" && { cat "$TMP/err"; fail "staged: released early, yet its outputs are read in its buffers"; }
# the device (and the runner, its --abi with it) released before the case is judged: the same report
KVERIFY_TEST_TRANSFERS=streamed KVERIFY_TEST_STAGE_BYTES=4096 KVERIFY_TEST_RELEASE_FIRST=1 expect_exit 0 "$KV" rmsnorm-bwd \
  --rows 40 --dim 100 --shader dx="$EX/generic-push/rms_norm_back.comp" --abi "$EX/generic-push/rms_norm_back.abi.json" \
  --verbose --json "$TMP/abi-released.json"
grep -q 'the device released while' "$TMP/err" || { cat "$TMP/err"; fail "--abi: the device was not released"; }
same "$TMP/abi-staged.json" "$TMP/abi-released.json"
# and --save's report still names the device
rm -rf "$TMP/saved"
KVERIFY_TEST_TRANSFERS=streamed KVERIFY_TEST_STAGE_BYTES=4096 KVERIFY_TEST_RELEASE_FIRST=1 expect_exit 0 "$KV" rmsnorm-bwd \
  --rows 5 --dim 33 --no-stress --save "$TMP/saved"
python3 - "$TMP"/saved/*/report.json <<'PY' || fail "--save after the device's release: no device in the saved report"
import json, sys
sys.exit(0 if json.load(open(sys.argv[1])).get("device", {}).get("name") else 1)
PY
# a write past dw's end: its guard words come back through the staging too
rm -rf "$TMP/p"; mkdir -p "$TMP/p"; cp "$KV_SRC"/shaders/* "$TMP/p/"
OLD='if (ly == 0u && col < p.dim)' NEW='if (ly == 0u && col <= p.dim)' perl -0pi -e 's/\Q$ENV{OLD}\E/$ENV{NEW}/' "$TMP/p/rmsnorm_bwd_dw.comp"
grep -qF 'col <= p.dim' "$TMP/p/rmsnorm_bwd_dw.comp" || fail "plant: the dw guard is not in rmsnorm_bwd_dw.comp (update the test)"
for mode in staged streamed auto; do
  KVERIFY_TEST_TRANSFERS=$mode KVERIFY_TEST_STAGE_BYTES=4096 expect_exit 1 "$KV" rmsnorm-bwd --rows 3 --dim 7 --shader dw="$TMP/p/rmsnorm_bwd_dw.comp"
  grep -q 'dw written past its end: 1 guard words changed, the furthest 1 words past the end' "$TMP/out" ||
    { cat "$TMP/out"; fail "$mode: the write past dw's end is not named"; }
done
echo "stream: ok"
