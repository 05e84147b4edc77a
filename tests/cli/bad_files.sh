# Bad files: a one-line error naming the file and the problem, exit 3, and no
# report written. Bad flags about files: exit 2.
. "$(dirname "$0")/lib.bash"
F="$KV_SRC/fixtures/rmsnorm-bwd"
J=(--json "$TMP/report.json")
cp -r "$F/odd_3x7_npy" "$TMP/d"
x="$TMP/d/x.npy"
head -c 8 "$F/odd_3x7_outputs/dx.npy" > "$TMP/trunc.npy"
expect_error 3 "trunc.npy: not a .npy file \(truncated\)" "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$TMP/trunc.npy" "${J[@]}"
printf 'PK\003\004 not numpy at all' > "$TMP/magic.npy"
expect_error 3 "magic.npy: not a .npy file \(wrong magic\)" "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$TMP/magic.npy" "${J[@]}"
head -c 148 "$F/odd_3x7_outputs/dx.npy" > "$TMP/short.npy"
expect_error 3 "short.npy: header claims 84 bytes of data, the file has 20" "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$TMP/short.npy" "${J[@]}"
python3 - "$TMP" <<'PY'
import sys
d = sys.argv[1]
def npy(name, header, payload=b"", version=1):
    h = header.encode() + b"\n"
    pre = b"\x93NUMPY" + bytes([version, 0]) + (len(h).to_bytes(2, "little") if version == 1 else len(h).to_bytes(4, "little"))
    open(f"{d}/{name}", "wb").write(pre + h + payload)
npy("long.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"[:30])
b = open(f"{d}/long.npy", "rb").read(); open(f"{d}/long.npy", "wb").write(b[:8] + (500).to_bytes(2, "little") + b[10:])
npy("overflow.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }")
npy("complex.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", bytes(16))
npy("object.npy", "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", bytes(16))
npy("int.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 7), }", bytes(84))
npy("wide.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 8), }", bytes(96))
PY
expect_error 3 "long.npy: .npy header of 500 bytes is longer than the file" "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$TMP/long.npy" "${J[@]}"
expect_error 3 "overflow.npy: shape product overflows" "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$TMP/overflow.npy" "${J[@]}"
expect_error 3 "complex.npy: unsupported dtype '<c8'" "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$TMP/complex.npy" "${J[@]}"
expect_error 3 "object.npy: object arrays are not supported" "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$TMP/object.npy" "${J[@]}"
expect_error 3 "int.npy: dx is i32, expected f32" "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$TMP/int.npy" "${J[@]}"
expect_error 3 "wide.npy: dx has shape \[3, 8\], expected \[3, 7\] \(\[rows, dim\]\)" "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --candidate dx="$TMP/wide.npy" "${J[@]}"
# inconsistent inputs: dy wider than x
cp "$TMP/wide.npy" "$TMP/d/dy.npy"
expect_error 3 "dy.npy: dy has shape \[3, 8\], expected \[3, 7\]" "$KV" rmsnorm-bwd --inputs "$TMP/d" "${J[@]}"
# npz: corrupt deflate stream of a member, a missing archive
python3 - "$F/odd_3x7.npz" "$TMP/corrupt.npz" <<'PY'
import sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
b = bytearray(open(src, "rb").read())
z = zipfile.ZipFile(src); info = z.infolist()[0]
start = info.header_offset + 30 + len(info.filename) + len(info.extra)
for i in range(start + 4, start + 24): b[i] ^= 0xA5
open(dst, "wb").write(bytes(b))
PY
expect_error 3 "corrupt.npz: member x.npy: " "$KV" rmsnorm-bwd --inputs "$TMP/corrupt.npz" "${J[@]}"
python3 - "$F/odd_3x7.npz" "$TMP/partial.npz" <<'PY'
import sys, zipfile
src, dst = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2], "w")
for i in src.infolist():
    if i.filename != "w.npy": dst.writestr(i, src.read(i.filename))
dst.close()
PY
expect_error 3 "partial.npz: member w.npy is missing" "$KV" rmsnorm-bwd --inputs "$TMP/partial.npz" "${J[@]}"
rm "$TMP/d/w.npy"
expect_error 3 "d: file w.npy is missing" "$KV" rmsnorm-bwd --inputs "$TMP/d" "${J[@]}"
printf '{"kernel": "rmsnorm-bwd", "inputs": {"w": {"dtype": "f32", "shape": [2], "data": [1, 2]}}}' > "$TMP/partial.json"
expect_error 3 "partial.json: input inputs.x is missing" "$KV" rmsnorm-bwd --inputs "$TMP/partial.json" "${J[@]}"
expect_error 3 "nothere.npz: no such file or directory" "$KV" rmsnorm-bwd --inputs "$TMP/nothere.npz" "${J[@]}"
printf 'not a zip archive' > "$TMP/bad.npz"
expect_error 3 "bad.npz: not a readable .npz archive" "$KV" rmsnorm-bwd --inputs "$TMP/bad.npz" "${J[@]}"
printf 'x' > "$TMP/inputs.txt"
expect_error 3 "inputs.txt: --inputs takes a directory" "$KV" rmsnorm-bwd --inputs "$TMP/inputs.txt" "${J[@]}"
mkdir -p "$TMP/empty"
expect_error 3 "empty: holds none of rmsnorm-bwd's inputs" "$KV" rmsnorm-bwd --inputs "$TMP/empty" "${J[@]}"
# JSON fixtures: wrong types, missing fields, another kernel, an unknown tensor
printf '{"kernel": "rmsnorm-bwd", "inputs": {"x": {"dtype": "f32", "shape": [2], "data": [1, "a"]}}}' > "$TMP/type.json"
expect_error 3 "type.json: inputs.x.data\[1\] is not a number" "$KV" rmsnorm-bwd --inputs "$TMP/type.json" "${J[@]}"
printf '{"kernel": "rmsnorm-bwd"}' > "$TMP/missing.json"
expect_error 3 "missing.json: \"inputs\" is missing" "$KV" rmsnorm-bwd --inputs "$TMP/missing.json" "${J[@]}"
printf '{"kernel": "gemm-bwd", "inputs": {}}' > "$TMP/other.json"
expect_error 3 "other.json: fixture is for kernel 'gemm-bwd', not rmsnorm-bwd" "$KV" rmsnorm-bwd --inputs "$TMP/other.json" "${J[@]}"
printf '{"kernel": "rmsnorm-bwd", "inputs": {"q": {"dtype": "f32", "shape": [1], "data": [1]}}}' > "$TMP/unknown.json"
expect_error 3 "unknown.json: inputs.q: rmsnorm-bwd has no input 'q'" "$KV" rmsnorm-bwd --inputs "$TMP/unknown.json" "${J[@]}"
printf '{"kernel": "rmsnorm-bwd", "params": {"eps": -1}, "inputs": {"x": {"dtype": "f32", "shape": [1, 2], "data": [1, 2]}, "dy": {"dtype": "f32", "shape": [1, 2], "data": [1, 2]}, "w": {"dtype": "f32", "shape": [2], "data": [1, 2]}}}' > "$TMP/param.json"
expect_error 3 "param.json: params: --eps: -1 is out of range" "$KV" rmsnorm-bwd --inputs "$TMP/param.json" "${J[@]}"
printf '{"kernel": "rmsnorm-bwd", "inputs": {"x": {"dtype": "f32", "shape": [1, 2], "data": [1, 2]}, "dy": {"dtype": "f32", "shape": [1, 2], "data": [1, 2]}, "w": {"dtype": "f32", "shape": [2], "data": [1, 2]}}, "expected": {"dw": {"dtype": "f32", "shape": [3], "data": [1, 2, 3]}}}' > "$TMP/exp.json"
expect_error 3 "exp.json \(expected.dw\): dw has shape \[3\], expected \[2\]" "$KV" rmsnorm-bwd --inputs "$TMP/exp.json" "${J[@]}"
printf '{"kernel": "rmsnorm-bwd", "inputs": {' > "$TMP/syntax.json"
expect_error 3 "syntax.json: not valid JSON" "$KV" rmsnorm-bwd --inputs "$TMP/syntax.json" "${J[@]}"
# flags about files: usage errors
expect_error 2 "--candidate: rmsnorm-bwd has no output 'dz'" "$KV" rmsnorm-bwd --candidate dz="$x" "${J[@]}"
expect_error 2 "--candidate: 'dx' is not OUTPUT=FILE.npy" "$KV" rmsnorm-bwd --candidate dx "${J[@]}"
expect_error 2 "--candidate: output 'dx' given twice" "$KV" rmsnorm-bwd --candidate dx="$F/odd_3x7_outputs/dx.npy" --candidate dx="$F/odd_3x7_outputs/dx.npy" "${J[@]}"
expect_error 2 "--sweep and --inputs exclude each other" "$KV" rmsnorm-bwd --sweep --inputs "$F/odd_3x7.npz" "${J[@]}"
expect_error 2 "--no-device: no output has a candidate" "$KV" rmsnorm-bwd --inputs "$F/odd_3x7.npz" --no-device "${J[@]}"
expect_error 2 "--inputs: empty path" "$KV" rmsnorm-bwd --inputs "" "${J[@]}"
touch "$TMP/afile"
expect_error 2 "afile: not a directory|afile/x: cannot create" "$KV" rmsnorm-bwd --save "$TMP/afile/x" "${J[@]}"
exit 0
