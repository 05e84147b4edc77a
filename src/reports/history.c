/* `kverify report A.json B.json ...`: a page from saved reports in run
 * order. Two reports: each case and output before and after. More: each
 * output's largest bound ratio and ULP over the runs as a line, with the
 * runs where kverify compare finds a regression against the run before
 * marked. The last report's own page follows. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "reports/html.h"
#include "reports/svg.h"
#include "reports/regress.h"

static const cJSON *find(const cJSON *arr, const char *name)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) if (!strcmp(kv_jstr(x, "name"), name)) return x;
    return NULL;
}

/* A series: one (case, output) over the runs. */
struct series {
    const char *cs, *out;
    double *ratio, *ulp;
    unsigned char *mark;
};

static struct series *add_series(struct series **s, size_t *n, size_t *cap, const char *cs, const char *out, size_t runs)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*s)[i].cs, cs) && !strcmp((*s)[i].out, out)) return &(*s)[i];
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 32;
        struct series *t = realloc(*s, c * sizeof *t);
        if (!t) return NULL;
        *s = t, *cap = c;
    }
    struct series *x = &(*s)[(*n)++];
    x->cs = cs, x->out = out;
    x->ratio = malloc(runs * sizeof *x->ratio), x->ulp = malloc(runs * sizeof *x->ulp);
    x->mark = calloc(runs, 1);
    if (!x->ratio || !x->ulp || !x->mark) return NULL;
    for (size_t r = 0; r < runs; r++) x->ratio[r] = x->ulp[r] = NAN;
    return x;
}

/* Every (case, output) of every run, and the regression marks. */
static enum kv_status collect(struct cJSON *const *reports, size_t n, double factor, struct series **s, size_t *ns)
{
    size_t cap = 0;
    for (size_t r = 0; r < n; r++) {
        const cJSON *c, *o;
        cJSON_ArrayForEach(c, kv_jget(reports[r], "cases")) cJSON_ArrayForEach(o, kv_jget(c, "outputs"))
        {
            if (!cJSON_IsTrue(kv_jget(o, "judged"))) continue;
            struct series *x = add_series(s, ns, &cap, kv_jstr(c, "name"), kv_jstr(o, "name"), n);
            if (!x) return kv_error(KV_EDATA, "out of memory drawing the history");
            x->ratio[r] = kv_jnum(o, "max_bound_ratio"), x->ulp[r] = kv_jnum(o, "max_ulp");
        }
        if (r == 0) continue;
        struct kv_regression *list = NULL;
        size_t nl = 0;
        kv_regressions_list(reports[r - 1], reports[r], factor, NULL, &list, &nl);
        for (size_t i = 0; i < nl; i++) {
            if (list[i].kind != 1) continue;
            for (size_t k = 0; k < *ns; k++)
                /* an output's own regression; a case's (erroring, removed) on the outputs it lost */
                if (!strcmp((*s)[k].cs, list[i].case_name) &&
                    (!strcmp((*s)[k].out, list[i].output) || (!strcmp(list[i].output, "-") && isnan((*s)[k].ratio[r]))))
                    (*s)[k].mark[r] = 1;
        }
        free(list);
    }
    return KV_OK;
}

static void before_after(struct kv_sbuf *b, struct cJSON *const *rep, const char *const *labels, double factor)
{
    struct kv_regression *list = NULL;
    size_t nl = 0, nreg = kv_regressions_list(rep[0], rep[1], factor, NULL, &list, &nl);
    kv_sb_printf(b, "<h2 id=\"before-after\">Before and after: %zu regressions</h2>\n<p>before ", nreg);
    kv_sb_esc(b, labels[0]);
    kv_sb_printf(b, ", after ");
    kv_sb_esc(b, labels[1]);
    kv_sb_printf(b, " (regress factor %g)</p>\n<table class=\"ba\"><tr><th class=\"n\">case</th><th class=\"n\">output"
                    "</th><th>bound ratio before</th><th>after</th><th>max ULP before</th><th>after</th>"
                    "<th class=\"n\">judged</th></tr>\n", factor);
    const cJSON *c, *o;
    cJSON_ArrayForEach(c, kv_jget(rep[1], "cases")) cJSON_ArrayForEach(o, kv_jget(c, "outputs"))
    {
        if (!cJSON_IsTrue(kv_jget(o, "judged"))) continue;
        const cJSON *po = find(kv_jget(find(kv_jget(rep[0], "cases"), kv_jstr(c, "name")), "outputs"), kv_jstr(o, "name"));
        const char *mark = "";
        for (size_t i = 0; i < nl; i++)
            if (!strcmp(list[i].case_name, kv_jstr(c, "name")) &&
                (!strcmp(list[i].output, kv_jstr(o, "name")) || !strcmp(list[i].output, "-")))
                mark = list[i].kind == 1 ? "REGRESSION" : list[i].kind == 0 && !*mark ? "improved" : mark;
        char cb[8], ca[8];
        kv_ratio_colour(po ? kv_jnum(po, "max_bound_ratio") : -1, cb);
        kv_ratio_colour(kv_jnum(o, "max_bound_ratio"), ca);
        kv_sb_printf(b, "<tr><td class=\"n\">");
        kv_sb_esc(b, kv_jstr(c, "name"));
        kv_sb_printf(b, "</td><td class=\"n\">");
        kv_sb_esc(b, kv_jstr(o, "name"));
        kv_sb_printf(b, "</td><td style=\"background:%s\">%.3g</td><td style=\"background:%s\">%.3g</td><td>%.3g</td>"
                        "<td>%.3g</td><td class=\"n %s\">%s</td></tr>\n", cb, po ? kv_jnum(po, "max_bound_ratio") : NAN,
                     ca, kv_jnum(o, "max_bound_ratio"), po ? kv_jnum(po, "max_ulp") : NAN, kv_jnum(o, "max_ulp"),
                     *mark == 'R' ? "fail regression" : "", mark);
    }
    kv_sb_printf(b, "</table>\n");
    free(list);
}

static cJSON *series_json(const struct series *s, size_t ns, size_t runs, const char *const *labels)
{
    cJSON *root = cJSON_CreateObject(), *r = cJSON_AddArrayToObject(root, "runs");
    for (size_t i = 0; i < runs; i++) cJSON_AddItemToArray(r, cJSON_CreateString(labels[i]));
    cJSON *arr = cJSON_AddArrayToObject(root, "series");
    for (size_t k = 0; k < ns; k++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "case", s[k].cs);
        cJSON_AddStringToObject(x, "output", s[k].out);
        cJSON *a = cJSON_AddArrayToObject(x, "max_bound_ratio"), *u = cJSON_AddArrayToObject(x, "max_ulp");
        cJSON *m = cJSON_AddArrayToObject(x, "regression_at");
        for (size_t i = 0; i < runs; i++) {
            cJSON_AddItemToArray(a, isfinite(s[k].ratio[i]) ? cJSON_CreateNumber(s[k].ratio[i]) : cJSON_CreateNull());
            cJSON_AddItemToArray(u, isfinite(s[k].ulp[i]) ? cJSON_CreateNumber(s[k].ulp[i]) : cJSON_CreateNull());
            if (s[k].mark[i]) cJSON_AddItemToArray(m, cJSON_CreateNumber((double)i + 1));
        }
        cJSON_AddItemToArray(arr, x);
    }
    return root;
}

static void trends(struct kv_sbuf *b, const struct series *s, size_t ns, size_t runs, const char *const *labels)
{
    kv_sb_printf(b, "<h2 id=\"trend\">Over %zu runs</h2>\n<ol class=\"runs\">", runs);
    for (size_t i = 0; i < runs; i++) {
        kv_sb_printf(b, "<li>");
        kv_sb_esc(b, labels[i]);
        kv_sb_printf(b, "</li>");
    }
    kv_sb_printf(b, "</ol>\n");
    for (size_t k = 0; k < ns; k++) {
        int any = 0;
        for (size_t i = 0; i < runs; i++) any |= s[k].mark[i];
        kv_sb_printf(b, "<div class=\"series%s\"><h3>", any ? " regressed" : "");
        kv_sb_esc(b, s[k].cs);
        kv_sb_printf(b, " &middot; ");
        kv_sb_esc(b, s[k].out);
        if (any) kv_sb_printf(b, " <span class=\"fail\">REGRESSION</span>");
        kv_sb_printf(b, "</h3><div class=\"plots\">");
        kv_svg_trend(b, "max bound ratio", s[k].ratio, s[k].mark, runs, 1);
        kv_svg_trend(b, "max ULP", s[k].ulp, s[k].mark, runs, 0);
        kv_sb_printf(b, "</div></div>\n");
    }
}

enum kv_status kv_html_history(struct cJSON *const *reports, const char *const *labels, size_t n, double factor,
                               const char *path, struct cJSON **data)
{
    enum kv_status st = KV_OK;
    struct kv_sbuf b = {0};
    struct series *s = NULL;
    size_t ns = 0;
    if (data) *data = NULL;
    KV_TRY(collect(reports, n, factor, &s, &ns));
    kv_html_head(&b, "kverify reports");
    if (n == 2) before_after(&b, reports, labels, factor);
    if (n >= 3) trends(&b, s, ns, n, labels);
    if (n > 1) kv_sb_printf(&b, "<h2>The last run</h2>\n");
    kv_html_report_body(&b, reports[n - 1]);
    kv_html_tail(&b);
    KV_CHECK(!b.oom, KV_EDATA, "%s: out of memory drawing the reports", path ? path : "report");
    if (data) KV_CHECK((*data = series_json(s, ns, n, labels)), KV_EDATA, "out of memory for the trend data");
    if (path) KV_TRY(kv_write_atomic(path, b.s, b.n));
cleanup:
    for (size_t k = 0; k < ns; k++) free(s[k].ratio), free(s[k].ulp), free(s[k].mark);
    free(s);
    kv_sb_free(&b);
    return st;
}
