/* The HTML report of one JSON report: a summary, a matrix of cases x
 * outputs coloured by the largest bound ratio, and per case its parameters,
 * the command that reproduces it and per output the error histograms, the
 * pooled error map and the worst elements; --bench stages as bars. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/html.h"

#include "core/files.h"
#include "reports/svg.h"

void kv_html_head(struct kv_sbuf *b, const char *title)
{
    kv_sb_printf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    kv_sb_esc(b, title);
    kv_sb_printf(b, "</title><style>\n"
        "body{font:14px/1.4 sans-serif;margin:1.5em;color:#222;max-width:1200px}\n"
        "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}h3{font-size:1em;margin:1em 0 .3em}\n"
        "code{background:#f3f3f3;padding:1px 4px;word-break:break-all}\n"
        ".pass{color:#1a7f37}.fail,.error{color:#d7191c;font-weight:bold}.skip{color:#777}\n"
        "table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right;font-size:13px}\n"
        "th{background:#f6f6f6}td.n,th.n{text-align:left}\n"
        "table.matrix td.c{min-width:4em}table.matrix td.nj{color:#888;font-style:italic;background:#fafafa}table.matrix a{color:inherit}\n"
        ".plots{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}\n"
        "svg text{font:10px sans-serif;fill:#444}svg text.t{font-weight:bold}svg text.pl{fill:#d7191c}\n"
        "svg .ax{stroke:#888}svg .b{fill:#4575b4}svg .bz{fill:#91bfdb}svg .bf{fill:#d7191c}\n"
        "svg line.pass{stroke:#d7191c;stroke-dasharray:4 3;stroke-width:1.5}\n"
        "svg.heatmap{border:1px solid #999;background:#e4e4e4}svg .mm{fill:none;stroke:#7b3294;stroke-width:.35}\n"
        "svg .line{fill:none;stroke:#4575b4;stroke-width:1.5}svg .pt{fill:#4575b4}svg .reg{fill:#d7191c}\n"
        ".bar svg .bg{fill:#eee}.bar svg .fg{fill:#4575b4}.bar .bl{display:inline-block;width:14em}\n"
        ".cap{font-size:11px;color:#555;margin:2px 0 6px}\n"
        ".legend span{display:inline-block;width:14px;height:10px;margin:0 2px 0 8px;border:1px solid #999}\n"
        "</style></head><body>\n");
}

void kv_html_tail(struct kv_sbuf *b) { kv_sb_printf(b, "</body></html>\n"); }

static void legend(struct kv_sbuf *b)
{
    static const double at[] = {1e-5, 1e-3, 1e-2, 0.1, 0.5, 1, 2};
    static const char *lab[] = {"&le;1e-4", "1e-3", "1e-2", "0.1", "0.5", "1", "&gt;1 (fails)"};
    kv_sb_printf(b, "<p class=\"legend\">bound ratio (error / allowed error):");
    for (int i = 0; i < 7; i++) {
        char c[8];
        kv_ratio_colour(at[i], c);
        kv_sb_printf(b, "<span style=\"background:%s\"></span>%s", c, lab[i]);
    }
    kv_sb_printf(b, "<span style=\"background:#e4e4e4\"></span>nothing compared "
                    "<span style=\"border:2px solid #7b3294\"></span>NaN/Inf mismatch</p>\n");
}

/* The output names of a kernel's cases (all when kernel is NULL), in first-seen order. */
static int output_names(const cJSON *cases, const char *kernel, const char **names, int max)
{
    int n = 0;
    const cJSON *c, *o;
    cJSON_ArrayForEach(c, cases)
    {
        if (kernel && strcmp(kv_jstr(c, "kernel"), kernel)) continue;
        cJSON_ArrayForEach(o, kv_jget(c, "outputs"))
        {
            const char *s = kv_jstr(o, "name");
            int seen = 0;
            for (int i = 0; i < n && !seen; i++) seen = !strcmp(names[i], s);
            if (!seen && n < max) names[n++] = s;
        }
    }
    return n;
}

static const cJSON *find_output(const cJSON *c, const char *name)
{
    const cJSON *o;
    cJSON_ArrayForEach(o, kv_jget(c, "outputs")) if (!strcmp(kv_jstr(o, "name"), name)) return o;
    return NULL;
}

static void matrix_cell(struct kv_sbuf *b, const cJSON *o)
{
    if (!o) {
        kv_sb_printf(b, "<td></td>");
        return;
    }
    double r = kv_jnum(o, "max_bound_ratio");
    int mism = kv_jnum(o, "nan_mismatch") + kv_jnum(o, "inf_mismatch") > 0, pass = cJSON_IsTrue(kv_jget(o, "pass"));
    if (!cJSON_IsTrue(kv_jget(o, "judged"))) { /* the exact oracle's view beside the spec's: shown, not judged */
        kv_sb_printf(b, "<td class=\"c nj\" title=\"shown, not judged\">%.3g</td>", r);
        return;
    }
    char col[8];
    kv_ratio_colour(mism || !pass ? 2 : r, col);
    kv_sb_printf(b, "<td class=\"c\" style=\"background:%s\" title=\"%s\">%s%.3g</td>", col, pass ? "pass" : "FAIL",
                 mism ? "NaN/Inf " : "", r);
}

/* One table per kernel: its cases by its outputs. */
static void kernel_matrix(struct kv_sbuf *b, const cJSON *cases, const char *kernel)
{
    const char *names[96];
    int n = output_names(cases, kernel, names, 96);
    kv_sb_printf(b, "<h3>");
    kv_sb_esc(b, kernel);
    kv_sb_printf(b, "</h3>\n<table class=\"matrix\"><tr><th class=\"n\">case</th><th>status</th>");
    for (int i = 0; i < n; i++) {
        kv_sb_printf(b, "<th>");
        kv_sb_esc(b, names[i]);
        kv_sb_printf(b, "</th>");
    }
    kv_sb_printf(b, "</tr>\n");
    const cJSON *c;
    int k = 0;
    cJSON_ArrayForEach(c, cases)
    {
        if (strcmp(kv_jstr(c, "kernel"), kernel)) {
            k++;
            continue;
        }
        kv_sb_printf(b, "<tr><td class=\"n\"><a href=\"#case-%d\">", k++);
        kv_sb_esc(b, kv_jstr(c, "name"));
        kv_sb_printf(b, "</a></td><td class=\"%s\">%s</td>", kv_jstr(c, "status"), kv_jstr(c, "status"));
        for (int i = 0; i < n; i++) matrix_cell(b, find_output(c, names[i]));
        kv_sb_printf(b, "</tr>\n");
    }
    kv_sb_printf(b, "</table>\n");
}

static void matrix(struct kv_sbuf *b, const cJSON *cases)
{
    kv_sb_printf(b, "<h2 id=\"matrix\">Cases &times; outputs: largest bound ratio</h2>\n");
    legend(b);
    const char *kernels[64];
    int nk = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        int seen = 0;
        for (int i = 0; i < nk && !seen; i++) seen = !strcmp(kernels[i], kv_jstr(c, "kernel"));
        if (!seen && nk < 64) kernels[nk++] = kv_jstr(c, "kernel");
    }
    for (int i = 0; i < nk; i++) kernel_matrix(b, cases, kernels[i]);
}

/* The shortest decimal that reads back as v. */
static const char *shortest(double v, char g[32])
{
    for (int p = 6; p <= 17; p++) {
        snprintf(g, 32, "%.*g", p, v);
        if (strtod(g, NULL) == v) break;
    }
    return g;
}

/* "kverify KERNEL --param value ... --seed S [--inputs PATH]": the case again. */
static void reproduce(struct kv_sbuf *b, const cJSON *c)
{
    if (cJSON_IsString(kv_jget(c, "command"))) { /* the run's own, with every option that shaped the verdict */
        kv_sb_printf(b, "<p>reproduce: <code>");
        kv_sb_esc(b, kv_jstr(c, "command"));
        kv_sb_printf(b, "</code></p>\n");
        return;
    }
    kv_sb_printf(b, "<p>reproduce: <code>kverify ");
    kv_sb_esc(b, kv_jstr(c, "kernel"));
    char g[32];
    const cJSON *p;
    cJSON_ArrayForEach(p, kv_jget(c, "params"))
    {
        kv_sb_printf(b, " --");
        kv_sb_esc(b, p->string);
        if (cJSON_IsNumber(p)) kv_sb_printf(b, " %s", shortest(p->valuedouble, g));
        else {
            kv_sb_printf(b, " ");
            kv_sb_esc(b, cJSON_GetStringValue(p));
        }
    }
    kv_sb_printf(b, " --seed %.0f", kv_jnum(c, "seed"));
    if (cJSON_IsString(kv_jget(c, "inputs"))) {
        kv_sb_printf(b, " --inputs ");
        kv_sb_esc(b, kv_jstr(c, "inputs"));
    }
    kv_sb_printf(b, "</code></p>\n");
}

static void worst_table(struct kv_sbuf *b, const cJSON *worst)
{
    if (cJSON_GetArraySize(worst) == 0) return;
    kv_sb_printf(b, "<table class=\"worst\"><tr><th class=\"n\">index</th><th>device</th><th>oracle</th><th>error</th>"
                    "<th>allowed</th><th>ratio</th><th>ULP</th></tr>");
    const cJSON *w;
    cJSON_ArrayForEach(w, worst)
    {
        kv_sb_printf(b, "<tr><td class=\"n\">[");
        const cJSON *i;
        int first = 1;
        cJSON_ArrayForEach(i, kv_jget(w, "index")) kv_sb_printf(b, "%s%.0f", first ? "" : ", ", i->valuedouble), first = 0;
        double r = kv_jnum(w, "ratio");
        kv_sb_printf(b, "]</td><td>%.9g</td><td>%.9g</td><td>%.3g</td><td>%.3g</td><td class=\"%s\">%s%.3g</td>"
                        "<td>%.3g</td></tr>", kv_jnum(w, "device"), kv_jnum(w, "oracle"), kv_jnum(w, "error"), kv_jnum(w, "bound"),
                     r > 1 ? "fail" : "", cJSON_IsTrue(kv_jget(w, "mismatch")) ? "mismatch " : "", r, kv_jnum(w, "ulp"));
    }
    kv_sb_printf(b, "</table>\n");
}

static void output_section(struct kv_sbuf *b, const cJSON *o)
{
    int pass = cJSON_IsTrue(kv_jget(o, "pass"));
    kv_sb_printf(b, "<div class=\"output\"><h3>");
    kv_sb_esc(b, kv_jstr(o, "name"));
    if (cJSON_IsTrue(kv_jget(o, "judged")))
        kv_sb_printf(b, " <span class=\"%s\">%s</span>", pass ? "pass" : "fail", pass ? "pass" : "FAIL");
    else
        kv_sb_printf(b, " <span class=\"skip\">the exact oracle's view: shown, not judged</span>");
    kv_sb_printf(b, "</h3>");
    if (cJSON_IsString(kv_jget(o, "remark"))) {
        kv_sb_printf(b, "<p class=\"remark\">");
        kv_sb_esc(b, kv_jstr(o, "remark"));
        kv_sb_printf(b, "</p>");
    }
    kv_sb_printf(b, "<p>%s [", kv_jstr(o, "dtype"));
    const cJSON *d;
    int first = 1;
    cJSON_ArrayForEach(d, kv_jget(o, "shape")) kv_sb_printf(b, "%s%.0f", first ? "" : ", ", d->valuedouble), first = 0;
    kv_sb_printf(b, "], stage %s, %s vs the %s oracle: max bound ratio %.3g, max ULP %.3g, p99 ULP %.3g, "
                    "NaN/Inf mismatches %.0f; criterion ", kv_jstr(o, "stage"), kv_jstr(o, "source"), kv_jstr(o, "oracle"),
                 kv_jnum(o, "max_bound_ratio"), kv_jnum(o, "max_ulp"), kv_jnum(o, "p99_ulp"),
                 kv_jnum(o, "nan_mismatch") + kv_jnum(o, "inf_mismatch"));
    kv_sb_esc(b, kv_jstr(kv_jget(o, "tolerance"), "criterion"));
    if (kv_jnum(o, "guard_overwritten") > 0) kv_sb_printf(b, "; <b class=\"fail\">%.0f guard words written past the end</b>", kv_jnum(o, "guard_overwritten"));
    if (kv_jnum(o, "nondeterministic") > 0) kv_sb_printf(b, "; <b class=\"fail\">%.0f elements differ between runs</b>", kv_jnum(o, "nondeterministic"));
    kv_sb_printf(b, "</p>\n");
    const cJSON *dist = kv_jget(o, "distribution");
    if (cJSON_IsObject(dist)) {
        kv_sb_printf(b, "<div class=\"plots\">");
        kv_svg_hist(b, "hist-ulp", "error in ULP", kv_jget(dist, "ulp_hist"), 1, 0);
        kv_svg_hist(b, "hist-ratio", "bound ratio", kv_jget(dist, "ratio_hist"), 0, 1);
        kv_sb_printf(b, "</div>\n<div class=\"plots\">");
        kv_svg_map(b, kv_jget(dist, "map"));
        kv_sb_printf(b, "</div>\n");
        worst_table(b, kv_jget(dist, "worst"));
    }
    kv_sb_printf(b, "</div>\n");
}

static void bench_section(struct kv_sbuf *b, const cJSON *bench)
{
    const cJSON *s;
    kv_sb_printf(b, "<h3>bench (%.0f runs per stage)</h3>\n", kv_jnum(bench, "runs"));
    cJSON_ArrayForEach(s, kv_jget(bench, "stages"))
    {
        char label[96], text[160];
        double pc = kv_jnum(s, "pct_of_copy"), pm = kv_jnum(s, "pct_of_matmul");
        snprintf(label, sizeof label, "%s: %.4g ms", s->string, kv_jnum(s, "min_ms"));
        snprintf(text, sizeof text, "%.4g GB/s%s", kv_jnum(s, "gb_per_s"), isnan(pc) ? " (no ceiling measured)" : "");
        kv_svg_bar(b, label, isnan(pc) ? 0 : pc, text);
        if (!isnan(pc)) kv_sb_printf(b, "<span> %.1f%% of the copy ceiling</span>", pc);
        if (kv_jnum(s, "flops") > 0) {
            snprintf(text, sizeof text, "%.4g GFLOP/s%s", kv_jnum(s, "gflop_per_s"), isnan(pm) ? "" : "");
            kv_svg_bar(b, "", isnan(pm) ? 0 : pm, text);
            if (!isnan(pm)) kv_sb_printf(b, "<span> %.1f%% of the matmul ceiling</span>", pm);
        }
    }
}

static void case_section(struct kv_sbuf *b, const cJSON *c, int k, const cJSON *device)
{
    const char *status = kv_jstr(c, "status");
    kv_sb_printf(b, "<section class=\"case\" id=\"case-%d\"><h2>", k);
    kv_sb_esc(b, kv_jstr(c, "name"));
    kv_sb_printf(b, " <span class=\"%s\">%s</span></h2>\n<p>kernel <b>", status, status);
    kv_sb_esc(b, kv_jstr(c, "kernel"));
    kv_sb_printf(b, "</b>, seed %.0f", kv_jnum(c, "seed"));
    char g[32];
    const cJSON *p;
    cJSON_ArrayForEach(p, kv_jget(c, "params"))
    {
        kv_sb_printf(b, ", ");
        kv_sb_esc(b, p->string);
        if (cJSON_IsNumber(p)) kv_sb_printf(b, " = %s", shortest(p->valuedouble, g));
        else {
            kv_sb_printf(b, " = ");
            kv_sb_esc(b, cJSON_GetStringValue(p));
        }
    }
    if (cJSON_IsObject(device)) {
        kv_sb_printf(b, "; device ");
        kv_sb_esc(b, kv_jstr(device, "name"));
        kv_sb_printf(b, ", driver ");
        kv_sb_esc(b, kv_jstr(device, "driver"));
    }
    if (cJSON_IsString(kv_jget(c, "stress"))) {
        kv_sb_printf(b, "; stress runs ");
        kv_sb_esc(b, kv_jstr(c, "stress"));
    }
    kv_sb_printf(b, "</p>\n");
    if (cJSON_IsString(kv_jget(c, "note"))) {
        kv_sb_printf(b, "<p>");
        kv_sb_esc(b, kv_jstr(c, "note"));
        kv_sb_printf(b, "</p>\n");
    }
    if (cJSON_IsString(kv_jget(c, "error"))) {
        kv_sb_printf(b, "<p class=\"%s\">", status);
        kv_sb_esc(b, kv_jstr(c, "error"));
        kv_sb_printf(b, "</p>\n");
    }
    reproduce(b, c);
    const cJSON *o;
    cJSON_ArrayForEach(o, kv_jget(c, "outputs")) output_section(b, o);
    if (cJSON_IsObject(kv_jget(c, "bench"))) bench_section(b, kv_jget(c, "bench"));
    kv_sb_printf(b, "<p><a href=\"#matrix\">back to the matrix</a></p></section>\n");
}

/* --device all: each output on the first device against the others. */
static void agreement(struct kv_sbuf *b, const cJSON *ag)
{
    if (cJSON_GetArraySize(ag) == 0) return;
    kv_sb_printf(b, "<h2 id=\"agreement\">Agreement between devices</h2>\n<table class=\"agree\"><tr><th class=\"n\">case"
                    "</th><th class=\"n\">output</th><th>devices</th><th>bitwise equal</th><th>max ULP apart</th></tr>\n");
    const cJSON *g;
    cJSON_ArrayForEach(g, ag)
    {
        kv_sb_printf(b, "<tr><td class=\"n\">");
        kv_sb_esc(b, kv_jstr(g, "case"));
        kv_sb_printf(b, "</td><td class=\"n\">");
        kv_sb_esc(b, kv_jstr(g, "output"));
        kv_sb_printf(b, "</td><td>%.0f vs %.0f</td><td>%.0f of %.0f</td><td>%.3g</td></tr>\n", kv_jnum(g, "device_a"),
                     kv_jnum(g, "device_b"), kv_jnum(g, "bitwise_equal"), kv_jnum(g, "elements"), kv_jnum(g, "max_ulp_apart"));
    }
    kv_sb_printf(b, "</table>\n");
}

void kv_html_report_body(struct kv_sbuf *b, const cJSON *r)
{
    const cJSON *sum = kv_jget(r, "summary"), *dev = kv_jget(r, "device"), *cases = kv_jget(r, "cases");
    kv_sb_printf(b, "<h1>kverify: %d cases: %.0f passed, %.0f failed, %.0f errors, %.0f skipped</h1>\n<p>",
                 cJSON_GetArraySize(cases), kv_jnum(sum, "passed"), kv_jnum(sum, "failed"), kv_jnum(sum, "errors"),
                 kv_jnum(sum, "skipped"));
    if (cJSON_IsObject(dev)) {
        kv_sb_printf(b, "device ");
        kv_sb_esc(b, kv_jstr(dev, "name"));
        kv_sb_printf(b, " (");
        kv_sb_esc(b, kv_jstr(dev, "type"));
        kv_sb_printf(b, ", driver ");
        kv_sb_esc(b, kv_jstr(dev, "driver"));
        kv_sb_printf(b, ", Vulkan ");
        kv_sb_esc(b, kv_jstr(dev, "api"));
        kv_sb_printf(b, ")");
    } else if (cJSON_GetArraySize(cases) > 0) { /* none: no case was selected */
        kv_sb_printf(b, "no device: the outputs with a candidate are judged");
    } else {
        kv_sb_printf(b, "no case was selected");
    }
    kv_sb_printf(b, "; kverify ");
    kv_sb_esc(b, kv_jstr(kv_jget(r, "kverify"), "version"));
    kv_sb_printf(b, "</p>\n");
    if (kv_jstr(kv_jget(r, "kverify"), "command")[0]) {
        kv_sb_printf(b, "<p>command: <code>");
        kv_sb_esc(b, kv_jstr(kv_jget(r, "kverify"), "command"));
        kv_sb_printf(b, "</code></p>\n");
    }
    matrix(b, cases);
    agreement(b, kv_jget(r, "agreement"));
    const cJSON *c;
    int k = 0;
    cJSON_ArrayForEach(c, cases) case_section(b, c, k++, dev);
}

enum kv_status kv_html_write(const cJSON *report, const char *path)
{
    struct kv_sbuf b = {0};
    kv_html_head(&b, "kverify report");
    kv_html_report_body(&b, report);
    kv_html_tail(&b);
    enum kv_status st = b.oom ? kv_error(KV_EDATA, "%s: out of memory drawing the report", path)
                              : kv_write_atomic(path, b.s, b.n);
    kv_sb_free(&b);
    return st;
}
