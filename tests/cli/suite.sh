# kverify run: the smoke suite, sharding and merge (equal to the unsharded
# report apart from times), --filter, a baseline that catches a mutant,
# a suite whose case errors, a killed run that leaves the report intact, and
# bad input.
. "$(dirname "$0")/lib.bash"
S="$KV_SRC/suites/smoke.json"
expect_exit 0 "$KV" run "$S" --json "$TMP/all.json" --junit "$TMP/all.xml"
n=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['cases'])" "$TMP/all.json")
[ "$n" -ge 40 ] || fail "smoke suite ran only $n cases"
same() { # same report apart from times and the command line (a merge names its own)
  python3 - "$1" "$2" <<'PY'
import json, sys
def strip(d):
    for c in d["cases"]: c.pop("time_ms", None)
    d["kverify"].pop("command", None)
    return d
a, b = (strip(json.load(open(p))) for p in sys.argv[1:3])
assert a == b, "reports differ"
PY
}
# A filter selects by case name (a built-in and a spec kernel here); its shards,
# merged in any order, give the unsharded report.
F='^(qdq-affine|softmax-bwd)'
expect_exit 0 "$KV" run "$S" --filter "$F" --json "$TMP/q.json"
python3 - "$TMP/q.json" "$TMP/all.json" <<'PY' || fail "--filter"
import json, sys
c = json.load(open(sys.argv[1]))["cases"]
every = [x["name"] for x in json.load(open(sys.argv[2]))["cases"]]
assert {x["kernel"] for x in c} == {"qdq-affine", "softmax-bwd"}, {x["kernel"] for x in c}
assert [x["name"] for x in c] == [n for n in every if n.split("[")[0] in ("qdq-affine", "softmax-bwd")]
PY
for i in 1 2 3; do expect_exit 0 "$KV" run "$S" --filter "$F" --shard "$i/3" --json "$TMP/q$i.json"; done
expect_exit 0 "$KV" merge "$TMP/q3.json" "$TMP/q1.json" "$TMP/q2.json" -o "$TMP/qm.json"
same "$TMP/q.json" "$TMP/qm.json" || fail "merged shards differ from the unsharded report"
expect_error 3 "two reports hold case" "$KV" merge "$TMP/q1.json" "$TMP/q1.json" -o "$TMP/report.json"

# A baseline run against a mutant reports the regression and exits 1.
mkdir -p "$TMP/mut" && cp "$KV_SRC"/shaders/* "$TMP/mut/"
patch -s -p1 -d "$TMP/mut" < "$KV_SRC/tests/mutants/qdq-round-half-even.patch" || fail "patch"
Q=(qdq-affine --groups 16 --group-size 8 --bits 1 --dist ties)
expect_exit 0 "$KV" "${Q[@]}" --json "$TMP/base.json"
expect_exit 0 "$KV" "${Q[@]}" --baseline "$TMP/base.json"
grep -q '^0 regressions' "$TMP/out" || fail "a run equal to its baseline must show no regression"
expect_exit 1 "$KV" "${Q[@]}" --shader init="$TMP/mut/qdq_affine_init.comp" --baseline "$TMP/base.json" --json "$TMP/cur.json"
grep -Eq 'REGRESSION .* q +newly failing' "$TMP/out" || fail "the baseline did not report the newly failing codes"
expect_exit 1 "$KV" compare "$TMP/base.json" "$TMP/cur.json"
grep -Eq '^[1-9][0-9]* regressions' "$TMP/out" || fail "compare: no regressions counted"
expect_exit 0 "$KV" compare "$TMP/cur.json" "$TMP/base.json"
grep -q 'improved' "$TMP/out" || fail "compare: improvements not listed"
# A baseline whose fields a comparison reads have another type is bad input,
# not a case without outputs or a ratio of 0 (which would hide a regression).
edit() { # edit PYTHON-EDIT: base.json with d edited, as $TMP/bad.json
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(d, open(sys.argv[3], 'w'))" \
    "$TMP/base.json" "$1" "$TMP/bad.json"
}
edit "d['cases'][0]['outputs'][1]['max_bound_ratio'] = '12'"
expect_error 3 'bad.json: cases\[0\].outputs\[1\].max_bound_ratio: not a number' "$KV" compare "$TMP/bad.json" "$TMP/cur.json"
edit "d['cases'][0]['outputs'] = {'q': d['cases'][0]['outputs'][0]}"
expect_error 3 'bad.json: cases\[0\].outputs: not a list' "$KV" "${Q[@]}" --baseline "$TMP/bad.json" --json "$TMP/report.json"
edit "d['cases'][0]['outputs'][0]['pass'] = 'yes'"
expect_error 3 'bad.json: cases\[0\].outputs\[0\].pass: not true or false' "$KV" compare "$TMP/cur.json" "$TMP/bad.json"
edit "d['cases'][0]['status'] = None"
expect_error 3 'bad.json: cases\[0\].status: not a string' "$KV" merge "$TMP/bad.json" -o "$TMP/report.json"
edit "d['cases'][0]['outputs'][0]['max_ulp'] = 'Infinity'"  # a report's own spelling of the infinity
expect_exit 1 "$KV" compare "$TMP/cur.json" "$TMP/bad.json"
grep -Eq 'REGRESSION .* max ULP .*-> inf$' "$TMP/out" || fail "compare: an infinite max ULP not read as one"

# An entry that errors (its inputs file is missing) does not stop the others.
cat > "$TMP/err.json" <<'JSON'
{"cases": [
  {"kernel": "rmsnorm-bwd", "params": {"rows": 3, "dim": 7}},
  {"kernel": "rmsnorm-bwd", "name": "missing", "inputs": "no/such/file.npz"},
  {"kernel": "qdq-affine", "params": {"groups": 4}}
]}
JSON
expect_exit 3 "$KV" run "$TMP/err.json" --json "$TMP/e.json"
python3 - "$TMP/e.json" <<'PY' || fail "the erroring entry"
import json, sys
c = json.load(open(sys.argv[1]))["cases"]
assert [x["status"] for x in c] == ["pass", "error", "pass"], [x["status"] for x in c]
assert "no/such/file.npz" in c[1]["error"] and c[1]["name"] == "rmsnorm-bwd[missing]"
PY

# Killed half-way through writing its report (the write pauses there under
# KVERIFY_TEST_WRITE_PAUSE_MS), a run leaves the previous report whole.
printf '{"cases": [{"kernel": "rmsnorm-bwd", "params": {"rows": 3, "dim": 7}, "seeds": "1..50"}]}' > "$TMP/many.json"
cp "$TMP/base.json" "$TMP/keep.json"
KVERIFY_TEST_WRITE_PAUSE_MS=20000 "$KV" run "$TMP/many.json" --json "$TMP/base.json" > /dev/null 2>&1 & pid=$!
# The temporary file appears (fopen) a moment before its first half is
# flushed, so wait for bytes in it, not for the name alone.
tmp_size() { stat -c %s "$TMP"/base.json.tmp.* 2> /dev/null || echo 0; }
for _ in $(seq 1 600); do [ "$(tmp_size)" -gt 0 ] && break; sleep 0.05; done
ls "$TMP"/base.json.tmp.* > /dev/null 2>&1 || { kill -9 "$pid"; fail "the run never reached its write"; }
[ "$(tmp_size)" -gt 0 ] || { kill -9 "$pid"; fail "nothing written before the pause"; }
kill -9 "$pid"; wait "$pid" 2>/dev/null
cmp -s "$TMP/base.json" "$TMP/keep.json" || fail "killed mid-write, the run changed the previous report"
rm -f "$TMP"/base.json.tmp.*
# Without the pause the same run replaces the report whole.
expect_exit 0 "$KV" run "$TMP/many.json" --json "$TMP/base.json"
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['summary']['cases'] == 50" "$TMP/base.json" || fail "new report"

# --seed-offset K moves every drawn case's seeds on by K (a count, a range, a
# first seed); an entry whose inputs come from a file, or whose outputs are
# candidates made at their seed, keeps its seed (the candidates here pass only
# at the seed they were saved at: the offset moved onto them fails them).
"$KV" rmsnorm-bwd --rows 3 --dim 7 --seed 5 --save "$TMP/sv" > /dev/null 2>&1 || fail "--save"
D=$(echo "$TMP"/sv/*/device)
cat > "$TMP/off.json" <<JSON
{"cases": [
  {"kernel": "rmsnorm-bwd", "params": {"rows": 3, "dim": 7}},
  {"kernel": "rmsnorm-bwd", "params": {"rows": 3, "dim": 8}, "seeds": "3..4"},
  {"kernel": "softmax-bwd", "params": {"rows": 2, "dim": 5}, "seed": 7, "seeds": 2},
  {"kernel": "rmsnorm-bwd", "name": "fixture", "inputs": "$KV_SRC/fixtures/rmsnorm-bwd/odd_3x7.json"},
  {"kernel": "rmsnorm-bwd", "params": {"rows": 3, "dim": 7}, "seed": 5, "no_device": true,
   "candidates": {"r": "$D/r.npy", "dx": "$D/dx.npy", "dw": "$D/dw.npy"}}
]}
JSON
expect_exit 0 "$KV" run "$TMP/off.json" --json "$TMP/off0.json"
expect_exit 0 "$KV" run "$TMP/off.json" --seed-offset 100 --json "$TMP/off100.json"
python3 - "$TMP/off0.json" "$TMP/off100.json" <<'PY' || fail "--seed-offset"
import json, sys
a, b = ([c["seed"] for c in json.load(open(p))["cases"]] for p in sys.argv[1:3])
assert a[:5] == [1, 3, 4, 7, 8] and b[:5] == [101, 103, 104, 107, 108], (a, b)
assert a[5:] == b[5:] and a[6] == 5, (a, b)  # the fixture's seed and the candidates' stay
cs = json.load(open(sys.argv[2]))["cases"]
assert "seed=101]" in cs[0]["name"] and cs[0]["command"].endswith("--seed 101"), cs[0]
PY

# Bad input: one line, the documented code, nothing written.
J=(--json "$TMP/report.json")
expect_error 2 "run: no suite file given" "$KV" run
expect_error 2 "--shard I: 4 is out of range" "$KV" run "$S" --shard 4/3 "${J[@]}"
expect_error 2 "--shard: 'x' is not I/N" "$KV" run "$S" --shard x "${J[@]}"
expect_error 2 "--filter: '\(' is not a regular expression" "$KV" run "$S" --filter '(' "${J[@]}"
expect_error 2 "--regress-factor: 0.5 is out of range" "$KV" run "$S" --regress-factor 0.5 "${J[@]}"
expect_error 2 "--seed-offset: -1 is out of range" "$KV" run "$S" --seed-offset -1 "${J[@]}"
expect_error 2 "--seed-offset: 'x' is not an integer" "$KV" run "$S" --seed-offset x "${J[@]}"
expect_error 2 "--timeout: 'x' is not a number" "$KV" run "$S" --timeout x "${J[@]}"
expect_error 4 "the device has not finished a submission after 1e-06 s" "$KV" run "$S" --timeout 0.000001 "${J[@]}"
# a case whose stage runs past --timeout ends the run: the reports hold the
# cases before it and it, an error; the case after it is not run
cat > "$TMP/hang.json" <<JSON
{"cases": [
  {"kernel": "rmsnorm-bwd", "params": {"rows": 3, "dim": 7}},
  {"kernel": "rmsnorm-bwd", "name": "spin", "params": {"rows": 16384, "dim": 64},
   "shader": {"r": "$KV_SRC/tests/shaders/spin_r.comp"}},
  {"kernel": "qdq-affine", "params": {"groups": 4}}
]}
JSON
expect_exit 4 "$KV" run "$TMP/hang.json" --timeout 3 --json "$TMP/hang_r.json"
grep -q '^kverify: rmsnorm-bwd\[rows=16384,dim=64,eps=1e-06,seed=1\]: the device has not finished a submission after 3 s' "$TMP/err" || fail "run --timeout: $(cat "$TMP/err")"
python3 - "$TMP/hang_r.json" <<'PY' || fail "run --timeout: the report"
import json, sys
c = json.load(open(sys.argv[1]))["cases"]
assert [x["status"] for x in c] == ["pass", "error"], [x["status"] for x in c]
assert c[1]["name"] == "rmsnorm-bwd[rows=16384,dim=64,eps=1e-06,seed=1]" and "--timeout" in c[1]["error"], c[1]
PY
printf '{"cases": [{"kernel": "rmsnorm-bwd", "seed": "9223372036854775000", "seeds": 3}]}' > "$TMP/big.json"
expect_error 2 'cases\[0\]: --seed-offset 806 moves seed 9223372036854775000 past 2\^63-1' \
  "$KV" run "$TMP/big.json" --seed-offset 806 "${J[@]}"
# an option after the suite file is named, not the file (getopt moves the file later)
expect_error 2 "run: missing value for --seed-offset" "$KV" run "$S" "${J[@]}" --seed-offset
expect_error 2 "run: unknown option '--colour'" "$KV" run "$S" --colour "${J[@]}"
expect_error 2 "report: unknown option '--colour'" "$KV" report "$TMP/cur.json" --colour
printf '{"cases": [{"kernel": "rmsnorm-bwd", "colour": 1}]}' > "$TMP/bad1.json"
expect_error 2 'cases\[0\]: unknown key "colour"' "$KV" run "$TMP/bad1.json" "${J[@]}"
printf '{"cases": [{"kernel": "rmsnorm-bwd", "name": 5}]}' > "$TMP/bad1n.json"
expect_error 2 'cases\[0\]: "name" must be a string' "$KV" run "$TMP/bad1n.json" "${J[@]}"
printf '{"cases": [{"kernel": "nope"}]}' > "$TMP/bad2.json"
expect_error 2 'unknown kernel "nope"' "$KV" run "$TMP/bad2.json" "${J[@]}"
printf '{"cases": [{"kernel": "rmsnorm-bwd", "params": {"rows": 0}}]}' > "$TMP/bad3.json"
expect_error 2 'cases\[0\] \(rmsnorm-bwd\): --rows: 0 is out of range' "$KV" run "$TMP/bad3.json" "${J[@]}"
printf '{"cases": [' > "$TMP/bad4.json"
expect_error 3 "bad4.json: not JSON" "$KV" run "$TMP/bad4.json" "${J[@]}"
expect_error 3 "not JSON" "$KV" compare "$TMP/bad4.json" "$TMP/cur.json"
expect_error 2 "compare: needs two reports" "$KV" compare "$TMP/cur.json"
expect_error 2 "merge: no output given" "$KV" merge "$TMP/q1.json"
expect_error 3 "not a kverify report" "$KV" merge "$TMP/bad1.json" -o "$TMP/report.json"
# "no_stress": a sweep without its stress runs; a value that is not a boolean is a usage error
printf '{"cases": [{"kernel": "rmsnorm-bwd", "sweep": true, "seeds": 1, "no_stress": true}]}' > "$TMP/ns.json"
expect_exit 0 "$KV" run "$TMP/ns.json" --json "$TMP/ns.out.json"
python3 -c 'import json,sys; cs=json.load(open(sys.argv[1]))["cases"]; assert cs and all(c["stress"] is None for c in cs)' "$TMP/ns.out.json" \
  || fail "no_stress: the sweep made stress runs"
printf '{"cases": [{"kernel": "rmsnorm-bwd", "no_stress": 3}]}' > "$TMP/ns_bad.json"
expect_error 2 '"no_stress" must be true or false' "$KV" run "$TMP/ns_bad.json" "${J[@]}"
