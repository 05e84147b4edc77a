# Every bad input gives a one-line error naming what is wrong, the documented
# exit code (2 usage, 3 bad input data), and writes no report.
. "$(dirname "$0")/lib.bash"
J=(--json "$TMP/report.json")
# usage errors: exit 2, before any device work
expect_error 2 "unknown command 'nosuch'" "$KV" nosuch
expect_error 2 "unknown option '--bogus'" "$KV" rmsnorm-bwd --bogus "${J[@]}"
expect_error 2 "missing value for --rows" "$KV" rmsnorm-bwd "${J[@]}" --rows
expect_error 2 "unexpected argument 'extra'" "$KV" rmsnorm-bwd extra "${J[@]}"
expect_error 2 "--rows: 0 is out of range" "$KV" rmsnorm-bwd --rows 0 "${J[@]}"
expect_error 2 "--rows: -5 is out of range" "$KV" rmsnorm-bwd --rows -5 "${J[@]}"
expect_error 2 "--dim: 'abc' is not an integer" "$KV" rmsnorm-bwd --dim abc "${J[@]}"
expect_error 2 "--dim: '4096x' is not an integer" "$KV" rmsnorm-bwd --dim 4096x "${J[@]}"
expect_error 2 "--rows: '99999999999999999999' is out of range" "$KV" rmsnorm-bwd --rows 99999999999999999999 "${J[@]}"
expect_error 2 "--rows: 4294967296 is out of range" "$KV" rmsnorm-bwd --rows 4G "${J[@]}"
expect_error 2 "elements, more than 2\^32-1" "$KV" rmsnorm-bwd --rows 1G --dim 1G "${J[@]}"
expect_error 2 "elements, more than 2\^32-1" "$KV" rmsnorm-bwd --rows 65536 --dim 65536 "${J[@]}"
expect_error 2 "--eps: 'nan' is not a finite number" "$KV" rmsnorm-bwd --eps nan "${J[@]}"
expect_error 2 "--eps: -1 is out of range" "$KV" rmsnorm-bwd --eps -1 "${J[@]}"
expect_error 2 "--dist: 'gauss' is not one of normal\|uniform\|zero-row" "$KV" rmsnorm-bwd --dist gauss "${J[@]}"
expect_error 2 "--scale: 0 is out of range" "$KV" rmsnorm-bwd --scale 0 "${J[@]}"
expect_error 2 "--seed: -1 is out of range" "$KV" rmsnorm-bwd --seed -1 "${J[@]}"
expect_error 2 "--seeds: 0 is out of range" "$KV" rmsnorm-bwd --seeds 0 "${J[@]}"
expect_error 2 "--repeat: 0 is out of range" "$KV" rmsnorm-bwd --repeat 0 "${J[@]}"
expect_error 2 "--max-ulp: 'x' is not a number" "$KV" rmsnorm-bwd --max-ulp x "${J[@]}"
expect_error 2 "--seeds: range '5..3' is empty" "$KV" rmsnorm-bwd --seeds 5..3 "${J[@]}"
expect_error 2 "--lambda: -1 is out of range" "$KV" rmsnorm-bwd --lambda -1 "${J[@]}"
expect_error 2 "--rtol: 'x' is not a number" "$KV" rmsnorm-bwd --rtol x "${J[@]}"
expect_error 2 "--atol: -1 is out of range" "$KV" rmsnorm-bwd --atol -1 "${J[@]}"
expect_error 2 "--max-nmse: 'nan' is not a finite number" "$KV" rmsnorm-bwd --max-nmse nan "${J[@]}"
expect_error 2 "--device: empty" "$KV" rmsnorm-bwd --device "" "${J[@]}"
expect_error 2 "--timeout: 'x' is not a number" "$KV" rmsnorm-bwd --timeout x "${J[@]}"
expect_error 2 "--timeout: -1 is out of range" "$KV" rmsnorm-bwd --timeout -1 "${J[@]}"
# a submission the device has not finished within --timeout ends the run: exit 4,
# one line (a shader that never ends would hang the run on a GPU). While the
# device opens (its probes), no case is in flight and no report is written.
# A probe can finish before its wait begins on a loaded machine (2 runs in 100
# beside two busy loops on two cores): then the case's first stage is the one
# not finished, its line names the case, and it is tried again (5 times at most);
probe_hang() {
  local i
  for i in 1 2 3 4 5; do
    rm -f "$TMP/report.json"
    expect_exit 4 "$KV" rmsnorm-bwd --rows 2048 --dim 4096 --timeout 0.000001 "${J[@]}"
    grep -q '^kverify: rmsnorm-bwd\[rows=2048,dim=4096,eps=1e-06,seed=1\]: the device has not finished a submission after 1e-06 s' \
      "$TMP/err" && continue # the probe was done in time: the case hung instead
    [ "$(wc -l < "$TMP/err")" = 1 ] || fail "--timeout 1e-06 in the probes: not one line on stderr: $(cat "$TMP/err")"
    grep -Eq 'the device has not finished a submission after 1e-06 s \(--timeout\): a shader that never ends.*with no report written$' \
      "$TMP/err" || fail "--timeout 1e-06 in the probes: $(cat "$TMP/err")"
    [ ! -e "$TMP/report.json" ] || fail "--timeout 1e-06 in the probes: wrote a report"
    return 0
  done
  fail "--timeout 1e-06: the device's probes never ran past it in 5 runs"
}
probe_hang
# in a case's stage (a shader that runs for minutes here), the line names the
# case, and the reports hold it as an error
expect_exit 4 "$KV" rmsnorm-bwd --rows 16384 --dim 64 --shader r="$KV_SRC/tests/shaders/spin_r.comp" --timeout 3 \
  "${J[@]}" --junit "$TMP/hang.xml"
[ "$(wc -l < "$TMP/err")" = 1 ] || fail "--timeout in a case: not one line on stderr"
grep -Eq '^kverify: rmsnorm-bwd\[rows=16384,dim=64,eps=1e-06,seed=1\]: the device has not finished a submission after 3 s .*the reports holding the cases before it and this one as an error$' \
  "$TMP/err" || fail "--timeout in a case: $(cat "$TMP/err")"
python3 - "$TMP/report.json" <<'PY' || fail "--timeout in a case: the report"
import json, sys
r = json.load(open(sys.argv[1]))
c = r["cases"]
assert r["summary"]["errors"] == 1 and len(c) == 1 and c[0]["status"] == "error", r["summary"]
assert c[0]["error"].startswith("the device has not finished a submission after 3 s (--timeout)"), c[0]["error"]
assert c[0]["time_ms"]["device"] >= 3000, c[0]["time_ms"]  # the time waited for it, at least
PY
grep -q '<error message="the device has not finished a submission after 3 s' "$TMP/hang.xml" || fail "--timeout: JUnit"
# on several devices, the hung row is named by its device as the others are
expect_exit 4 "$KV" rmsnorm-bwd --rows 16384 --dim 64 --shader r="$KV_SRC/tests/shaders/spin_r.comp" --timeout 3 \
  --device 0 --device 0 "${J[@]}"
python3 - "$TMP/report.json" <<'PY' || fail "--timeout on several devices: the hung row's name"
import json, sys
c = json.load(open(sys.argv[1]))["cases"]
assert len(c) == 1 and c[0]["status"] == "error" and c[0]["name"].endswith("]@0"), c
PY
expect_exit 0 "$KV" rmsnorm-bwd --rows 64 --dim 64 --timeout 0 "${J[@]}" # 0: none
expect_error 2 "--json: empty file name" "$KV" rmsnorm-bwd --json ""
expect_error 2 "usage: kverify COMMAND" "$KV"
expect_error 2 "--shader: 'r' is not STAGE=FILE" "$KV" rmsnorm-bwd --shader r "${J[@]}"
expect_error 2 "has no stage 'dz'" "$KV" rmsnorm-bwd --shader dz=x.comp "${J[@]}"
expect_error 2 "--json: cannot write to directory '$TMP/nodir'" "$KV" rmsnorm-bwd --json "$TMP/nodir/r.json"
expect_error 2 "list: unknown option '--bogus'" "$KV" list --bogus
# device-dependent usage errors
expect_error 2 "no usable device with index 99" "$KV" rmsnorm-bwd --device 99 "${J[@]}"
expect_error 2 "no device name contains 'no-such-gpu'" "$KV" rmsnorm-bwd --device no-such-gpu "${J[@]}"
# a buffer beyond the device's maxStorageBufferRange (every device's is < 2^32 bytes):
# 2^31-1 elements of f32 is 8 GiB; on a device without buffer addresses (the test
# hook) nothing binds it (tests/cli/windows.sh has the addressed runs)
KVERIFY_TEST_NO_ADDR=1 expect_error 2 "maxStorageBufferRange .* nor by address: this device lacks bufferDeviceAddress" \
  "$KV" rmsnorm-bwd --rows 1 --dim 2147483647 "${J[@]}"
# rmsnorm-bwd's tensors may pass 2^31 elements (its shaders' indices are unsigned):
# 2^31 + 2^15 elements reach the binding's check, not the size's
KVERIFY_TEST_NO_ADDR=1 expect_error 2 "tensor x needs 8590131200 bytes, more than this device's maxStorageBufferRange" \
  "$KV" rmsnorm-bwd --rows 65537 --dim 32768 "${J[@]}"
# a case that cannot fit the machine's memory is refused in one line before anything
# is made (the memory available replaced by the test hook): its inputs alone are 16 MB
KVERIFY_TEST_MEM_AVAILABLE=10000000 expect_error 2 "needs at least [0-9.]+ MB of host memory .*, more than the 10\.00 MB available" \
  "$KV" rmsnorm-bwd --rows 512 --dim 4096 "${J[@]}"
KVERIFY_TEST_MEM_AVAILABLE=10000000 expect_exit 0 "$KV" rmsnorm-bwd --rows 512 --dim 256 "${J[@]}" # 0.5 MB each: fits
# the oracle counts too: qdq-affine with groups of 2 holds 16 bytes an element
# for each of its four per-group outputs (4.19 MB here) and their slack, group
# state and q's codes (5.24 MB), beside 3.80 MB of inputs and outputs, the
# intermediates the later stages read (scales, biases and q), rounded on the host
# and in the device's buffers (1.31 MB), and the chained reruns' qdq and d_scales
# (0.79 MB): 15.34 MB, where this process peaks at 105 MB with lavapipe's own (an
# H200 host was killed for memory at 2^31 elements, where the inputs and outputs
# came to 45 GB of its 134)
KVERIFY_TEST_MEM_AVAILABLE=15200000 expect_error 2 "needs at least 15\.3[0-9] MB of host memory \(its inputs, outputs and whole oracles\), more than the 15\.20 MB available" \
  "$KV" qdq-affine --groups 65536 --group-size 2 "${J[@]}"
KVERIFY_TEST_MEM_AVAILABLE=15500000 expect_exit 0 "$KV" qdq-affine --groups 65536 --group-size 2 "${J[@]}"
# a spec kernel's oracle held whole (--save: none in blocks) keeps 41 bytes an
# element: silu-bwd 65536 holds 1.31 MB of tensors on lavapipe and 2.69 MB of oracle
KVERIFY_TEST_MEM_AVAILABLE=3900000 expect_error 2 "needs at least 4\.00 MB of host memory .*whole oracles" \
  "$KV" silu-bwd --n 65536 --save "$TMP/mem_saved" "${J[@]}"
[ ! -e "$TMP/mem_saved" ] || fail "a case refused for memory made its --save folder"
KVERIFY_TEST_MEM_AVAILABLE=4100000 expect_exit 0 "$KV" silu-bwd --n 65536 --save "$TMP/mem_saved" "${J[@]}"
[ -d "$TMP/mem_saved" ] || fail "a saved case did not make its --save folder"
# bad shader files: exit 3
expect_error 3 "$TMP/missing.comp: cannot open" "$KV" rmsnorm-bwd --shader r="$TMP/missing.comp" "${J[@]}"
printf '#version 450\nlayout(local_size_x = 64) in;\nvoid main() { undeclared = 1; }\n' > "$TMP/broken.comp"
expect_error 3 "broken.comp: does not compile: .*undeclared" "$KV" rmsnorm-bwd --shader r="$TMP/broken.comp" "${J[@]}"
cp "$KV_SRC"/shaders/* "$TMP/"
expect_error 3 "declares binding 2, but the stage has 2 bindings" "$KV" rmsnorm-bwd --shader r="$TMP/rmsnorm_bwd_dx.comp" "${J[@]}"
expect_error 3 "binding 4 is missing" "$KV" rmsnorm-bwd --shader dx="$TMP/rmsnorm_bwd_dw.comp" "${J[@]}"
sed 's/uint rows; uint dim; float eps;/uint rows; uint dim; float eps; float extra;/' "$TMP/rmsnorm_bwd_r.comp" > "$TMP/push.comp"
expect_error 3 "push-constant member 3 \(4 bytes at offset 12\) lies past the stage's 12 bytes" "$KV" rmsnorm-bwd --shader r="$TMP/push.comp" "${J[@]}"
sed 's/uint rows; uint dim; float eps;/uint rows; float dim; float eps;/; s/p\.dim/uint(p.dim)/g' "$TMP/rmsnorm_bwd_r.comp" > "$TMP/push.comp"
expect_error 3 "push-constant member 1 is 4 bytes of 32-bit float at offset 4, where the stage has uint dim \(uint rows; uint dim; float eps;\)" \
  "$KV" rmsnorm-bwd --shader r="$TMP/push.comp" "${J[@]}"
sed 's/uint rows; uint dim; float eps;/int rows; int dim; float eps;/' "$TMP/rmsnorm_bwd_r.comp" > "$TMP/push.comp"
expect_exit 0 "$KV" rmsnorm-bwd --rows 3 --dim 40 --shader r="$TMP/push.comp" # int for uint: the same bits
sed 's/layout(std430, set = 0, binding = 0) readonly buffer XB { float X\[\]; }/layout(std140, set = 0, binding = 0) uniform XB { vec4 X[16]; }/' "$TMP/rmsnorm_bwd_r.comp" | sed 's/float v = X\[base + i\];/float v = X[0].x;/' > "$TMP/ubo.comp"
expect_error 3 "binding 0 is a uniform buffer" "$KV" rmsnorm-bwd --shader r="$TMP/ubo.comp" "${J[@]}"
printf 'not spirv at all' > "$TMP/bad.spv"
expect_error 3 "bad.spv: not a SPIR-V module" "$KV" rmsnorm-bwd --shader r="$TMP/bad.spv" "${J[@]}"
head -c 40 "$(dirname "$0")/lib.bash" > "$TMP/short.spv"
expect_error 3 "short.spv: not a SPIR-V module" "$KV" rmsnorm-bwd --shader r="$TMP/short.spv" "${J[@]}"
# A module that is SPIR-V but not valid (an id used that nothing defines) is
# bad input, checked before the driver sees it (lavapipe crashes on some).
glslc --target-env=vulkan1.2 "$TMP/rmsnorm_bwd_dx.comp" -o "$TMP/dx.spv" || fail "glslc"
python3 - "$TMP/dx.spv" "$TMP/undef.spv" <<'PY' || fail "no OpStore to break"
import struct, sys
b = open(sys.argv[1], "rb").read()
w = list(struct.unpack("<%dI" % (len(b) // 4), b))
i = 5
while w[i] & 0xffff != 62:  # OpStore: its object becomes an id nothing defines
    i += w[i] >> 16
w[i + 2] = w[3] + 7
w[3] += 16  # the bound past it
open(sys.argv[2], "wb").write(struct.pack("<%dI" % len(w), *w))
PY
expect_error 3 "undef.spv: not a valid SPIR-V module: ID .* has not been defined" \
  "$KV" rmsnorm-bwd --shader dx="$TMP/undef.spv" "${J[@]}"
expect_exit 0 "$KV" rmsnorm-bwd --rows 3 --dim 70 --shader dx="$TMP/dx.spv"
# Two GLCompute entry points (the same function under a second name, valid
# SPIR-V): a stage runs one, and which is not for kverify to guess.
spirv-dis "$TMP/dx.spv" | sed 's/^\( *OpEntryPoint GLCompute \(%[a-z0-9_]*\) "main"\)\(.*\)$/\1\3\n OpEntryPoint GLCompute \2 "other"\3/' > "$TMP/two.spvasm"
spirv-as --target-env vulkan1.2 "$TMP/two.spvasm" -o "$TMP/two.spv" || fail "spirv-as"
expect_error 3 "two.spv.*: SPIR-V has 2 GLCompute entry points; a stage runs a module's one" \
  "$KV" rmsnorm-bwd --shader dx="$TMP/two.spv" "${J[@]}"
exit 0
