# The AddressSanitizer build's tests preload tests/asan/lvp_stacks.c, which serves
# lavapipe's per-workgroup coroutine frames from a pool of reused blocks: stage dw
# of rmsnorm-bwd at 2 x 65537 runs 2050 workgroups with barriers, and their frames
# come from a few blocks, with the verdict unchanged. Skipped in the other builds
# and on other devices.
. "$(dirname "$0")/lib.bash"
case "${KV_PRELOAD:-}" in
  *lvp_stacks*) ;;
  *) echo "skipped: not the AddressSanitizer build"; exit 77 ;;
esac
export KV_LVP_STACKS_STATS=1
expect_exit 0 "$KV" rmsnorm-bwd --rows 2 --dim 65537 --no-stress --no-sanitize
grep -q '^device 0: llvmpipe' "$TMP/out" || { echo "skipped: the default device is not lavapipe"; exit 77; }
grep -q '^1 cases: 1 passed' "$TMP/out" || fail "the case did not pass"
line=$(grep '^lvp_stacks: ' "$TMP/err") || fail "no lvp_stacks line at exit"
read -r served made < <(sed -E 's/^lvp_stacks: ([0-9]+) frames served from ([0-9]+) blocks$/\1 \2/' <<< "$line")
[ "$served" -ge 2050 ] || fail "$line: expected the 2050 workgroups' frames and more"
[ "$((made * 20))" -le "$served" ] || fail "$line: the frames were not reused"
exit 0
