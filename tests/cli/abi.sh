# --abi: the two example shaders verified as they are, through their
# interface files; deliberately wrong files fail with the documented error or
# verdict; bad input is one line, the documented code, nothing written.
# Partial candidates with --no-device.
. "$(dirname "$0")/lib.bash"
EX="$KV_SRC/examples"
G=(--shader dx="$EX/generic-push/rms_norm_back.comp")
expect_exit 0 "$KV" rmsnorm-bwd --rows 40 --dim 100 "${G[@]}" --abi "$EX/generic-push/rms_norm_back.abi.json" --json "$TMP/g.json"
python3 - "$TMP/g.json" <<'PY' || fail "generic-push: dx not judged as the shader's"
import json, sys
o = {x["name"]: x for x in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
assert o["dx"]["judged"] and o["dx"]["pass"] and o["dx"]["elements"] == 4000
assert "dx.chained" not in o  # the shader computes its own r: no chained rerun
PY
# every sweep shape (rows past 512 need the y dimension: rows=2000)
expect_exit 0 "$KV" rmsnorm-bwd --sweep --seeds 1 --no-stress "${G[@]}" --abi dx="$EX/generic-push/rms_norm_back.abi.json"
expect_exit 0 "$KV" rmsnorm-bwd --rows 2000 --dim 9 "${G[@]}" --abi "$EX/generic-push/rms_norm_back.abi.json"
S=(--shader dB="$EX/strided/matmul_at_b.comp")
expect_exit 0 "$KV" gemm-bwd --m 70 --n 33 --k 20 "${S[@]}" --abi "$EX/strided/matmul_at_b.abi.json"
expect_exit 0 "$KV" gemm-bwd --m 5 --n 1 --k 17 --variant accumulate "${S[@]}" --abi "$EX/strided/matmul_at_b.abi.json"

# Wrong files: copies of the example's with one thing changed.
cp -r "$EX/generic-push" "$TMP/g"
bad() { # bad PYTHON-EDIT: the example's file with d edited, as $TMP/g/bad.json
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(d, open(sys.argv[3], 'w'))" \
    "$TMP/g/rms_norm_back.abi.json" "$1" "$TMP/g/bad.json"
}
B=(rmsnorm-bwd --rows 40 --dim 100 --shader dx="$TMP/g/rms_norm_back.comp" --abi "$TMP/g/bad.json" --json "$TMP/report.json")
bad "d['bindings'][1]['tensor'] = 'dx'; d['bindings'][2]['tensor'] = 'x'"  # an output bound where the shader only reads
expect_error 3 'binding 1 \(dx\) is read-only in the shader, but dx is an output' "$KV" "${B[@]}"
bad "d['bindings'][0] = {'binding': 0, 'tensor': 'x'}; d['bindings'][1] = {'binding': 1, 'product': ['dy', 'w']}"
expect_exit 1 "$KV" "${B[@]}"   # inputs swapped: both read-only, so the verdict says it
grep -q '^  dx .*FAIL' "$TMP/out" || fail "swapped inputs did not fail dx"
bad "d['push'][0]['type'] = 'float'"
expect_error 3 "push\[0\] \(float KX\): the shader's member 0 is 4 bytes of 32-bit uint at offset 0, expected 32-bit floats" "$KV" "${B[@]}"
bad "d['push'].append({'name': 'extra', 'type': 'uint', 'value': 1})"  # pushed, never read: as a member -Os drops
expect_exit 0 "$KV" "${B[@]}"
bad "d['push'].pop()"  # the shader's param2 past the file's fields
expect_error 3 "push: the shader's member 3 \(4 bytes at offset 12\) is past the file's 3 fields" "$KV" "${B[@]}"
bad "d['dispatch'] = ['cdiv(rows, 2)', '1', '1']"  # half the rows
expect_exit 1 "$KV" "${B[@]}"
grep -q 'NaN where the oracle has none' "$TMP/out" || fail "half the rows: unwritten rows not reported"
bad "d['specialization'] = [{'id': 3, 'type': 'uint', 'value': 1}]"
expect_error 3 'specialization\[0\]: the shader has no constant with id 3' "$KV" "${B[@]}"
bad "d['include'] = []"
expect_error 3 "cannot include '.*common.glsl'" "$KV" "${B[@]}"
bad "d['constants'] = {'w': 1}; d['bindings'][0] = {'binding': 0, 'tensor': 'dy'}"  # w = 1: dy alone is g, oracle too
expect_exit 0 "$KV" "${B[@]}"

# Bad input: malformed files, unknown names, expressions that cannot be evaluated.
echo '{' > "$TMP/g/bad.json"
expect_error 3 'bad.json: not JSON' "$KV" "${B[@]}"
bad "d['bindings'][1]['tensor'] = 'nope'"
expect_error 3 "bindings\[1\].tensor: rmsnorm-bwd has no tensor 'nope'" "$KV" "${B[@]}"
bad "d['push'][0]['value'] = 'dims'"
expect_error 3 "push\[0\].value: 'dims': unknown name 'dims'" "$KV" "${B[@]}"
bad "d['bogus'] = 1"
expect_error 3 'unknown key "bogus"' "$KV" "${B[@]}"
# an entry that is a list or a scalar where an object belongs (it crashed the parser)
bad "d['bindings'][1] = ['e']"
expect_error 3 'bad.json: bindings\[1\]: not an object' "$KV" "${B[@]}"
bad "d['push'][0] = 7"
expect_error 3 'bad.json: push\[0\]: not an object' "$KV" "${B[@]}"
bad "d['writes'] = ['r']"
expect_error 3 "writes: 'r' is not an output of stage dx" "$KV" "${B[@]}"
for e in 'dim/(rows-rows)|divides by zero' 'dim*1e300|overflows' 'dim+0.5|is 100.5, not an integer' 'min(dim)|takes two arguments'; do
  bad "d['push'][0]['value'] = '${e%%|*}'"
  expect_exit 3 "$KV" "${B[@]}"
  grep -q "error: .*push\[0\] (KX): .*${e#*|}" "$TMP/out" || { cat "$TMP/out"; fail "expression ${e%%|*}"; }
done
bad "d['dispatch'][0] = 'rows * 70000'"
expect_exit 3 "$KV" "${B[@]}"
grep -q 'dispatch\[0\]: 2800000 groups, more than the device' "$TMP/out" || fail "a dispatch beyond the device"
# flags
expect_error 2 'name the stage \(--abi STAGE=FILE\) when no stage has --shader' "$KV" rmsnorm-bwd --rows 4 --dim 8 \
  --abi "$EX/generic-push/rms_norm_back.abi.json" --json "$TMP/report.json"
expect_error 2 "--abi: rmsnorm-bwd has no stage 'zz'" "$KV" rmsnorm-bwd --rows 4 --dim 8 "${G[@]}" \
  --abi zz="$EX/generic-push/rms_norm_back.abi.json" --json "$TMP/report.json"
expect_error 2 '--abi r=.*: stage r has no --shader' "$KV" rmsnorm-bwd --rows 4 --dim 8 "${G[@]}" \
  --abi r="$EX/generic-push/rms_norm_back.abi.json" --json "$TMP/report.json"
expect_error 3 'missing.json: cannot open' "$KV" rmsnorm-bwd --rows 4 --dim 8 "${G[@]}" --abi "$TMP/missing.json" --json "$TMP/report.json"
expect_error 3 "stage: the file is for stage 'dx', given for stage 'dw'" "$KV" rmsnorm-bwd --rows 4 --dim 8 \
  --shader dw="$EX/generic-push/rms_norm_back.comp" --abi "$EX/generic-push/rms_norm_back.abi.json" --json "$TMP/report.json"

# Partial candidates: dx and dw alone, with --no-device; r is listed as not judged.
expect_exit 0 "$KV" rmsnorm-bwd --rows 8 --dim 33 --save "$TMP/sv"
D=$(echo "$TMP"/sv/*/)
expect_exit 0 "$KV" rmsnorm-bwd --inputs "$D/inputs" --candidate dx="$D/device/dx.npy" --candidate dw="$D/device/dw.npy" \
  --no-device --json "$TMP/p.json"
grep -q '^  r  *not judged: no candidate for it' "$TMP/out" || fail "r not listed as not judged"
grep -q "^  dx .*pass.*judged with the oracle's r (no candidate for it: stage isolation)" "$TMP/out" || fail "dx's stage isolation not said"
python3 - "$TMP/p.json" <<'PY' || fail "partial candidates in the report"
import json, sys
o = {x["name"]: x for x in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
assert not o["r"]["judged"] and o["r"]["remark"].startswith("not judged")
assert o["dw"]["judged"] and o["dw"]["pass"] and "stage isolation" in o["dw"]["remark"]
PY
python3 - "$D/device/dw.npy" "$TMP/dw_bad.npy" <<'PY' || fail "could not corrupt dw"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = len(b)
off = n - 4 * 30  # element 3 of 33 float32
v = struct.unpack_from("<f", b, off)[0]
struct.pack_into("<f", b, off, v * 1.001 + 1e-3)
open(sys.argv[2], "wb").write(b)
PY
expect_exit 1 "$KV" rmsnorm-bwd --inputs "$D/inputs" --candidate dw="$TMP/dw_bad.npy" --no-device
grep -q '^  dw .*FAIL' "$TMP/out" || fail "a corrupted dw alone did not fail"
echo "abi ok"
