# --bench: per-stage timings after warm-up with the fewest bytes and the
# counted flops, in the table and the JSON report; a baseline flags a
# slowdown; bad values.
. "$(dirname "$0")/lib.bash"
expect_exit 0 "$KV" rmsnorm-bwd --rows 8 --dim 100 --bench 4 --json "$TMP/r.json"
grep -Eq '^  bench dx +min [0-9.]+ ms, median [0-9.]+ ms over 4 runs: [0-9.]+ GB/s$' "$TMP/out" || fail "bench rows"
expect_exit 0 "$KV" gemm-bwd --m 24 --n 20 --k 16 --bench 3 --json "$TMP/g.json"
python3 - "$TMP/r.json" "$TMP/g.json" <<'PY' || fail "bench figures"
import json, sys
r = json.load(open(sys.argv[1]))["cases"][0]["bench"]
assert r["runs"] == 4 and set(r["stages"]) == {"r", "dx", "dw"}
st = r["stages"]
assert st["r"]["bytes"] == 8 * 100 * 4 + 8 * 4                   # x in, r out
assert st["dx"]["bytes"] == 3 * 8 * 100 * 4 + 100 * 4 + 8 * 4      # x, dy, dx; w; r
for s in st.values():
    assert 0 < s["min_ms"] <= s["median_ms"] and s["flops"] == 0
g = json.load(open(sys.argv[2]))["cases"][0]["bench"]["stages"]
assert g["dA"]["flops"] == 2 * 24 * 20 * 16 and g["dA"]["gflop_per_s"] > 0
PY
# A baseline whose stages ran ten times faster: the slowdown is a regression.
python3 - "$TMP/r.json" "$TMP/fast.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["cases"][0]["bench"]["stages"].values(): s["min_ms"] /= 10
json.dump(d, open(sys.argv[2], "w"))
PY
expect_exit 1 "$KV" compare "$TMP/fast.json" "$TMP/r.json"
grep -Eq 'REGRESSION .* stage dx +bench min time' "$TMP/out" || fail "the slowdown was not reported"
expect_error 2 "--bench: 0 is out of range" "$KV" rmsnorm-bwd --bench 0 --json "$TMP/report.json"
expect_error 2 "--bench: 1001 is out of range" "$KV" rmsnorm-bwd --bench 1001 --json "$TMP/report.json"
