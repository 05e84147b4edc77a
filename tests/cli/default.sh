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
exit 0
