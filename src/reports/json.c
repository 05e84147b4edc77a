/* The JSON report, schema 2 (design.md; schema 1 without "distribution" and "command"). Non-finite numbers are written as
 * the strings "NaN", "Infinity", "-Infinity". */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "core/rng.h"
#include "core/version.h"
#include "kernels/blas_core.h"
#include "reports/report.h"

static cJSON *num(double v)
{
    if (isnan(v)) return cJSON_CreateString("NaN");
    if (isinf(v)) return cJSON_CreateString(v > 0 ? "Infinity" : "-Infinity");
    return cJSON_CreateNumber(v);
}

static void add_num(cJSON *o, const char *k, double v) { cJSON_AddItemToObject(o, k, num(v)); }

static cJSON *device_json(const struct kv_report *r)
{
    if (!r->has_device) return cJSON_CreateNull();
    const struct kv_vk_info *d = &r->device;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", d->index);
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "type", d->type);
    cJSON_AddStringToObject(o, "driver", d->driver);
    cJSON_AddStringToObject(o, "api", d->api);
    cJSON_AddNumberToObject(o, "subgroup_size", d->subgroup_size);
    if (d->loop_cap) cJSON_AddNumberToObject(o, "loop_cap", d->loop_cap);
    if (r->has_ceilings) { /* kverify devices --measure */
        const struct kv_ceilings *c = &r->ceilings;
        cJSON *x = cJSON_AddObjectToObject(o, "ceilings");
        cJSON_AddStringToObject(x, "measured", c->measured);
        add_num(x, "copy_gb_per_s", c->copy_gbs);
        add_num(x, "f32_gflop_per_s", c->f32_gflops);
        add_num(x, "f16_gflop_per_s", c->f16_gflops);
    } else {
        cJSON_AddNullToObject(o, "ceilings");
    }
    return o;
}

/* v to 3 significant digits: the plots need no more, and the report stays small. */
static cJSON *num3(double v)
{
    char b[32];
    snprintf(b, sizeof b, "%.3g", v);
    return num(strtod(b, NULL));
}

static cJSON *hist_json(size_t zero, const size_t *counts, int n, double (*edge)(int))
{
    cJSON *h = cJSON_CreateObject();
    cJSON_AddNumberToObject(h, "zero", (double)zero);
    cJSON *e = cJSON_AddArrayToObject(h, "edges"), *c = cJSON_AddArrayToObject(h, "counts");
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(e, cJSON_CreateNumber(i ? edge(i) : 0));
        cJSON_AddItemToArray(c, cJSON_CreateNumber((double)counts[i]));
    }
    return h;
}

static cJSON *map_json(const struct kv_error_dist *d)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "rows", (double)d->rows);
    cJSON_AddNumberToObject(m, "cols", (double)d->cols);
    cJSON_AddNumberToObject(m, "cell_rows", d->cell_rows);
    cJSON_AddNumberToObject(m, "cell_cols", d->cell_cols);
    cJSON *v = cJSON_AddArrayToObject(m, "max_ratio"), *bad = cJSON_AddArrayToObject(m, "mismatch_cells");
    for (int r = 0; r < d->cell_rows; r++) {
        cJSON *row = cJSON_CreateArray();
        for (int c = 0; c < d->cell_cols; c++) {
            float x = d->map[r * d->cell_cols + c];
            cJSON_AddItemToArray(row, x < 0 ? cJSON_CreateNull() : num3(x > 1e30f ? 1e30 : x));
            if (d->bad[r * d->cell_cols + c]) {
                cJSON *rc = cJSON_CreateArray();
                cJSON_AddItemToArray(rc, cJSON_CreateNumber(r));
                cJSON_AddItemToArray(rc, cJSON_CreateNumber(c));
                cJSON_AddItemToArray(bad, rc);
            }
        }
        cJSON_AddItemToArray(v, row);
    }
    return m;
}

static cJSON *dist_json(const struct kv_output_result *x)
{
    const struct kv_error_dist *d = x->dist;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "ulp_hist", hist_json(d->ulp_zero, d->ulp, KV_DIST_ULP_BINS, kv_dist_ulp_edge));
    cJSON *rh = hist_json(d->ratio_zero, d->ratio, KV_DIST_RATIO_BINS, kv_dist_ratio_edge);
    cJSON_AddNumberToObject(rh, "pass_line", 1.0);
    cJSON_AddItemToObject(o, "ratio_hist", rh);
    cJSON_AddNumberToObject(o, "mismatch", (double)d->mismatch);
    cJSON_AddItemToObject(o, "map", map_json(d));
    cJSON *w = cJSON_AddArrayToObject(o, "worst");
    for (int i = 0; i < d->n_worst; i++) {
        const struct kv_worst_elem *e = &d->worst[i];
        cJSON *it = cJSON_CreateObject();
        cJSON *idx = cJSON_AddArrayToObject(it, "index");
        size_t f = e->index;
        int64_t at[KV_MAX_DIMS] = {0};
        for (int k = x->ndim - 1; k >= 0; k--) at[k] = x->shape[k] ? (int64_t)(f % (size_t)x->shape[k]) : 0, f = x->shape[k] ? f / (size_t)x->shape[k] : 0;
        for (int k = 0; k < x->ndim; k++) cJSON_AddItemToArray(idx, cJSON_CreateNumber((double)at[k]));
        add_num(it, "device", e->device);
        add_num(it, "oracle", e->oracle);
        add_num(it, "error", e->error);
        add_num(it, "bound", e->bound);
        add_num(it, "ratio", e->mismatch ? INFINITY : e->ratio);
        add_num(it, "ulp", e->ulp);
        cJSON_AddBoolToObject(it, "mismatch", e->mismatch);
        cJSON_AddItemToArray(w, it);
    }
    return o;
}

static cJSON *output_json(const struct kv_output_result *x)
{
    const struct kv_metrics *m = &x->m;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", x->name);
    cJSON_AddStringToObject(o, "stage", x->stage);
    cJSON_AddBoolToObject(o, "chained", x->chained);
    cJSON_AddStringToObject(o, "dtype", kv_dtype_info(x->dtype)->name);
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int d = 0; d < x->ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)x->shape[d]));
    cJSON_AddStringToObject(o, "oracle", x->oracle);
    cJSON_AddStringToObject(o, "source", x->source);
    cJSON_AddNumberToObject(o, "elements", (double)m->elements);
    cJSON_AddNumberToObject(o, "elements_total", (double)x->total);
    add_num(o, "max_ulp", m->max_ulp);
    add_num(o, "mean_ulp", m->mean_ulp);
    add_num(o, "p99_ulp", m->p99_ulp);
    add_num(o, "max_abs", m->max_abs);
    add_num(o, "max_rel", m->max_rel);
    cJSON_AddNumberToObject(o, "rel_skipped", (double)m->rel_skipped);
    add_num(o, "nmse", m->nmse);
    add_num(o, "rmse_ratio", m->rmse_ratio);
    add_num(o, "max_bound_ratio", m->max_bound_ratio);
    cJSON_AddNumberToObject(o, "nan_mismatch", (double)m->nan_mismatch);
    cJSON_AddNumberToObject(o, "inf_mismatch", (double)m->inf_mismatch);
    cJSON_AddNumberToObject(o, "nan_match", (double)m->nan_match);
    cJSON_AddNumberToObject(o, "inf_match", (double)m->inf_match);
    cJSON_AddNumberToObject(o, "slack_used", (double)m->slack_used);
    cJSON_AddNumberToObject(o, "overflow_ok", (double)m->overflow_ok);
    cJSON_AddNumberToObject(o, "ambiguous", (double)m->ambiguous);
    if (m->integer) {
        cJSON *cd = cJSON_AddObjectToObject(o, "codes");
        cJSON_AddNumberToObject(cd, "exact", (double)m->exact);
        cJSON_AddNumberToObject(cd, "mismatch", (double)(m->elements - m->exact));
        cJSON_AddNumberToObject(cd, "tie_ambiguous", (double)m->ambiguous);
        cJSON_AddNumberToObject(cd, "tie_explained", (double)m->tie_explained);
        cJSON_AddNumberToObject(cd, "flush_explained", (double)m->flush_explained);
        cJSON_AddNumberToObject(cd, "unexplained", (double)m->unexplained);
        cJSON_AddNumberToObject(cd, "max_diff", m->max_abs);
    } else {
        cJSON_AddNullToObject(o, "codes");
    }
    cJSON_AddNumberToObject(o, "guard_overwritten", (double)x->guard_bad);
    cJSON_AddNumberToObject(o, "guard_furthest", (double)x->guard_far);
    cJSON_AddNumberToObject(o, "nondeterministic", (double)x->nondet);
    if (m->has_worst) {
        cJSON *w = cJSON_AddObjectToObject(o, "worst");
        cJSON *idx = cJSON_AddArrayToObject(w, "index");
        for (int d = 0; d < x->ndim; d++) cJSON_AddItemToArray(idx, cJSON_CreateNumber((double)x->worst_idx[d]));
        add_num(w, "device", m->worst_c);
        add_num(w, "oracle", m->worst_y);
    } else {
        cJSON_AddNullToObject(o, "worst");
    }
    cJSON *tol = cJSON_AddObjectToObject(o, "tolerance");
    cJSON_AddNumberToObject(tol, "bound_ratio", 1.0);
    cJSON_AddStringToObject(tol, "criterion", m->criterion);
    if (x->dist) cJSON_AddItemToObject(o, "distribution", dist_json(x));
    else cJSON_AddNullToObject(o, "distribution");
    if (x->remark[0]) cJSON_AddStringToObject(o, "remark", x->remark);
    else cJSON_AddNullToObject(o, "remark");
    cJSON_AddBoolToObject(o, "judged", x->judged);
    cJSON_AddBoolToObject(o, "check", x->check);
    if (x->sanitizer) cJSON_AddStringToObject(o, "sanitizer", x->sanitizer);
    else cJSON_AddNullToObject(o, "sanitizer");
    cJSON_AddBoolToObject(o, "pass", x->pass);
    return o;
}

/* A case's "time_ms", "windows" where a stage ran in windows, and
 * "addressed" where one read its tensors by address. */
static void time_json(cJSON *o, const struct kv_case_result *c)
{
    cJSON *t = cJSON_AddObjectToObject(o, "time_ms");
    add_num(t, "inputs", c->ms.inputs);
    add_num(t, "upload", c->ms.upload);
    add_num(t, "device", c->ms.device);
    add_num(t, "chained", c->ms.chained);
    add_num(t, "download", c->ms.download);
    add_num(t, "oracle", c->ms.oracle);
    add_num(t, "compare", c->ms.compare);
    add_num(t, "buffers", c->ms.buffers);
    add_num(t, "teardown", c->ms.teardown);
    cJSON *st = cJSON_AddObjectToObject(t, "stages");
    for (int i = 0; i < c->n_stages; i++) add_num(st, c->stage_name[i], c->stage_ms[i]);
    cJSON *sm = cJSON_AddObjectToObject(t, "stages_min");
    for (int i = 0; i < c->n_stages; i++) add_num(sm, c->stage_name[i], c->stage_min_ms[i]);
    cJSON *win = NULL; /* only where a stage ran in windows: its dispatches */
    for (int i = 0; i < c->n_stages; i++)
        if (c->windows[i] > 1) {
            if (!win) win = cJSON_AddObjectToObject(o, "windows");
            cJSON_AddNumberToObject(win, c->stage_name[i], (double)c->windows[i]);
        }
    cJSON *addr = NULL; /* only where a stage read its tensors by address: their names */
    for (int i = 0; i < c->n_stages; i++)
        if (c->addressed[i]) {
            if (!addr) addr = cJSON_AddArrayToObject(o, "addressed");
            cJSON_AddItemToArray(addr, cJSON_CreateString(c->stage_name[i]));
        }
}

static cJSON *case_json(const struct kv_case_result *c, int multi)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddNumberToObject(o, "index", (double)c->index);
    cJSON_AddStringToObject(o, "kernel", c->kernel);
    if (multi) cJSON_AddNumberToObject(o, "device", c->device);
    cJSON *params = cJSON_AddObjectToObject(o, "params");
    for (int i = 0; i < c->n_params; i++) {
        if (c->pnumeric[i]) cJSON_AddItemToObject(params, c->pname[i], num(strtod(c->pval[i], NULL)));
        else cJSON_AddStringToObject(params, c->pname[i], c->pval[i]);
    }
    cJSON_AddNumberToObject(o, "seed", (double)c->seed);
    cJSON_AddStringToObject(o, "generator", KV_RNG_NAME); /* of the inputs not given by files */
    if (c->inputs[0]) cJSON_AddStringToObject(o, "inputs", c->inputs);
    else cJSON_AddNullToObject(o, "inputs");
    if (c->command[0]) cJSON_AddStringToObject(o, "command", c->command);
    else cJSON_AddNullToObject(o, "command");
    if (c->stress[0]) cJSON_AddStringToObject(o, "stress", c->stress);
    else cJSON_AddNullToObject(o, "stress");
    if (c->sanitize[0]) cJSON_AddStringToObject(o, "sanitizer_note", c->sanitize);
    else cJSON_AddNullToObject(o, "sanitizer_note");
    if (c->note[0]) cJSON_AddStringToObject(o, "note", c->note);
    else cJSON_AddNullToObject(o, "note");
    if (c->saved[0]) cJSON_AddStringToObject(o, "saved", c->saved);
    else cJSON_AddNullToObject(o, "saved");
    cJSON_AddStringToObject(o, "status", kv_case_status_str(c->status));
    if (c->status == KV_CASE_ERROR || c->status == KV_CASE_SKIP) cJSON_AddStringToObject(o, "error", c->error);
    else cJSON_AddNullToObject(o, "error");
    cJSON *outs = cJSON_AddArrayToObject(o, "outputs");
    for (int i = 0; i < c->n_outputs; i++) cJSON_AddItemToArray(outs, output_json(&c->out[i]));
    time_json(o, c);
    if (c->bench_runs) {
        cJSON *b = cJSON_AddObjectToObject(o, "bench");
        cJSON_AddNumberToObject(b, "runs", c->bench_runs);
        add_num(b, "warmup_s", c->bench_warmup_s);
        cJSON *bs = cJSON_AddObjectToObject(b, "stages");
        for (int i = 0; i < c->n_stages; i++) {
            if (!c->bench[i].ran) continue;
            cJSON *x = cJSON_AddObjectToObject(bs, c->stage_name[i]);
            double mn = c->bench[i].min_ms;
            add_num(x, "min_ms", mn);
            add_num(x, "median_ms", c->bench[i].median_ms);
            add_num(x, "bytes", c->bench[i].bytes);
            add_num(x, "flops", c->bench[i].flops);
            add_num(x, "gb_per_s", kv_bench_gbs(&c->bench[i]));
            add_num(x, "gflop_per_s", kv_bench_gflops(&c->bench[i]));
            if (c->bench[i].pct_copy > 0) add_num(x, "pct_of_copy", c->bench[i].pct_copy);
            else cJSON_AddNullToObject(x, "pct_of_copy");
            if (c->bench[i].pct_matmul > 0) add_num(x, "pct_of_matmul", c->bench[i].pct_matmul);
            else cJSON_AddNullToObject(x, "pct_of_matmul");
            if (c->bench[i].n_stats > 0) {
                cJSON *cs = cJSON_AddObjectToObject(x, "compiler");
                for (int k = 0; k < c->bench[i].n_stats; k++)
                    if (!cJSON_GetObjectItemCaseSensitive(cs, c->bench[i].stats[k].name))
                        add_num(cs, c->bench[i].stats[k].name, c->bench[i].stats[k].value);
            } else {
                cJSON_AddNullToObject(x, "compiler");
            }
        }
    } else {
        cJSON_AddNullToObject(o, "bench");
    }
    return o;
}

void kv_json_set_summary(cJSON *root)
{
    size_t n = 0, p = 0, f = 0, e = 0, sk = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "cases"))
    {
        const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "status"));
        n++;
        if (!st) continue;
        p += !strcmp(st, "pass"), f += !strcmp(st, "fail"), e += !strcmp(st, "error"), sk += !strcmp(st, "skip");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(root, "summary");
    cJSON *sum = cJSON_AddObjectToObject(root, "summary");
    cJSON_AddNumberToObject(sum, "cases", (double)n);
    cJSON_AddNumberToObject(sum, "passed", (double)p);
    cJSON_AddNumberToObject(sum, "failed", (double)f);
    cJSON_AddNumberToObject(sum, "errors", (double)e);
    cJSON_AddNumberToObject(sum, "skipped", (double)sk);
}

cJSON *kv_report_json(const struct kv_report *r)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON *kv = cJSON_AddObjectToObject(root, "kverify");
    cJSON_AddStringToObject(kv, "version", KV_VERSION);
    cJSON_AddNumberToObject(kv, "schema", KV_REPORT_SCHEMA);
    cJSON_AddStringToObject(kv, "blas", kv_blas_core()); /* the float64 products' BLAS kernels */
    if (kv_report_command()[0]) cJSON_AddStringToObject(kv, "command", kv_report_command());
    cJSON_AddItemToObject(root, "device", device_json(r));
    if (r->n_devices > 1) {
        cJSON *devs = cJSON_AddArrayToObject(root, "devices");
        for (int i = 0; i < r->n_devices; i++) {
            struct kv_report one = {.has_device = 1, .device = r->devices[i]};
            cJSON_AddItemToArray(devs, device_json(&one));
        }
        cJSON *ag = cJSON_AddArrayToObject(root, "agreement");
        for (size_t i = 0; i < r->n_agree; i++) {
            const struct kv_agreement *g = &r->agree[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "case", g->case_name);
            cJSON_AddStringToObject(o, "output", g->output);
            cJSON_AddNumberToObject(o, "device_a", g->device_a);
            cJSON_AddNumberToObject(o, "device_b", g->device_b);
            cJSON_AddNumberToObject(o, "elements", (double)g->elements);
            cJSON_AddNumberToObject(o, "bitwise_equal", (double)g->equal);
            add_num(o, "max_ulp_apart", g->max_ulp);
            cJSON_AddItemToArray(ag, o);
        }
    }
    cJSON *cases = cJSON_AddArrayToObject(root, "cases");
    for (size_t i = 0; i < r->n; i++) cJSON_AddItemToArray(cases, case_json(&r->cases[i], r->n_devices > 1));
    kv_json_set_summary(root);
    return root;
}

enum kv_status kv_json_write(const cJSON *root, const char *path)
{
    enum kv_status st = KV_OK;
    char *text = cJSON_Print(root);
    KV_CHECK(text, KV_EDATA, "%s: out of memory printing the report", path);
    KV_TRY(kv_write_atomic(path, text, strlen(text)));
    if (strcmp(path, "-") == 0) fputc('\n', stdout);
cleanup:
    free(text);
    return st;
}

enum kv_status kv_report_write_json(const struct kv_report *r, const char *path)
{
    cJSON *root = kv_report_json(r);
    if (!root) return kv_error(KV_EDATA, "%s: out of memory building the report", path);
    enum kv_status st = kv_json_write(root, path);
    cJSON_Delete(root);
    return st;
}
