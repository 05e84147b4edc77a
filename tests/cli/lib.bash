# Helpers for the CLI end-to-end tests. $KV is the kverify binary, $KV_SRC the
# source tree. A test that needs a device and finds none exits 77 (skipped).
set -u
: "${KV:?KV must name the kverify binary}" "${KV_SRC:?KV_SRC must name the source tree}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# $KV_BIN is the binary itself. In an AddressSanitizer build, KV_PRELOAD names
# a library that kverify must run with preloaded (tests/CMakeLists.txt): $KV
# is then a wrapper that preloads it for kverify alone, in a folder of its own
# ($TMP's contents are the tests' to list).
KV_BIN=$KV
if [ -n "${KV_PRELOAD:-}" ]; then
  KV_WRAP=$(mktemp -d)
  trap 'rm -rf "$TMP" "$KV_WRAP"' EXIT
  printf '#!/bin/bash\nLD_PRELOAD=%q exec %q "$@"\n' "$KV_PRELOAD" "$KV_BIN" > "$KV_WRAP/kverify"
  chmod +x "$KV_WRAP/kverify"
  export KV_BIN KV="$KV_WRAP/kverify"
fi
fail() { echo "FAIL: $*" >&2; exit 1; }

# seeds FULL FEW: FULL, or FEW in an AddressSanitizer build (KV_SANITIZED, from
# tests/CMakeLists.txt), where a run takes 3 to 5 times its optimized time (the
# host code instrumented, every buffer past 128 KiB mapped and unmapped by the
# sanitizer's allocator). Seeds change the values drawn, not the shapes, sizes or
# code paths the sanitizers check; the other builds run every seed.
seeds() { if [ -n "${KV_SANITIZED:-}" ]; then echo "$2"; else echo "$1"; fi; }

# run_kv CMD...: run, keep stdout/stderr in $TMP/out, $TMP/err, status in $RC.
run() { "$@" >"$TMP/out" 2>"$TMP/err"; RC=$?; }

# expect_exit CODE CMD...: the command exits CODE. A 77 we did not ask for
# means no device: the test is skipped.
expect_exit() {
  local want=$1; shift
  run "$@"
  if [ "$RC" = 77 ] && [ "$want" != 77 ]; then echo "skipped: no Vulkan device"; exit 77; fi
  if [ "$RC" != "$want" ]; then
    tail -n 20 "$TMP/out" >&2; cat "$TMP/err" >&2
    fail "'$*' exited $RC, expected $want"
  fi
}

# expect_error CODE REGEX CMD...: exit CODE, stderr exactly one line matching
# REGEX, and no report written to $TMP/report.json.
expect_error() {
  local want=$1 re=$2; shift 2
  rm -f "$TMP/report.json"
  expect_exit "$want" "$@"
  local lines; lines=$(wc -l < "$TMP/err")
  [ "$lines" = 1 ] || { cat "$TMP/err" >&2; fail "'$*': stderr has $lines lines, expected one"; }
  grep -Eq -e "$re" "$TMP/err" || { cat "$TMP/err" >&2; fail "'$*': stderr does not match /$re/"; }
  [ ! -e "$TMP/report.json" ] || fail "'$*': wrote a report despite the error"
  ls "$TMP" | grep -q 'report.json.tmp' && fail "'$*': left a temporary report behind"
  return 0
}

# expect_same_report CODE VAR CMD...: CMD exits CODE, and reports exactly the
# same cases (times aside) with VAR=1 in its environment; the reports are left
# in $TMP/sc.json (without) and $TMP/sf.json (with).
expect_same_report() {
  local code=$1 var=$2; shift 2
  expect_exit "$code" "$@" --json "$TMP/sc.json"
  (export "$var=1"; expect_exit "$code" "$@" --json "$TMP/sf.json") || exit $?
  python3 - "$TMP/sc.json" "$TMP/sf.json" <<'PY' || fail "'$*': the report differs with $var=1"
import json, sys
a, b = (json.load(open(f))["cases"] for f in sys.argv[1:])
for x in a + b: x.pop("time_ms", None)
assert a == b
PY
}

# expect_stressed_sweep N CMD...: CMD (a --sweep) passes N cases, each with its
# stress runs made (the report's "stress" names them).
expect_stressed_sweep() {
  local n=$1; shift
  expect_exit 0 "$@" --json "$TMP/st.json"
  grep -q "^$n cases: $n passed, 0 failed, 0 errors, 0 skipped" "$TMP/out" || fail "'$*': expected $n passing cases"
  python3 -c 'import json,sys; cs=json.load(open(sys.argv[1]))["cases"]; assert cs and all(c["stress"] for c in cs)' \
    "$TMP/st.json" || fail "'$*': a case without its stress runs"
}

# expect_lower_peak VAR KB CMD...: a case (exit 0) reports the same with VAR=1
# in its environment and peaks more than KB kilobytes lower without it (each
# run's own peak resident memory, from wait4). A first run, not measured, fills
# the shader caches: a run that compiles its pipelines (Mesa's and kverify's
# caches empty, as on a fresh machine) peaks tens of MB higher, more under
# AddressSanitizer, whose quarantine keeps the compiler's freed memory. The
# report without VAR is left in $TMP/sc.json.
expect_lower_peak() {
  local var=$1 kb=$2; shift 2
  python3 - "$TMP" "$var" "$kb" "$@" <<'PY'
import json, os, shutil, subprocess, sys
tmp, var, kb, cmd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def run(name, env):
    with open(f"{tmp}/{name}.err", "wb") as err:
        p = subprocess.Popen(cmd + ["--json", f"{tmp}/{name}.json"], env=dict(os.environ, **env),
                             stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    rc = p.returncode
    if rc == 77: sys.exit(77)
    assert rc == 0, (name, rc, open(f"{tmp}/{name}.err", "rb").read()[-2000:])
    case = json.load(open(f"{tmp}/{name}.json"))["cases"][0]
    case.pop("time_ms", None)
    return case, usage.ru_maxrss
run("warm", {})
low, peak_low = run("low", {})
high, peak_high = run("high", {var: "1"})
assert low == high, "the reports differ"
assert peak_high - peak_low > kb, (peak_low, peak_high)
shutil.copy(f"{tmp}/low.json", f"{tmp}/sc.json")
PY
  local rc=$?
  [ $rc = 77 ] && { echo "skipped: no Vulkan device"; exit 77; }
  [ $rc = 0 ] || fail "'$*': not the same report, or not $kb KB lower at the peak, than with $var=1"
}

# expect_whole_oracle_report CMD...: a case (exit 0) reports exactly what it
# reports with every oracle made whole (KVERIFY_TEST_FULL_ORACLE=1: none made
# block by block or holding only the sampled elements); the report is left in
# $TMP/sc.json.
expect_whole_oracle_report() {
  expect_same_report 0 KVERIFY_TEST_FULL_ORACLE "$@"
}

# expect_compact_oracle CMD...: a --sample case (exit 0) whose oracle holds only
# the sampled elements reports exactly what the whole oracle reports on the same
# sample; the report is left in $TMP/sc.json.
expect_compact_oracle() {
  expect_whole_oracle_report "$@"
  python3 - "$TMP/sc.json" <<'PY' || fail "'$*': an output not sampled"
import json, sys
assert all(o["elements"] < o["elements_total"] for o in json.load(open(sys.argv[1]))["cases"][0]["outputs"])
PY
}
