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
# device probe found. gdn-wy-bwd's stage wy runs about 580 loop iterations an
# invocation for each 32 columns of dk and of dv: dk = 16 with dv = 3584 (1 + 112
# tiles) passes there, dv = 3585 (1 + 113) is cut short and leaves work undone. A
# failing case runs again in its loop-cut builds (pipeline/loops.h), which count the
# invocations whose loops the device ended at a back edge: where some were, the case
# is a device error naming the cut (exit 4), not a failure. From about dv = 3521 on
# the loop-cut build already has loops ended at their last back edge, which loses
# nothing but cannot be told apart: a failure of the kernel's own there (--max-ulp 0)
# is that error too, never a pass or a skip. A failure of its own where nothing was
# cut (dv = 3500) stays a failure, without the note that it may be the device's.
# --fail-fast runs no check: a failure there keeps the note. A capped stress run is
# checked the same way, with its cap.
# rmsnorm-bwd's stage r as a do-while of one lane per row (a conditional back edge)
# is cut at dim 70000 and passes at 60000. Where the device has no cap, all pass but
# the forced failures.
W=(gdn-wy-bwd --seq 1 --heads 1 --kv-heads 1 --dk 16 --variant fma --no-sanitize)
expect_exit 0 "$KV" "${W[@]}" --dv 3584 --json "$TMP/cap.json"
! grep -q 'stops every loop' "$TMP/out" || fail "the loop note on a passing case"
cap=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"].get("loop_cap", 0))' "$TMP/cap.json")
if "$KV" devices | awk 'NR == 2' | grep -q llvmpipe && [ "$cap" != 0 ]; then
  [ "$cap" = 65535 ] || fail "llvmpipe's loop cap probed as $cap, not Mesa's 65535 (LP_MAX_TGSI_LOOP_ITERATIONS)"
fi
cat > "$TMP/r_dowhile.comp" <<'GLSL'
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer XB { float X[]; };
layout(std430, set = 0, binding = 1) writeonly buffer RB { float R[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } p;
void main()
{
    uint row = gl_WorkGroupID.x;
    if (gl_LocalInvocationID.x != 0u || row >= p.rows) return;
    float acc = 0.0;
    uint i = 0u;
    do {
        float v = X[row * p.dim + i];
        acc += v * v;
        i++;
    } while (i < p.dim);
    R[row] = inversesqrt(acc / float(p.dim) + p.eps);
}
GLSL
D=(rmsnorm-bwd --rows 2 --shader r="$TMP/r_dowhile.comp" --no-sanitize)
expect_exit 0 "$KV" "${D[@]}" --dim 60000
# Two lanes of a workgroup leave one loop at different times: lane 0 sums all but
# the last 100 elements of its row, lane 1 those 100. On llvmpipe they run side by
# side in one batch: the batch's loop runs on until lane 0's is cut. Lane 1 left at
# its own exit, so only lane 0 of each row is counted cut (a flag a workgroup
# shared would count lane 1 too).
cat > "$TMP/r_split.comp" <<'GLSL'
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer XB { float X[]; };
layout(std430, set = 0, binding = 1) writeonly buffer RB { float R[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } p;
shared float part;
void main()
{
    uint row = gl_WorkGroupID.x, lane = gl_LocalInvocationID.x;
    if (row >= p.rows) return;
    uint split = p.dim > 100u ? p.dim - 100u : 0u;
    uint lo = lane == 0u ? 0u : split, hi = lane == 0u ? split : p.dim;
    float acc = 0.0;
    if (lane < 2u)
        for (uint i = lo; i < hi; i++) {
            float v = X[row * p.dim + i];
            acc += v * v;
        }
    if (lane == 1u) part = acc;
    barrier();
    if (lane == 0u) R[row] = inversesqrt((acc + part) / float(p.dim) + p.eps);
}
GLSL
P=(rmsnorm-bwd --rows 2 --shader r="$TMP/r_split.comp" --no-sanitize)
expect_exit 0 "$KV" "${P[@]}" --dim 60000
# A loop the shader compiler unrolls in the plain build and not in the loop-cut
# build, whose flag code makes its body larger: Mesa 22.3's NIR unrolls the inner
# loop of 32 with 8 steps of Horner's rule in it, and not with the flag's atomics
# added (with 4 steps it unrolls both, with 9 neither). At dim 128000 the plain
# build loops 4000 times a row and passes; the loop-cut build loops 4000 x 33
# times and is cut. A failure (--max-ulp 0) is then checked by a run whose values
# differ from the checked run's: the check cannot settle it, so the case stays a
# failure, with the note that it may be the device's (another Mesa unrolls at other
# sizes: the shape is checked on 22.3 alone).
python3 - "$TMP/r_unroll.comp" <<'PY'
import sys
horner = "\n".join(f"            t = t * v + {i + 1}.0;" for i in range(8))
open(sys.argv[1], "w").write(f"""#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer XB {{ float X[]; }};
layout(std430, set = 0, binding = 1) writeonly buffer RB {{ float R[]; }};
layout(push_constant) uniform Push {{ uint rows; uint dim; float eps; }} p;
void main()
{{
    uint row = gl_WorkGroupID.x;
    if (gl_LocalInvocationID.x != 0u || row >= p.rows) return;
    float acc = 0.0, t = 0.0;
    for (uint i = 0u; i + 32u <= p.dim; i += 32u)
        for (uint j = 0u; j < 32u; j++) {{
            float v = X[row * p.dim + i + j];
            acc += v * v;
{horner}
        }}
    float r = inversesqrt(acc / float(p.dim) + p.eps);
    R[row] = t == 12345.0 ? 0.0 : r;
}}
""")
PY
U=(rmsnorm-bwd --rows 2 --dim 128000 --shader r="$TMP/r_unroll.comp" --no-sanitize)
# The sanitized run (at most 3 workgroups) checked too, in its sanitized builds' loop-cut
# builds: stage r as a grid-stride loop over rows, lane 0 of a workgroup summing a row,
# passes with a workgroup a row (40000 iterations) and is cut in the sanitized run, where
# workgroup 0 takes rows 0 and 3 (80000). Its 16 KiB of shared memory leaves no room for
# the sanitizer's shadow on lavapipe (32 KiB), which then has a buffer of its own: the
# loop-cut build's buffers follow it. llvmpipe counts iterations per batch of 8 lanes, so
# the row loop is cut at its back edge for lanes 0-7 alike: 8 invocations.
cat > "$TMP/r_rows.comp" <<'GLSL'
#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer XB { float X[]; };
layout(std430, set = 0, binding = 1) writeonly buffer RB { float R[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } p;
shared float part[4096];
void main()
{
    uint lane = gl_LocalInvocationID.x;
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        float acc = 0.0;
        if (lane == 0u)
            for (uint i = 0u; i < p.dim; i++) {
                float v = X[row * p.dim + i];
                acc += v * v;
            }
        part[lane * 16u] = acc;
        barrier();
        if (lane == 0u) R[row] = inversesqrt(part[0] / float(p.dim) + p.eps);
        barrier();
    }
}
GLSL
S=(rmsnorm-bwd --rows 4 --dim 40000 --shader r="$TMP/r_rows.comp")
expect_exit 0 "$KV" "${S[@]}" --no-sanitize
cut="after $cap iterations in all, without an error, and cut the loops of [1-9][0-9]* invocations\? short here"
if [ "$cap" != 0 ]; then
  expect_exit 4 "$KV" "${W[@]}" --dv 3585 --json "$TMP/cut.json"
  grep -q "error: .*$cut (stage wy first): a loop that long, or one that never ends, cannot be judged" "$TMP/out" \
    || fail "a case cut short is not an error naming the cut (cap $cap)"
  if [ "$cap" = 65535 ]; then # each of the workgroup's 256 invocations, its own flag through barriers
    grep -q "cut the loops of 256 invocations" "$TMP/out" || fail "not every invocation of stage wy counted cut"
  fi
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cases"][0]; assert c["status"] == "error" and "cut the loops" in c["error"], c' "$TMP/cut.json" \
    || fail "a case cut short: not an error in the report"
  expect_exit 1 "$KV" "${W[@]}" --dv 3585 --fail-fast # no check there: the failure, with the note
  grep -q "^note: .* stops every loop of a shader invocation after $cap iterations in all" "$TMP/out" \
    || fail "--fail-fast: a failure on a capped device without the loop note"
  expect_exit 4 "$KV" "${W[@]}" --dv 3584 --max-ulp 0
  grep -q "error: .*$cut" "$TMP/out" || fail "a failure where the device ends loops at their last back edge is not the error"
  # the man page's capped stress run, cut at one workgroup a dispatch (the plain run passes)
  expect_exit 4 "$KV" gdn-wy-bwd --batch 4 --seq 64 --heads 4 --kv-heads 2 --dv 72 --stress --no-sanitize
  grep -q "error: .*$cut (stage wy in the stress run groups=1 first)" "$TMP/out" \
    || fail "a capped stress run cut short is not the error naming it"
  expect_exit 4 "$KV" "${D[@]}" --dim 70000
  grep -q "error: .*$cut (stage r first)" "$TMP/out" || fail "a do-while cut short is not the error"
  grep -q "cut the loops of 2 invocations" "$TMP/out" || fail "a do-while: not one invocation a row counted cut"
  expect_exit 4 "$KV" "${P[@]}" --dim 70000
  grep -q "error: .*$cut (stage r first)" "$TMP/out" || fail "a loop two lanes leave at different times, cut short, is not the error"
  if [ "$cap" = 65535 ]; then # llvmpipe's batch of lanes 0 and 1
    grep -q "cut the loops of 2 invocations" "$TMP/out" || fail "lanes that left a loop at its exit counted cut"
  fi
  # gdn-wy-bwd's sanitized build loops longer than its plain build: its sanitized run is
  # cut from about dv = 2750 on (the plain run passes to 3584), seen only in its own builds
  expect_exit 4 "$KV" "${W[@]}" --dv 2800 --sanitize
  grep -q "error: .*$cut (stage wy in the sanitized run first)" "$TMP/out" || fail "gdn-wy-bwd's sanitized run cut short is not the error"
  expect_exit 4 "$KV" "${S[@]}" --sanitize
  grep -q "error: .*$cut (stage r in the sanitized run first)" "$TMP/out" || fail "a sanitized run cut short is not the error naming it"
  if [ "$cap" = 65535 ]; then
    grep -q "cut the loops of 8 invocations short" "$TMP/out" || fail "the sanitized run: not workgroup 0's first batch alone counted cut"
  fi
  if "$KV" devices | awk 'NR == 2' | grep -q 'llvmpipe Mesa 22\.3\.'; then
    expect_exit 0 "$KV" "${U[@]}"
    expect_exit 1 "$KV" "${U[@]}" --max-ulp 0
    grep -q "^note: .* stops every loop of a shader invocation after $cap iterations in all" "$TMP/out" \
      || fail "a failure whose loop-cut run gave other values: not the failure with the note"
  fi
else
  expect_exit 0 "$KV" "${W[@]}" --dv 3585
  expect_exit 0 "$KV" "${D[@]}" --dim 70000
  expect_exit 0 "$KV" "${P[@]}" --dim 70000
  expect_exit 0 "$KV" "${S[@]}" --sanitize
fi
expect_exit 1 "$KV" "${W[@]}" --dv 3500 --max-ulp 0
! grep -q 'stops every loop\|cut the loops' "$TMP/out" || fail "a failure of the kernel's own blamed on the loop cap"
echo "devices ok"
