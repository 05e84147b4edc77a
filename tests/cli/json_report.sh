# --json writes a report that parses and holds every field of schema 2
# (design.md), with non-finite numbers as strings, never null.
. "$(dirname "$0")/lib.bash"
expect_exit 0 "$KV" rmsnorm-bwd --rows 4 --dim 33 --eps 0 --dist zero-row --seed 3 --json "$TMP/r.json"
"$KV" rmsnorm-bwd --rows 5 --dim 7 --json - > "$TMP/stdout.json" 2>/dev/null || fail "--json - failed"
python3 - "$TMP/r.json" "$TMP/stdout.json" <<'PY' || fail "report does not match schema 2"
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))  # with --json -, stdout holds only the report
    assert d["kverify"]["schema"] == 2 and d["kverify"]["version"]
    dev = d["device"]
    for k in ("index", "name", "type", "driver", "api", "subgroup_size"):
        assert k in dev, k
    assert dev["type"] in ("cpu", "discrete", "integrated", "virtual", "other")
    assert d["cases"], "no cases"
    for c in d["cases"]:
        for k in ("name", "kernel", "params", "seed", "status", "error", "outputs", "time_ms"):
            assert k in c, k
        assert c["status"] in ("pass", "fail", "error", "skip")
        assert c["generator"].startswith("philox4x32-10"), c.get("generator")  # which generator made the inputs
        assert c["name"].startswith("rmsnorm-bwd[") and "seed=" in c["name"]
        for k in ("rows", "dim", "eps"):
            assert isinstance(c["params"][k], (int, float)), k
        for k in ("upload", "device", "chained", "download", "oracle", "compare"):
            assert isinstance(c["time_ms"][k], (int, float)), k
        assert c["time_ms"]["chained"] > 0, "rmsnorm-bwd's chained reruns (dx and dw on the device's r) not timed"
        names = [o["name"] for o in c["outputs"]]
        assert names == ["r", "dx", "dw", "dx.chained", "dw.chained"], names
        for o in c["outputs"]:
            for k in ("name", "stage", "dtype", "shape", "oracle", "elements", "max_ulp", "mean_ulp",
                      "p99_ulp", "max_abs", "max_rel", "rel_skipped", "nmse", "rmse_ratio",
                      "max_bound_ratio", "nan_mismatch", "inf_mismatch", "worst", "tolerance", "pass"):
                assert k in o, (o["name"], k)
            for k in ("max_ulp", "max_abs", "nmse", "max_bound_ratio"):
                v = o[k]
                assert v is not None and (isinstance(v, (int, float)) or v in ("NaN", "Infinity", "-Infinity")), (k, v)
            assert o["dtype"] == "f32" and o["oracle"] == "spec"
            n = 1
            for s in o["shape"]: n *= s
            assert o["elements"] == n
            if o["worst"] is not None:
                assert len(o["worst"]["index"]) == len(o["shape"])
                assert "device" in o["worst"] and "oracle" in o["worst"]
            assert o["tolerance"]["bound_ratio"] == 1.0
            assert isinstance(o["pass"], bool)
    s = d["summary"]
    assert s["cases"] == len(d["cases"]) == s["passed"] + s["failed"] + s["errors"] + s["skipped"]
zr = json.load(open(sys.argv[1]))["cases"][0]["outputs"]
assert zr[0]["inf_match"] == 1, zr[0]          # r of the zero row is +Inf on both sides
assert zr[1]["nan_match"] == 33, zr[1]         # dx of the zero row is NaN on both sides
assert zr[2]["nan_match"] == 33, zr[2]         # 0*Inf reaches every dw column
PY
exit 0
