# --junit and --markdown: well-formed, the counts of the JSON report, the
# failing output and its worst element named; bad forms of the flags.
. "$(dirname "$0")/lib.bash"
command -v xmllint >/dev/null || fail "xmllint (libxml2-utils) is needed"
mkdir -p "$TMP/mut" && cp "$KV_SRC"/shaders/* "$TMP/mut/"
patch -s -p1 -d "$TMP/mut" < "$KV_SRC/tests/mutants/qdq-round-half-even.patch" || fail "patch"
# A failing run: bits=1 ties catch the round-half-even shader; bits=4 passes.
run "$KV" qdq-affine --groups 16 --group-size 8 --dist ties --bits 1 --seeds 2 --shader init="$TMP/mut/qdq_affine_init.comp" \
    --json "$TMP/r.json" --junit "$TMP/r.xml" --markdown "$TMP/r.md"
[ "$RC" = 1 ] || fail "the mutant run exited $RC, expected 1"
xmllint --noout "$TMP/r.xml" || fail "JUnit report is not well-formed XML"
python3 - "$TMP/r.json" "$TMP/r.xml" <<'PY' || fail "JUnit counts differ from the JSON report"
import json, sys, xml.etree.ElementTree as ET
rep = json.load(open(sys.argv[1])); root = ET.parse(sys.argv[2]).getroot()
rows = [(c["name"], o["name"], o["pass"]) for c in rep["cases"] for o in c["outputs"] if o["judged"]]
cases = root.findall("./testsuite/testcase")
assert root.tag == "testsuites" and int(root.get("tests")) == len(rows) == len(cases), (root.attrib, len(rows))
fails = [c for c in cases if c.find("failure") is not None]
assert int(root.get("failures")) == len(fails) == sum(1 for r in rows if not r[2]) > 0
assert {(c.get("classname"), c.get("name")) for c in fails} == {(r[0], r[1]) for r in rows if not r[2]}
q = [c for c in fails if c.get("name") == "q"][0].find("failure").get("message")
assert "unexplained code differences" in q and "first at [" in q, q
for c in cases: float(c.get("time"))
PY
grep -q '^| `qdq-affine\[groups=16,group-size=8,bits=1,dist=ties,seed=1\]` | q | codes: ' "$TMP/r.md" || fail "Markdown row"
grep -q '\*\*FAIL\*\*' "$TMP/r.md" && grep -q '^### kverify: 2 cases, 0 passed, 2 failed' "$TMP/r.md" || fail "Markdown summary"
# - is stdout (the table moves to stderr); one report at most on stdout.
expect_exit 0 "$KV" rmsnorm-bwd --rows 2 --dim 8 --junit -
xmllint --noout "$TMP/out" || fail "--junit - is not XML on stdout"
grep -q 'passed' "$TMP/err" || fail "the table did not move to stderr"
expect_error 2 "--junit -: only one report can go to stdout" "$KV" rmsnorm-bwd --json - --junit -
expect_error 2 "--markdown: cannot write to directory '$TMP/no/such'" "$KV" rmsnorm-bwd --markdown "$TMP/no/such/r.md"
expect_error 2 "--junit: empty file name" "$KV" rmsnorm-bwd --junit ""
