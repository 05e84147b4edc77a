# The rmsnorm-bwd sweep drives what a foreign shader may get wrong: eps where
# it dominates or matches the rows' mean square, and rows past a first
# dispatch dimension of 512 (a launch over x, y and z). One-line bugs written
# into examples/generic-push, verified through its --abi file, fail the sweep;
# the shader as it is passes it.
. "$(dirname "$0")/lib.bash"
G="$KV_SRC/examples/generic-push"
cp -r "$G" "$TMP/g"
C="$TMP/g/rms_norm_back.comp"
plant() { # plant NAME SED: a copy of the shader with one line changed, which must differ
  sed "$2" "$C" >"$TMP/g/$1.comp"
  ! cmp -s "$C" "$TMP/g/$1.comp" || fail "$1: the edit changed nothing"
}
sweep() { # sweep SHADER ABI: the sweep without the stress runs (the launch is the --abi file's)
  run "$KV" rmsnorm-bwd --sweep --seeds 1 --no-stress --shader dx="$1" --abi dx="$2"
}
sweep "$C" "$G/rms_norm_back.abi.json"
[ "$RC" = 77 ] && exit 77
[ "$RC" = 0 ] || { tail -n 30 "$TMP/out"; fail "the example shader failed its sweep"; }

plant no-eps 's|sqrt(part_xx\[0\] / n + FLOAT_TYPE(p.param1))|sqrt(part_xx[0] / n)|'
sweep "$TMP/g/no-eps.comp" "$G/rms_norm_back.abi.json"
[ "$RC" = 1 ] || fail "eps dropped: exit $RC, expected 1"
grep -q '^rmsnorm-bwd\[rows=5,dim=96,eps=1,scale=0.01,.*fail$' "$TMP/out" || fail "eps dropped: the eps-dominant shape passed"
grep -q '^rmsnorm-bwd\[rows=9,dim=77,eps=0.5,scale=0.7,.*fail$' "$TMP/out" || fail "eps dropped: the eps-comparable shape passed"

for s in 511 513; do
  plant "y$s" "s|gl_WorkGroupID.y \* 512u|gl_WorkGroupID.y * ${s}u|"
  sweep "$TMP/g/y$s.comp" "$G/rms_norm_back.abi.json"
  [ "$RC" = 1 ] || fail "row stride $s over y: exit $RC, expected 1"
  grep -q '^rmsnorm-bwd\[rows=1535,dim=3,.*fail$' "$TMP/out" || fail "row stride $s over y: rows=1535 passed"
done

# A launch over z as well: strides 16 and 4 (the shader and its --abi file
# edited together) pass; a z stride of 15 fails.
plant z 's|gl_WorkGroupID.z \* 262144u + gl_WorkGroupID.y \* 512u|gl_WorkGroupID.z * 16u + gl_WorkGroupID.y * 4u|'
sed 's|"dispatch": \[.*\]|"dispatch": ["min(rows, 4)", "min(cdiv(rows, 4), 4)", "cdiv(rows, 16)"]|' \
  "$G/rms_norm_back.abi.json" >"$TMP/g/z.abi.json"
grep -q 'cdiv(rows, 16)' "$TMP/g/z.abi.json" || fail "the z dispatch edit changed nothing"
sweep "$TMP/g/z.comp" "$TMP/g/z.abi.json"
[ "$RC" = 0 ] || { tail -n 30 "$TMP/out"; fail "x, y and z launch: exit $RC, expected 0"; }
C="$TMP/g/z.comp"
plant z15 's|gl_WorkGroupID.z \* 16u|gl_WorkGroupID.z * 15u|'
sweep "$TMP/g/z15.comp" "$TMP/g/z.abi.json"
[ "$RC" = 1 ] || fail "row stride 15 over z: exit $RC, expected 1"
grep -q '^rmsnorm-bwd\[rows=1535,dim=3,.*fail$' "$TMP/out" || fail "row stride 15 over z: rows=1535 passed"
echo ok
