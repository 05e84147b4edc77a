# The first case's inputs are made while the device opens (and its
# pipelines and device buffers are made) on another thread, and its oracle
# too where the inputs are done first. The reports are the same as when the
# device opens first (KVERIFY_TEST_NO_OVERLAP=1): generated and given inputs,
# a blocked and a sampled oracle, --oracle both, a spec kernel, a suite whose
# later cases are not prepared, a suite's later job first, two devices, and a
# failing case; and with the oracle made beside (KVERIFY_TEST_ORACLE_BESIDE=1).
# A later large case's device buffers are made beside its inputs.
. "$(dirname "$0")/lib.bash"
expect_same_report 0 KVERIFY_TEST_NO_OVERLAP "$KV" rmsnorm-bwd --rows 33 --dim 1000 --seeds 2
expect_same_report 0 KVERIFY_TEST_NO_OVERLAP "$KV" rmsnorm-bwd --rows 64 --dim 4096 --sample 500
expect_same_report 0 KVERIFY_TEST_NO_OVERLAP "$KV" rmsnorm-bwd --inputs "$KV_SRC/fixtures/rmsnorm-bwd/odd_3x7.json"
expect_same_report 0 KVERIFY_TEST_NO_OVERLAP "$KV" gemm-bwd --m 40 --n 24 --k 16 --variant f16 --oracle both
expect_same_report 0 KVERIFY_TEST_NO_OVERLAP "$KV" qdq-affine --groups 16 --group-size 32 --bits 4
expect_same_report 0 KVERIFY_TEST_NO_OVERLAP "$KV" softmax-bwd --rows 8 --dim 300
# a wrong shader: the prepared case fails as the other one does
mkdir -p "$TMP/p"; cp "$KV_SRC"/shaders/* "$TMP/p/"
OLD='DX[base + k] = rb * (DY' NEW='DX[base + k] = 1.001 * rb * (DY' perl -0pi -e 's/\Q$ENV{OLD}\E/$ENV{NEW}/' "$TMP/p/rmsnorm_bwd_dx.comp"
grep -qF '1.001 * rb' "$TMP/p/rmsnorm_bwd_dx.comp" || fail "plant: dx's store is not in rmsnorm_bwd_dx.comp (update the test)"
expect_same_report 1 KVERIFY_TEST_NO_OVERLAP "$KV" rmsnorm-bwd --rows 8 --dim 99 --shader dx="$TMP/p/rmsnorm_bwd_dx.comp"
cat > "$TMP/suite.json" <<'JSON'
{"name": "overlap", "cases": [
  {"kernel": "qdq-affine", "params": {"groups": 12, "group-size": 8, "bits": 4}},
  {"kernel": "rmsnorm-bwd", "params": {"rows": 4, "dim": 33}, "seeds": 2}
]}
JSON
expect_same_report 0 KVERIFY_TEST_NO_OVERLAP "$KV" run "$TMP/suite.json"
# the first selected case in a later job, with options of its own (a sample)
cat > "$TMP/suite2.json" <<'JSON'
{"name": "overlap2", "cases": [
  {"kernel": "qdq-affine", "params": {"groups": 12, "group-size": 8, "bits": 4}},
  {"kernel": "rmsnorm-bwd", "params": {"rows": 16, "dim": 300}, "sample": 100}
]}
JSON
expect_same_report 0 KVERIFY_TEST_NO_OVERLAP "$KV" run "$TMP/suite2.json" --filter '^rmsnorm'
# the same case on two devices: prepared again for the second (the first run freed it)
expect_same_report 0 KVERIFY_TEST_NO_OVERLAP "$KV" rmsnorm-bwd --rows 8 --dim 33 --device 0 --device 0
# a case too large for the host's memory is refused on each device, not
# prepared on the second (where the first run freed its shapes)
cat > "$TMP/suite3.json" <<'JSON'
{"name": "overlap3", "cases": [
  {"kernel": "rmsnorm-bwd", "params": {"rows": 512, "dim": 4096}},
  {"kernel": "qdq-affine", "params": {"groups": 12, "group-size": 8, "bits": 4}}
]}
JSON
KVERIFY_TEST_MEM_AVAILABLE=10000000 run "$KV" run "$TMP/suite3.json" --device 0 --device 0 --json "$TMP/s3.json"
python3 - "$TMP/s3.json" <<'PY' || fail "the case too large for the host's memory is not refused on both devices"
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
refused = [c for c in cases if "needs at least" in (c.get("error") or "")]
assert len(cases) == 4 and len(refused) == 2, [(c["name"], c.get("error")) for c in cases]
PY
# the first case's oracle made while the device opens (forced; else only where
# its inputs are made first): the same reports as with the device opened first
beside() {
  KVERIFY_TEST_NO_OVERLAP=1 expect_exit 0 "$@" --json "$TMP/ob0.json"
  KVERIFY_TEST_ORACLE_BESIDE=1 expect_exit 0 "$@" --json "$TMP/ob1.json" --verbose
  grep -q "oracle [0-9.]* ms (the first case's made while the device opened)" "$TMP/err" ||
    fail "'$*': the oracle was not made while the device opened"
  python3 - "$TMP/ob0.json" "$TMP/ob1.json" <<'PY' || fail "'$*': the report differs with the oracle made while the device opened"
import json, sys
a, b = (json.load(open(f))["cases"] for f in sys.argv[1:])
for x in a + b: x.pop("time_ms", None)
assert a == b
PY
}
beside "$KV" rmsnorm-bwd --rows 33 --dim 1000 --seeds 2
beside "$KV" rmsnorm-bwd --rows 64 --dim 4096 --sample 500
beside "$KV" gemm-bwd --m 40 --n 24 --k 16 --variant f16 --oracle both
beside "$KV" qdq-affine --groups 16 --group-size 32 --bits 4 --dist ties
beside "$KV" softmax-bwd --rows 8 --dim 300
beside "$KV" gdn-wy-bwd --batch 1 --seq 100 --heads 2 --kv-heads 1
KVERIFY_TEST_NO_OVERLAP=1 KVERIFY_TEST_ORACLE_BESIDE=1 expect_exit 0 "$KV" rmsnorm-bwd --rows 64 --dim 100 --verbose
grep -q "made while the device opened" "$TMP/err" && fail "--verbose: an oracle made beside a device opened first"
# the times: start-up and inputs both measured when they overlap
expect_exit 0 "$KV" rmsnorm-bwd --rows 64 --dim 1000 --verbose
grep -Eq "start-up [0-9.]+ ms, pipelines [0-9.]+ ms, inputs [0-9.]+ ms" "$TMP/err" || fail "--verbose: no time split"
# the prepared case's device buffers were made on the opening thread, and
# taken by its run; not where the device opens first
grep -q "buffers [0-9.]* ms (1 case's made beside its inputs)" "$TMP/err" ||
    fail "--verbose: the prepared case's device buffers were not made beside its inputs"
KVERIFY_TEST_NO_OVERLAP=1 expect_exit 0 "$KV" rmsnorm-bwd --rows 64 --dim 1000 --verbose
grep -q "beside its inputs" "$TMP/err" && fail "--verbose: device buffers made early where the device opened first"
# a later case past 64 MB of inputs and outputs (75.5 MB) has its device
# buffers made on a thread of their own while its inputs are made; a small
# one (gemm-bwd) not: the same reports as without
cat > "$TMP/suite4.json" <<'JSON'
{"name": "overlap4", "cases": [
  {"kernel": "qdq-affine", "params": {"groups": 12, "group-size": 8, "bits": 4}},
  {"kernel": "rmsnorm-bwd", "params": {"rows": 1024, "dim": 6144}},
  {"kernel": "gemm-bwd", "params": {"m": 64, "n": 32, "k": 16}}
]}
JSON
expect_same_report 0 KVERIFY_TEST_NO_OVERLAP "$KV" run "$TMP/suite4.json"
expect_exit 0 "$KV" run "$TMP/suite4.json" --verbose
grep -q "buffers [0-9.]* ms (2 cases' made beside their inputs)" "$TMP/err" ||
    fail "--verbose: a later large case's device buffers were not made beside its inputs"
echo "overlap: ok"
