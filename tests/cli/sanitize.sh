# The shader sanitizer (--sanitize): a planted bug of each kind it checks
# fails with its own row naming the kind, the source line, the array and the
# index; the same shaders unplanted pass; a .spv works (its location then a
# SPIR-V word); a shadow too large for shared memory goes to a buffer; the
# shipped shaders' sanitized runs compute what the plain runs do; the reports
# carry the rows; the flags' bad forms are refused.
. "$(dirname "$0")/lib.bash"
S="$KV_SRC/shaders"
cp "$S"/*.glsl "$TMP/"

# plant FILE SED: $TMP/FILE is the shipped FILE with one line changed by SED.
plant() {
  cp "$S/$1" "$TMP/$1"
  sed -i "$2" "$TMP/$1"
  cmp -s "$S/$1" "$TMP/$1" && fail "$1: the planted bug did not apply"
  return 0
}

# caught KIND REGEX KERNEL ARGS...: the case fails, with a KIND row matching REGEX.
caught() {
  local kind=$1 re=$2; shift 2
  expect_exit 1 "$KV" "$@" --sanitize --json "$TMP/report.json"
  grep -E "^  $kind " "$TMP/out" | grep -Eq -e "$re" || { cat "$TMP/out" >&2; fail "$*: no $kind row matching /$re/"; }
  grep -q "\"sanitizer\":[[:space:]]*\"$kind\"" "$TMP/report.json" || fail "$*: the JSON report lacks the $kind row"
}

RMS="rmsnorm-bwd --rows 8 --dim 256"
# A private index one past its end, whose value no output sees.
plant rmsnorm_bwd_dx.comp 's/vec4 t = ds\[c\] \* xs\[c\] \* ws\[c\];/vec4 t = ds[c] * xs[c] * ws[c]; if (xs[min(p.dim, CAP)].x == 1.0e30) acc = 2.0;/'
caught memcheck 'rmsnorm_bwd_dx\.comp:58.*: index 8 of xs \(length 8\), invocation [0-9]+ of workgroup \([0-9]+,0,0\)' \
  $RMS --shader "dx=$TMP/rmsnorm_bwd_dx.comp"
grep -Eq '^  dx ' "$TMP/out" && grep -E '^  dx ' "$TMP/out" | grep -q FAIL && fail "private-oob: the output itself failed; the bug should reach only the sanitizer"
# A shared index one past its end.
plant rmsnorm_bwd_dw.comp 's/for (uint k = 0u; k < WY; k++) t += part\[k\]\[lx\];/for (uint k = 0u; k <= WY; k++) { float v = part[k][lx]; if (k < WY) t += v; }/'
caught memcheck 'rmsnorm_bwd_dw\.comp:42.*: index 16 of part \(length 16\)' $RMS --shader "dw=$TMP/rmsnorm_bwd_dw.comp"
# A read one past an input's logical end, its value discarded.
plant rmsnorm_bwd_dw.comp 's/acc += DY\[i\] \* X\[i\] \* R\[b\];/acc += DY[i] * X[i] * R[b]; if (X[i + 1u] == 1.0e30) acc = 0.0;/'
caught memcheck 'rmsnorm_bwd_dw\.comp:36.*: index 2048 of tensor x \(binding 0, 2048 elements\)' \
  $RMS --shader "dw=$TMP/rmsnorm_bwd_dw.comp"
# A removed barrier between a shared write and another invocation's read (the
# next column block's write races with this one's reads).
awk '/barrier\(\);/{n++; if (n == 2) next} {print}' "$S/rmsnorm_bwd_dw.comp" > "$TMP/rmsnorm_bwd_dw.comp"
caught racecheck 'rmsnorm_bwd_dw\.comp:38.*: shared part\[[0-9]+\]\[[0-9]+\] \(of \[16\]\[64\]\) accessed between two barriers, invocations [0-9]+ and [0-9]+ of workgroup' \
  rmsnorm-bwd --rows 8 --dim 512 --shader "dw=$TMP/rmsnorm_bwd_dw.comp"
# A grid-stride step one short: the workgroups' rows overlap, and two store the same
# value to one r[row] (which no output shows: the value is right).
plant rmsnorm_bwd_r.comp 's/row += gl_NumWorkGroups.x)/row += max(gl_NumWorkGroups.x - 1u, 1u))/'
caught racecheck-global 'stage r: [0-9]+ races? through storage buffers?; .*rmsnorm_bwd_r\.comp:30: byte [0-9]+ of tensor r \(binding 1\) stored by workgroup \([0-9],0,0\) \(invocation 0\) where workgroup [0-9] \(linear index\) stored it' \
  $RMS --shader "r=$TMP/rmsnorm_bwd_r.comp"
grep -E '^  r ' "$TMP/out" | grep -q FAIL && fail "racecheck-global: the output itself failed; the bug should reach only the sanitizer"
# Two invocations of a workgroup store the row's sum (the same value) with no barrier between.
plant rmsnorm_bwd_r.comp 's/if (gl_LocalInvocationID.x == 0u) R\[row\]/if (gl_LocalInvocationID.x < 2u) R[row]/'
caught racecheck-global 'rmsnorm_bwd_r\.comp:30: byte [0-9]+ of tensor r \(binding 1\) stored by invocation 1 of workgroup \([0-9],0,0\) where invocation 0 stored it with no workgroup barrier between' \
  $RMS --no-subgroup --shader "r=$TMP/rmsnorm_bwd_r.comp"
# A read of what the next workgroup stores (a neighbour's row, its value unused):
# workgroups run in order here, so the load comes first and the store finds it.
plant rmsnorm_bwd_r.comp 's/if (gl_LocalInvocationID.x == 0u) R\[row\] = \(.*\);/if (gl_LocalInvocationID.x == 0u) { R[row] = \1; if (R[(row + 1u) % p.rows] == 1.0e30) R[row] = 0.0; }/'
sed -i 's/writeonly buffer RB/buffer RB/' "$TMP/rmsnorm_bwd_r.comp"
caught racecheck-global 'rmsnorm_bwd_r\.comp:30: byte [0-9]+ of tensor r \(binding 1\) (stored|loaded) by workgroup \([0-9],0,0\) \(invocation 0\) where workgroup [0-9] \(linear index\) (loaded|stored) it' \
  $RMS --shader "r=$TMP/rmsnorm_bwd_r.comp"
# Atomics whose results nothing reads order no workgroups (adamw-step-bf16 sets
# each bf16 half with atomicAnd and atomicOr): its grid-stride step one short
# (elements updated twice, to the same values) is a race through m_out.
AW="adamw-step-bf16 --n 3000 --max-groups 3"
plant adamw_step.glsl 's/i = kv_next(i, stride, p.n))/i = kv_next(i, stride - 1u, p.n))/'
cp "$S/adamw_step_bf16.comp" "$TMP/"
caught racecheck-global 'stage step: [0-9]+ races? through storage buffers?; .*adamw_step\.glsl:[0-9]+: byte [0-9]+ of tensor (m_out|v_out) \(binding [56]\) stored by workgroup \([0-9],0,0\) \(invocation [0-9]+\) where workgroup [0-9] \(linear index\) stored it' \
  $AW --shader "step=$TMP/adamw_step_bf16.comp"
grep -E '^  (p|m|v)_out ' "$TMP/out" | grep -q FAIL && fail "adamw: an output itself failed; the bug should reach only the sanitizer"
# An atomic whose result is read back may order them: the check is off, and says so.
sed -i 's/    atomicOr(pow_\[i >> 1\], (b \& 0xffffu) << shift);/    if (atomicOr(pow_[i >> 1], (b \& 0xffffu) << shift) == 0xdeadbeefu) return;/' "$TMP/adamw_step_bf16.comp"
grep -q 'if (atomicOr' "$TMP/adamw_step_bf16.comp" || fail "plant: adamw_step_bf16.comp's atomicOr changed (update the test)"
expect_exit 0 "$KV" $AW --sanitize --shader "step=$TMP/adamw_step_bf16.comp"
grep -q 'stage step: racecheck-global off: the shader.s atomics may order its workgroups' "$TMP/out" ||
  fail "an atomic read back did not turn racecheck-global off"
cp "$S/adamw_step.glsl" "$TMP/"
# A read of a shared word never written.
plant rmsnorm_bwd_dw.comp 's/part\[ly\]\[lx\] = acc;/if (ly != 1u) part[ly][lx] = acc;/'
caught initcheck 'rmsnorm_bwd_dw\.comp:42.*: shared part\[1\]\[[0-9]+\] \(of \[16\]\[64\]\), invocation 0 of workgroup' \
  $RMS --shader "dw=$TMP/rmsnorm_bwd_dw.comp"
grep -q 'failure type="initcheck"' "$TMP/report.json" && fail "the JSON report is not JUnit"
expect_exit 1 "$KV" $RMS --sanitize --shader "dw=$TMP/rmsnorm_bwd_dw.comp" --junit "$TMP/junit.xml" --markdown "$TMP/r.md"
grep -q 'failure type="initcheck" message="initcheck: stage dw: ' "$TMP/junit.xml" || fail "JUnit lacks the initcheck failure"
grep -q '| initcheck |.*never written.* | FAIL |' "$TMP/r.md" || fail "Markdown lacks the initcheck row"

# Subgroup barriers order their own subgroup only: each invocation stores a value,
# then reads a neighbour's (lane ^ 1, in its subgroup; or ^ 64, in another).
subgroup_dw() { # PARTNER BARRIER
  sed -e 's/^#version 450/#version 450\n#extension GL_KHR_shader_subgroup_basic : require/' \
      -e 's/^shared float part\[WY\]\[WX\];/shared float part[WY][WX];\nshared float xch[WX * WY];/' \
      -e "s/^        part\[ly\]\[lx\] = acc;/        uint me = gl_LocalInvocationIndex; xch[me] = acc; $2 if (xch[me ^ $1] == 1.0e30) acc = 0.0; part[ly][lx] = acc;/" \
      "$S/rmsnorm_bwd_dw.comp" > "$TMP/rmsnorm_bwd_dw.comp"
  grep -q "xch\[me ^ $1\]" "$TMP/rmsnorm_bwd_dw.comp" || fail "the subgroup exchange did not apply"
}
subgroup_dw 1u 'subgroupBarrier();'
expect_exit 0 "$KV" $RMS --sanitize --shader "dw=$TMP/rmsnorm_bwd_dw.comp"
grep -Eq 'racecheck|initcheck' "$TMP/out" && { cat "$TMP/out"; fail "a subgroup barrier between lanes of one subgroup was not followed"; }
subgroup_dw 1u ''
caught racecheck 'rmsnorm_bwd_dw\.comp:[0-9]+.*: shared xch\[[0-9]+\] \(of \[1024\]\) accessed between two barriers' \
  $RMS --shader "dw=$TMP/rmsnorm_bwd_dw.comp"
subgroup_dw 64u 'subgroupBarrier();'
caught racecheck 'shared xch\[[0-9]+\]' $RMS --shader "dw=$TMP/rmsnorm_bwd_dw.comp"

# The same shaders unplanted pass, and without --sanitize the planted races pass on this device.
for f in rmsnorm_bwd_dx.comp rmsnorm_bwd_dw.comp; do cp "$S/$f" "$TMP/$f"; done
expect_exit 0 "$KV" $RMS --sanitize --shader "dx=$TMP/rmsnorm_bwd_dx.comp" --shader "dw=$TMP/rmsnorm_bwd_dw.comp"
grep -Eq 'memcheck|racecheck|initcheck' "$TMP/out" && fail "the unplanted shaders have sanitizer rows"

# A .spv works too; without debug information the location is a SPIR-V word.
plant rmsnorm_bwd_dw.comp 's/acc += DY\[i\] \* X\[i\] \* R\[b\];/acc += DY[i] * X[i] * R[b]; if (X[i + 1u] == 1.0e30) acc = 0.0;/'
glslc --target-env=vulkan1.2 -O "$TMP/rmsnorm_bwd_dw.comp" -o "$TMP/dw.spv" || fail "glslc"
caught memcheck 'SPIR-V word [0-9]+ \(OpAccessChain\): index 2048 of tensor x' $RMS --shader "dw=$TMP/dw.spv"

# A shadow too large for shared memory beside the shader's own (gemm's tiles
# on a 32 KiB device) is kept in a storage buffer: a removed barrier in the
# tile loop is still a race.
cp "$S/gemm_bwd_dA.comp" "$TMP/"
awk '/barrier\(\);/{n++; if (n == 2) next} {print}' "$S/gemm_tile.glsl" > "$TMP/gemm_tile.glsl"
caught racecheck 'gemm_tile\.glsl:[0-9]+.*: shared s[xy]\[' gemm-bwd --m 64 --n 64 --k 96 --shader "dA=$TMP/gemm_bwd_dA.comp"
cp "$S/gemm_tile.glsl" "$TMP/"

# The shipped shaders instrumented compute what they compute plain: the
# sanitized run adds no row (an output that differed would be a row
# "NAME@sanitized"), and no record.
for k in "rmsnorm-bwd --rows 5 --dim 300" "gemm-bwd --m 40 --n 33 --k 20 --variant accumulate" \
         "qdq-affine --groups 9 --group-size 64 --bits 3" "gdn-wu --seq 70 --heads 2 --kv-heads 1 --dk 64 --dv 36" \
         "gdn-wy-bwd --seq 66 --heads 2 --kv-heads 1 --dk 40 --dv 33" "softmax-bwd --rows 3 --dim 700" \
         "layernorm-bwd --rows 4 --dim 300" "cross-entropy-bwd --rows 3 --classes 1000"; do
  expect_exit 0 "$KV" $k --sanitize --json "$TMP/report.json"
  grep -q '"stress":[[:space:]]*"sanitized"' "$TMP/report.json" || fail "$k: no sanitized run"
  grep -Eq '@sanitized|memcheck|racecheck|initcheck' "$TMP/out" && fail "$k: the sanitized run differs"
done

# --sweep runs it with the stress runs; --no-sanitize leaves it out.
expect_exit 0 "$KV" softmax-bwd --sweep --seeds 1 --json "$TMP/report.json"
grep -q '"stress":[[:space:]]*"groups=1,groups=3+reversed,reversed,sanitized"' "$TMP/report.json" || fail "--sweep: no sanitized run"
expect_exit 0 "$KV" softmax-bwd --sweep --seeds 1 --no-sanitize --json "$TMP/report.json"
grep -q 'sanitized' "$TMP/report.json" && fail "--no-sanitize: a sanitized run"

# Bad forms.
expect_error 2 "option '--sanitize' doesn't allow an argument|unknown option '--sanitize=1'" "$KV" $RMS --sanitize=1
expect_error 2 "unknown option '--no-sanitize=yes'|doesn't allow an argument" "$KV" $RMS --no-sanitize=yes
expect_error 2 "unknown option '--sanitise'" "$KV" $RMS --sanitise
echo ok
