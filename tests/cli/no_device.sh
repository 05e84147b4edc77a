# With no Vulkan driver at all, kverify exits 77 with a hint.
. "$(dirname "$0")/lib.bash"
run env VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json \
  "$KV" rmsnorm-bwd --rows 4 --dim 4 --json "$TMP/report.json"
[ "$RC" = 77 ] || { cat "$TMP/err" >&2; fail "expected exit 77 without a device, got $RC"; }
[ "$(wc -l < "$TMP/err")" = 1 ] || fail "expected a one-line error"
grep -q 'mesa-vulkan-drivers' "$TMP/err" || fail "no install hint"
[ ! -e "$TMP/report.json" ] || fail "wrote a report without a device"
run env VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json "$KV" devices
[ "$RC" = 77 ] || fail "devices: expected 77, got $RC"
# ctest reads 77 as "skipped": report success for this test.
exit 0
