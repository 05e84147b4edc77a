# kverify mutate end to end on a user's r stage: mutants made, equivalent ones
# not run, a known survivor listed, killed ones counted (a race among them), the JSON report; and
# its bad input.
. "$(dirname "$0")/lib.bash"
cat > "$TMP/r.comp" <<'GLSL'
#version 450
// r[b] = 1/sqrt(mean x[b,:]^2 + eps): 32 partial sums, folded by one invocation.
layout(local_size_x = 32) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer R { float r[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } p;
const float UNUSED = 0.5; // never read: its mutants are equivalent
shared float part[32];
void main()
{
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        float acc = 0.0;
        for (uint i = gl_LocalInvocationID.x; i < p.dim; i += 32u) acc += x[row * p.dim + i] * x[row * p.dim + i];
        part[gl_LocalInvocationID.x] = acc;
        barrier();
        // Every invocation would fold the same sums: which one writes is free,
        // so 0u -> 1u is a survivor no sweep can kill (flipped, 31 store it: a race).
        if (gl_LocalInvocationID.x == 0u) {
            float t = 0.0;
            for (uint k = 0u; k < 32u; k++) t += part[k];
            r[row] = inversesqrt(t / float(p.dim) + p.eps);
        }
        barrier();
    }
}
GLSL
expect_exit 0 "$KV" mutate rmsnorm-bwd --shader r="$TMP/r.comp" --stage r --operators flip,const,step --seeds 1 \
  --json "$TMP/m.json"
grep -Eq '^mutation score [0-9.]+%: [0-9]+ of [0-9]+ killed' "$TMP/out" || { cat "$TMP/out"; fail "no score line"; }
grep -q "survived: r $TMP/r.comp:18:39 const '0u' -> '1u'" "$TMP/out" || { cat "$TMP/out"; fail "the known survivor is not listed"; }
python3 - "$TMP/m.json" <<'PY' || fail "the JSON report"
import json, sys
d = json.load(open(sys.argv[1]))
m = d["mutants"]
by = {}
for x in m: by.setdefault(x["status"], []).append(x)
assert d["kernel"] == "rmsnorm-bwd" and d["stages"][0]["stage"] == "r", d["stages"]
eq = [x for x in by.get("equivalent", []) if x["change"] == "'0.5' -> '1.0'"]
assert eq and eq[0]["line"] == 7, by.get("equivalent")
assert any(x["change"] == "'0u' -> '1u'" for x in by["survived"]), by["survived"]
# several invocations storing r[row] with no barrier between: racecheck-global's row kills it
assert any(x["change"] == "'==' -> '!='" and "racecheck-global" in x.get("detail", "") for x in by["killed"]), by["killed"]
assert any(x["operator"] == "step" for x in by["killed"] + by.get("killed (hang)", [])), m
killed = len(by["killed"]) + len(by.get("killed (hang)", []))
assert killed >= 5, killed
assert abs(d["score"] - 100.0 * killed / (killed + len(by["survived"]))) < 1e-9, d["score"]
assert not any(x["line"] in (1, 3, 4, 5, 6) for x in m), "mutants in a directive or a layout()"
assert not any(x["line"] in (2, 16, 17) for x in m), "mutants in a comment"
PY
# scripts/survivors.py explains the survivors from a list of file:line:col,
# change, kind and reason: the known survivor listed passes, unlisted fails.
printf '| r.comp:18:* | * | equivalent | which invocation writes |\n' > "$TMP/list.md"
python3 "$KV_SRC/scripts/survivors.py" "$TMP/m.json" "$TMP/list.md" > "$TMP/sv" || { cat "$TMP/sv"; fail "a listed survivor not explained"; }
grep -q "^  equivalent  *r .*r.comp:18:39 const" "$TMP/sv" || { cat "$TMP/sv"; fail "the survivor's kind"; }
: > "$TMP/empty.md"
if python3 "$KV_SRC/scripts/survivors.py" "$TMP/m.json" "$TMP/empty.md" > "$TMP/sv"; then fail "an unlisted survivor passed"; fi
grep -q "^  UNEXPLAINED .*r.comp:18:39" "$TMP/sv" || { cat "$TMP/sv"; fail "the unexplained survivor not named"; }
# --list runs nothing; the built-in stages have mutants of every operator.
expect_exit 0 "$KV" mutate rmsnorm-bwd --list
for op in bound rel flip barrier step assign index const drop; do
  grep -q " $op " "$TMP/out" || fail "no '$op' mutant of the built-in rmsnorm-bwd"
done
grep -q 'reduce.glsl' "$TMP/out" || fail "the included reduce.glsl is not mutated"
# --lines keeps the mutants of those lines only: of every file, or of the named one.
expect_exit 0 "$KV" mutate rmsnorm-bwd --list --lines rmsnorm_bwd_dw.comp:39
awk '/:[0-9]+:[0-9]+ / {split($2, f, ":"); if (f[1] !~ /rmsnorm_bwd_dw.comp$/ || f[2] != 39) bad = 1; n++}
  END {exit bad || n < 1}' "$TMP/out" || { cat "$TMP/out"; fail "--lines FILE:N kept another line, or none"; }
expect_exit 0 "$KV" mutate rmsnorm-bwd --list --lines 29..30
awk '/:[0-9]+:[0-9]+ / {split($2, f, ":"); if (f[2] < 29 || f[2] > 30) bad = 1; n++} END {exit bad || n < 2}' \
  "$TMP/out" || { cat "$TMP/out"; fail "--lines 29..30 kept another line, or none"; }
expect_exit 0 "$KV" mutate rmsnorm-bwd --list --lines reduce.glsl:29..30 --lines rmsnorm_bwd_dw.comp:39..39
awk '/:[0-9]+:[0-9]+ / {split($2, f, ":"); if (!((f[1] ~ /reduce.glsl$/ && f[2] >= 29 && f[2] <= 30) ||
  (f[1] ~ /rmsnorm_bwd_dw.comp$/ && f[2] == 39))) bad = 1; n++} END {exit bad || n < 2}' "$TMP/out" ||
  { cat "$TMP/out"; fail "--lines FILE:A..B kept another file's line"; }

# Bad input: one line, the documented code, nothing written.
expect_error 2 "unknown kernel 'nope'" "$KV" mutate nope --json "$TMP/report.json"
expect_error 2 "no stage 'zz'" "$KV" mutate rmsnorm-bwd --stage zz --json "$TMP/report.json"
expect_error 2 "unknown operator 'typo'" "$KV" mutate rmsnorm-bwd --operators typo --json "$TMP/report.json"
expect_error 2 "no kernel given" "$KV" mutate
expect_error 2 "--lines: 'x' is not an integer" "$KV" mutate rmsnorm-bwd --lines x --json "$TMP/report.json"
expect_error 2 "--lines: '2x' is not an integer" "$KV" mutate rmsnorm-bwd --lines 1..2x --json "$TMP/report.json"
expect_error 2 "--lines: -1 is out of range" "$KV" mutate rmsnorm-bwd --lines -1..3 --json "$TMP/report.json"
expect_error 2 "--lines: range '5..2' is empty" "$KV" mutate rmsnorm-bwd --lines 5..2 --json "$TMP/report.json"
expect_error 2 "--lines: missing value" "$KV" mutate rmsnorm-bwd --lines reduce.glsl: --json "$TMP/report.json"
for bad in 0..3 1..2000000; do
  expect_error 2 "--lines: lines run from 1 to 1000000, got '$bad'" "$KV" mutate rmsnorm-bwd --lines $bad --json "$TMP/report.json"
done
long=$(printf 'a%.0s' $(seq 130))
for bad in :1..2 "$long:1..2"; do
  expect_error 2 "--lines: expected \\[FILE:\\]A..B, got '.*' \\(a file name of 1 to 127" "$KV" mutate rmsnorm-bwd \
    --lines "$bad" --json "$TMP/report.json"
done
expect_error 2 "--lines: at most 8 ranges" "$KV" mutate rmsnorm-bwd $(for i in $(seq 9); do echo --lines $i; done) \
  --json "$TMP/report.json"
expect_error 2 "--lines: no mutant on those lines" "$KV" mutate rmsnorm-bwd --lines reduce.glsl:9000..9001 \
  --json "$TMP/report.json"
printf '#version 450\nvoid main() { undeclared = 1; }\n' > "$TMP/bad.comp"
expect_error 3 "bad.comp: does not compile" "$KV" mutate rmsnorm-bwd --shader r="$TMP/bad.comp" --json "$TMP/report.json"
printf '\x03\x02\x23\x07' > "$TMP/r.spv"
expect_error 3 "no source to mutate" "$KV" mutate rmsnorm-bwd --shader r="$TMP/r.spv" --json "$TMP/report.json"
# An attribute ([[unroll]]) holds no index to mutate; the loop it heads keeps
# its mutants (its bound among them).
expect_exit 0 "$KV" mutate gemm-bwd --stage dA16cm --list --lines gemm_bwd_dA16cm.comp:84
grep -q "gemm_bwd_dA16cm.comp:84:42 bound '2u' -> '2u - 1'" "$TMP/out" || fail "[[unroll]]'s loop lost its bound mutant"
if grep -q " index " "$TMP/out"; then fail "an index mutant in [[unroll]]"; fi
exit 0
