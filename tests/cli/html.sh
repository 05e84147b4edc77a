# --html and kverify report: the page holds its plots and nothing from outside;
# the JSON report holds the data behind them (a bug planted in one row and one
# column shows as that row and column of the pooled map); a trend over three
# reports marks the regression; the progress line appears on a terminal only;
# --narrow; bad input. Where chromium is installed (scripts/setup.sh --test installs
# it) the pages are rendered headless to PNG and their DOM checked.
. "$(dirname "$0")/lib.bash"
py=$(command -v python3) || fail "no python3"

# A case page: histograms, map, worst elements, the reproducing command, nothing external.
expect_exit 0 "$KV" rmsnorm-bwd --rows 40 --dim 100 --html "$TMP/case.html" --json "$TMP/case.json"
h="$TMP/case.html"
for want in '<svg class="hist hist-ulp"' '<svg class="hist hist-ratio"' '<svg class="heatmap"' \
            'data:image/png;base64,' '<table class="worst">' 'class="pass"' 'pass line' \
            'reproduce: <code>kverify rmsnorm-bwd --rows 40 --dim 100 --eps 1e-06 --dist normal' \
            'command: <code>kverify rmsnorm-bwd --rows 40 --dim 100 --html'; do
  grep -qF -- "$want" "$h" || fail "case page lacks $want"
done
[ "$(grep -o '<svg class="heatmap"' "$h" | wc -l)" = 5 ] || fail "case page: not one map per output row (5)"
grep -Eiq '<script|<link|@import|url\(|(src|href)="(https?:)?//' "$h" && fail "case page loads something from outside"
"$py" - "$TMP/case.json" <<'PY' || fail "the JSON report lacks the distribution data"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kverify"]["schema"] == 2 and d["kverify"]["command"].startswith("kverify rmsnorm-bwd")
for o in d["cases"][0]["outputs"]:
    ds = o["distribution"]
    n = ds["ulp_hist"]["zero"] + sum(ds["ulp_hist"]["counts"]) + ds["mismatch"]
    assert n == o["elements"] - o["nan_match"] - o["inf_match"], (o["name"], n)
    assert len(ds["ratio_hist"]["edges"]) == len(ds["ratio_hist"]["counts"]) and ds["ratio_hist"]["pass_line"] == 1
    m = ds["map"]
    assert m["rows"] * m["cols"] == o["elements"] and len(m["max_ratio"]) == m["cell_rows"]
    top = max(max(v for v in row if v is not None) for row in m["max_ratio"])
    assert abs(top - o["max_bound_ratio"]) <= 0.01 * o["max_bound_ratio"], (top, o["max_bound_ratio"])
    assert ds["worst"] and ds["worst"][0]["ratio"] >= ds["worst"][-1]["ratio"]
PY

# A bug confined to row 7 and column 13 of dx (scalar path: dim 101) is that row and column of the map.
cp -r "$KV_SRC/shaders" "$TMP/sh"
sed -i 's|^\( *\)DX\[base + k\] = rb \* |\1DX[base + k] = (row == 7u \|\| k == 13u ? 1.01 : 1.0) * rb * |' "$TMP/sh/rmsnorm_bwd_dx.comp"
grep -q 'row == 7u' "$TMP/sh/rmsnorm_bwd_dx.comp" || fail "could not plant the bug"
expect_exit 1 "$KV" rmsnorm-bwd --rows 40 --dim 101 --shader dx="$TMP/sh/rmsnorm_bwd_dx.comp" --json "$TMP/bug.json" \
  --html "$TMP/bug.html"
"$py" - "$TMP/bug.json" <<'PY' || fail "the planted row and column are not where the map puts them"
import json, sys
o = [o for o in json.load(open(sys.argv[1]))["cases"][0]["outputs"] if o["name"] == "dx"][0]
m = o["distribution"]["map"]
assert (m["cell_rows"], m["cell_cols"]) == (40, 101), (m["cell_rows"], m["cell_cols"])
for r, row in enumerate(m["max_ratio"]):
    for c, v in enumerate(row):
        assert (v > 1) == (r == 7 or c == 13), (r, c, v)
PY
grep -q 'class="fail"' "$TMP/bug.html" || fail "the failing page shows no failure"

# A suite page: the matrix links every case. The smoke suite's entries but its
# sweeps (cli.suite runs them; here they would only add cases to link), with
# its fixtures' paths made absolute.
"$py" - "$KV_SRC/suites/smoke.json" "$TMP/smoke.json" <<'PY' || fail "the smoke suite without its sweeps"
import json, os, sys
d = json.load(open(sys.argv[1]))
here = os.path.dirname(os.path.abspath(sys.argv[1]))
d["cases"] = [c for c in d["cases"] if not c.get("sweep")]
for c in d["cases"]:
    if "inputs" in c: c["inputs"] = os.path.join(here, c["inputs"])
json.dump(d, open(sys.argv[2], "w"))
PY
expect_exit 0 "$KV" run "$TMP/smoke.json" --html "$TMP/suite.html" --json "$TMP/suite.json"
n=$("$py" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cases"]))' "$TMP/suite.json")
[ "$(grep -o '<table class="matrix">' "$TMP/suite.html" | wc -l)" = 16 ] || fail "suite page lacks a matrix per kernel"
for i in $(seq 0 $((n - 1))); do
  grep -q "href=\"#case-$i\"" "$TMP/suite.html" && grep -q "id=\"case-$i\"" "$TMP/suite.html" || fail "case $i not linked"
done
[ "$(stat -c %s "$TMP/suite.html")" -lt 5000000 ] || fail "suite page over 5 MB"

# --bench: each stage's rate as a bar (against the ceilings where measured).
expect_exit 0 "$KV" rmsnorm-bwd --rows 4 --dim 33 --bench 2 --bench-warmup 0 --html "$TMP/bench.html"
[ "$(grep -o '<div class="bar">' "$TMP/bench.html" | wc -l)" -ge 3 ] || fail "bench page lacks a bar per stage"

# Three runs, the last with the bug: the trend marks it, in the page and the data.
expect_exit 0 "$KV" rmsnorm-bwd --rows 40 --dim 101 --json "$TMP/r1.json"
expect_exit 0 "$KV" rmsnorm-bwd --rows 40 --dim 101 --json "$TMP/r2.json"
expect_exit 0 "$KV" report "$TMP/r1.json" "$TMP/r2.json" "$TMP/bug.json" --html "$TMP/trend.html" --json "$TMP/trend.json"
grep -q '<svg class="trend"' "$TMP/trend.html" || fail "trend page lacks trend lines"
grep -q 'class="reg"' "$TMP/trend.html" || fail "trend page marks no regression"
"$py" - "$TMP/trend.json" <<'PY' || fail "trend data"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["runs"]) == 3
dx = [s for s in d["series"] if s["output"] == "dx"][0]
assert dx["regression_at"] == [3] and dx["max_bound_ratio"][2] > 1 >= dx["max_bound_ratio"][1], dx
r = [s for s in d["series"] if s["output"] == "r"][0]
assert r["regression_at"] == [], r
PY
expect_exit 0 "$KV" report "$TMP/r1.json" "$TMP/bug.json" --html "$TMP/ba.html"
grep -q 'id="before-after"' "$TMP/ba.html" && grep -q 'REGRESSION' "$TMP/ba.html" || fail "before/after page"
expect_exit 0 "$KV" report "$TMP/r1.json" --html "$TMP/one.html"
grep -q '<svg class="heatmap"' "$TMP/one.html" || fail "one report's page lacks its maps"

# Progress: on a terminal (script gives one) a line; not otherwise.
if command -v script > /dev/null; then
  KVERIFY_PROGRESS_AFTER_MS=0 script -qc "'$KV' rmsnorm-bwd --sweep --seeds 1 --no-stress" /dev/null > "$TMP/tty.txt" 2>&1
  grep -aq '\[1/15\]' "$TMP/tty.txt" || fail "no progress line on a terminal"
fi
KVERIFY_PROGRESS_AFTER_MS=0 "$KV" rmsnorm-bwd --sweep --seeds 1 --no-stress > /dev/null 2> "$TMP/notty.err"
[ ! -s "$TMP/notty.err" ] || fail "progress written where stderr is not a terminal"

# --narrow keeps the worst element and the verdict in about 90 columns.
expect_exit 0 "$KV" rmsnorm-bwd --rows 4 --dim 33 --narrow
w=$(awk 'NR > 1 { if (length($0) > m) m = length($0) } END { print m }' "$TMP/out")
[ "$w" -le 100 ] || fail "--narrow rows are $w columns"
grep -q ' vs .*pass$' "$TMP/out" || fail "--narrow lost the worst element"

# Bad input: one line, the documented code, nothing written.
echo '{"not": "a report"}' > "$TMP/other.json"
expect_error 3 'not a kverify report' "$KV" report "$TMP/other.json" --html "$TMP/report.json"
expect_error 3 'cannot open' "$KV" report "$TMP/missing.json" --html "$TMP/report.json"
echo '{' > "$TMP/broken.json"
expect_error 3 'not JSON' "$KV" report "$TMP/broken.json" --html "$TMP/report.json"
expect_error 2 'cannot write to directory' "$KV" report "$TMP/r1.json" --html "$TMP/no/such/dir/x.html"
expect_error 2 '--html OUT.html is required' "$KV" report "$TMP/r1.json"
expect_error 2 'no report given' "$KV" report --html "$TMP/report.json"
expect_error 2 'cannot write to directory' "$KV" rmsnorm-bwd --rows 4 --dim 33 --html "$TMP/no/dir/x.html"
expect_error 2 'does not go to stdout' "$KV" rmsnorm-bwd --rows 4 --dim 33 --html -
[ ! -e "$TMP/no" ] || fail "a missing directory was made"

# In a real browser: the pages render (not blank) and their DOM holds the plots.
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then echo "no chromium: browser checks skipped"; exit 0; fi
for page in case suite trend; do
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1600 \
    --screenshot="$TMP/$page.png" "file://$TMP/$page.html" > /dev/null 2>&1 || fail "chromium could not render $page"
  "$py" - "$TMP/$page.png" <<'PY' || fail "$page: the screenshot is blank"
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n"
w, h, depth, ctype = struct.unpack(">IIBB", b[16:26])
data, i = b"", 8
while i < len(b):
    n, t = struct.unpack(">I4s", b[i:i + 8])
    if t == b"IDAT": data += b[i + 8:i + 8 + n]
    i += 12 + n
raw = zlib.decompress(data)
bpp = {2: 3, 6: 4}[ctype]
stride = w * bpp + 1
rows = [raw[y * stride + 1:(y + 1) * stride] for y in range(0, h, 7)]  # filtered bytes: a rough look suffices
colours = set()
for r in rows:
    for x in range(0, len(r) - bpp, bpp * 5):
        colours.add(r[x:x + bpp])
assert len(colours) > 20, len(colours)
PY
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --dump-dom "file://$TMP/$page.html" > "$TMP/$page.dom" 2> /dev/null \
    || fail "chromium could not load $page"
  grep -Eiq '(src|href)="(https?:)?//' "$TMP/$page.dom" && fail "$page: DOM names an external URL"
done
grep -q '<svg class="heatmap"' "$TMP/case.dom" && grep -q '<svg class="hist hist-ratio"' "$TMP/case.dom" || fail "case DOM lacks plots"
grep -q '<table class="matrix">' "$TMP/suite.dom" || fail "suite DOM lacks the matrix"
grep -q '<svg class="trend"' "$TMP/trend.dom" || fail "trend DOM lacks the trend"
cp "$TMP"/*.png "${KV_SHOTS:-$TMP}/" 2> /dev/null || true
echo "html ok"
