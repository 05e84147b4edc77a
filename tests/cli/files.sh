# Inputs from files in every accepted form, --save and reproduction with
# --inputs, candidates judged without a device, and a perturbed candidate.
. "$(dirname "$0")/lib.bash"
F="$KV_SRC/fixtures/rmsnorm-bwd"
for src in "$F"/*.json "$F/odd_3x7.npz" "$F/odd_3x7_stored.npz" "$F/odd_3x7_zip64.npz" "$F/odd_3x7_npy"; do
  expect_exit 0 "$KV" rmsnorm-bwd --inputs "$src"
done
# A fixture's expected outputs are judged beside the device's.
expect_exit 0 "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.json" --json "$TMP/fx.json"
grep -Eq '^  dx\.expected .* pass  \(expected\)' "$TMP/out" || fail "expected outputs not judged"
grep -Eq '^  dx +.* pass$' "$TMP/out" || fail "device output not judged beside the expected one"
# The npy folder (big-endian v3, v2, Fortran order) and the npz give the same case.
"$KV" rmsnorm-bwd --inputs "$F/odd_3x7_npy" | grep -E '^  (r|dx|dw) ' > "$TMP/a"
"$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --eps 1e-6 | grep -E '^  (r|dx|dw) ' > "$TMP/b"
cmp -s "$TMP/a" "$TMP/b" || fail "npy folder and npz disagree"

# --save writes a case folder; --inputs on it reproduces the device results.
expect_exit 0 "$KV" rmsnorm-bwd --rows 5 --dim 19 --eps 1e-4 --seed 7 --save "$TMP/saved" --json "$TMP/r.json"
case_dir="$TMP/saved/rmsnorm-bwd_rows=5,dim=19,eps=0.0001,seed=7_"
for f in inputs/x.npy inputs/w.npy inputs/dy.npy inputs/params.json device/r.npy device/dx.npy device/dw.npy \
         device/dx.chained.npy device/dw.chained.npy oracle/r.npy oracle/dx.npy oracle/dw.npy report.json; do
  [ -f "$case_dir/$f" ] || fail "--save did not write $f"
done
grep -q "\"saved\": \"$case_dir\"" "$TMP/r.json" || grep -q "\"saved\":	\"$case_dir\"" "$TMP/r.json" || fail "report lacks the saved folder"
grep -E '^  (r|dx|dw) ' "$TMP/out" | cut -c1-120 > "$TMP/first"
expect_exit 0 "$KV" rmsnorm-bwd --inputs "$case_dir/inputs"
grep -q 'eps=0.0001' "$TMP/out" || fail "params.json not applied"
grep -E '^  (r|dx|dw) ' "$TMP/out" | cut -c1-120 > "$TMP/again"
cmp -s "$TMP/first" "$TMP/again" || fail "--inputs of a saved case does not reproduce it"
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  /usr/bin/python3 - "$case_dir" <<'PY' || fail "saved files do not re-check with numpy"
import sys, numpy as np
d = sys.argv[1]
dx, o = np.load(d + "/device/dx.npy"), np.load(d + "/oracle/dx.npy")
assert dx.dtype == np.float32 and o.dtype == np.float64 and dx.shape == (5, 19)
assert np.abs(dx - o).max() < 1e-6
PY
fi

# Every output as a candidate: no device is opened, even when none exists.
C="$F/odd_3x7_outputs"
run env VK_ICD_FILENAMES=/nonexistent.json VK_DRIVER_FILES=/nonexistent.json "$KV" rmsnorm-bwd \
  --inputs "$F/odd_3x7.npz" --candidate r="$C/r.npy" --candidate dx="$C/dx.npy" --candidate dw="$C/dw.npy" \
  --no-device --json "$TMP/nd.json"
[ "$RC" = 0 ] || { cat "$TMP/err"; fail "--no-device with every candidate exited $RC"; }
python3 - "$TMP/nd.json" <<'PY' || fail "--no-device report"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["device"] is None
outs = d["cases"][0]["outputs"]
assert [o["name"] for o in outs] == ["r", "dx", "dw"] and all(o["source"] == "candidate" for o in outs)
PY
# One candidate replaces its stage; the others still run on the device.
expect_exit 0 "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$C/dx.npy"
grep -Eq '^  dx +.*\(candidate\)' "$TMP/out" || fail "candidate row"
grep -q 'dx.chained' "$TMP/out" && fail "a candidate's stage ran on the device"
# A candidate that is off by a realistic bug (one element 1e-3 relative) fails.
"$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --save "$TMP/p" >/dev/null
pd=$(ls -d "$TMP"/p/*/)
cp "$pd/device/dx.npy" "$TMP/dx_bad.npy"
python3 - "$TMP/dx_bad.npy" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
off = len(b) - 4 * 5                     # an element near the end
v = struct.unpack("<f", b[off:off + 4])[0]
b[off:off + 4] = struct.pack("<f", v * 1.001)
open(sys.argv[1], "wb").write(b)
PY
expect_exit 1 "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$TMP/dx_bad.npy"
grep -Eq '^  dx +.*FAIL  \(candidate\)' "$TMP/out" || fail "perturbed candidate not reported as failing"
exit 0
