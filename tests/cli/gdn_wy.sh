# gdn-wy-bwd: the sweep (T = 1, 63, 64, 65, 130, 70, 40, 100, 128, 66, 50, 20, 10, 300, 27;
# GQA ratios 1, 2, 4; K and V from 8 to 192, not multiples of 32 or 8 (K = 63: % 7 == % 9 ==
# 0; V = 63 with K = 64; K = 17 with V = 24); B = 2; A dense at nv = 36 and 27; NaN and Inf
# inputs) in both variants, both oracles, the conditioning note, the independent fixtures,
# the round trip through files that judges another backend's outputs, and bad input.
. "$(dirname "$0")/lib.bash"
J=(--json "$TMP/report.json")
expect_exit 0 "$KV" gdn-wy-bwd --seq 70 --heads 4 --kv-heads 2 --dk 32 --dv 24 --json "$TMP/d.json"
python3 - "$TMP/d.json" <<'PY' || fail "default report"
import json, sys
c = json.load(open(sys.argv[1]))["cases"][0]
o = {x["name"]: x for x in c["outputs"]}
assert [x["name"] for x in c["outputs"]] == ["dk_head", "dv", "dbeta", "dg", "dk", "dk.chained"], list(o)
assert o["dk"]["shape"] == [1, 70, 2, 32] and o["dk_head"]["shape"] == [1, 70, 4, 32], o["dk"]["shape"]
assert o["dk"]["dtype"] == "bf16" and o["dbeta"]["dtype"] == "f32" and o["dg"]["dtype"] == "f32"
assert o["dk_head"]["stage"] == "wy" and o["dk"]["stage"] == "dk" and o["dk.chained"]["chained"]
# a flip of an intermediate bf16 cast reaches every dk_head element; dv has no intermediate cast
assert o["dk_head"]["ambiguous"] > 0 and o["dv"]["ambiguous"] == 0
assert all(x["pass"] for x in c["outputs"])
PY
expect_exit 0 "$KV" gdn-wy-bwd --sweep --seeds 1
grep -q '^18 cases: 18 passed, 0 failed, 0 errors, 0 skipped' "$TMP/out" || fail "sweep: expected 18 passing cases"
# (a-bf16 builds from the fma sources, whose sweep above has the sanitized run)
expect_exit 0 "$KV" gdn-wy-bwd --sweep --seeds 1 --variant a-bf16 --no-sanitize
grep -q '^18 cases: 18 passed' "$TMP/out" || fail "a-bf16 sweep"

# --sample: every output is sampled, the intermediate dk_head too, and the oracle holds
# only the sampled elements; its report is the one the whole oracle gives on the same
# sample (both oracles, NaN and Inf included), and a planted bug in stage dk (its last
# value head dropped from the sum) still fails dk.
S=(gdn-wy-bwd --seq 130 --heads 4 --kv-heads 2 --dk 40 --dv 71 --dist nonfinite --oracle both --sample 60)
expect_compact_oracle "$KV" "${S[@]}"
python3 - "$TMP/sc.json" <<'PY' || fail "--sample: the intermediate dk_head sampled"
import json, sys
names = [o["name"] for o in json.load(open(sys.argv[1]))["cases"][0]["outputs"]]
assert names[:6] == ["dk_head", "dv", "dbeta", "dg", "dk", "dk.chained"] and "dk_head.exact" in names, names
PY
mkdir -p "$TMP/mutdk" && sed 's/r < ratio;/r + 1u < ratio;/' "$KV_SRC/shaders/gdn_wy_bwd_dk.comp" > "$TMP/mutdk/gdn_wy_bwd_dk.comp"
grep -q 'r + 1u < ratio' "$TMP/mutdk/gdn_wy_bwd_dk.comp" || fail "planting the dk bug"
expect_exit 1 "$KV" "${S[@]}" --shader dk="$TMP/mutdk/gdn_wy_bwd_dk.comp" --json "$TMP/sm.json"
python3 - "$TMP/sm.json" <<'PY' || fail "--sample: the planted dk bug"
import json, sys
o = {x["name"]: x for x in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
assert not o["dk"]["pass"] and o["dk_head"]["pass"] and o["dv"]["pass"], [(n, x["pass"]) for n, x in o.items()]
PY

# --sample on a chunk-local kernel: every output's random elements lie in one pool of
# max(8, N/256) chunks (here 8 of 32, the first and last chunks of both sequences among
# them), so the oracle computes only those chunks' items; its report is the one the whole
# oracle gives, and each output holds at most N + 2 rows of elements. The saved oracle
# (NaN outside the sample) shows the chunks.
S=(gdn-wy-bwd --batch 2 --seq 1000 --heads 4 --kv-heads 2 --dk 40 --dv 33 --sample 60)
expect_compact_oracle "$KV" "${S[@]}"
expect_exit 0 "$KV" "${S[@]}" --save "$TMP/pool"
python3 - "$TMP/sc.json" "$TMP"/pool/*/oracle <<'PY' || fail "--sample: the pool of chunks"
import array, ast, json, math, os, sys
cols = {"dk_head": 40, "dv": 33, "dbeta": 4, "dg": 4, "dk": 40}
for o in json.load(open(sys.argv[1]))["cases"][0]["outputs"]:
    n = o["name"].split(".")[0]
    assert o["elements"] <= 60 + 2 * cols[n], (o["name"], o["elements"])
chunks = set()
for n in cols:
    raw = open(os.path.join(sys.argv[2], n + ".npy"), "rb").read()
    hl = int.from_bytes(raw[8:10], "little")
    hdr = ast.literal_eval(raw[10:10 + hl].decode())
    assert hdr["descr"] == "<f8", hdr
    a = array.array("d", raw[10 + hl:])
    inner = len(a) // 2000
    chunks |= {(i // inner // 1000, i // inner % 1000 // 64) for i, v in enumerate(a) if not math.isnan(v)}
assert len(chunks) <= 8 and {(0, 0), (1, 15), (0, 15), (1, 0)} <= chunks, sorted(chunks)
PY

# --dist nonfinite: a NaN in beta, +Inf in dw, -Inf, +Inf and a NaN in du. Every output of
# the chunks they reach is NaN or Inf where the oracle's is (matches counted, no
# mismatch), and the outputs of the other chunks stay finite and within bounds.
expect_exit 0 "$KV" gdn-wy-bwd --seq 130 --heads 4 --kv-heads 2 --dk 24 --dv 40 --dist nonfinite --json "$TMP/nf.json"
python3 - "$TMP/nf.json" <<'PY' || fail "--dist nonfinite"
import json, sys
c = json.load(open(sys.argv[1]))["cases"][0]
o = {x["name"]: x for x in c["outputs"]}
for n in ("dk_head", "dv", "dbeta", "dg", "dk"):
    m = o[n]
    assert m["nan_match"] > 0 and m["nan_mismatch"] == 0 and m["inf_mismatch"] == 0, (n, m)
    assert m["elements"] > m["nan_match"] + m["inf_match"] and m["pass"], (n, m)
assert o["dv"]["inf_match"] > 0, o["dv"]
PY

# --oracle both: the exact gradient (A recomputed from k, beta, g) beside, unjudged;
# the casts cost more than the f32 accumulations.
expect_exit 0 "$KV" gdn-wy-bwd --seq 65 --heads 2 --kv-heads 1 --dk 24 --dv 16 --oracle both --json "$TMP/b.json"
python3 - "$TMP/b.json" <<'PY' || fail "--oracle both"
import json, sys
o = {x["name"]: x for x in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
assert o["dk_head"]["judged"] and o["dk_head"]["pass"] and not o["dk_head.exact"]["judged"]
assert o["dg.exact"]["oracle"] == "exact" and o["dg.exact"]["max_ulp"] > o["dg"]["max_ulp"]
PY
expect_exit 0 "$KV" gdn-wy-bwd --seq 64 --dk 32 --dv 16 --dist random
grep -q 'note: A = (I+L)^-1 is ill-conditioned' "$TMP/out" || fail "no conditioning note"

# Fixtures: inputs with expected outputs from scripts/gen-fixtures' numpy spec.
for f in "$KV_SRC"/fixtures/gdn-wy-bwd/*.json; do
  expect_exit 0 "$KV" gdn-wy-bwd --inputs "$f"
  grep -q '^  dk_head.expected .* pass  (expected)' "$TMP/out" || fail "$f: expected dk_head not judged"
  grep -q '^  dg.expected .* pass  (expected)' "$TMP/out" || fail "$f: expected dg not judged"
done

# --save, then the saved inputs and every device output as candidates, no device;
# in the a-bf16 variant as well (A saved as bf16 words).
for variant in fma a-bf16; do
  expect_exit 0 "$KV" gdn-wy-bwd --batch 2 --seq 65 --heads 4 --kv-heads 2 --dk 16 --dv 8 --variant $variant --save "$TMP/s-$variant"
  d=$(ls -d "$TMP/s-$variant"/gdn-wy-bwd_*)
  c=()
  for o in dk_head dv dbeta dg dk; do
    [ -f "$d/device/$o.npy" ] || fail "--save did not write device/$o.npy"
    c+=(--candidate "$o=$d/device/$o.npy")
  done
  expect_exit 0 "$KV" gdn-wy-bwd --variant $variant --inputs "$d/inputs" "${c[@]}" --no-device
  [ "$(grep -c ' pass  (candidate)' "$TMP/out")" = 5 ] || fail "$variant: 5 candidates not judged"
done
# dv's oracle is made in blocks as the judge reads them (kv_gdn_wy_dv_block), not held
# whole: the same report as the whole oracle's, and 16 bytes an element less at the peak
# (here 1.8M elements: more than 20 MB less). H V = 600 does not divide the judge's
# 65536-element blocks: they start inside chunks and rows. Under AddressSanitizer its
# quarantine is off here: it keeps freed memory (the blocks' products free more than the
# whole oracle does), up to 256 MB, which would count in the peak.
expect_lower_peak KVERIFY_TEST_FULL_ORACLE $((20 * 1024)) env "ASAN_OPTIONS=${ASAN_OPTIONS:-}:quarantine_size_mb=0" \
  "$KV" gdn-wy-bwd --seq 3000 --heads 6 --kv-heads 3 --dk 16 --dv 100 --no-stress

# f32 sums past f32's range: du = 3e38 over a whole head. The device's sums overflow to
# Inf where the oracle's float64 sums are finite; each such chunk is flagged (its terms'
# S past f32's range) and its overflows pass as legal, in every output the head reaches.
expect_exit 0 "$KV" gdn-wy-bwd --seq 64 --heads 2 --kv-heads 1 --dk 16 --dv 16 --save "$TMP/ovf"
d=$(ls -d "$TMP/ovf"/gdn-wy-bwd_*)
python3 - "$d/inputs/du.npy" <<'PY' || fail "overflow: the inputs"
import ast, struct, sys
raw = bytearray(open(sys.argv[1], "rb").read())
hl = int.from_bytes(raw[8:10], "little")
hdr = ast.literal_eval(raw[10:10 + hl].decode())
assert hdr["descr"] == "<u2" and hdr["shape"] == (1, 64, 2, 16), hdr
big = struct.unpack("<I", struct.pack("<f", 3e38))[0] >> 16  # bf16 of 3e38
for t in range(64):
    for v in range(16):
        struct.pack_into("<H", raw, 10 + hl + 2 * ((t * 2 + 0) * 16 + v), big)  # head 0
open(sys.argv[1], "wb").write(raw)
PY
expect_exit 0 "$KV" gdn-wy-bwd --inputs "$d/inputs" --json "$TMP/ovf.json"
python3 - "$TMP/ovf.json" <<'PY' || fail "overflow: the legal overflows"
import json, sys
o = {x["name"]: x for x in json.load(open(sys.argv[1]))["cases"][0]["outputs"]}
assert all(x["pass"] for x in o.values()), [(n, x["pass"]) for n, x in o.items()]
for n in ("dk_head", "dv", "dbeta", "dg", "dk.chained"):
    assert o[n]["overflow_ok"] > 0, (n, o[n]["overflow_ok"])
PY

# bf16-coopmat's spec is a-bf16's with the tensor cores' u = 2^-23 for its
# accumulations: a-bf16's device outputs are judged against it with no device
# (which needs no cooperative matrices), and pass.
d=$(ls -d "$TMP/s-a-bf16"/gdn-wy-bwd_*)
c=()
for o in dk_head dv dbeta dg dk; do c+=(--candidate "$o=$d/device/$o.npy"); done
expect_exit 0 "$KV" gdn-wy-bwd --variant bf16-coopmat --inputs "$d/inputs" "${c[@]}" --no-device
[ "$(grep -c ' pass  (candidate)' "$TMP/out")" = 5 ] || fail "bf16-coopmat: 5 candidates not judged"
grep -q 'variant=bf16-coopmat' "$TMP/out" || fail "bf16-coopmat: the case does not name its variant"
expect_error 3 "A is f32, expected bf16" "$KV" gdn-wy-bwd --variant bf16-coopmat --inputs "$(ls -d "$TMP/s-fma"/gdn-wy-bwd_*)/inputs" "${J[@]}"
# On the device, bf16-coopmat runs where KHR cooperative matrices of bfloat16
# are (16x16x16 into f32, 32-wide subgroups) and is skipped, exit 77 with the
# reason, elsewhere; where it runs, its sweep passes.
run "$KV" gdn-wy-bwd --sweep --seeds 1 --variant bf16-coopmat
if "$KV" devices | awk 'NR == 2' | grep -q llvmpipe; then
  [ "$RC" = 77 ] || fail "bf16-coopmat on lavapipe: exit $RC, expected 77 (skipped)"
  grep -q 'skipped: gdn-wy-bwd: stage wy_cm needs VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16' "$TMP/out" ||
    fail "no reason for the skip"
else
  [ "$RC" = 0 ] || fail "bf16-coopmat: exit $RC"
fi
python3 -c 'import sys; h = open(sys.argv[1], "rb").read(128); assert b"<u2" in h, h' \
  "$(ls -d "$TMP"/s-a-bf16/gdn-wy-bwd_*)/inputs/A.npy" || fail "A not saved as bf16 words"
# A candidate that is wrong in one element fails, by name.
d=$(ls -d "$TMP"/s-fma/gdn-wy-bwd_*)
python3 - "$d/device/dg.npy" "$TMP/dg_bad.npy" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[-4:] = bytes(4)  # the last dg element: +0.0
open(sys.argv[2], "wb").write(b)
PY
expect_exit 1 "$KV" gdn-wy-bwd --inputs "$d/inputs" --candidate dg="$TMP/dg_bad.npy" --no-device
grep -q '^  dg .*FAIL  (candidate)' "$TMP/out" || fail "a wrong dg candidate passed"

# Bad input: one line, the documented exit, nothing written.
expect_error 2 "--heads 6 is not a multiple of --kv-heads 4" "$KV" gdn-wy-bwd --heads 6 --kv-heads 4 "${J[@]}"
expect_error 2 "--seq: 0 is out of range" "$KV" gdn-wy-bwd --seq 0 "${J[@]}"
expect_error 2 "--dv: 0 is out of range" "$KV" gdn-wy-bwd --dv 0 "${J[@]}"
expect_error 2 "more than 2\^40 elements" "$KV" gdn-wy-bwd --batch 4096 --seq 1048576 "${J[@]}"
expect_error 2 "--dist: 'uniform' is not one of realistic\|random\|dense\|nonfinite" "$KV" gdn-wy-bwd --dist uniform "${J[@]}"
expect_error 2 "--variant: 'f16' is not one of fma\|a-bf16\|bf16-coopmat" "$KV" gdn-wy-bwd --variant f16 "${J[@]}"
mkdir -p "$TMP/bad" && cp "$d"/inputs/* "$TMP/bad/" && cp "$d/inputs/du.npy" "$TMP/bad/dw.npy"
expect_error 3 "dw has shape \[2, 65, 4, 8\], expected \[2, 65, 4, 16\]" "$KV" gdn-wy-bwd --inputs "$TMP/bad" "${J[@]}"
rm "$TMP/bad/du.npy"
cp "$d/inputs/dw.npy" "$TMP/bad/dw.npy"
expect_error 3 "file du.npy is missing" "$KV" gdn-wy-bwd --inputs "$TMP/bad" "${J[@]}"
expect_error 3 "dk has shape \[2, 65, 4, 8\], expected \[2, 65, 2, 16\]" \
  "$KV" gdn-wy-bwd --inputs "$d/inputs" --candidate dk="$d/device/dv.npy" --no-device "${J[@]}"
expect_error 3 "A is f32, expected bf16" "$KV" gdn-wy-bwd --variant a-bf16 --inputs "$d/inputs" "${J[@]}"
