# The main job passes on the default device, prints one row per output, and
# --verbose splits the time; --repeat checks run-to-run determinism.
. "$(dirname "$0")/lib.bash"
expect_exit 0 "$KV" rmsnorm-bwd --rows 512 --dim 4096 --verbose
for o in r dx dw dx.chained dw.chained; do
  grep -Eq "^  $o +.* pass" "$TMP/out" || fail "no passing row for output $o"
done
grep -q '1 cases: 1 passed, 0 failed' "$TMP/out" || fail "summary line missing"
grep -Eq 'start-up .* pipelines .* oracle .* device .* compare' "$TMP/err" || fail "--verbose split missing"
expect_exit 0 "$KV" rmsnorm-bwd --rows 33 --dim 1000 --repeat 3
grep -q 'differ between repeats' "$TMP/out" && fail "correct kernel reported as nondeterministic"
# Same seed, same inputs, same result: two runs print identical tables.
"$KV" rmsnorm-bwd --rows 9 --dim 300 --seed 42 > "$TMP/a" 2>&1
"$KV" rmsnorm-bwd --rows 9 --dim 300 --seed 42 > "$TMP/b" 2>&1
cmp -s "$TMP/a" "$TMP/b" || fail "two runs of the same case differ"
# --seeds A..B runs exactly those seeds.
expect_exit 0 "$KV" rmsnorm-bwd --rows 3 --dim 5 --seeds 7..9
[ "$(grep -c '^rmsnorm-bwd\[rows=3,dim=5,eps=1e-06,seed=[789]\]  pass' "$TMP/out")" = 3 ] || fail "--seeds 7..9"
# --sample on an output whose oracle is made block by block (dx): the oracle makes the
# sampled elements alone, and the report is the one the whole oracle gives on the same
# sample; a dx that skips each row's last element still fails.
S=(rmsnorm-bwd --rows 300 --dim 701 --sample 200)
expect_whole_oracle_report "$KV" "${S[@]}"
python3 - "$TMP/sc.json" <<'PY' || fail "--sample: dx not sampled"
import json, sys
a = json.load(open(sys.argv[1]))["cases"][0]
dx = [o for o in a["outputs"] if o["name"] == "dx"][0]
assert dx["elements"] < dx["elements_total"], dx
PY
mkdir -p "$TMP/mutdx" && cp "$KV_SRC"/shaders/* "$TMP/mutdx/"
sed -i 's/k < p.dim; k += KV_WG)$/k + 1u < p.dim; k += KV_WG)/' "$TMP/mutdx/rmsnorm_bwd_dx.comp"
grep -q 'k + 1u < p.dim' "$TMP/mutdx/rmsnorm_bwd_dx.comp" || fail "planting the dx bug"
expect_exit 1 "$KV" "${S[@]}" --shader dx="$TMP/mutdx/rmsnorm_bwd_dx.comp"
grep -Eq '^  dx +.* FAIL' "$TMP/out" || fail "--sample: the dx bug does not fail dx"
exit 0
