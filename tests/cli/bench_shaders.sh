# scripts/bench-shaders.sh: a variant that fails a check case is reported and
# not timed; one that passes is timed beside the built-in in every round, one
# table row per variant and round; bad usage exits 2 with a message.
. "$(dirname "$0")/lib.bash"
S=$KV_SRC/scripts/bench-shaders.sh
cp "$KV_SRC"/shaders/rmsnorm_bwd_dx.comp "$TMP/good.comp"
cp "$KV_SRC"/shaders/reduce.glsl "$TMP/"
sed 's|coeff = s \* rb \* rb / float(p.dim);|coeff = s * rb * rb / float(p.dim + 1u);|' "$TMP/good.comp" > "$TMP/bad.comp"
cmp -s "$TMP/good.comp" "$TMP/bad.comp" && fail "the planted bug did not apply"
run env KV="$KV" RUNS=2 ROUNDS=2 SEEDS=1 bash "$S" rmsnorm-bwd dx '--rows 8 --dim 64' \
  '--rows 3 --dim 36' ';' '--rows 2 --dim 33' -- "$TMP/good.comp" "$TMP/bad.comp"
[ "$RC" = 0 ] || { cat "$TMP/out" "$TMP/err" >&2; fail "bench-shaders exited $RC"; }
grep -q '^check good: 2 cases pass$' "$TMP/out" || fail "the good variant's checks"
grep -q '^check bad: fails \[--rows 3 --dim 36\]$' "$TMP/out" || fail "the bad variant was not caught"
for v in built-in good; do
  for r in 1 2; do
    grep -Eq "^$v +$r pass +r [0-9.]+ / [0-9.]+ / [0-9-]+ +dx [0-9.]+ / [0-9.]+ / [0-9-]+ +dw " "$TMP/out" ||
      fail "no row for $v, round $r"
  done
done
grep -q '^bad ' "$TMP/out" && fail "the bad variant was timed"
# bad usage: too few arguments, no variants after --, no CHECK case, two variants of
# one name (their reports would overwrite each other), an unreadable variant, no kverify
run env KV="$KV" bash "$S" rmsnorm-bwd dx
[ "$RC" = 2 ] && grep -q '^# usage: scripts/bench-shaders.sh' "$TMP/err" || fail "too few arguments: exit $RC"
run env KV="$KV" bash "$S" rmsnorm-bwd dx '--rows 8' '--rows 3' "$TMP/good.comp"
[ "$RC" = 2 ] && grep -q 'give the variants after --' "$TMP/err" || fail "no --: exit $RC"
run env KV="$KV" bash "$S" rmsnorm-bwd dx '--rows 8' -- "$TMP/good.comp" "$TMP/bad.comp"
[ "$RC" = 2 ] && grep -q 'give at least one CHECK case' "$TMP/err" || fail "no CHECK case: exit $RC"
mkdir "$TMP/b"; cp "$TMP/good.comp" "$TMP/b/"
run env KV="$KV" bash "$S" rmsnorm-bwd dx '--rows 8' '--rows 3' -- "$TMP/good.comp" "$TMP/b/good.comp"
[ "$RC" = 2 ] && grep -q "a second variant named 'good'" "$TMP/err" || fail "two variants named good: exit $RC"
cp "$TMP/good.comp" "$TMP/built-in.comp"
run env KV="$KV" bash "$S" rmsnorm-bwd dx '--rows 8' '--rows 3' -- "$TMP/built-in.comp"
[ "$RC" = 2 ] && grep -q "a second variant named 'built-in'" "$TMP/err" || fail "a variant named built-in: exit $RC"
run env KV="$KV" bash "$S" rmsnorm-bwd dx '--rows 8' '--rows 3' -- "$TMP/missing.comp"
[ "$RC" = 2 ] && grep -q 'missing.comp: cannot read' "$TMP/err" || fail "unreadable variant: exit $RC"
run env KV="$TMP/nokv" bash "$S" rmsnorm-bwd dx '--rows 8' '--rows 3' -- "$TMP/good.comp"
[ "$RC" = 2 ] && grep -q 'is not an executable' "$TMP/err" || fail "no kverify: exit $RC"
exit 0
