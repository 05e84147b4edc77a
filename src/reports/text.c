/* JUnit XML and Markdown renderings of a report, each written whole or not at
 * all. JUnit: one <testsuite> per kernel, one <testcase> per judged output row
 * of a case (and one per case that errored or was skipped), times in seconds,
 * the failure message naming the worst element. Markdown: the terminal table
 * as a pipe table, for pull-request comments. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "reports/report.h"

struct buf {
    char *p;
    size_t n, cap;
    int oom;
};

static void put(struct buf *b, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0 || b->oom) {
        va_end(aq);
        return;
    }
    if (b->n + (size_t)len + 1 > b->cap) {
        size_t cap = (b->cap ? 2 * b->cap : 4096) + (size_t)len;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            va_end(aq);
            return;
        }
        b->p = p, b->cap = cap;
    }
    vsnprintf(b->p + b->n, (size_t)len + 1, fmt, aq);
    va_end(aq);
    b->n += (size_t)len;
}

/* Text with the XML specials escaped (attribute-safe). */
static void put_xml(struct buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': put(b, "&amp;"); break;
        case '<': put(b, "&lt;"); break;
        case '>': put(b, "&gt;"); break;
        case '"': put(b, "&quot;"); break;
        case '\'': put(b, "&apos;"); break;
        default:
            if ((unsigned char)*s < 0x20 && *s != '\t') put(b, " ");
            else put(b, "%c", *s);
        }
    }
}

void kv_output_worst_str(const struct kv_output_result *o, char *buf, size_t size)
{
    const struct kv_metrics *m = &o->m;
    if (!m->has_worst) {
        snprintf(buf, size, "-");
        return;
    }
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < o->ndim && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, d ? "," : "", o->worst_idx[d]);
    if (n < size) snprintf(buf + n, size - n, "] %.9g vs %.9g", m->worst_c, m->worst_y);
}

/* The one-line verdict of a failing row: what failed and where. */
static void failure_str(const struct kv_output_result *o, char *buf, size_t size)
{
    const struct kv_metrics *m = &o->m;
    char worst[160];
    kv_output_worst_str(o, worst, sizeof worst);
    if (o->sanitizer)
        snprintf(buf, size, "%s: %s", o->name, o->remark);
    else if (m->integer)
        snprintf(buf, size, "%s: %zu unexplained code differences, max |diff| %g; first at %s", o->name,
                 m->unexplained, m->max_abs, worst);
    else if (o->guard_bad)
        snprintf(buf, size, "%s: written past its end: %zu guard words changed, the furthest %zu words past the end",
                 o->name, o->guard_bad, o->guard_far);
    else if (m->nan_mismatch + m->inf_mismatch)
        snprintf(buf, size, "%s: %zu NaN and %zu Inf mismatches (a NaN: unwritten, or read past an input's end); "
                 "first at %s (device vs oracle)", o->name, m->nan_mismatch, m->inf_mismatch, worst);
    else if (o->nondet)
        snprintf(buf, size, "%s: %zu elements differ between repeats", o->name, o->nondet);
    else
        snprintf(buf, size, "%s: max bound ratio %.4g (%s), max ULP %.4g; worst %s (device vs oracle)", o->name,
                 m->max_bound_ratio, m->criterion, m->max_ulp, worst);
}

static double case_seconds(const struct kv_case_result *c)
{
    return (c->ms.inputs + c->ms.oracle + c->ms.upload + c->ms.device + c->ms.download + c->ms.compare) / 1e3;
}

static size_t case_tests(const struct kv_case_result *c, size_t *failures, size_t *errors, size_t *skipped)
{
    if (c->status == KV_CASE_ERROR) return ++*errors, 1;
    if (c->status == KV_CASE_SKIP) return ++*skipped, 1;
    size_t n = 0;
    for (int i = 0; i < c->n_outputs; i++)
        if (c->out[i].judged) n++, *failures += !c->out[i].pass;
    return n;
}

static void junit_case(struct buf *b, const struct kv_case_result *c)
{
    size_t failures = 0, errors = 0, skipped = 0, n = case_tests(c, &failures, &errors, &skipped);
    double t = n ? case_seconds(c) / (double)n : 0;
    if (c->status == KV_CASE_ERROR || c->status == KV_CASE_SKIP) {
        put(b, "    <testcase classname=\"");
        put_xml(b, c->name);
        put(b, "\" name=\"case\" time=\"%.6f\">\n      <%s message=\"", case_seconds(c),
            c->status == KV_CASE_ERROR ? "error" : "skipped");
        put_xml(b, c->error);
        put(b, "\"/>\n    </testcase>\n");
        return;
    }
    for (int i = 0; i < c->n_outputs; i++) {
        const struct kv_output_result *o = &c->out[i];
        if (!o->judged) continue;
        put(b, "    <testcase classname=\"");
        put_xml(b, c->name);
        put(b, "\" name=\"");
        put_xml(b, o->name);
        put(b, "\" time=\"%.6f\"", t);
        if (o->pass) {
            put(b, "/>\n");
            continue;
        }
        char msg[512];
        failure_str(o, msg, sizeof msg);
        put(b, ">\n      <failure type=\"%s\" message=\"", o->sanitizer ? o->sanitizer : "tolerance");
        put_xml(b, msg);
        put(b, "\">");
        put_xml(b, msg);
        put(b, "</failure>\n    </testcase>\n");
    }
}

static enum kv_status finish(struct buf *b, const char *path, const char *what)
{
    enum kv_status st = b->oom ? kv_error(KV_EDATA, "%s: out of memory building the %s report", path, what)
                               : kv_write_atomic(path, b->p ? b->p : "", b->n);
    free(b->p);
    return st;
}

enum kv_status kv_report_write_junit(const struct kv_report *r, const char *path)
{
    struct buf b = {0};
    size_t tests = 0, failures = 0, errors = 0, skipped = 0;
    double secs = 0;
    for (size_t i = 0; i < r->n; i++) tests += case_tests(&r->cases[i], &failures, &errors, &skipped), secs += case_seconds(&r->cases[i]);
    put(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    put(&b, "<testsuites name=\"kverify\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.6f\">\n",
        tests, failures, errors, skipped, secs);
    /* One suite per kernel, in order of first appearance. */
    for (size_t i = 0; i < r->n; i++) {
        const char *k = r->cases[i].kernel;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(r->cases[j].kernel, k);
        if (seen) continue;
        size_t kt = 0, kf = 0, ke = 0, ks = 0;
        double ksecs = 0;
        for (size_t j = i; j < r->n; j++)
            if (!strcmp(r->cases[j].kernel, k)) kt += case_tests(&r->cases[j], &kf, &ke, &ks), ksecs += case_seconds(&r->cases[j]);
        put(&b, "  <testsuite name=\"");
        put_xml(&b, k);
        put(&b, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.6f\">\n", kt, kf, ke, ks, ksecs);
        for (size_t j = i; j < r->n; j++)
            if (!strcmp(r->cases[j].kernel, k)) junit_case(&b, &r->cases[j]);
        put(&b, "  </testsuite>\n");
    }
    put(&b, "</testsuites>\n");
    return finish(&b, path, "JUnit");
}

/* Markdown cells must not contain '|' or newlines. */
static void put_md(struct buf *b, const char *s)
{
    for (; *s; s++) put(b, *s == '|' ? "\\|" : *s == '\n' ? " " : "%c", *s);
}

enum kv_status kv_report_write_markdown(const struct kv_report *r, const char *path)
{
    struct buf b = {0};
    size_t p, f, e, s;
    kv_report_counts(r, &p, &f, &e, &s);
    put(&b, "### kverify: %zu cases, %zu passed, %zu failed, %zu errors, %zu skipped\n\n", r->n, p, f, e, s);
    if (r->has_device) {
        put(&b, "Device: ");
        put_md(&b, r->device.name);
        put(&b, " (");
        put_md(&b, r->device.driver);
        put(&b, ")\n\n");
    }
    put(&b, "| case | output | max ULP | mean ULP | p99 ULP | max abs | max rel | NMSE | bound ratio | NaN/Inf "
            "mismatch | worst (device vs oracle) | result |\n");
    put(&b, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
    for (size_t i = 0; i < r->n; i++) {
        const struct kv_case_result *c = &r->cases[i];
        if (c->status == KV_CASE_ERROR || c->status == KV_CASE_SKIP) {
            put(&b, "| `");
            put_md(&b, c->name);
            put(&b, "` | | | | | | | | | | ");
            put_md(&b, c->error);
            put(&b, " | **%s** |\n", c->status == KV_CASE_ERROR ? "ERROR" : "skipped");
            continue;
        }
        for (int j = 0; j < c->n_outputs; j++) {
            const struct kv_output_result *o = &c->out[j];
            const struct kv_metrics *m = &o->m;
            char worst[160];
            kv_output_worst_str(o, worst, sizeof worst);
            put(&b, "| `");
            put_md(&b, c->name);
            put(&b, "` | %s%s | ", o->name, o->judged ? "" : " (not judged)");
            if (o->not_judged || o->sanitizer) {
                put(&b, "| | | | | | | | ");
                put_md(&b, o->remark);
                put(&b, " | %s |\n", o->sanitizer ? "FAIL" : "not judged");
                continue;
            }
            if (m->integer)
                put(&b, "codes: %zu of %zu exact | | | %g | | | %s | %zu unexplained | ", m->exact, m->elements,
                    m->max_abs, m->unexplained ? "inf" : "0", m->unexplained);
            else
                put(&b, "%.3g | %.3g | %.3g | %.3g | %.3g | %.3g | %.3g | %zu/%zu | ", m->max_ulp, m->mean_ulp,
                    m->p99_ulp, m->max_abs, m->max_rel, m->nmse, m->max_bound_ratio, m->nan_mismatch, m->inf_mismatch);
            put_md(&b, worst);
            put(&b, " | %s |\n", !o->judged ? "shown" : o->pass ? "pass" : "**FAIL**");
        }
    }
    return finish(&b, path, "Markdown");
}
