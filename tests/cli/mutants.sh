# Every mutant in tests/mutants/ (a patch against shaders/ with one realistic
# bug) must make `kverify <kernel> --sweep --shader STAGE=...` exit 1.
# Under the sanitizers the first mutant of each kernel runs (its failing verdict's
# path checked), and the other builds run them all (lib.bash's `seeds` says why).
. "$(dirname "$0")/lib.bash"
n=0
declare -A ran
for patch in "$KV_SRC"/tests/mutants/*.patch; do
  name=$(basename "$patch" .patch)
  stage=$(sed -n 's/^# stage: *//p' "$patch")
  flags=$(sed -n 's/^# flags: *//p' "$patch")
  kernel=$(sed -n 's/^# kernel: *//p' "$patch"); kernel=${kernel:-rmsnorm-bwd}
  [ -n "${KV_SANITIZED:-}" ] && [ -n "${ran[$kernel]:-}" ] && continue
  ran[$kernel]=1
  file=$(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$patch")
  dir="$TMP/$name"; mkdir -p "$dir"; cp "$KV_SRC"/shaders/* "$dir/"
  patch -s -p1 -d "$dir" < "$patch" || fail "$name: patch does not apply to shaders/ (update the mutant)"
  comp="$dir/${kernel//-/_}_${stage//-/_}.comp"
  [ -f "$comp" ] || fail "$name: no shader $comp for stage $stage"
  # shellcheck disable=SC2086
  # Each is caught by what reaches an output; the sanitized run's kills are
  # cli.sanitize's and kverify mutate's, and would only add its time here.
  run "$KV" "$kernel" --sweep --fail-fast --no-sanitize --shader "$stage=$comp" $flags
  [ "$RC" = 77 ] && { echo "skipped: no Vulkan device"; exit 77; }
  if [ "$RC" != 1 ]; then
    tail -n 30 "$TMP/out" >&2; cat "$TMP/err" >&2
    fail "mutant $name ($file, stage $stage) exited $RC: it must fail (exit 1)"
  fi
  echo "mutant $name: caught ($(grep -c ' FAIL' "$TMP/out") failing outputs)"
  n=$((n + 1))
done
[ "$n" -ge 4 ] || fail "only $n mutants found"
echo "$n mutants caught"
