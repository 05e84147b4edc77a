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
    # GB/s of the fewest bytes at the fastest time (bytes / ms / 1e6).
    assert abs(s["gb_per_s"] - s["bytes"] / s["min_ms"] / 1e6) <= 1e-9 * s["gb_per_s"], s
    # The driver's compile statistics: null where the device gives none,
    # else names with numbers.
    c = s["compiler"]
    assert c is None or (c and all(isinstance(v, (int, float)) for v in c.values())), c
g = json.load(open(sys.argv[2]))["cases"][0]["bench"]["stages"]
assert g["dA"]["flops"] == 2 * 24 * 20 * 16 and g["dA"]["gflop_per_s"] > 0
assert abs(g["dA"]["gflop_per_s"] - g["dA"]["flops"] / g["dA"]["min_ms"] / 1e6) <= 1e-9 * g["dA"]["gflop_per_s"]
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
# --bench-warmup S keeps the device busy at least S seconds before timing
# (a lower bound on the wall time), and the report records S; bad values.
python3 -c 'import json, sys; b = json.load(open(sys.argv[1]))["cases"][0]["bench"]; assert b["warmup_s"] == 0.5, b' \
  "$TMP/r.json" || fail "the default warm-up is not 0.5 s in the report"
t0=$EPOCHREALTIME
expect_exit 0 "$KV" rmsnorm-bwd --rows 8 --dim 100 --bench 2 --bench-warmup 1.5 --json "$TMP/w.json"
python3 -c 'import sys; assert float(sys.argv[2]) - float(sys.argv[1]) >= 1.5, sys.argv' "$t0" "$EPOCHREALTIME" ||
  fail "--bench-warmup 1.5 finished in under 1.5 s"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["cases"][0]["bench"]["warmup_s"] == 1.5' "$TMP/w.json" ||
  fail "the report does not record --bench-warmup"
for bad in -1 60.5 abc nan inf ""; do
  expect_error 2 "--bench-warmup" "$KV" rmsnorm-bwd --bench 2 --bench-warmup "$bad" --json "$TMP/report.json"
done

# kverify devices --measure: ceilings measured, cached per device, listed,
# and used by --bench; no cache directory, a bad device, bad options.
export XDG_CACHE_HOME="$TMP/cache"
expect_exit 0 "$KV" rmsnorm-bwd --rows 8 --dim 100 --bench 2 --json "$TMP/nocache.json"
grep -q 'of copy' "$TMP/out" && fail "a share of copy without measured ceilings"
expect_exit 0 "$KV" devices --measure
grep -Eq '^  copy [0-9.]+ GB/s' "$TMP/out" || fail "no copy ceiling printed"
grep -Eq '^  f32 matmul [0-9.]+ GFLOP/s \(gemm-bwd f32 stage d[AB], 256\^3\)' "$TMP/out" || fail "no f32 ceiling printed"
grep -Eq '^  f16 matmul [0-9.]+ GFLOP/s \(gemm-bwd f16' "$TMP/out" || fail "no f16 ceiling printed"
expect_exit 0 "$KV" devices
grep -q '^device 0 ceilings, measured ' "$TMP/out" || fail "devices does not list the cached ceilings"
expect_exit 0 "$KV" gemm-bwd --m 64 --n 64 --k 64 --bench 2 --json "$TMP/cached.json"
grep -Eq '^  bench dA .*GB/s \([0-9.e+-]+% of copy\), [0-9.]+ GFLOP/s \([0-9.e+-]+% of matmul\)$' "$TMP/out" ||
  fail "bench rows without shares of the ceilings"
python3 - "$TMP/cache/kverify/ceilings.json" "$TMP/cached.json" "$TMP/nocache.json" <<'PY' || fail "ceilings"
import json, sys
cache = json.load(open(sys.argv[1]))["devices"]
assert len(cache) == 1 and cache[0]["copy_gb_per_s"] > 0 and cache[0]["f32_gflop_per_s"] > 0
assert cache[0]["copy_gb_per_s"] == max(cache[0]["transfer_copy_gb_per_s"], cache[0]["shader_copy_gb_per_s"])
rep = json.load(open(sys.argv[2]))
ceil = rep["device"]["ceilings"]
assert abs(ceil["f32_gflop_per_s"] - cache[0]["f32_gflop_per_s"]) < 1e-6 * ceil["f32_gflop_per_s"]
st = rep["cases"][0]["bench"]["stages"]["dA"]
assert abs(st["pct_of_matmul"] - 100 * st["gflop_per_s"] / ceil["f32_gflop_per_s"]) < 1e-6 * st["pct_of_matmul"]
assert abs(st["pct_of_copy"] - 100 * st["gb_per_s"] / ceil["copy_gb_per_s"]) < 1e-6 * st["pct_of_copy"]
none = json.load(open(sys.argv[3]))
assert none["device"]["ceilings"] is None and none["cases"][0]["bench"]["stages"]["r"]["pct_of_copy"] is None
PY
# A second measurement replaces the device's entry instead of adding one.
expect_exit 0 "$KV" devices --measure
python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["devices"]) == 1' "$TMP/cache/kverify/ceilings.json" ||
  fail "a second measurement added an entry"
# A corrupt cache is ignored, and a measurement replaces it.
echo '{"devices": [{"name": 3' > "$TMP/cache/kverify/ceilings.json"
expect_exit 0 "$KV" devices
grep -q 'ceilings, measured' "$TMP/out" && fail "a corrupt cache was listed"
expect_exit 0 "$KV" rmsnorm-bwd --rows 8 --dim 100 --bench 2
expect_exit 0 "$KV" devices --measure
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/cache/kverify/ceilings.json" || fail "cache not rewritten"
cp "$TMP/cache/kverify/ceilings.json" "$TMP/before.json"
expect_error 2 "--device: no usable device with index 99" "$KV" devices --measure --device 99
cmp -s "$TMP/before.json" "$TMP/cache/kverify/ceilings.json" || fail "a failed measurement changed the cache"
expect_error 2 "unknown option '--bogus'" "$KV" devices --bogus
expect_error 2 "missing value for '--device'" "$KV" devices --measure --device
expect_error 2 "--device only applies with --measure" "$KV" devices --device 0
touch "$TMP/file"
XDG_CACHE_HOME="$TMP/file" HOME="$TMP/file" expect_error 2 "no cache directory for the ceilings" "$KV" devices --measure
