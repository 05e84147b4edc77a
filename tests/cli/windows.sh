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
# "windows", the same report otherwise (the sanitizer, which checks whole
# bindings, says it did not run), and device outputs identical to the byte.
same_run() {
  local name=$1 range=$2 want=$3; shift 3
  expect_exit 0 "$KV" "$@" --save "$TMP/$name-whole" --json "$TMP/$name-whole.json"
  KVERIFY_TEST_MAX_STORAGE_RANGE=$range expect_exit 0 "$KV" "$@" --save "$TMP/$name-win" --json "$TMP/$name-win.json"
  grep -q "windows (tensors longer than a binding reaches):" "$TMP/out" || fail "$name: the table does not show the windows"
  python3 - "$TMP/$name-whole.json" "$TMP/$name-win.json" "$want" <<'PY' || fail "$name: the windowed report differs"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
want = dict((kv.split(":")[0], int(kv.split(":")[1])) for kv in sys.argv[3].split(","))
assert "windows" not in a["cases"][0], "the whole run has windows"
assert b["cases"][0].get("windows") == want, b["cases"][0].get("windows")
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items()
                if k not in ("time_ms", "command", "kverify", "windows", "saved", "stress", "sanitizer_note")}
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
  [ "$n" -ge 2 ] || fail "$name: no device outputs saved"
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
# kernels without windows, and --abi stages, bind whole tensors
KVERIFY_TEST_MAX_STORAGE_RANGE=60000 expect_error 2 "tensor x needs [0-9]+ bytes, more than this device's maxStorageBufferRange \(60000 bytes\)" \
  "$KV" rmsnorm-bwd --rows 64 --dim 512 "${J[@]}"
exit 0
