# The four kinds of shader bug that once passed every sweep now fail, each with
# its message: a write past an output's end (guard words inside the bound
# range), a read past an input's end (a NaN-poisoned tail inside the range), a
# wrong grid-stride step (the capped stress run) and a missing barrier before
# shared memory is reused (the capped run with subgroups reversed).
. "$(dirname "$0")/lib.bash"
# plant FILE OLD NEW: a copy of shaders/ in $TMP/p with one replacement in FILE.
plant() {
  rm -rf "$TMP/p"; mkdir -p "$TMP/p"; cp "$KV_SRC"/shaders/* "$TMP/p/"
  grep -qF -- "$2" "$TMP/p/$1" || fail "plant: '$2' is not in $1 (update the test)"
  OLD="$2" NEW="$3" perl -0pi -e 's/\Q$ENV{OLD}\E/$ENV{NEW}/' "$TMP/p/$1"
}

# 1. A write past the end: dw's guard keeps 'col < p.dim' off by one.
plant rmsnorm_bwd_dw.comp 'if (ly == 0u && col < p.dim)' 'if (ly == 0u && col <= p.dim)'
expect_exit 1 "$KV" rmsnorm-bwd --rows 3 --dim 7 --shader dw="$TMP/p/rmsnorm_bwd_dw.comp"
grep -q 'dw written past its end: 1 guard words changed, the furthest 1 words past the end' "$TMP/out" ||
  { cat "$TMP/out"; fail "the write past dw's end is not named"; }

# 2. A read past the end: r's row loop reads one value past x (a single row,
# so only the poisoned tail is read, where robust access used to give 0).
plant rmsnorm_bwd_r.comp 'i < p.dim; i += KV_WG' 'i <= p.dim; i += KV_WG'
expect_exit 1 "$KV" rmsnorm-bwd --rows 1 --dim 7 --shader r="$TMP/p/rmsnorm_bwd_r.comp"
grep -E '^  r ' "$TMP/out" | grep -q 'FAIL  (NaN where the oracle has none' ||
  { cat "$TMP/out"; fail "the read past x's end does not reach r as a NaN"; }

# 3. A grid-stride step made an assignment: invisible while the groups cover
# the rows, caught by the stress run with one workgroup.
plant rmsnorm_bwd_r.comp 'row += gl_NumWorkGroups.x' 'row = gl_NumWorkGroups.x'
expect_exit 0 "$KV" rmsnorm-bwd --rows 5 --dim 33 --no-stress --shader r="$TMP/p/rmsnorm_bwd_r.comp"
# With one workgroup the row loop never ends. A device that cuts loops short (lavapipe:
# Mesa's loop limiter, the cap the device probe found) ends it at its cap: the failing
# stress run, run again counting the cut (pipeline/loops.h), is a device error naming
# the loop's stage and run (exit 4: a GPU loses the device on a loop without end too).
# Elsewhere r@groups=1 fails.
"$KV" rmsnorm-bwd --rows 8 --dim 33 --json "$TMP/cap.json" > /dev/null 2>&1
cap=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"].get("loop_cap", 0))' "$TMP/cap.json")
if [ "$cap" != 0 ]; then
  expect_exit 4 "$KV" rmsnorm-bwd --rows 5 --dim 33 --stress --shader r="$TMP/p/rmsnorm_bwd_r.comp"
  grep -q "error: .*cut the loops of [1-9][0-9]* invocations short here (stage r in the stress run groups=1 first): a loop that long, or one that never ends" "$TMP/out" ||
    { cat "$TMP/out"; fail "the grid-stride step's endless loop is not named in stage r under groups=1"; }
else
  expect_exit 1 "$KV" rmsnorm-bwd --rows 5 --dim 33 --stress --shader r="$TMP/p/rmsnorm_bwd_r.comp"
  grep -Eq '^  r@groups=1 .*FAIL' "$TMP/out" || { cat "$TMP/out"; fail "the grid-stride step is not caught by r@groups=1"; }
fi
"$KV" rmsnorm-bwd --rows 5 --dim 33 --max-groups 1 --shader r="$TMP/p/rmsnorm_bwd_r.comp" > "$TMP/out" 2>&1 &&
  fail "--max-groups 1 does not make the grid-stride loop iterate"

# 4. The barrier before dw's partial sums are overwritten by the next column
# tile, removed: it takes several tiles per workgroup and the other subgroup order.
plant rmsnorm_bwd_dw.comp '            DW[col] = t;
        }
        barrier();' '            DW[col] = t;
        }'
expect_exit 0 "$KV" rmsnorm-bwd --rows 13 --dim 1021 --no-stress --shader dw="$TMP/p/rmsnorm_bwd_dw.comp"
expect_exit 1 "$KV" rmsnorm-bwd --rows 13 --dim 1021 --stress --shader dw="$TMP/p/rmsnorm_bwd_dw.comp"
grep -Eq '^  dw@groups=3\+reversed .*FAIL' "$TMP/out" || { cat "$TMP/out"; fail "the missing barrier is not caught"; }
"$KV" rmsnorm-bwd --rows 2 --dim 5 --stress --json "$TMP/s.json" > /dev/null || fail "--stress on a correct kernel"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cases"][0]; assert c["stress"] == "groups=1,groups=3+reversed,reversed,sanitized", c["stress"]' \
  "$TMP/s.json" || fail "the JSON report does not list the stress runs"

# Bad values of the new flags.
expect_error 2 'max-groups' "$KV" rmsnorm-bwd --max-groups 0 --json "$TMP/report.json"
expect_error 2 'max-groups' "$KV" rmsnorm-bwd --max-groups x --json "$TMP/report.json"
exit 0
