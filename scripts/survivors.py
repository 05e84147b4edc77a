#!/usr/bin/env python3
"""Check a `kverify mutate --json` report against tests/mutants/SURVIVORS.md.

usage: scripts/survivors.py REPORT.json [SURVIVORS.md]

Prints each surviving mutant the list explains (with its kind) and each it does
not, then the score over the mutants that are not equivalent (kinds
equivalent and nan-payload left out), per stage as kverify mutate counts, and
per site: a change to a file that several stages include (gdn_wu.glsl,
gemm_tile.glsl) is one bug, killed when any stage's sweep kills it. Exit 0 when
every survivor is explained, 1 when some are not, 2 on bad input.
"""
import json
import os
import re
import sys

ROW = re.compile(r"^\|\s*([^|:\s]+):(\d+|\*):(\d+|\*)\s*\|\s*(.*?)\s*\|\s*([a-z-]+(?: \(unexplained\))?)\s*\|\s*(.*?)\s*\|$")
EQUIVALENT = {"equivalent", "nan-payload"}


def load_rules(path):
    rules = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line.strip())
            if m:
                file, ln, col, change, kind, why = m.groups()
                rules.append((file, ln, col, change, kind, why))
    return rules


def explain(m, rules):
    for file, ln, col, change, kind, why in rules:
        if file != os.path.basename(m["file"]):
            continue
        if ln != "*" and int(ln) != m["line"]:
            continue
        if col != "*" and int(col) != m["column"]:
            continue
        if change != "*" and change != m["change"]:
            continue
        return kind, why
    return None


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    here = os.path.dirname(os.path.abspath(__file__))
    md = argv[2] if len(argv) > 2 else os.path.join(here, "..", "tests", "mutants", "SURVIVORS.md")
    try:
        with open(argv[1], encoding="utf-8") as f:
            report = json.load(f)
        rules = load_rules(md)
    except (OSError, ValueError) as e:
        print(f"survivors.py: {e}", file=sys.stderr)
        return 2
    rank = {"killed": 2, "survived": 1, "equivalent": 0}
    killed, counts, unexplained, sites = 0, {}, [], {}
    for m in report.get("mutants", []):
        if m["status"].startswith("killed"):
            killed += 1
            fate = "killed"
        elif m["status"] == "survived":
            hit = explain(m, rules)
            where = f'{m["stage"]} {m["file"]}:{m["line"]}:{m["column"]} {m["operator"]} {m["change"]}'
            if hit:
                counts[hit[0]] = counts.get(hit[0], 0) + 1
                print(f"  {hit[0]:<22} {where}")
            else:
                unexplained.append(where)
                print(f"  {'UNEXPLAINED':<22} {where}")
            fate = "equivalent" if (hit and hit[0] in EQUIVALENT) else "survived"
        elif m["status"] == "equivalent":
            fate = "equivalent"
        else:
            continue
        # A site (file, line, column, change) takes its best fate over the stages that compile it.
        key = (m["file"], m["line"], m["column"], m["change"])
        if key not in sites or rank[fate] > rank[sites[key]]:
            sites[key] = fate
    site_killed = sum(1 for f in sites.values() if f == "killed")
    site_judged = sum(1 for f in sites.values() if f != "equivalent")
    equivalent = sum(v for k, v in counts.items() if k in EQUIVALENT)
    survived = sum(counts.values()) + len(unexplained)
    judged = killed + survived - equivalent
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    print(f'{report.get("kernel", "?")}: {killed} killed, {survived} survived ({kinds}; unexplained {len(unexplained)}); '
          f"killed of the non-equivalent: {killed}/{judged} = {100.0 * killed / judged if judged else 100.0:.2f}%; "
          f"by site {site_killed}/{site_judged} = {100.0 * site_killed / site_judged if site_judged else 100.0:.2f}%")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
