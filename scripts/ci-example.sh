#!/usr/bin/env bash
# kverify in a CI job: each machine of a matrix runs one shard of a suite and
# writes JUnit for the CI's test view; a last job merges the shards, writes
# Markdown for the pull request, and gates on the main branch's report.
#
#   GitLab:   test: parallel: 4, script: scripts/ci-example.sh shard $CI_NODE_INDEX $CI_NODE_TOTAL
#             artifacts: reports: junit: out/shard-*.xml
#   GitHub:   strategy.matrix.shard: [1, 2, 3, 4]; upload out/ as an artifact; a JUnit
#             action (e.g. mikepenz/action-junit-report) reads out/shard-*.xml
#
#   Nightly, new inputs each night: SEED_OFFSET moves every case's seeds on
#   (kverify run --seed-offset); each case's seed is in its name, so a failure
#   reproduces, and a baseline matches no case of a new night: gate on failures.
#             SEED_OFFSET=$(date +%Y%m%d)000 scripts/ci-example.sh shard I N suites/nightly.json
#
# Usage: scripts/ci-example.sh shard I N [SUITE]       (one matrix job)
#        scripts/ci-example.sh gate [BASELINE.json]     (after all shards: merge, comment, gate)
# KV names the kverify binary (default: build/kverify); out/ holds the reports.
set -euo pipefail
KV=${KV:-build/kverify}
mkdir -p out
case "${1:-}" in
shard)
  i=$2 n=$3 suite=${4:-suites/smoke.json}
  # A failing case must not hide the report: keep the exit code for the end.
  rc=0
  "$KV" run "$suite" --shard "$i/$n" ${SEED_OFFSET:+--seed-offset "$SEED_OFFSET"} --json "out/shard-$i.json" --junit "out/shard-$i.xml" || rc=$?
  exit "$rc"
  ;;
gate)
  base=${2:-}
  "$KV" merge out/shard-*.json -o out/all.json
  rc=0
  if [ -n "$base" ] && [ -f "$base" ]; then
    # Newly failing outputs, new NaN/Inf, error bounds grown 2x: exit 1.
    "$KV" compare "$base" out/all.json --regress-factor 2 | tee out/regressions.txt || rc=$?
  fi
  python3 - out/all.json > out/comment.md <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = r["summary"]
print(f"### kverify: {s['cases']} cases, {s['passed']} passed, {s['failed']} failed, {s['errors']} errors")
for c in r["cases"]:
    if c["status"] != "pass":
        bad = [o["name"] for o in c["outputs"] if o["judged"] and not o["pass"]]
        print(f"- `{c['name']}`: {c['status']} {', '.join(bad) or c.get('error') or ''}")
PY
  [ "$(python3 -c "import json; print(json.load(open('out/all.json'))['summary']['failed'])")" = 0 ] || rc=1
  exit "$rc"
  ;;
*)
  echo "usage: $0 shard I N [SUITE] | $0 gate [BASELINE.json]" >&2
  exit 2
  ;;
esac
