# A case's command in the JSON report ("command") and the HTML page's
# "reproduce" line repeat what shaped its verdict (--shader, --abi, the
# criteria, --max-groups, --no-subgroup, the stress runs): run, the command
# of a failing case fails the same output.
. "$(dirname "$0")/lib.bash"

# check REPORT.json HTML CASE OUTPUT: CASE's commands from both reports fail OUTPUT.
check() {
  local json=$1 html=$2 name=$3 output=$4 cmd from
  for from in json html; do
    if [ $from = json ]; then
      cmd=$(python3 -c 'import json,sys; print(*[c["command"] for c in json.load(open(sys.argv[1]))["cases"] if c["name"] == sys.argv[2]])' "$json" "$name")
    else
      # the case's section of the page: its name, then its reproduce line
      cmd=$(awk -v n="$name" 'index($0, "<section class=\"case\"") && index($0, n) { on = 1 } on && /reproduce: <code>/ { print; exit }' "$html" |
        sed 's|.*reproduce: <code>\(.*\)</code>.*|\1|; s|&lt;|<|g; s|&gt;|>|g; s|&quot;|"|g; s|&#39;|'"'"'|g; s|&amp;|\&|g')
    fi
    [ -n "$cmd" ] || fail "$from: no command for $name"
    case "$cmd" in "kverify "*) ;; *) fail "$from: '$cmd' is not a kverify command" ;; esac
    run eval "\"\$KV\" ${cmd#kverify }"
    [ "$RC" = 1 ] || { cat "$TMP/err"; fail "$from: '$cmd' exited $RC, expected 1 (the case failed)"; }
    grep -q "^  $output .*FAIL" "$TMP/out" || { cat "$TMP/out"; fail "$from: '$cmd' did not fail $output"; }
    echo "$from: $cmd: fails $output again"
  done
}

# --shader and --abi: examples/generic-push without eps fails the eps-dominant
# shape; its plain command (parameters and seed alone) would pass.
G="$KV_SRC/examples/generic-push"
cp -r "$G" "$TMP/g"
sed 's|sqrt(part_xx\[0\] / n + FLOAT_TYPE(p.param1))|sqrt(part_xx[0] / n)|' "$G/rms_norm_back.comp" >"$TMP/g/no eps.comp"
run "$KV" rmsnorm-bwd --sweep --seeds 2 --no-stress --shader "dx=$TMP/g/no eps.comp" --abi "dx=$G/rms_norm_back.abi.json" \
  --lambda 8 --json "$TMP/a.json" --html "$TMP/a.html"
[ "$RC" = 77 ] && exit 77
[ "$RC" = 1 ] || fail "the eps bug: exit $RC, expected 1"
check "$TMP/a.json" "$TMP/a.html" 'rmsnorm-bwd[rows=5,dim=96,eps=1,scale=0.01,seed=2]' dx
expect_exit 0 "$KV" rmsnorm-bwd --rows 5 --dim 96 --eps 1 --scale 0.01 --seed 2   # the built-in passes it

# A built-in stage's --shader, with --no-subgroup and --max-groups: dx's tail
# loop stops at the last whole block (tests/mutants/dx-tail-skipped.patch).
mkdir -p "$TMP/s" && cp "$KV_SRC"/shaders/* "$TMP/s/"
patch -s -p1 -d "$TMP/s" <"$KV_SRC/tests/mutants/dx-tail-skipped.patch" || fail "the mutant does not apply"
run "$KV" rmsnorm-bwd --rows 3 --dim 8196 --shader "dx=$TMP/s/rmsnorm_bwd_dx.comp" --no-subgroup --max-groups 2 \
  --json "$TMP/b.json" --html "$TMP/b.html"
[ "$RC" = 1 ] || fail "dx-tail-skipped: exit $RC, expected 1"
check "$TMP/b.json" "$TMP/b.html" 'rmsnorm-bwd[rows=3,dim=8196,eps=1e-06,seed=1]' dx
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cases"][0]["command"]; assert "--no-subgroup" in c and "--max-groups 2" in c, c' "$TMP/b.json" ||
  fail "the command lost --no-subgroup or --max-groups"
echo ok
