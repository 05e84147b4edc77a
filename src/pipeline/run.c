#include "pipeline/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/threads.h"
#include "formats/save.h"
#include "pipeline/chains.h"
#include "pipeline/hostmem.h"
#include "pipeline/loops.h"
#include "pipeline/bench.h"
#include "pipeline/plan.h"
#include "pipeline/prepare.h"
#include "pipeline/row.h"
#include "pipeline/sample.h"
#include "pipeline/sanitize.h"
#include "spirv/shader.h"
#include "spirv/spirv.h"

static size_t count_diff(const void *a, const void *b, size_t n, size_t esize)
{
    size_t diff = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * esize, (const char *)b + i * esize, esize) != 0) diff++;
    return diff;
}

static void fill_params(const struct kv_case *c, struct kv_case_result *res)
{
    snprintf(res->name, sizeof res->name, "%s", c->name);
    res->kernel = c->k->name;
    res->seed = c->seed;
    res->n_params = c->k->n_params;
    for (int i = 0; i < c->k->n_params; i++) {
        snprintf(res->pname[i], sizeof res->pname[i], "%s", c->k->params[i].name);
        kv_param_str(c, i, res->pval[i], sizeof res->pval[i]);
        res->pnumeric[i] = c->k->params[i].type != KV_PARAM_CHOICE;
    }
    if (c->inputs) snprintf(res->inputs, sizeof res->inputs, "%s", c->inputs);
    res->n_stages = c->k->n_stages;
    for (int s = 0; s < c->k->n_stages; s++) res->stage_name[s] = c->k->stages[s].name;
}

/* One case on its way through the pipeline: what runs, the device's first
 * download of each output ([0] isolated, [1] chained), and the verdict so far. */
struct case_run {
    struct kv_runner *r;
    struct kv_case *c;
    const struct kv_run_opts *o;
    struct kv_case_result *res;
    struct kv_case_prep *pre; /* its inputs (and device buffers) made before (kv_case_prepare), or NULL */
    struct kv_early_plan *early; /* else its device buffers made beside its inputs (kv_plan_beside), or NULL */
    struct kv_plan p;
    void *first[KV_MAX_TENSORS][2];
    int first_mapped; /* first[][] are where run 0's downloads landed (kv_plan_download), which no later run writes */
    int run_stage[KV_MAX_STAGES], chain_stage[KV_MAX_STAGES];
    int ran[KV_MAX_TENSORS]; /* outputs the device wrote (kv_save_case) */
    int any_stage, all_inputs_given, all_pass;
    struct kv_runner r_kept; /* r as the case saw it, where o->device_done may free r while the case is judged */
    struct kv_runner *r_live; /* r itself, which r may stop being (r_kept): alive where the plan keeps its buffers */
    struct kv_output_result *paired[KV_MAX_TENSORS]; /* a chained row judged with its isolated one, until its turn */
};

/* The spec (or, with --oracle exact, the exact) oracle of output t; chained:
 * with the allowance for intermediates computed by the device or another backend. */
static struct kv_oracle_ref judging_ref(const struct case_run *x, int t, int chained)
{
    const struct kv_case *c = x->c;
    struct kv_oracle_ref ref = {c->y[t], c->S[t], c->bound[t], {c->slack[t], c->tie[t], c->flush[t], c->alt[t], c->ovf[t], c->lam[t], c->fix[t]},
                             x->o->oracle == KV_ORACLE_EXACT ? "exact" : "spec", 0};
    if (chained && c->slack_chain[t]) ref.allow.slack = c->slack_chain[t];
    if (chained) ref.allow.alt = NULL;
    return ref;
}

/* Append a row and fold its verdict into the case's. */
static enum kv_status judge(struct case_run *x, int t, const struct kv_oracle_ref *ref, const void *data,
                            const char *suffix, int chained, const char *source, size_t guard_bad, size_t nondet)
{
    KV_TRY_RET(kv_compare_row(x->c, t, ref, data, suffix, chained, source, guard_bad, nondet, x->o, x->res));
    x->all_pass = x->all_pass && x->res->out[x->res->n_outputs - 1].pass;
    return KV_OK;
}

/* An --abi stage's interface file; none where the case is prepared before
 * its runner (kv_case_prepare: only where no stage has one). */
static const struct kv_abi *stage_abi(const struct case_run *x, int s) { return x->r ? x->r->abi[s] : NULL; }

/* Generated inputs, then the given ones over them; the sampled elements. */
static enum kv_status make_inputs(struct case_run *x)
{
    enum kv_status st = KV_OK;
    struct kv_case *c = x->c;
    const struct kv_kernel *k = c->k;
    /* outputs judged against an oracle made block by block: the float64
     * oracle of a whole output is not held (not saved or exact); sampled,
     * only the sampled elements are made (pipeline/row.c), unless the oracle
     * can hold them alone (compact, below: one pass over the sample) */
    for (int t = 0; t < k->n_tensors; t++) c->blocked[t] = kv_output_blocked(c, t, x->o);
    /* --sample: every output's sample, intermediates included; an oracle
     * that can holds only the sampled elements (compact) */
    for (int t = 0; x->o->sample > 0 && t < k->n_tensors; t++)
        if (k->tensors[t].role == KV_OUTPUT && kv_tensor_on(c, t) && (size_t)x->o->sample < c->t[t].count) {
            KV_TRY(kv_make_sample(c, t, x->o->sample));
            c->compact[t] = kv_output_compact(c, t, x->o);
        }
    KV_TRY(kv_case_alloc(c));
    x->all_inputs_given = 1;
    for (int t = 0; t < k->n_tensors; t++)
        if (kv_tensor_on(c, t) && k->tensors[t].role == KV_INPUT && !c->given[t]) x->all_inputs_given = 0;
    for (int t = 0; t < k->n_tensors; t++)
        if ((c->compact[t] || c->blocked[t]) && kv_is_intermediate(c, t)) /* the oracle's, in its dtype */
            KV_TRY(kv_tensor_alloc(&c->iso[t], k->tensors[t].name, c->t[t].dtype, c->t[t].ndim, c->t[t].shape));
    if (!x->all_inputs_given) KV_TRY(k->inputs(c));
    for (int t = 0; t < k->n_tensors; t++)
        if (k->tensors[t].role == KV_INPUT && c->given[t] && kv_tensor_on(c, t))
            memcpy(c->t[t].data, c->given[t]->data, kv_tensor_bytes(&c->t[t]));
    /* --abi constants: an input fixed (w = 1) for the shader and the oracle alike */
    for (int s = 0; s < k->n_stages; s++) {
        const struct kv_abi *a = stage_abi(x, s);
        for (int i = 0; a && i < a->n_constants; i++) {
            int t = kv_case_tensor(c, k->tensors[a->const_tensor[i]].name);
            for (size_t e = 0; t >= 0 && e < c->t[t].count; e++)
                kv_store_f64(c->t[t].dtype, c->t[t].data, e, a->const_value[i]);
        }
    }
cleanup:
    return st;
}

/* With --oracle both, the exact oracle first, set aside; then the oracle that
 * judges and feeds the stages their rounded intermediates. */
static enum kv_status run_oracles(struct case_run *x)
{
    enum kv_status st = KV_OK;
    struct kv_case *c = x->c;
    const struct kv_kernel *k = c->k;
    if (x->o->oracle == KV_ORACLE_BOTH) {
        c->exact = 1;
        KV_TRY(k->oracle(c));
        for (int t = 0; t < k->n_tensors; t++) {
            if (k->tensors[t].role != KV_OUTPUT || !kv_tensor_on(c, t)) continue;
            c->y_exact[t] = c->y[t], c->S_exact[t] = c->S[t], c->bound_exact[t] = c->bound[t];
            c->bound_exact[t].exact = 1;
            c->y[t] = kv_calloc_big(kv_oracle_len(c, t), sizeof(double));
            c->S[t] = kv_calloc_big(kv_oracle_len(c, t), sizeof(double));
            KV_CHECK(c->y[t] && c->S[t], KV_EDEVICE, "out of host memory for the oracle of %s", k->tensors[t].name);
        }
    }
    c->exact = x->o->oracle == KV_ORACLE_EXACT;
    KV_TRY(k->oracle(c));
    for (int t = 0; c->exact && t < k->n_tensors; t++) c->bound[t].exact = 1;
    /* An --abi stage's products are rounded to their dtype before the shader
     * reads them: one rounding more per product in its outputs' budget. */
    for (int s = 0; s < k->n_stages; s++) {
        int products = 0;
        const struct kv_abi *a = stage_abi(x, s);
        for (int i = 0; a && i < a->n_bindings; i++) products += a->b[i].tensor < 0;
        for (int t = 0; products && t < k->n_tensors; t++)
            if (k->tensors[t].role == KV_OUTPUT && k->tensors[t].stage == s) {
                c->bound[t].k_op += products;
                c->bound_exact[t].k_op += products;
            }
    }
cleanup:
    return st;
}

/* Keep run 0's download of every output; count later runs' differing elements. */
static enum kv_status keep_downloads(struct case_run *x, int rep)
{
    enum kv_status st = KV_OK;
    struct kv_case *c = x->c;
    struct kv_plan *p = &x->p;
    for (int t = 0; t < c->k->n_tensors; t++) {
        if (c->k->tensors[t].role != KV_OUTPUT || !kv_tensor_on(c, t) || !x->run_stage[c->k->tensors[t].stage])
            continue;
        for (int ch = 0; ch < 2; ch++) {
            if (ch == 1 && !p->has_chain[t]) continue;
            const char *src = kv_plan_download(p, t, ch);
            size_t padded = ch ? p->chain[t].size : p->dev[t].size;
            if (rep == 0 && x->first_mapped) {
                x->first[t][ch] = (void *)src;
            } else if (rep == 0) {
                x->first[t][ch] = kv_malloc_big(padded);
                KV_CHECK(x->first[t][ch], KV_EDEVICE, "out of host memory");
                memcpy(x->first[t][ch], src, padded);
            } else {
                p->nondet[t][ch] += count_diff(x->first[t][ch], src, c->t[t].count, kv_dtype_info(c->t[t].dtype)->size);
            }
        }
    }
cleanup:
    return st;
}

/* --bench: each running stage's fastest and median time, bytes and flops. */
static enum kv_status bench_stages(struct case_run *x)
{
    enum kv_status st = KV_OK;
    struct kv_case *c = x->c;
    const struct kv_kernel *k = c->k;
    struct kv_case_result *res = x->res;
    double mn[KV_MAX_STAGES], md[KV_MAX_STAGES];
    KV_TRY(kv_plan_bench(x->r, c, &x->p, x->run_stage, x->o->bench, x->o->bench_warmup_s, x->o->max_groups, mn, md));
    res->bench_runs = x->o->bench;
    res->bench_warmup_s = x->o->bench_warmup_s;
    for (int s = 0; s < k->n_stages; s++) {
        if (!x->run_stage[s]) continue;
        const struct kv_stage_def *sd = &k->stages[s];
        double bytes = 0;
        for (int i = 0; i < sd->n_bindings; i++) {
            int dup = 0;
            for (int j = 0; j < i; j++) dup |= sd->bindings[j] == sd->bindings[i];
            if (!dup) bytes += (double)kv_tensor_bytes(&c->t[sd->bindings[i]]);
        }
        res->bench[s].ran = 1;
        res->bench[s].min_ms = mn[s], res->bench[s].median_ms = md[s], res->bench[s].bytes = bytes;
        res->bench[s].flops = sd->flops ? sd->flops(c) : 0;
        const struct kv_vk_pipeline *pipe = x->p.win[s].addr ? &x->r->addr[s][0] : kv_runner_pipe(x->r, c, s, 0);
        res->bench[s].n_stats = kv_vk_pipeline_stats(x->r->d, pipe, res->bench[s].stats, KV_BENCH_STATS);
    }
cleanup:
    return st;
}

/* The device: --repeat runs (the first kept, the others diffed), --bench,
 * each stage's median and fastest time. */
static enum kv_status run_device(struct case_run *x)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = x->c->k;
    struct kv_case_result *res = x->res;
    double t0 = kv_now_ms();
    struct kv_early_plan *early = x->pre ? x->pre->early : x->early;
    if (early) /* the device buffers made while the inputs were (jobs.c, kv_plan_beside) */
        res->early_buffers = kv_early_plan_take(early, x->r, x->c, &x->p);
    if (x->pre) x->pre->early = NULL;
    x->early = NULL;
    KV_TRY(kv_plan_make(x->r, x->c, x->chain_stage, &x->p));
    res->ms.buffers = kv_now_ms() - t0;
    for (int s = 0; s < k->n_stages; s++) res->windows[s] = x->p.win[s].n, res->addressed[s] = x->p.win[s].addr;
    double stage_runs[64][KV_MAX_STAGES];
    int repeat = x->o->repeat < 1 ? 1 : x->o->repeat > 64 ? 64 : x->o->repeat;
    /* one run and nothing after it: the outputs are judged where they were
     * downloaded, without a copy (the download buffer is host-cached) */
    x->first_mapped = repeat == 1 && !x->o->stress && !x->o->sanitize && x->o->bench <= 0;
    for (int rep = 0; rep < repeat; rep++) {
        double up_ms, down_ms;
        double chained_ms;
        KV_TRY(kv_plan_run(x->r, x->c, &x->p, x->run_stage, x->chain_stage, x->o->max_groups, 0, stage_runs[rep],
                           &chained_ms, &up_ms, &down_ms));
        double t1 = kv_now_ms();
        KV_TRY(keep_downloads(x, rep));
        if (rep == 0)
            res->ms.upload = up_ms, res->ms.download = down_ms + (kv_now_ms() - t1), res->ms.chained = chained_ms;
    }
    if (x->o->bench > 0) KV_TRY(bench_stages(x));
    for (int s = 0; s < k->n_stages; s++) {
        double v[64];
        for (int rep = 0; rep < repeat; rep++) v[rep] = stage_runs[rep][s];
        res->stage_ms[s] = kv_quantile(v, (size_t)repeat, 0.5);
        res->stage_min_ms[s] = kv_quantile(v, (size_t)repeat, 0.0);
        res->ms.device += res->stage_ms[s];
    }
cleanup:
    return st;
}

/* A row for output t that is not checked, and why. */
static void not_judged_row(struct case_run *x, int t, const char *fmt, const char *arg)
{
    struct kv_output_result *out = &x->res->out[x->res->n_outputs++];
    const struct kv_kernel *k = x->c->k;
    snprintf(out->name, sizeof out->name, "%s", k->tensors[t].name);
    out->stage = k->stages[k->tensors[t].stage].name;
    out->source = "none";
    out->oracle = judging_ref(x, t, 0).name;
    out->dtype = x->c->t[t].dtype;
    out->ndim = x->c->t[t].ndim;
    memcpy(out->shape, x->c->t[t].shape, sizeof out->shape);
    out->total = x->c->t[t].count;
    out->not_judged = 1;
    out->pass = 1;
    snprintf(out->remark, sizeof out->remark, fmt, arg);
    snprintf(out->m.criterion, sizeof out->m.criterion, "not judged");
}

/* Output t's row of kind ch: 0 the device's isolated output (or the
 * candidate), 1 its chained rerun, 2 a fixture's expected output, 3 the
 * exact oracle's view of the device's output (shown, not judged). */
static enum kv_status judge_output(struct case_run *x, int t, int ch)
{
    struct kv_case *c = x->c;
    struct kv_plan *p = &x->p;
    int s = c->k->tensors[t].stage;
    /* Another backend computes later stages from its own intermediates:
     * candidates and expected outputs get the chained allowance. */
    int other = kv_consumes_intermediate(c->k, s);
    struct kv_oracle_ref spec = judging_ref(x, t, 0), spec_other = judging_ref(x, t, 1);
    if (ch == 3) {
        if (!c->y_exact[t] || !x->run_stage[s]) return KV_OK;
        /* a derived per-element bound is the judging oracle's (the same derivation, at its values) */
        struct kv_oracle_ref exact = {c->y_exact[t], c->S_exact[t], c->bound_exact[t], {0}, "exact", 0};
        exact.allow.lam = c->lam[t], exact.allow.fix = c->fix[t];
        KV_TRY_RET(kv_compare_row(c, t, &exact, x->first[t][0], ".exact", 0, "device", 0, 0, x->o, x->res));
        x->res->out[x->res->n_outputs - 1].judged = 0;
        return KV_OK;
    }
    if (ch == 2)
        return c->expected[t] ? judge(x, t, other ? &spec_other : &spec, c->expected[t]->data, ".expected", other,
                                      "expected", 0, 0)
                              : KV_OK;
    if (c->given[t]) {
        if (ch != 0) return KV_OK;
        KV_TRY_RET(judge(x, t, other ? &spec_other : &spec, c->given[t]->data, "", other, "candidate", 0, 0));
        kv_row_isolation_remark(c, t, x->res);
        return KV_OK;
    }
    const struct kv_abi *abi = x->r->abi[s];
    if (ch == 0 && !x->run_stage[s])
        not_judged_row(x, t, "not judged: no candidate for it%s", " (--no-device)");
    else if (ch == 0 && abi && !kv_abi_writes(abi, c->k, t))
        not_judged_row(x, t, "not judged: the shader does not write it (%s)", abi->path);
    if (!x->run_stage[s] || (ch == 1 && !p->has_chain[t]) || (abi && !kv_abi_writes(abi, c->k, t))) return KV_OK;
    size_t bytes = kv_tensor_bytes(&c->t[t]);
    size_t padded = ch ? p->chain[t].size : p->dev[t].size;
    size_t far, bad = kv_guard_check(x->first[t][ch], bytes, padded, &far);
    if (ch == 0) x->ran[t] = 1;
    if (ch == 0 && x->o->save_dir) memcpy(c->t[t].data, x->first[t][ch], bytes); /* what --save writes */
    if (ch == 1 && x->paired[t]) { /* judged with the isolated row (below) */
        x->res->out[x->res->n_outputs++] = *x->paired[t];
        free(x->paired[t]), x->paired[t] = NULL;
        x->all_pass = x->all_pass && x->res->out[x->res->n_outputs - 1].pass;
    } else if (ch == 0 && p->has_chain[t] && kv_row_pairable(c, t, &spec)) {
        size_t far1, bad1 = kv_guard_check(x->first[t][1], bytes, p->chain[t].size, &far1);
        const void *data[2] = {x->first[t][0], x->first[t][1]};
        const size_t guard[2] = {bad, bad1}, nondet[2] = {p->nondet[t][0], p->nondet[t][1]};
        if (!(x->paired[t] = calloc(1, sizeof *x->paired[t]))) return kv_error(KV_EDEVICE, "out of host memory");
        KV_TRY_RET(kv_compare_pair(c, t, &spec, data, guard, nondet, x->o, x->res, x->paired[t]));
        x->paired[t]->guard_far = far1;
        x->all_pass = x->all_pass && x->res->out[x->res->n_outputs - 1].pass;
    } else {
        KV_TRY_RET(judge(x, t, ch ? &spec_other : &spec, x->first[t][ch], ch ? ".chained" : "", ch, "device", bad,
                         p->nondet[t][ch]));
    }
    if (ch == 0 && x->o->keep_outputs) {
        struct kv_output_result *out = &x->res->out[x->res->n_outputs - 1];
        out->data = malloc(bytes ? bytes : 1);
        if (!out->data) return kv_error(KV_EDEVICE, "out of host memory");
        memcpy(out->data, x->first[t][0], bytes);
    }
    x->res->out[x->res->n_outputs - 1].guard_far = far;
    return KV_OK;
}

/* The kernel's checks, on the composed result where there is one. */
static enum kv_status judge_checks(struct case_run *x)
{
    struct kv_case *c = x->c;
    const struct kv_kernel *k = c->k;
    for (int j = 0; j < k->n_checks; j++) {
        const struct kv_check_def *cd = &k->checks[j];
        int t = cd->output, s = k->tensors[t].stage;
        const int blocked = kv_check_blocked(c, j);
        if (!kv_tensor_on(c, t) || (!c->chk[j].y && !blocked)) continue;
        const void *data = NULL;
        const char *source = "device";
        int chained = 0;
        if (c->given[t]) data = c->given[t]->data, source = "candidate";
        else if (x->run_stage[s] && x->p.has_chain[t]) data = x->first[t][1], chained = 1;
        else if (x->run_stage[s]) data = x->first[t][0];
        if (!data) continue;
        struct kv_oracle_ref ref = {c->chk[j].y, c->chk[j].S, c->chk[j].bound,
                                    {c->chk[j].slack, NULL, NULL, NULL, NULL, NULL, NULL}, judging_ref(x, t, 0).name,
                                    blocked ? j + 1 : 0};
        char suffix[64];
        snprintf(suffix, sizeof suffix, ".%s", cd->name);
        KV_TRY_RET(judge(x, t, &ref, data, suffix, 0, source, 0, 0));
        x->res->out[x->res->n_outputs - 1].chained = chained;
        x->res->out[x->res->n_outputs - 1].check = 1;
    }
    return KV_OK;
}

/* The stress runs (kv_stress_runs): each output that differs from the plain
 * run's, or writes past its end, becomes a row judged against the oracle
 * like the plain one (a correct shader may legally round differently when
 * its work is split differently); an identical output is already judged. */
static enum kv_status stress_run(struct case_run *x, const struct kv_stress_run *sr)
{
    enum kv_status st = KV_OK;
    struct kv_case *c = x->c;
    const struct kv_kernel *k = c->k;
    struct kv_plan *p = &x->p;
    struct kv_case_result *res = x->res;
    double ms[KV_MAX_STAGES], up, down;
    KV_TRY(kv_plan_run(x->r, c, p, x->run_stage, x->chain_stage, sr->cap, sr->variant, ms, NULL, &up, &down));
    size_t used = strlen(res->stress);
    snprintf(res->stress + used, sizeof res->stress - used, "%s%s", used ? "," : "", sr->tag + 1);
    if (sr->variant == KV_VARIANT_SANITIZED && !kv_sanitize_rows(x->r, c, p, x->run_stage, x->chain_stage, res))
        x->all_pass = 0;
    const int from = res->n_outputs; /* this run's rows */
    for (int ch = 0; ch < 2; ch++)
        for (int t = 0; t < k->n_tensors; t++) {
            if (k->tensors[t].role != KV_OUTPUT || !kv_tensor_on(c, t) || !x->run_stage[k->tensors[t].stage] ||
                c->given[t] || (ch == 1 && !p->has_chain[t]))
                continue;
            const char *got = kv_plan_download(p, t, ch);
            size_t bytes = kv_tensor_bytes(&c->t[t]), padded = ch ? p->chain[t].size : p->dev[t].size, far;
            size_t bad = kv_guard_check(got, bytes, padded, &far);
            /* values, not bits: a NaN's payload or a zero's sign may differ between builds */
            if (!bad && kv_same_values(c->t[t].dtype, got, x->first[t][ch], c->t[t].count)) continue;
            if (res->n_outputs >= KV_COUNT(res->out)) {
                x->all_pass = 0;
                continue;
            }
            struct kv_oracle_ref ref = judging_ref(x, t, ch);
            char suffix[48];
            snprintf(suffix, sizeof suffix, "%s%s", ch ? ".chained" : "", sr->tag);
            KV_TRY(judge(x, t, &ref, got, suffix, ch, "device", bad, 0));
            res->out[res->n_outputs - 1].guard_far = far;
        }
    /* a device that cuts loops short (vk/loop_cap.c): a failing row run again counting the cut
     * (pipeline/loops.h; the sanitized run in its sanitized builds' loop-cut builds; its records stand) */
    int failing = 0, clear = 0;
    for (int i = from; i < res->n_outputs; i++) failing |= !res->out[i].pass;
    if (failing && kv_loops_wanted(x->r_live, p, x->o))
        KV_TRY(kv_loops_check(x->r_live, c, p, x->run_stage, x->chain_stage, sr, from, res, &clear));
    for (int i = from; i < res->n_outputs; i++) /* unchecked, or cut with other outputs: the verdict stands */
        if (!res->out[i].pass && sr->cap && x->r->d->info.loop_cap && !clear)
            snprintf(res->out[i].remark, sizeof res->out[i].remark,
                     "this device ends an invocation's loops after %u iterations in all: with %u workgroup%s, "
                     "a large case can stop short there (man kverify, --stress)",
                     x->r->d->info.loop_cap, sr->cap, sr->cap > 1 ? "s" : "");
cleanup:
    return st;
}

static enum kv_status stress(struct case_run *x)
{
    int any_rev = 0, any_san = 0;
    for (int s = 0; s < x->c->k->n_stages; s++) {
        any_rev |= x->run_stage[s] && x->r->rev[s].pipeline;
        any_san |= x->run_stage[s] && (x->r->san[s].pipeline || x->r->san_missing[s][0]);
    }
    for (int s = 0; any_san && s < x->c->k->n_stages; s++)
        if (x->run_stage[s] && (x->p.win[s].n > 1 || x->p.win[s].addr)) { /* its records name whole bindings */
            char how[64];
            if (x->p.win[s].addr) snprintf(how, sizeof how, "reads its tensors by address");
            else snprintf(how, sizeof how, "runs in %lld windows", (long long)x->p.win[s].n);
            snprintf(x->res->sanitize, sizeof x->res->sanitize, "not run: stage %s %s (a tensor is longer than a "
                     "binding reaches), and the sanitizer checks whole bindings only", x->c->k->stages[s].name, how);
            any_san = 0;
        }
    for (int v = 0; v < KV_STRESS_RUNS; v++) {
        int variant = kv_stress_runs[v].variant;
        if ((variant == KV_VARIANT_REVERSED && !any_rev) || (variant == KV_VARIANT_SANITIZED && !any_san) ||
            (variant != KV_VARIANT_SANITIZED && !x->o->stress))
            continue;
        KV_TRY_RET(stress_run(x, &kv_stress_runs[v]));
        if (x->o->fail_fast && !x->all_pass) break;
    }
    return KV_OK;
}

static enum kv_status run_case(struct case_run *x)
{
    enum kv_status st = KV_OK;
    struct kv_case *c = x->c;
    const struct kv_kernel *k = c->k;
    struct kv_case_result *res = x->res;
    /* a prepared case's inputs count in the host memory the check would
     * measure: it was checked before they were made (jobs.c) */
    KV_TRY(kv_case_check(c, x->r->d ? &x->r->d->info : NULL, x->o, !x->pre));
    KV_TRY(kv_case_stages(x->r, c, x->run_stage, x->chain_stage, &x->any_stage));
    if (x->pre) {
        KV_CHECK(!x->pre->st, x->pre->st, "%s", x->pre->msg);
        res->ms.inputs = x->pre->inputs_ms;
    } else {
        double t0 = kv_now_ms();
        struct kv_plan_beside *beside = kv_plan_beside_start(x->r, c, x->any_stage);
        st = make_inputs(x);
        x->early = kv_plan_beside_join(beside);
        if (st) goto cleanup;
        res->ms.inputs = kv_now_ms() - t0;
    }
    double t1 = kv_now_ms();
    if (x->pre && x->pre->oracle_made) { /* made while the device opened (a prepared case has no --abi stage) */
        res->ms.oracle = x->pre->oracle_ms;
    } else {
        KV_TRY(run_oracles(x));
        res->ms.oracle = kv_now_ms() - t1;
    }
    snprintf(res->note, sizeof res->note, "%s", c->note);
    if (x->any_stage) KV_TRY(run_device(x));
    if (x->first_mapped) { /* no device run follows: its buffers go while it is judged (and the device, after the last case) */
        if (x->o->device_done) x->r_kept = *x->r, x->r = &x->r_kept; /* the judge reads r's abi and device info */
        kv_plan_retire(x->r->d, &x->p, x->o->device_done, x->o->device_done_ctx);
        if (x->p.retired) kv_threads_beside(1); /* a core to the release, while the case is judged */
        /* tests: the release over before the case is judged (it races the judge otherwise) */
        const char *first = getenv("KVERIFY_TEST_RELEASE_FIRST");
        if (first && *first == '1') kv_plan_retired_join(&x->p);
    }

    double t3 = kv_now_ms();
    x->all_pass = 1;
    for (int ch = 0; ch < 4; ch++)
        for (int t = 0; t < k->n_tensors; t++)
            if (k->tensors[t].role == KV_OUTPUT && kv_tensor_on(c, t)) KV_TRY(judge_output(x, t, ch));
    KV_TRY(judge_checks(x));
    /* a failure on a device that cuts loops short: an error where the device cut this run (pipeline/loops.h) */
    int clear;
    if (!x->all_pass && x->any_stage && kv_loops_wanted(x->r_live, &x->p, x->o))
        KV_TRY(kv_loops_check(x->r_live, c, &x->p, x->run_stage, x->chain_stage, NULL, 0, res,
                              &clear));
    if (x->any_stage && (x->o->stress || x->o->sanitize) && !(x->o->fail_fast && !x->all_pass)) KV_TRY(stress(x));
    res->ms.compare = kv_now_ms() - t3;
    res->status = x->all_pass ? KV_CASE_PASS : KV_CASE_FAIL;
    if (x->o->save_dir) {
        void *chained[KV_MAX_TENSORS] = {0};
        for (int t = 0; t < k->n_tensors; t++) chained[t] = x->p.has_chain[t] ? x->first[t][1] : NULL;
        KV_TRY(kv_save_case(x->o->save_dir, x->o->save_format, c, chained, x->ran, x->r->d ? &x->r->d->info : NULL,
                            res));
    }
    int judged = 0; /* --no-device --save without a candidate: the case is written, nothing is judged */
    for (int i = 0; i < res->n_outputs; i++) judged |= !res->out[i].not_judged;
    if (!judged) {
        res->status = KV_CASE_SKIP;
        snprintf(res->error, sizeof res->error, "no device and no candidate%s%.400s", res->saved[0] ? ": saved to " : "",
                 res->saved);
    }
cleanup:
    return st;
}

void kv_case_prepare(struct kv_case *c, const struct kv_run_opts *o, struct kv_case_prep *pre)
{
    struct case_run x = {.c = c, .o = o};
    double t0 = kv_now_ms();
    kv_error_clear();
    /* its shapes first, as kv_run_case makes them: a case run before (on
     * another device) was freed, shapes and all */
    enum kv_status st = kv_case_check(c, NULL, NULL, 0);
    if (!st) st = make_inputs(&x);
    *pre = (struct kv_case_prep){st, "", kv_now_ms() - t0, 0, 0, NULL};
    if (st) snprintf(pre->msg, sizeof pre->msg, "%s", kv_error_msg());
}

void kv_case_prepare_oracle(struct kv_case *c, const struct kv_run_opts *o, struct kv_case_prep *pre)
{
    if (pre->st) return;
    struct case_run x = {.c = c, .o = o};
    double t0 = kv_now_ms();
    kv_error_clear();
    pre->st = run_oracles(&x);
    pre->oracle_ms = kv_now_ms() - t0;
    pre->oracle_made = !pre->st;
    if (pre->st) snprintf(pre->msg, sizeof pre->msg, "%s", kv_error_msg());
}

void kv_run_case(struct kv_runner *r, struct kv_case *c, const struct kv_run_opts *o, struct kv_case_prep *pre,
                 struct kv_case_result *res)
{
    fill_params(c, res);
    kv_error_clear();
    struct case_run *x = calloc(1, sizeof *x);
    enum kv_status st = x ? KV_OK : kv_error(KV_EDEVICE, "out of host memory");
    if (x) {
        *x = (struct case_run){.r = r, .r_live = r, .c = c, .o = o, .res = res, .pre = pre};
        st = run_case(x);
        kv_threads_beside(0); /* judged: the whole team again */
        double t0 = kv_now_ms();
        for (int t = 0; !x->first_mapped && t < KV_MAX_TENSORS; t++) free(x->first[t][0]), free(x->first[t][1]);
        for (int t = 0; t < KV_MAX_TENSORS; t++) /* a chained row judged, an error before its turn */
            if (x->paired[t]) free(x->paired[t]->dist), free(x->paired[t]);
        kv_plan_free(x->r->d, &x->p); /* x->r: r itself may be freed until the retire thread is joined here */
        kv_early_plan_free(r->d, x->early); /* an error before the device ran */
        free(x);
        kv_case_free(c);
        res->ms.teardown = kv_now_ms() - t0;
    } else {
        kv_case_free(c);
    }
    if (pre) kv_early_plan_free(r->d, pre->early), pre->early = NULL; /* an error before the device ran */
    if (st == KV_ENODEV) {
        res->status = KV_CASE_SKIP;
        snprintf(res->error, sizeof res->error, "%s", kv_error_msg());
    } else if (st != KV_OK) {
        res->status = KV_CASE_ERROR;
        res->error_code = st;
        for (int i = 0; i < res->n_outputs; i++) free(res->out[i].dist), res->out[i].dist = NULL;
        res->n_outputs = 0;
        snprintf(res->error, sizeof res->error, "%s", kv_error_msg());
    }
}
