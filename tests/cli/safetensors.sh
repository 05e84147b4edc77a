# safetensors in and out: --save-format safetensors writes three files whose
# tensors and metadata reproduce the case; --inputs FILE.safetensors gives the
# same verdicts as the .npy route; --candidate FILE.safetensors judges every
# output it holds; bad files are one line, exit 3, nothing written; and the
# PyTorch example's steps that need no torch run (all of it where torch is).
. "$(dirname "$0")/lib.bash"
J=(--json "$TMP/report.json")
cd "$TMP"
# A reader and writer written here from the format's specification, so that
# kverify's files are checked against an independent implementation.
cat > st.py <<'PY'
import json, struct, sys
SIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "U8": 1, "U16": 2, "I32": 4, "I64": 8}
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__", {})
    data = b[8 + n:]
    return meta, {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in h.items()}
def write(path, tensors, meta=None, raw_header=None):
    h, blob = {}, b""
    if meta is not None: h["__metadata__"] = meta
    for k, (dt, shape, data) in tensors.items():
        h[k] = {"dtype": dt, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    hb = raw_header if raw_header is not None else json.dumps(h).encode()
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + blob)
def floats(dt, data):
    if dt == "F32": return list(struct.unpack("<%df" % (len(data) // 4), data))
    if dt == "F64": return list(struct.unpack("<%dd" % (len(data) // 8), data))
    raise ValueError(dt)
PY
export PYTHONPATH=$TMP

# --- rmsnorm-bwd: the three files, their metadata and the .npy route's verdicts
expect_exit 0 "$KV" rmsnorm-bwd --rows 5 --dim 37 --seed 4 --save s --save-format safetensors "${J[@]}"
C=$(ls -d s/*/)
for f in inputs device oracle; do [ -f "$C/$f.safetensors" ] || fail "$f.safetensors not written"; done
[ -f "$C/report.json" ] || fail "report.json not beside the files"
[ ! -e "$C/inputs" ] && [ ! -e "$C/device" ] || fail "--save-format safetensors also wrote .npy folders"
python3 - "$C" <<'PY' || fail "the saved files do not hold the case"
import sys, st
c = sys.argv[1]
meta, t = st.read(c + "/inputs.safetensors")
assert meta["kernel"] == "rmsnorm-bwd" and meta["seed"] == "4" and meta["rows"] == "5" and meta["dim"] == "37", meta
assert meta["format"] == "pt"
assert sorted(t) == ["dy", "w", "x"], sorted(t)
assert t["x"][:2] == ("F32", [5, 37]) and t["w"][:2] == ("F32", [37]), (t["x"][:2], t["w"][:2])
_, d = st.read(c + "/device.safetensors")
assert sorted(d) == ["dw", "dw.chained", "dx", "dx.chained", "r"], sorted(d)
_, o = st.read(c + "/oracle.safetensors")
assert {k: v[0] for k, v in o.items()} == {"r": "F64", "dx": "F64", "dw": "F64"}
# the device's dx is close to the oracle's: the files line up element for element
dx, ox = st.floats("F32", d["dx"][2]), st.floats("F64", o["dx"][2])
assert max(abs(a - b) for a, b in zip(dx, ox)) < 1e-5
PY
expect_exit 0 "$KV" rmsnorm-bwd --rows 5 --dim 37 --seed 4 --save n --json "$TMP/npy.json"
N=$(ls -d n/*/)
verdicts() { python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["cases"]:
    print(c["status"], c["seed"], c["params"])
    for o in c["outputs"]:
        print(" ", o["name"], o["pass"], o["max_ulp"], o["max_bound_ratio"], o["nmse"], o["worst"])' "$1"; }
expect_exit 0 "$KV" rmsnorm-bwd --inputs "$N/inputs" --json "$TMP/a.json"
expect_exit 0 "$KV" rmsnorm-bwd --inputs "$C/inputs.safetensors" --json "$TMP/b.json"
[ "$(verdicts a.json)" = "$(verdicts b.json)" ] || { diff <(verdicts a.json) <(verdicts b.json); fail ".npy and safetensors inputs differ"; }
grep -q '"seed":	4' b.json || fail "the seed did not come from the metadata"
# the device's outputs as the candidate, every output from one file; the
# chained results are kverify's own and are left out
expect_exit 0 "$KV" rmsnorm-bwd --inputs "$C/inputs.safetensors" --candidate "$C/device.safetensors" --no-device "${J[@]}"
[ "$(grep -c '(candidate)' out)" = 3 ] || { cat out; fail "not every output judged as a candidate"; }
expect_exit 0 "$KV" rmsnorm-bwd --inputs "$C/inputs.safetensors" --candidate "dx=$C/device.safetensors" --no-device
grep -q 'dw .*not judged' out || fail "OUTPUT=FILE.safetensors judged more than OUTPUT"
# a wrong dx in the file fails the case
python3 - "$C/device.safetensors" <<'PY'
import struct, sys, st
meta, t = st.read(sys.argv[1])
dt, shape, data = t["dx"]
v = st.floats(dt, data); v[40] *= 1.001
st.write("bad_dx.safetensors", {"dx": (dt, shape, struct.pack("<%df" % len(v), *v)), "dw": t["dw"]}, meta)
PY
expect_exit 1 "$KV" rmsnorm-bwd --inputs "$C/inputs.safetensors" --candidate bad_dx.safetensors --no-device
grep -Eq 'dx .*\[1,3\].* FAIL' out || { cat out; fail "the wrong dx element is not the worst"; }

# --- dtypes: bf16 inputs and outputs (gdn-wu), i32 labels given as I64
# (cross-entropy-bwd), u8 codes (qdq-affine): saved, read back, same verdicts
for args in "gdn-wu --seq 40 --heads 2 --kv-heads 1 --dk 16 --dv 16" "cross-entropy-bwd --rows 3 --classes 20" \
            "qdq-affine --groups 4 --group-size 8"; do
  set -- $args; k=$1; shift
  rm -rf s2 n2
  expect_exit 0 "$KV" $k "$@" --save s2 --save-format safetensors --json "$TMP/a.json"
  expect_exit 0 "$KV" $k --inputs "$(ls -d s2/*/)inputs.safetensors" --json "$TMP/b.json"
  [ "$(verdicts a.json | sed 1d)" = "$(verdicts b.json | sed 1d)" ] || { diff <(verdicts a.json) <(verdicts b.json); fail "$k: verdicts differ"; }
  expect_exit 0 "$KV" $k --inputs "$(ls -d s2/*/)inputs.safetensors" --candidate "$(ls -d s2/*/)device.safetensors" --no-device
done
python3 - "$(ls -d s2/*/)" <<'PY' || fail "qdq-affine's u8 codes or gdn's bf16 not in their dtypes"
import sys, st
_, d = st.read(sys.argv[1] + "device.safetensors")
assert d["q"][0] == "U8", d["q"][0]
PY
rm -rf s2 && expect_exit 0 "$KV" gdn-wu --seq 40 --heads 2 --kv-heads 1 --dk 16 --dv 16 --save s2 --save-format safetensors
python3 -c '
import sys, st
_, t = st.read(sys.argv[1] + "inputs.safetensors")
assert t["k"][0] == "BF16", t["k"][0]' "$(ls -d s2/*/)" || fail "gdn-wu's bf16 k not saved as BF16"
rm -rf s2 && expect_exit 0 "$KV" cross-entropy-bwd --rows 3 --classes 20 --save s2 --save-format safetensors
CE=$(ls -d s2/*/)
python3 - "$CE" <<'PY'
import struct, sys, st
meta, t = st.read(sys.argv[1] + "inputs.safetensors")
dt, shape, data = t["labels"]
assert dt == "I32", dt
labels = struct.unpack("<%di" % (len(data) // 4), data)
t["labels"] = ("I64", shape, struct.pack("<%dq" % len(labels), *labels))
st.write("i64.safetensors", t, meta)
t["labels"] = ("I64", shape, struct.pack("<%dq" % len(labels), *([1 << 40] + list(labels[1:]))))
st.write("i64big.safetensors", t, meta)
PY
expect_exit 0 "$KV" cross-entropy-bwd --inputs "$CE/inputs.safetensors" --json a.json
expect_exit 0 "$KV" cross-entropy-bwd --inputs i64.safetensors --json b.json
[ "$(verdicts a.json | sed 1d)" = "$(verdicts b.json | sed 1d)" ] || fail "I64 labels judged differently from I32"

# --- bad files: one line naming the file and the tensor, exit 3, nothing written
python3 - "$C" <<'PY'
import struct, sys, st
meta, t = st.read(sys.argv[1] + "/inputs.safetensors")
x = t["x"]
st.write("past.safetensors", {}, raw_header=b'{"x":{}}')
b = open("past.safetensors", "rb").read(); open("past.safetensors", "wb").write(struct.pack("<Q", 4096) + b[8:])
st.write("notjson.safetensors", {}, raw_header=b'{"x": [1,')
st.write("overlap.safetensors", {}, raw_header=b'{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}')
open("overlap.safetensors", "ab").write(bytes(6))
st.write("range.safetensors", {}, raw_header=b'{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}')
open("range.safetensors", "ab").write(bytes(4))
st.write("shape.safetensors", {"x": x, "w": t["w"], "dy": ("F32", [5, 36], t["dy"][2][:5 * 36 * 4])}, meta)
st.write("dtype.safetensors", {"x": ("F16", [5, 37], x[2][:5 * 37 * 2]), "w": t["w"], "dy": t["dy"]}, meta)
st.write("dup.safetensors", {}, raw_header=b'{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}')
open("dup.safetensors", "ab").write(bytes(2))
st.write("utf8.safetensors", {}, raw_header=b'{"x\xff":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}')
open("utf8.safetensors", "ab").write(bytes(1))
st.write("kernel.safetensors", t, dict(meta, kernel="gemm-bwd"))
st.write("seed.safetensors", t, dict(meta, seed="-1"))
st.write("f8.safetensors", {"x": ("F8_E4M3", [5, 37], bytes(185)), "w": t["w"], "dy": t["dy"]}, meta)
_, d = st.read(sys.argv[1] + "/device.safetensors")
st.write("unknown.safetensors", {"dx": d["dx"], "dz": d["dx"]})
st.write("input.safetensors", {"dx": d["dx"], "x": t["x"]})
st.write("wide.safetensors", {"dw": ("F32", [38], d["dw"][2] + bytes(4))})
st.write("f64.safetensors", {"dw": ("F64", [37], bytes(8 * 37))})
st.write("empty.safetensors", {}, {"format": "pt"})
PY
I=(--inputs "$C/inputs.safetensors")
bad() { # CODE REGEX ARGS...: also --save's folder is not made
  local code=$1 re=$2; shift 2
  rm -rf "$TMP/never"
  expect_error "$code" "$re" "$KV" rmsnorm-bwd "$@" "${J[@]}" --save "$TMP/never" --save-format safetensors
  [ ! -e "$TMP/never" ] || fail "'$*': made the --save folder despite the error"
}
bad 3 "past.safetensors: header length 4096 runs past the file's" --inputs past.safetensors
bad 3 "notjson.safetensors: the header is not JSON" --inputs notjson.safetensors
bad 3 "overlap.safetensors: tensors 'x' and 'w' overlap" --inputs overlap.safetensors
bad 3 "range.safetensors: tensor 'x': data_offsets \[0, 8\] out of the data's 4 bytes" --inputs range.safetensors
bad 3 "shape.safetensors \(dy\): dy has shape \[5, 36\], expected \[5, 37\]" --inputs shape.safetensors
bad 3 "dtype.safetensors \(x\): x is f16, expected f32" --inputs dtype.safetensors
bad 3 "dup.safetensors: tensor 'x' appears twice" --inputs dup.safetensors
bad 3 "utf8.safetensors: a tensor name is not valid UTF-8" --inputs utf8.safetensors
bad 3 "kernel.safetensors: __metadata__.kernel: the file is for 'gemm-bwd', not rmsnorm-bwd" --inputs kernel.safetensors
bad 3 "seed.safetensors: __metadata__.seed: '-1' is not a seed" --inputs seed.safetensors
bad 3 "f8.safetensors: tensor 'x' is F8_E4M3; kverify reads" --inputs f8.safetensors
bad 3 "empty.safetensors: holds none of rmsnorm-bwd's inputs" --inputs empty.safetensors
bad 3 "unknown.safetensors: tensor 'dz' is not an output of rmsnorm-bwd \(outputs: r dx dw\)" "${I[@]}" --candidate unknown.safetensors --no-device
bad 3 "input.safetensors: tensor 'x' is not an output of rmsnorm-bwd" "${I[@]}" --candidate input.safetensors --no-device
bad 3 "wide.safetensors \(dw\): dw has shape \[38\], expected \[37\]" "${I[@]}" --candidate wide.safetensors --no-device
bad 3 "f64.safetensors \(dw\): dw is f64, expected f32" "${I[@]}" --candidate f64.safetensors --no-device
bad 3 "empty.safetensors: holds no output of rmsnorm-bwd" "${I[@]}" --candidate empty.safetensors --no-device
bad 3 "wide.safetensors: no tensor 'dx'" "${I[@]}" --candidate dx=wide.safetensors --no-device
bad 3 "missing.safetensors: cannot open" "${I[@]}" --candidate missing.safetensors --no-device
bad 2 "--candidate: output 'dw' given twice" "${I[@]}" --candidate "$C/device.safetensors" --candidate dw=wide.safetensors
expect_error 3 "i64big.safetensors: tensor 'labels' \(I64\): element 0 = 1099511627776 does not fit i32" "$KV" cross-entropy-bwd --inputs i64big.safetensors "${J[@]}"
expect_error 2 "--save-format: 'npz' is not npy or safetensors" "$KV" rmsnorm-bwd --save s --save-format npz "${J[@]}"
expect_error 2 "--save-format: needs --save DIR" "$KV" rmsnorm-bwd --save-format safetensors "${J[@]}"
expect_error 2 "--no-device: no output has a candidate .* and no --save DIR" "$KV" rmsnorm-bwd --no-device "${J[@]}"

# --- the PyTorch example: ask and judge need no torch; the outputs here are
# computed in plain Python (float64, rounded to f32) and written by st.py
EX="$KV_SRC/examples/pytorch/rmsnorm_bwd.py"
export KVERIFY="$KV"
run python3 "$EX" --rows 3 --dim 40 --seed 2 --work ex --ask-only
[ "$RC" = 0 ] || { cat err; fail "the example's ask step exited $RC"; }
CASE=$(cat out)
[ -f "$CASE/inputs.safetensors" ] || fail "the example's ask step printed '$CASE'"
python3 - "$CASE" <<'PY'
import math, struct, sys, st
meta, t = st.read(sys.argv[1] + "/inputs.safetensors")
rows, dim, eps = int(meta["rows"]), int(meta["dim"]), float(meta["eps"])
x, w, dy = (st.floats("F32", t[n][2]) for n in ("x", "w", "dy"))
f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]
r, dx, dw = [], [], [0.0] * dim
for b in range(rows):
    xs, ys = x[b * dim:(b + 1) * dim], dy[b * dim:(b + 1) * dim]
    rb = 1 / math.sqrt(sum(v * v for v in xs) / dim + eps)
    s = sum(ys[i] * xs[i] * w[i] for i in range(dim))
    r.append(rb)
    dx += [rb * (ys[k] * w[k] - xs[k] * s * rb * rb / dim) for k in range(dim)]
    for i in range(dim): dw[i] += ys[i] * xs[i] * rb
pack = lambda v: struct.pack("<%df" % len(v), *map(f32, v))
st.write("py.safetensors", {"r": ("F32", [rows], pack(r)), "dx": ("F32", [rows, dim], pack(dx)), "dw": ("F32", [dim], pack(dw))})
dw[7] *= 1.0001
st.write("py_bad.safetensors", {"r": ("F32", [rows], pack(r)), "dx": ("F32", [rows, dim], pack(dx)), "dw": ("F32", [dim], pack(dw))})
PY
run python3 "$EX" --judge "$CASE" py.safetensors
[ "$RC" = 0 ] || { cat out err; fail "the example's judge step failed correct outputs ($RC)"; }
run python3 "$EX" --judge "$CASE" py_bad.safetensors
[ "$RC" = 1 ] || { cat out err; fail "the example's judge step passed a wrong dw ($RC)"; }
if python3 -c "import torch, safetensors" 2>/dev/null; then
  run python3 "$EX" --rows 16 --dim 300 --work ex2
  [ "$RC" = 0 ] || { cat out err; fail "the PyTorch example failed ($RC)"; }
  run python3 "$EX" --rows 16 --dim 300 --work ex3 --bug
  [ "$RC" = 1 ] || { cat out err; fail "the PyTorch example's --bug passed ($RC)"; }
else
  echo "torch not installed: the example's compute step was not run"
fi

# --- a suite's "candidates" may be one .safetensors file
cp "$C/device.safetensors" dev.safetensors
printf '{"cases": [{"kernel": "rmsnorm-bwd", "inputs": "%s", "candidates": "dev.safetensors", "no_device": true}]}' \
  "$C/inputs.safetensors" > suite.json
expect_exit 0 "$KV" run suite.json
[ "$(grep -c '(candidate)' out)" = 3 ] || { cat out; fail "the suite's candidates file was not judged whole"; }
