/* Regressions between two JSON reports: per case (by name) and output (by
 * name), newly failing or erroring, newly NaN/Inf, max bound ratio or max
 * ULP grown by more than the factor, and cases or outputs removed. Added
 * cases and improvements are listed and do not count. Values below a
 * twentieth of the tolerance (bound ratio) or one ULP are not compared for
 * growth: at that size a factor of two is noise, not a regression. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/regress.h"

#include "core/files.h"
#include "reports/report.h"

/* v as a report writes a number: a JSON number, or the strings "NaN",
 * "Infinity" and "-Infinity" (reports/json.c); 0 where it is neither. */
static int value_of(const cJSON *v, double *x)
{
    static const struct { const char *s; double x; } spelled[] = {{"NaN", NAN}, {"Infinity", INFINITY},
                                                                    {"-Infinity", -INFINITY}};
    const char *s = cJSON_GetStringValue(v);
    *x = cJSON_IsNumber(v) ? v->valuedouble : 0;
    for (size_t i = 0; s && i < sizeof spelled / sizeof *spelled; i++)
        if (!strcmp(s, spelled[i].s)) return *x = spelled[i].x, 1;
    return cJSON_IsNumber(v);
}

/* Field k of o, where present, a number as a report writes one. */
static int num_or_absent(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    double x;
    return !v || value_of(v, &x);
}

/* A number field, its value; absent or not a number: 0. */
static double num(const cJSON *o, const char *k)
{
    double x;
    value_of(cJSON_GetObjectItemCaseSensitive(o, k), &x);
    return x;
}

/* What a comparison reads of a report's cases, where present, of the type
 * a report gives it: a baseline whose field has another type would
 * otherwise read as absent (a case with no outputs, a ratio of 0) and hide
 * a regression. One line naming the first field that is not. */
static enum kv_status check_cases(const char *path, const cJSON *cases)
{
    static const char *const nums[] = {"max_bound_ratio", "max_ulp", "nan_mismatch", "inf_mismatch"};
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        if (!cJSON_IsObject(c) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "name")))
            return kv_error(KV_EDATA, "%s: cases[%d]: not an object with a \"name\" string", path, i);
        const cJSON *outs = cJSON_GetObjectItemCaseSensitive(c, "outputs"), *o;
        const cJSON *bench = cJSON_GetObjectItemCaseSensitive(c, "bench");
        const cJSON *stages = cJSON_GetObjectItemCaseSensitive(bench, "stages"), *s;
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "status")))
            return kv_error(KV_EDATA, "%s: cases[%d].status: not a string", path, i);
        if (outs && !cJSON_IsArray(outs)) return kv_error(KV_EDATA, "%s: cases[%d].outputs: not a list", path, i);
        if (bench && !cJSON_IsNull(bench) && !cJSON_IsObject(bench))
            return kv_error(KV_EDATA, "%s: cases[%d].bench: not an object", path, i);
        if (stages && !cJSON_IsObject(stages))
            return kv_error(KV_EDATA, "%s: cases[%d].bench.stages: not an object", path, i);
        cJSON_ArrayForEach(s, stages) if (!cJSON_IsObject(s) || !num_or_absent(s, "min_ms"))
            return kv_error(KV_EDATA, "%s: cases[%d].bench.stages.%s: not an object with a number min_ms", path, i,
                            s->string);
        int j = 0;
        cJSON_ArrayForEach(o, outs)
        {
            if (!cJSON_IsObject(o) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "name")))
                return kv_error(KV_EDATA, "%s: cases[%d].outputs[%d]: not an object with a \"name\" string", path, i, j);
            for (size_t k = 0; k < sizeof nums / sizeof *nums; k++)
                if (!num_or_absent(o, nums[k]))
                    return kv_error(KV_EDATA, "%s: cases[%d].outputs[%d].%s: not a number", path, i, j, nums[k]);
            static const char *const flags[] = {"judged", "pass"};
            for (size_t k = 0; k < 2; k++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, flags[k]);
                if (v && !cJSON_IsBool(v))
                    return kv_error(KV_EDATA, "%s: cases[%d].outputs[%d].%s: not true or false", path, i, j, flags[k]);
            }
            j++;
        }
        i++;
    }
    return KV_OK;
}

enum kv_status kv_report_parse(const char *path, const char *buf, size_t size, cJSON **out)
{
    enum kv_status st = KV_OK;
    *out = cJSON_ParseWithLength(buf, size);
    KV_CHECK(*out, KV_EDATA, "%s: not JSON (near byte %ld)", path,
             cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - buf) : 0L);
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(*out, "kverify");
    KV_CHECK(cJSON_IsObject(kv) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(*out, "cases")), KV_EDATA,
             "%s: not a kverify report (no \"kverify\" object and \"cases\" array)", path);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(kv, "schema");
    KV_CHECK(cJSON_IsNumber(schema) && (schema->valuedouble == 1 || schema->valuedouble == KV_REPORT_SCHEMA), KV_EDATA,
             "%s: report schema is not 1 or %d", path, KV_REPORT_SCHEMA);
    KV_TRY(check_cases(path, cJSON_GetObjectItemCaseSensitive(*out, "cases")));
cleanup:
    if (st) cJSON_Delete(*out), *out = NULL;
    return st;
}

enum kv_status kv_report_read(const char *path, cJSON **out)
{
    enum kv_status st = KV_OK;
    char *buf = NULL;
    size_t size;
    *out = NULL;
    KV_TRY(kv_read_file(path, (size_t)1 << 31, &buf, &size));
    st = kv_report_parse(path, buf, size, out);
cleanup:
    free(buf);
    return st;
}

static const cJSON *find(const cJSON *arr, const char *name)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, arr)
    {
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(x, "name"));
        if (n && !strcmp(n, name)) return x;
    }
    return NULL;
}

static const char *str(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return s ? s : "";
}

static int is_true(const cJSON *o, const char *k) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k)); }

struct tally {
    size_t regress, improve;
    FILE *f;
    struct kv_regression *list;
    size_t n, cap;
    int want, oom; /* want: keep the rows in list */
};

static void keep(struct tally *t, int kind, const char *cs, const char *out, const char *what, const char *before,
                 const char *after)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        struct kv_regression *l = realloc(t->list, cap * sizeof *l);
        if (!l) {
            t->oom = 1;
            return;
        }
        t->list = l, t->cap = cap;
    }
    struct kv_regression *r = &t->list[t->n++];
    r->kind = kind;
    snprintf(r->case_name, sizeof r->case_name, "%s", cs);
    snprintf(r->output, sizeof r->output, "%s", out);
    snprintf(r->what, sizeof r->what, "%s", what);
    snprintf(r->before, sizeof r->before, "%s", before);
    snprintf(r->after, sizeof r->after, "%s", after);
}

/* regression: 1 counts; 0 an improvement; -1 a change listed for information. */
static void row(struct tally *t, int regression, const char *cs, const char *out, const char *what, const char *before,
                const char *after)
{
    if (t->want && !t->oom) keep(t, regression, cs, out, what, before, after);
    if (!t->f) {
        if (regression > 0) t->regress++;
        else t->improve++;
        return;
    }
    if (t->regress + t->improve == 0)
        fprintf(t->f, "  %-11s %-44s %-18s %-26s %s -> %s\n", "", "case", "output", "what", "before", "after");
    fprintf(t->f, "  %-11s %-44s %-18s %-26s %s -> %s\n",
            regression > 0 ? "REGRESSION" : regression ? "listed" : "improved", cs, out, what, before, after);
    if (regression > 0) t->regress++;
    else t->improve++;
}

static void grown(struct tally *t, const char *cs, const char *on, const char *what, double a, double b, double factor,
                  double floor)
{
    char x[32], y[32];
    snprintf(x, sizeof x, "%.4g", a), snprintf(y, sizeof y, "%.4g", b);
    if (b > factor * a && b >= floor) row(t, 1, cs, on, what, x, y);
    else if (a > factor * b && a >= floor) row(t, 0, cs, on, what, x, y);
}

static void compare_outputs(struct tally *t, const char *cs, const cJSON *pc, const cJSON *cc, double factor)
{
    const cJSON *po = cJSON_GetObjectItemCaseSensitive(pc, "outputs"), *co = cJSON_GetObjectItemCaseSensitive(cc, "outputs");
    const cJSON *o;
    cJSON_ArrayForEach(o, po)
    {
        const char *on = str(o, "name");
        const cJSON *n = find(co, on);
        if (!n) {
            row(t, 1, cs, on, "output removed", "present", "absent");
            continue;
        }
        if (!is_true(o, "judged")) continue;
        if (is_true(o, "pass") && !is_true(n, "pass")) row(t, 1, cs, on, "newly failing", "pass", "FAIL");
        if (!is_true(o, "pass") && is_true(n, "pass")) row(t, 0, cs, on, "now passing", "FAIL", "pass");
        double a = num(o, "nan_mismatch") + num(o, "inf_mismatch"), b = num(n, "nan_mismatch") + num(n, "inf_mismatch");
        char x[32], y[32];
        snprintf(x, sizeof x, "%.0f", a), snprintf(y, sizeof y, "%.0f", b);
        if (a == 0 && b > 0) row(t, 1, cs, on, "newly NaN/Inf mismatches", x, y);
        grown(t, cs, on, "max bound ratio", num(o, "max_bound_ratio"), num(n, "max_bound_ratio"), factor, 0.05);
        grown(t, cs, on, "max ULP", num(o, "max_ulp"), num(n, "max_ulp"), factor, 1.0);
    }
    cJSON_ArrayForEach(o, co) if (!find(po, str(o, "name"))) row(t, -1, cs, str(o, "name"), "output added", "absent", "present");
}

size_t kv_regressions(const cJSON *prev, const cJSON *cur, double factor, FILE *f)
{
    return kv_regressions_list(prev, cur, factor, f, NULL, NULL);
}

size_t kv_regressions_list(const cJSON *prev, const cJSON *cur, double factor, FILE *f, struct kv_regression **list,
                           size_t *n)
{
    struct tally t = {0, 0, f, NULL, 0, 0, list != NULL, 0};
    const cJSON *pcs = cJSON_GetObjectItemCaseSensitive(prev, "cases"), *ccs = cJSON_GetObjectItemCaseSensitive(cur, "cases");
    if (f) fprintf(f, "against the baseline (regress factor %g):\n", factor);
    const cJSON *c;
    cJSON_ArrayForEach(c, pcs)
    {
        const char *cs = str(c, "name");
        const cJSON *n = find(ccs, cs);
        if (!n) {
            row(&t, 1, cs, "-", "case removed", str(c, "status"), "absent");
            continue;
        }
        const char *a = str(c, "status"), *b = str(n, "status");
        if (!strcmp(a, "pass") && strcmp(b, "pass") && strcmp(b, "skip"))
            row(&t, 1, cs, "-", !strcmp(b, "error") ? "newly erroring" : "newly failing", a, b);
        else if (strcmp(a, "pass") && !strcmp(b, "pass")) row(&t, 0, cs, "-", "now passing", a, b);
        compare_outputs(&t, cs, c, n, factor);
        /* --bench: a stage's fastest time grown by more than the factor is a slowdown. */
        const cJSON *pb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "bench"), "stages");
        const cJSON *nb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(n, "bench"), "stages");
        const cJSON *s;
        cJSON_ArrayForEach(s, pb)
        {
            const cJSON *q = cJSON_GetObjectItemCaseSensitive(nb, s->string);
            if (!q) continue;
            char stage[80];
            snprintf(stage, sizeof stage, "stage %s", s->string);
            grown(&t, cs, stage, "bench min time (ms)", num(s, "min_ms"), num(q, "min_ms"), factor, 0);
        }
    }
    cJSON_ArrayForEach(c, ccs) if (!find(pcs, str(c, "name"))) row(&t, -1, str(c, "name"), "-", "case added", "absent", str(c, "status"));
    if (f) fprintf(f, "%zu regressions, %zu improvements or changes listed\n", t.regress, t.improve);
    if (list) *list = t.list, *n = t.n;
    else free(t.list);
    return t.regress;
}
