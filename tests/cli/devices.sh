# Several devices in one report: --device all, or the flag repeated. With
# one device (lavapipe in CI) --device all gives today's report; the same
# device given twice runs every case twice and reports their agreement
# (bitwise equal: lavapipe is deterministic).
. "$(dirname "$0")/lib.bash"
strip='import json, sys
d = json.load(open(sys.argv[1]))
for c in d["cases"]:
    c.pop("time_ms", None)
    c.pop("command", None)  # a case run with --device names it in its command
d["kverify"].pop("command", None)
print(json.dumps(d, sort_keys=True))'
expect_exit 0 "$KV" rmsnorm-bwd --rows 8 --dim 33 --json "$TMP/one.json"
expect_exit 0 "$KV" rmsnorm-bwd --rows 8 --dim 33 --device all --json "$TMP/all.json"
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cases"]))' "$TMP/all.json")
if [ "$n" = 1 ]; then
  [ "$(python3 -c "$strip" "$TMP/one.json")" = "$(python3 -c "$strip" "$TMP/all.json")" ] \
    || fail "--device all on one device differs from the default run"
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cases"][0]["command"]; assert "--device " in c, c' "$TMP/all.json" \
    || fail "--device all: the case's command does not name the device it ran on"
fi
expect_exit 0 "$KV" rmsnorm-bwd --rows 8 --dim 33 --device 0 --device 0 --json "$TMP/twice.json"
grep -q '^agreement between devices' "$TMP/out" || fail "no agreement block in the table"
grep -q 'dx: device 0 vs 0: 264 of 264 equal, max 0 ULP apart' "$TMP/out" || fail "dx agreement"
python3 - "$TMP/twice.json" <<'PY' || fail "agreement in the report"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["devices"]) == 2 and [c["device"] for c in d["cases"]] == [0, 1]
assert all(c["name"].endswith("@0") for c in d["cases"])
ag = {a["output"]: a for a in d["agreement"]}
assert set(ag) == {"r", "dx", "dw"} and all(a["bitwise_equal"] == a["elements"] for a in ag.values())
PY
expect_error 2 '--device: empty device index or name' "$KV" rmsnorm-bwd --rows 8 --dim 33 --device "" --json "$TMP/report.json"
# A device that cuts loops short (llvmpipe stops every loop of a shader invocation
# after 65535 iterations in all, without an error): the report gives the cap the
# device probe found, and a failing case's summary says what it may mean. gdn-wy-bwd's
# stage wy runs about 580 loop iterations an invocation for each 32 columns of dk and
# of dv: dk = 16 with dv = 3584 (1 + 112 tiles) stays under 65535, dv = 3585 (1 + 113)
# is cut short. Where the device has no cap, both pass.
W=(gdn-wy-bwd --seq 1 --heads 1 --kv-heads 1 --dk 16 --variant fma --no-sanitize)
expect_exit 0 "$KV" "${W[@]}" --dv 3584 --json "$TMP/cap.json"
! grep -q 'stops every loop' "$TMP/out" || fail "the loop note on a passing case"
cap=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"].get("loop_cap", 0))' "$TMP/cap.json")
if "$KV" devices | awk 'NR == 2' | grep -q llvmpipe && [ "$cap" != 0 ]; then
  [ "$cap" = 65535 ] || fail "llvmpipe's loop cap probed as $cap, not Mesa's 65535 (LP_MAX_TGSI_LOOP_ITERATIONS)"
fi
if [ "$cap" != 0 ]; then
  expect_exit 1 "$KV" "${W[@]}" --dv 3585
  grep -q "^note: .* stops every loop of a shader invocation after $cap iterations in all" "$TMP/out" \
    || fail "no loop note on a case cut short (cap $cap)"
else
  expect_exit 0 "$KV" "${W[@]}" --dv 3585
fi
echo "devices ok"
