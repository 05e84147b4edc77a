# A run in which no case was judged exits 77 (skipped, for ctest and for a CI
# gate), whatever the number of cases, with one line on stderr saying why; a
# run with at least one judged case exits by its verdicts.
. "$(dirname "$0")/lib.bash"
run "$KV" devices
[ "$RC" = 77 ] && { echo "skipped: no Vulkan device"; exit 77; }

# A kernel command whose every case is skipped: bf16 tensor cores on a device
# without them (lavapipe), over a whole sweep.
run "$KV" gdn-wu --variant bf16-coopmat --sweep --seeds 1..2 --no-stress --json "$TMP/r.json"
if [ "$RC" = 77 ]; then
  [ "$(wc -l <"$TMP/err")" = 1 ] || { cat "$TMP/err" >&2; fail "skipped sweep: stderr is not one line"; }
  grep -q '^kverify: nothing was judged: .*needs VK_KHR_cooperative_matrix' "$TMP/err" || { cat "$TMP/err" >&2; fail "skipped sweep: no reason"; }
  n=$(grep -c '\] *skip$' "$TMP/out")
  [ "$n" -gt 10 ] || fail "skipped sweep: $n skipped rows, expected the whole sweep"
  grep -Eq '"skipped":[[:space:]]*'"$n"'$' "$TMP/r.json" || fail "skipped sweep: the report does not count $n skipped"
  # judged cases beside skipped ones: the verdicts decide (gemm-bwd's sweep
  # keeps its f32, accumulate and f16 shapes under --variant f16-coopmat)
  expect_exit 0 "$KV" gemm-bwd --variant f16-coopmat --sweep --seeds 1 --no-stress
  grep -Eq '^[0-9]+ cases: [1-9][0-9]* passed, 0 failed, 0 errors, [1-9][0-9]* skipped' "$TMP/out" || fail "mixed sweep: $(tail -n 1 "$TMP/out")"
  # run: a suite whose cases are all skipped
  cat >"$TMP/skips.json" <<'S'
{"name": "skips", "cases": [
  {"kernel": "gemm-bwd", "params": {"m": 8, "n": 8, "k": 8, "variant": "f16-coopmat"}},
  {"kernel": "gdn-wu", "params": {"seq": 64, "variant": "bf16-coopmat"}, "seeds": 3}]}
S
  expect_error 77 'nothing was judged: .*needs VK_(KHR|NV)_cooperative_matrix' "$KV" run "$TMP/skips.json"
else
  [ "$RC" = 0 ] || fail "gdn-wu bf16-coopmat sweep: exit $RC"
  echo "this device runs bf16 tensor cores: the all-skipped kernel command is not reachable here"
fi

# run: no case selected at all (any device), and no line that says how cases were judged
expect_error 77 'nothing was judged: no case was selected' "$KV" run "$KV_SRC/suites/smoke.json" --filter '^no such case$'
grep -q 'no device' "$TMP/out" && fail "run with no case selected: stdout says there is no device"
expect_exit 77 "$KV" run "$KV_SRC/suites/smoke.json" --filter '^no such case$' --html "$TMP/none.html"
grep -q 'no case was selected' "$TMP/none.html" && ! grep -q 'no device' "$TMP/none.html" ||
  fail "run with no case selected: its page says there is no device"
# the production suite (a GPU machine's: too large here) has every entry well formed
expect_error 77 'nothing was judged: no case was selected' "$KV" run "$KV_SRC/suites/production.json" --filter '^no such case$'

# mutate: no mutant judged (a stage that no sweep case runs; lines without
# mutants are a usage error, exit 2, before anything runs)
expect_exit 77 "$KV" mutate gemm-bwd --stage dA16cm --seeds 1
grep -q '^kverify: nothing was judged: ' "$TMP/err" || { cat "$TMP/err" >&2; fail "mutate: no reason on stderr"; }
grep -q '^no mutation score' "$TMP/out" || fail "mutate with nothing judged printed a score"
echo ok
