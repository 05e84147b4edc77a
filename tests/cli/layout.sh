# src/'s layout (src/README.md): scripts/layout.py passes on the tree, and
# fails by name on a copy with a planted layer breach, a circle between two
# modules, a circle between two files of a folder, a file outside the layer
# folders, and an overlong function.
. "$(dirname "$0")/lib.bash"
py=$(command -v python3) || { echo "skipped: no python3"; exit 77; }
run "$py" "$KV_SRC/scripts/layout.py" "$KV_SRC/src"
[ "$RC" = 0 ] || { cat "$TMP/out" "$TMP/err"; fail "layout.py finds violations in src/"; }
grep -q ' 0 violations' "$TMP/err" || fail "layout.py gave no count"

cp -r "$KV_SRC/src" "$TMP/src"
# core may include nothing of a later layer
sed -i 's|#include "core/status.h"|#include "core/status.h"\n#include "pipeline/run.h"|' "$TMP/src/core/tensor.h"
# plan.h including run.h closes a circle (run.c includes plan.h)
sed -i 's|#include "pipeline/runner.h"|#include "pipeline/run.h"|' "$TMP/src/pipeline/plan.h"
mkdir "$TMP/src/misc"; echo "int x;" > "$TMP/src/misc/stray.c"
# svg.c calling html.c's page head closes a circle between files that share no
# header of their own (html.c draws with svg.c's plots)
printf 'void kv_svg_page(struct kv_sbuf *b)\n{\n    kv_html_head(b, "x");\n}\n' >> "$TMP/src/reports/svg.c"
{ echo 'int long_one(void)'; echo '{'; for i in $(seq 1 101); do echo '    (void)0;'; done; echo '    return 0;'; echo '}'; } >> "$TMP/src/core/rng.c"
run "$py" "$KV_SRC/scripts/layout.py" "$TMP/src"
[ "$RC" = 1 ] || fail "layout.py exits $RC on a broken tree, expected 1"
grep -q '^core/tensor.h: #include "pipeline/run.h": layer core may not include pipeline' "$TMP/out" || { cat "$TMP/out"; fail "layer breach not named"; }
grep -q '^circle: .*pipeline/plan.*pipeline/run\|^circle: .*pipeline/run.*pipeline/plan' "$TMP/out" || { cat "$TMP/out"; fail "circle not named"; }
grep -q '^file circle: reports/html.c -> reports/svg.c -> reports/html.c' "$TMP/out" || { cat "$TMP/out"; fail "file circle not named"; }
grep -q '^misc/stray.c: in no layer folder' "$TMP/out" || { cat "$TMP/out"; fail "stray file not named"; }
grep -q '^core/rng.c:[0-9]*: a function of 105 lines' "$TMP/out" || { cat "$TMP/out"; fail "long function not named"; }
echo "layout ok"
