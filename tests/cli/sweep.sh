# The built-in sweep passes for 150 cases in total (15 shapes x 10 seeds)
# with the subgroup reductions, with its stress runs at 3 seeds, and the
# shared-memory fallback passes too (fewer seeds under the sanitizers: `seeds`).
. "$(dirname "$0")/lib.bash"
# The sanitized run is left to tests/cli/sanitize.sh and the 3-seed sweeps below, and so
# are the stress runs: this sweep is about the plain run's numerics, at 10 seeds.
n=$(seeds 10 2)
expect_exit 0 "$KV" rmsnorm-bwd --sweep --seeds "$n" --no-sanitize --no-stress --json "$TMP/sweep.json"
grep -q "^$((15 * n)) cases: $((15 * n)) passed, 0 failed, 0 errors, 0 skipped" "$TMP/out" ||
  fail "expected $((15 * n)) passing cases"
grep -q 'rows=4,dim=33,eps=0,dist=zero-row' "$TMP/out" || fail "zero-row case missing from the sweep"
grep -Eq '^  dx .*pass  \([0-9]+ NaN, 0 Inf match the oracle\)' "$TMP/out" || fail "eps=0 zero row: NaN not reported as a match"
n=$(seeds 3 1)
expect_stressed_sweep $((15 * n)) "$KV" rmsnorm-bwd --sweep --seeds "$n" --no-sanitize
expect_exit 0 "$KV" rmsnorm-bwd --sweep --seeds "$n" --seed 1000 --no-subgroup
grep -q "^$((15 * n)) cases: $((15 * n)) passed" "$TMP/out" || fail "fallback sweep did not pass $((15 * n)) cases"
exit 0
