# Every flag that a --help prints is in the man page, and every flag the man
# page documents is in some --help: the two are one list.
. "$(dirname "$0")/lib.bash"
{
  "$KV" --help
  for k in $("$KV" --help | awk '/^kernels/{f=1;next} /^$/{f=0} f{print $1}'); do "$KV" "$k" --help; done
  for c in run merge compare devices mutate; do "$KV" "$c" --help; done
} | grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u > "$TMP/help"
sed 's/\\-/-/g' "$KV_SRC/man/kverify.1" | grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u > "$TMP/man"
[ "$(wc -l < "$TMP/help")" -gt 30 ] || fail "too few flags in --help"
if ! cmp -s "$TMP/help" "$TMP/man"; then
  echo "only in --help:" >&2; comm -23 "$TMP/help" "$TMP/man" >&2
  echo "only in the man page:" >&2; comm -13 "$TMP/help" "$TMP/man" >&2
  fail "--help and man/kverify.1 document different flags"
fi
# ci-example.sh shards and gates a small suite end to end.
printf '{"cases": [{"kernel": "rmsnorm-bwd", "params": {"rows": 3, "dim": 7}, "seeds": 3}]}' > "$TMP/s.json"
cd "$TMP" || fail "cd"
for i in 1 2; do KV="$KV" bash "$KV_SRC/scripts/ci-example.sh" shard "$i" 2 "$TMP/s.json" > /dev/null || fail "ci-example shard $i"; done
KV="$KV" bash "$KV_SRC/scripts/ci-example.sh" gate > /dev/null || fail "ci-example gate"
grep -q '3 cases, 3 passed' out/comment.md || fail "ci-example comment"
xmllint --noout out/shard-1.xml || fail "ci-example JUnit"
# SEED_OFFSET reaches the run: the shard's cases are at seeds 51..53
SEED_OFFSET=50 KV="$KV" bash "$KV_SRC/scripts/ci-example.sh" shard 1 1 "$TMP/s.json" > /dev/null || fail "ci-example SEED_OFFSET"
python3 -c 'import json,sys; s=[c["seed"] for c in json.load(open(sys.argv[1]))["cases"]]; assert s == [51, 52, 53], s' \
  out/shard-1.json || fail "ci-example: SEED_OFFSET did not move the seeds"
