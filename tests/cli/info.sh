# Help, version, list (with the stage ABI) and devices.
. "$(dirname "$0")/lib.bash"
expect_exit 0 "$KV" --help
grep -q 'rmsnorm-bwd' "$TMP/out" || fail "--help does not list kernels"
expect_exit 0 "$KV" --version
# The version, and the commit the binary was built from where the source is a git checkout.
if git -C "$KV_SRC" rev-parse HEAD > /dev/null 2>&1; then
  c=$(git -C "$KV_SRC" rev-parse --short=12 HEAD)
  grep -Eq "^kverify [0-9]+\.[0-9]+\.[0-9]+, commit $c(-dirty)?\$" "$TMP/out" || { cat "$TMP/out"; fail "--version lacks commit $c"; }
else
  grep -Eq '^kverify [0-9]+\.[0-9]+\.[0-9]+$' "$TMP/out" || fail "--version output"
fi
# cmake --install puts the binary and the man page under a prefix; both work there.
[ -f "$(dirname "$KV_BIN")/cmake_install.cmake" ] || fail "$KV_BIN is not in a CMake build folder"
cmake --install "$(dirname "$KV_BIN")" --prefix "$TMP/prefix" > /dev/null || fail "cmake --install"
installed() { LD_PRELOAD="${KV_PRELOAD:-}" "$TMP/prefix/bin/kverify" "$@"; }
installed --version | grep -q '^kverify ' || fail "the installed binary does not run"
installed rmsnorm-bwd --rows 4 --dim 33 > /dev/null || fail "the installed binary's main job"
MANWIDTH=80 man -l "$TMP/prefix/share/man/man1/kverify.1" 2>&1 | grep -q 'kverify mutate' || fail "man -l on the installed page"
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
grep -q 'by address, .*push constants (48 bytes): 5 buffer_reference addresses in binding order .*, then the 8 bytes above' "$TMP/out" ||
  fail "list --abi lacks rmsnorm-bwd dx's address build"
expect_exit 0 "$KV" devices
head -1 "$TMP/out" | grep -q 'subgroup' || fail "devices header"
[ "$(wc -l < "$TMP/out")" -ge 2 ] || fail "devices lists no device"
# maxStorageBufferRange in MiB (the test hook's 60000 bytes rounds up to 1M) and buffer addresses
KVERIFY_TEST_MAX_STORAGE_RANGE=60000 KVERIFY_TEST_NO_ADDR=1 expect_exit 0 "$KV" devices
awk 'NR == 1 {m = index($0, "maxbuf"); a = index($0, "addr")}
  NR == 2 {split(substr($0, m), x, " "); split(substr($0, a), y, " "); ok = m && a && x[1] == "1M" && y[1] == "no"}
  END {exit !ok}' "$TMP/out" || { cat "$TMP/out"; fail "devices: maxbuf and addr columns"; }
exit 0
