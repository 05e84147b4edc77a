# scripts/soak.sh: a table per kernel x variant x dist, exit 0 when every
# judged case passed; a failing case is listed with a command that fails it
# again; bad usage exits 2.
. "$(dirname "$0")/lib.bash"
S="$KV_SRC/scripts/soak.sh"
run bash "$S" --seeds 2 --kernels qdq-affine --dists "normal ties" --kverify "$KV"
[ "$RC" = 77 ] && exit 77
[ "$RC" = 0 ] || { cat "$TMP/out" "$TMP/err"; fail "soak of qdq-affine: exit $RC"; }
grep -Eq '^qdq-affine +- +normal +32 +32 +0 +0 +0 ' "$TMP/out" || { cat "$TMP/out"; fail "no row for normal"; }
grep -Eq '^qdq-affine +- +ties +32 +32 ' "$TMP/out" || fail "no row for ties"
grep -q 'uniform' "$TMP/out" && fail "--dists did not narrow the soak"
grep -q '^soak: 64 cases: 64 passed, 0 failed, 0 errors, 0 skipped (seeds 1..2)' "$TMP/out" || fail "no total"
# a criterion no correct shader meets: every failing case listed, and its command fails again
run bash "$S" --seeds 1 --kernels rmsnorm-bwd --dists uniform --kverify "$KV" -- --max-ulp 0
[ "$RC" = 1 ] || { cat "$TMP/out"; fail "a failing soak exited $RC"; }
cmd=$(grep -m1 '^  kverify rmsnorm-bwd ' "$TMP/out" | sed 's/^  kverify //')
[ -n "$cmd" ] || { cat "$TMP/out"; fail "no command for a failing case"; }
case "$cmd" in *"--max-ulp 0"*) ;; *) fail "the command lost the soak's flags: $cmd" ;; esac
# shellcheck disable=SC2086
run "$KV" $cmd
[ "$RC" = 1 ] || fail "'kverify $cmd' exited $RC, expected 1"
for bad in "--seeds x" "--kernels nope" "--bogus"; do
  # shellcheck disable=SC2086
  run bash "$S" $bad --kverify "$KV"
  [ "$RC" = 2 ] || fail "soak.sh $bad: exit $RC, expected 2"
  [ "$(wc -l <"$TMP/err")" = 1 ] || { cat "$TMP/err"; fail "soak.sh $bad: stderr not one line"; }
done
echo ok
