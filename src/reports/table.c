/* The terminal table: one row per output, printed as each case finishes. */
#include <inttypes.h>
#include <string.h>

#include "reports/report.h"

static int narrow;

void kv_table_set_narrow(int on) { narrow = on; }

void kv_table_header(FILE *f)
{
    if (narrow) {
        fprintf(f, "%-18s %9s %8s %7s  %-34s %s\n", "output", "max_ulp", "bound", "nan/inf",
                "worst [index] device vs oracle", "result");
        return;
    }
    fprintf(f, "%-18s %9s %8s %8s %9s %9s %6s %9s %9s %8s %7s  %-34s %s\n", "output", "max_ulp",
            "mean_ulp", "p99_ulp", "max_abs", "max_rel", "skip", "nmse", "rmse_rat", "bound", "nan/inf",
            "worst [index] device vs oracle", "result");
}

static void bench_rows(FILE *f, const struct kv_case_result *c);

void kv_table_case(FILE *f, const struct kv_case_result *c)
{
    fprintf(f, "%s  %s\n", c->name, kv_case_status_str(c->status));
    if (c->status == KV_CASE_ERROR || c->status == KV_CASE_SKIP) {
        fprintf(f, "  %s: %s\n", c->status == KV_CASE_ERROR ? "error" : "skipped", c->error);
        return;
    }
    if (c->note[0]) fprintf(f, "  note: %s\n", c->note);
    if (c->sanitize[0]) fprintf(f, "  sanitizer: %s\n", c->sanitize);
    int windowed = 0;
    for (int i = 0; i < c->n_stages; i++) windowed |= c->windows[i] > 1;
    if (windowed) { /* dispatches per stage bound in windows (pipeline/binding.h) */
        fprintf(f, "  windows (tensors longer than a binding reaches):");
        for (int i = 0; i < c->n_stages; i++)
            if (c->windows[i] > 1) fprintf(f, " %s %lld", c->stage_name[i], (long long)c->windows[i]);
        fputc('\n', f);
    }
    int addressed = 0;
    for (int i = 0; i < c->n_stages; i++) addressed |= c->addressed[i];
    if (addressed) { /* stages that read their tensors through device addresses (pipeline/addr.h) */
        fprintf(f, "  bound by address (tensors longer than a binding reaches):");
        for (int i = 0; i < c->n_stages; i++)
            if (c->addressed[i]) fprintf(f, " %s", c->stage_name[i]);
        fputc('\n', f);
    }
    for (int i = 0; i < c->n_outputs; i++) {
        const struct kv_output_result *o = &c->out[i];
        const struct kv_metrics *m = &o->m;
        char worst[160];
        kv_output_worst_str(o, worst, sizeof worst);
        if (o->not_judged) {
            fprintf(f, "  %-16s %s\n", o->name, o->remark);
            continue;
        }
        if (o->sanitizer) {
            fprintf(f, "  %-16s %s  %s\n", o->name, o->remark, o->pass ? "pass" : "FAIL");
            continue;
        }
        if (m->integer) {
            size_t mism = m->elements - m->exact;
            fprintf(f, "  %-16s codes: %zu of %zu exact, %zu differ (%zu across a tie, %zu flushed, %zu unexplained), "
                    "max |diff| %g, %zu within reach of a tie  %s  %s", o->name, m->exact, m->elements, mism,
                    m->tie_explained, m->flush_explained, m->unexplained, m->max_abs, m->ambiguous,
                    mism ? worst : "-", o->pass ? "pass" : "FAIL");
        } else {
        char nonfinite[24];
        snprintf(nonfinite, sizeof nonfinite, "%zu/%zu", m->nan_mismatch, m->inf_mismatch);
        if (narrow)
            fprintf(f, "  %-16s %9.3g %8.3g %7s  %-34s %s", o->name, m->max_ulp, m->max_bound_ratio, nonfinite, worst,
                    o->pass ? "pass" : "FAIL");
        else
        fprintf(f, "  %-16s %9.3g %8.3g %8.3g %9.3g %9.3g %6zu %9.3g %9.3g %8.3g %7s  %-34s %s", o->name,
                m->max_ulp, m->mean_ulp, m->p99_ulp, m->max_abs, m->max_rel, m->rel_skipped, m->nmse,
                m->rmse_ratio, m->max_bound_ratio, nonfinite, worst, o->pass ? "pass" : "FAIL");
        }
        if (strcmp(o->source, "device") != 0) fprintf(f, "  (%s)", o->source);
        if (m->elements < o->total) fprintf(f, "  (%zu of %zu elements sampled)", m->elements, o->total);
        if (!o->judged) fprintf(f, "  (exact oracle: shown, not judged)");
        if (o->remark[0]) fprintf(f, "  (%s)", o->remark);
        if (o->guard_bad)
            fprintf(f, "  (%s written past its end: %zu guard words changed, the furthest %zu words past the end)",
                    o->name, o->guard_bad, o->guard_far);
        if (m->nan_mismatch && !o->guard_bad)
            fprintf(f, "  (NaN where the oracle has none: an element left unwritten, or a read past an input's "
                    "end, whose tail is NaN)");
        if (o->nondet) fprintf(f, "  (%zu elements differ between repeats)", o->nondet);
        if (!m->integer && m->ambiguous)
            fprintf(f, "  (%zu elements depend on a rounding a legal device may flip)", m->ambiguous);
        if (m->slack_used && !o->check) fprintf(f, "  (%zu elements within bound by a legal upstream choice)", m->slack_used);
        if (m->overflow_ok)
            fprintf(f, "  (%zu Inf or NaN where the terms' magnitudes pass the accumulator's range: a legal overflow)",
                    m->overflow_ok);
        if (m->nan_match + m->inf_match) fprintf(f, "  (%zu NaN, %zu Inf match the oracle)", m->nan_match, m->inf_match);
        fputc('\n', f);
    }
    bench_rows(f, c);
}

static void bench_rows(FILE *f, const struct kv_case_result *c)
{
    for (int s = 0; s < c->n_stages; s++) {
        if (!c->bench[s].ran) continue;
        double mn = c->bench[s].min_ms;
        fprintf(f, "  bench %-10s min %.4f ms, median %.4f ms over %d runs: %.1f GB/s", c->stage_name[s], mn,
                c->bench[s].median_ms, c->bench_runs, kv_bench_gbs(&c->bench[s]));
        if (c->bench[s].pct_copy > 0) fprintf(f, " (%.3g%% of copy)", c->bench[s].pct_copy);
        if (c->bench[s].flops > 0) fprintf(f, ", %.1f GFLOP/s", kv_bench_gflops(&c->bench[s]));
        if (c->bench[s].pct_matmul > 0) fprintf(f, " (%.3g%% of matmul)", c->bench[s].pct_matmul);
        fputc('\n', f);
        for (int k = 0; k < c->bench[s].n_stats; k++)
            fprintf(f, "%s%s %.15g%s", k ? "" : "        compiler: ", c->bench[s].stats[k].name, c->bench[s].stats[k].value,
                    k + 1 < c->bench[s].n_stats ? ", " : "\n");
    }
}

void kv_table_summary(FILE *f, const struct kv_report *r)
{
    size_t p, fl, e, s;
    kv_report_counts(r, &p, &fl, &e, &s);
    fprintf(f, "%zu cases: %zu passed, %zu failed, %zu errors, %zu skipped\n", r->n, p, fl, e, s);
    /* a failure on a device that cuts loops short may be the device's (vk/loop_cap.c) */
    const struct kv_vk_info *capped = r->has_device && r->device.loop_cap ? &r->device : NULL;
    for (int i = 0; !capped && i < r->n_devices; i++) capped = r->devices[i].loop_cap ? &r->devices[i] : NULL;
    size_t unchecked = 0; /* failures whose run again counted no loop cut are the kernel's (pipeline/loops.h) */
    for (size_t i = 0; i < r->n; i++) unchecked += r->cases[i].status == KV_CASE_FAIL && !r->cases[i].loops_checked;
    if (unchecked && capped)
        fprintf(f, "note: %s stops every loop of a shader invocation after %u iterations in all, without an error: "
                   "a case whose invocations loop longer fails on it alone (confirm on another device)\n",
                capped->name, capped->loop_cap);
}
