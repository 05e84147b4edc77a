# Help, version, list (with the stage ABI) and devices.
. "$(dirname "$0")/lib.bash"
expect_exit 0 "$KV" --help
grep -q 'rmsnorm-bwd' "$TMP/out" || fail "--help does not list kernels"
expect_exit 0 "$KV" --version
grep -Eq '^kverify [0-9]+\.[0-9]+\.[0-9]+$' "$TMP/out" || fail "--version output"
expect_exit 0 "$KV" rmsnorm-bwd --help
for f in --rows --dim --eps --dist --scale --seed --seeds --sweep --repeat --json --device --shader; do
  grep -q -- "$f" "$TMP/out" || fail "rmsnorm-bwd --help lacks $f"
done
grep -q 'default: 512' "$TMP/out" || fail "defaults not shown"
expect_exit 0 "$KV" list
grep -q 'stages: r dx dw' "$TMP/out" || fail "list lacks stages"
grep -q -- '--dim \[default: 4096\]' "$TMP/out" || fail "list lacks parameter defaults"
grep -q "dA_in f32\[m, k\] \[variant=accumulate\]" "$TMP/out" || fail "list lacks variant hints"
expect_exit 0 "$KV" list --abi
grep -q 'binding 4: f32  dx \[rows, dim\]  storage buffer, written' "$TMP/out" || fail "list --abi lacks bindings"
grep -q 'push constants (12 bytes): uint rows; uint dim; float eps;' "$TMP/out" || fail "list --abi lacks push constants"
expect_exit 0 "$KV" devices
head -1 "$TMP/out" | grep -q 'subgroup' || fail "devices header"
[ "$(wc -l < "$TMP/out")" -ge 2 ] || fail "devices lists no device"
exit 0
