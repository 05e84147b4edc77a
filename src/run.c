#include "run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan.h"
#include "rng.h"
#include "save.h"
#include "shader.h"
#include "spirv.h"

double kv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

const struct kv_stress_run kv_stress_runs[KV_STRESS_RUNS] = {
    {1, 0, "@groups=1"},
    {3, 1, "@groups=3+reversed"},
    {0, 1, "@reversed"},
};

/* Stage s recompiled with its subgroups numbered in reverse (glsl.h), from
 * the GLSL it runs: the built-in source, the user's .comp or a mutant. A
 * .spv has no source to renumber: the stress run keeps its plain pipeline,
 * and the reason is kept. */
static enum kv_status reversed_pipeline(struct kv_runner *r, int s, const struct kv_run_opts *o, unsigned defines,
                                        const char *what)
{
    enum kv_status st = KV_OK;
    const struct kv_stage_def *sd = &r->k->stages[s];
    char name[128];
    struct kv_glsl_env env = {.builtin = 1, .defines = defines | sd->source_defines, .reverse = 1};
    const char *file = name;
    uint32_t *words = NULL;
    size_t bytes = 0;
    if (o->src_env[s]) {
        env = *o->src_env[s];
        env.reverse = 1;
        file = o->src_name[s];
    } else if (o->shader[s]) {
        size_t n = strlen(o->shader[s]);
        if (n > 4 && !strcmp(o->shader[s] + n - 4, ".spv")) {
            snprintf(r->rev_missing[s], sizeof r->rev_missing[s], "stage %s: a .spv shader cannot be renumbered",
                     sd->name);
            return KV_OK;
        }
        env = (struct kv_glsl_env){.defines = defines, .reverse = 1};
        file = o->shader[s];
    } else {
        kv_stage_source(r->k, s, name, sizeof name);
    }
    KV_TRY(kv_glsl_compile(&env, file, &words, &bytes));
    char rwhat[1200];
    snprintf(rwhat, sizeof rwhat, "%s, subgroups reversed", what);
    KV_TRY(kv_vk_pipeline_create(r->d, rwhat, words, bytes, (uint32_t)sd->n_bindings, sd->push_size, &r->rev[s]));
cleanup:
    free(words);
    return st;
}

unsigned kv_stage_defines(const struct kv_vk_info *dev, const struct kv_stage_def *sd, const struct kv_run_opts *o)
{
    return (dev->subgroup_arith && !o->no_subgroup ? KV_SHADER_SUBGROUP : 0u) |
           (dev->storage8 && !o->no_8bit && sd->subgroup8.words ? KV_SHADER_INT8 : 0u);
}

const char *kv_stage_lacks(const struct kv_vk_info *dev, const struct kv_stage_def *sd)
{
    return (sd->needs & KV_NEED_STORAGE16) && !dev->storage16 ? "storageBuffer16BitAccess"
           : (sd->needs & KV_NEED_COOPMAT16) && !dev->coopmat16
               ? "VK_NV_cooperative_matrix with 16x16x16 f16 products into f32 on 32-wide subgroups"
           : (sd->needs & KV_NEED_COOPMAT_BF16) && !dev->coopmat_bf16
               ? "VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16 with 16x16x16 bf16 products "
                 "into f32 on 32-wide subgroups"
               : NULL;
}

enum kv_status kv_runner_stage(struct kv_runner *r, int s, const struct kv_run_opts *o)
{
    enum kv_status st = KV_OK;
    uint32_t *user = NULL;
    struct kv_vk_device *d = r->d;
    const struct kv_kernel *k = r->k;
    const struct kv_stage_def *sd = &k->stages[s];
    unsigned defines = kv_stage_defines(&d->info, sd, o);
    int subgroup = (defines & KV_SHADER_SUBGROUP) != 0, int8 = (defines & KV_SHADER_INT8) != 0;
    /* A stage the device cannot run gets no pipeline; a case that runs it is skipped. */
    const char *lacks = kv_stage_lacks(&d->info, sd);
    if (lacks) {
        snprintf(r->missing[s], sizeof r->missing[s], "%s: stage %s needs %s, which %s lacks", k->name, sd->name,
                 lacks, d->info.name);
        return KV_OK;
    }
    r->missing[s][0] = '\0';
    const uint32_t *words;
    size_t bytes;
    char what[1100];
    if (o->src_words[s]) {
        words = o->src_words[s];
        bytes = o->src_bytes[s];
        snprintf(what, sizeof what, "%s (stage %s)", o->src_name[s], sd->name);
    } else if (o->src_env[s]) {
        KV_TRY(kv_glsl_compile(o->src_env[s], o->src_name[s], &user, &bytes));
        words = user;
        snprintf(what, sizeof what, "%s (stage %s)", o->src_name[s], sd->name);
    } else if (o->shader[s]) {
        KV_TRY(kv_shader_load(o->shader[s], defines, &user, &bytes));
        words = user;
        snprintf(what, sizeof what, "%s (stage %s)", o->shader[s], sd->name);
    } else {
        const struct kv_spirv_blob *b = int8 ? (subgroup ? &sd->subgroup8 : &sd->fallback8)
                                             : (subgroup ? &sd->subgroup : &sd->fallback);
        words = b->words;
        bytes = b->bytes;
        snprintf(what, sizeof what, "built-in %s stage %s", k->name, sd->name);
    }
    struct kv_spirv_iface iface;
    KV_TRY(kv_spirv_reflect(what, words, bytes / 4, &iface));
    uint32_t outputs = 0;
    for (int b = 0; b < sd->n_bindings; b++) {
        const struct kv_tensor_def *td = &k->tensors[sd->bindings[b]];
        if (td->role == KV_OUTPUT && td->stage == s) outputs |= 1u << b;
    }
    KV_TRY(kv_spirv_check(what, &iface, (uint32_t)sd->n_bindings, outputs, sd->push_size));
    uint64_t inv = (uint64_t)iface.local[0] * iface.local[1] * iface.local[2];
    KV_CHECK(inv <= d->info.max_invocations, KV_EDATA,
             "%s: workgroup of %llu invocations exceeds the device's %u", what,
             (unsigned long long)inv, d->info.max_invocations);
    memcpy(r->local[s], iface.local, sizeof iface.local);
    KV_TRY(kv_vk_pipeline_create(d, what, words, bytes, (uint32_t)sd->n_bindings, sd->push_size,
                                 &r->pipe[s]));
    free(user);
    user = NULL;
    if (o->stress) KV_TRY(reversed_pipeline(r, s, o, defines, what));
cleanup:
    free(user);
    return st;
}

enum kv_status kv_runner_init(struct kv_runner *r, struct kv_vk_device *d, const struct kv_kernel *k,
                              const struct kv_run_opts *o)
{
    enum kv_status st = KV_OK;
    double t0 = kv_now_ms();
    memset(r, 0, sizeof *r);
    r->d = d;
    r->k = k;
    if (!d) return KV_OK; /* every output has a candidate: nothing runs on a device */
    for (int s = 0; s < k->n_stages; s++) KV_TRY(kv_runner_stage(r, s, o));
    r->pipeline_ms = kv_now_ms() - t0;
cleanup:
    if (st) kv_runner_free(r);
    return st;
}

void kv_runner_free(struct kv_runner *r)
{
    if (!r->d) return;
    for (int s = 0; s < KV_MAX_STAGES; s++) kv_vk_pipeline_destroy(r->d, &r->pipe[s]), kv_vk_pipeline_destroy(r->d, &r->rev[s]);
    memset(r, 0, sizeof *r);
}

enum kv_status kv_case_check(struct kv_case *c, const struct kv_vk_info *dev)
{
    const struct kv_kernel *k = c->k;
    enum kv_status st = kv_case_shapes(c);
    if (st) return st;
    for (int t = 0; t < k->n_tensors; t++) {
        size_t n;
        if (!kv_tensor_on(c, t)) continue;
        st = kv_shape_count(k->tensors[t].name, c->t[t].dtype, c->t[t].ndim, c->t[t].shape, &n);
        if (st) return st;
        size_t bytes = n * kv_dtype_info(c->t[t].dtype)->size;
        if (dev && bytes > dev->max_storage_range)
            return kv_error(KV_EUSAGE, "%s: tensor %s needs %zu bytes, more than this device's "
                            "maxStorageBufferRange (%llu bytes)", c->name, k->tensors[t].name, bytes,
                            (unsigned long long)dev->max_storage_range);
    }
    return KV_OK;
}

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

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* The sample of output t: its whole last row and last column (and first
 * ones), rows and columns on 16-element tile boundaries, and n random
 * elements, a third of them on boundaries. Deterministic in the seed. */
static enum kv_status make_sample(struct kv_case *c, int t, int64_t n)
{
    const struct kv_tensor *x = &c->t[t];
    size_t cols = x->ndim >= 2 ? (size_t)x->shape[x->ndim - 1] : x->count, rows = x->count / cols;
    size_t cap = 2 * rows + 2 * cols + (size_t)n + 2, k = 0;
    size_t *idx = malloc(cap * sizeof *idx);
    if (!idx) return kv_error(KV_EDEVICE, "out of host memory for the sample");
    for (size_t j = 0; j < cols; j++) idx[k++] = (rows - 1) * cols + j, idx[k++] = j;
    for (size_t i = 0; i < rows; i++) idx[k++] = i * cols + cols - 1, idx[k++] = i * cols;
    for (int64_t s = 0; s < n; s++) {
        size_t pick[2];
        size_t ext[2] = {rows, cols};
        for (int d = 0; d < 2; d++) {
            double u = kv_rng_uniform(c->seed ^ 0x5a3c9e17u, 1000u + (uint32_t)(2 * t + d), (uint64_t)s);
            size_t v = (size_t)(u * (double)ext[d]);
            if (s % 3 == 0 && ext[d] > 16) v = (v / 16) * 16 + ((s / 3) % 2 ? 15 : 0); /* a tile edge */
            pick[d] = v < ext[d] ? v : ext[d] - 1;
        }
        idx[k++] = pick[0] * cols + pick[1];
    }
    qsort(idx, k, sizeof *idx, cmp_size);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || idx[i] != idx[u - 1]) idx[u++] = idx[i];
    c->sample[t] = idx;
    c->n_sample[t] = u;
    return KV_OK;
}

/* The oracle one output is judged against: values, scales, bound, the
 * per-element allowances, name. */
struct oracle_ref {
    const double *y, *S;
    struct kv_bound bound;
    struct kv_allow allow;
    const char *name; /* "spec" or "exact" */
};

/* Gather src[idx[i]] (elements of es bytes) into a new array; NULL src: NULL. */
static void *gather(const void *src, const size_t *idx, size_t n, size_t es, int *oom)
{
    if (!src) return NULL;
    char *d = malloc(n * es + 1);
    if (!d) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) memcpy(d + i * es, (const char *)src + idx[i] * es, es);
    return d;
}

/* Compare data (output t, from `source`) against ref and append a row named
 * <output><suffix>. chained adds the allowance for device intermediates. */
static enum kv_status compare_one(struct kv_case *c, int t, const struct oracle_ref *ref, const void *data,
                                  const char *suffix, int chained, const char *source, size_t guard_bad,
                                  size_t nondet, const struct kv_run_opts *o, struct kv_case_result *res)
{
    const struct kv_kernel *k = c->k;
    struct kv_output_result *out = &res->out[res->n_outputs++];
    snprintf(out->name, sizeof out->name, "%s%s", k->tensors[t].name, suffix);
    out->source = source;
    out->stage = k->stages[k->tensors[t].stage].name;
    out->chained = chained;
    out->dtype = c->t[t].dtype;
    out->ndim = c->t[t].ndim;
    memcpy(out->shape, c->t[t].shape, sizeof out->shape);
    out->oracle = ref->name;
    out->judged = 1;
    out->guard_bad = guard_bad;
    out->nondet = nondet;
    struct kv_bound bound = ref->bound;
    if (chained) bound.k_op += c->k_chain[t];
    out->total = c->t[t].count;
    enum kv_status st;
    if (c->sample[t]) {
        /* Gather the sampled elements, compare them, map the worst back. */
        size_t n = c->n_sample[t], es = kv_dtype_info(c->t[t].dtype)->size;
        const size_t *idx = c->sample[t];
        int oom = 0;
        char *cand = gather(data, idx, n, es, &oom);
        double *y = gather(ref->y, idx, n, sizeof *y, &oom), *S = gather(ref->S, idx, n, sizeof *S, &oom);
        struct kv_allow a = {gather(ref->allow.slack, idx, n, sizeof(double), &oom),
                             gather(ref->allow.tie, idx, n, sizeof(int16_t), &oom),
                             gather(ref->allow.flush, idx, n, sizeof(int16_t), &oom)};
        if (oom) st = kv_error(KV_EDEVICE, "out of host memory comparing a sample");
        else {
            st = kv_compare(c->t[t].dtype, cand, y, S, n, &bound, &a, &o->crit, &out->m);
            if (!st && out->m.has_worst) out->m.worst_index = idx[out->m.worst_index];
        }
        free(cand), free(y), free(S);
        free((void *)a.slack), free((void *)a.tie), free((void *)a.flush);
    } else {
        st = kv_compare(c->t[t].dtype, data, ref->y, ref->S, c->t[t].count, &bound, &ref->allow, &o->crit,
                        &out->m);
    }
    if (st) return st;
    if (!out->m.integer && ref->allow.slack) out->m.ambiguous = c->ambiguous[t];
    if (out->m.has_worst) kv_tensor_unravel(&c->t[t], out->m.worst_index, out->worst_idx);
    out->pass = out->m.pass && guard_bad == 0 && nondet == 0;
    return KV_OK;
}

/* The stress runs (kv_stress_runs): each output that differs from the plain
 * run's, or writes past its end, becomes a row judged against the oracle
 * like the plain one (a correct shader may legally round differently when
 * its work is split differently); an identical output is already judged. */
static enum kv_status stress(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage,
                             const int *chain_stage, void *first[][2], const struct kv_run_opts *o,
                             struct kv_case_result *res, int *all_pass)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = c->k;
    int any_rev = 0;
    for (int s = 0; s < k->n_stages; s++) any_rev |= run_stage[s] && r->rev[s].pipeline;
    for (int v = 0; v < KV_STRESS_RUNS; v++) {
        const struct kv_stress_run *sr = &kv_stress_runs[v];
        if (sr->reversed && !any_rev) continue;
        double ms[KV_MAX_STAGES], up, down;
        KV_TRY(kv_plan_run(r, c, p, run_stage, chain_stage, sr->cap, sr->reversed, ms, &up, &down));
        size_t used = strlen(res->stress);
        snprintf(res->stress + used, sizeof res->stress - used, "%s%s", used ? "," : "", sr->tag + 1);
        for (int ch = 0; ch < 2; ch++)
            for (int t = 0; t < k->n_tensors; t++) {
                if (k->tensors[t].role != KV_OUTPUT || !kv_tensor_on(c, t) || !run_stage[k->tensors[t].stage] ||
                    c->given[t] || (ch == 1 && !p->has_chain[t]))
                    continue;
                const char *got = (const char *)p->down.map + p->down_off[ch][t];
                size_t bytes = kv_tensor_bytes(&c->t[t]), padded = ch ? p->chain[t].size : p->dev[t].size, far;
                size_t bad = kv_guard_check(got, bytes, padded, &far);
                if (!bad && !memcmp(got, first[t][ch], bytes)) continue;
                if (res->n_outputs >= KV_COUNT(res->out)) {
                    *all_pass = 0;
                    continue;
                }
                struct oracle_ref ref = {c->y[t], c->S[t], c->bound[t], {c->slack[t], c->tie[t], c->flush[t]},
                                         o->oracle == KV_ORACLE_EXACT ? "exact" : "spec"};
                if (ch && c->slack_chain[t]) ref.allow.slack = c->slack_chain[t];
                char suffix[48];
                snprintf(suffix, sizeof suffix, "%s%s", ch ? ".chained" : "", sr->tag);
                KV_TRY(compare_one(c, t, &ref, got, suffix, ch, "device", bad, 0, o, res));
                res->out[res->n_outputs - 1].guard_far = far;
                *all_pass = *all_pass && res->out[res->n_outputs - 1].pass;
            }
        if (o->fail_fast && !*all_pass) break;
    }
cleanup:
    return st;
}

static enum kv_status run_case(struct kv_runner *r, struct kv_case *c, const struct kv_run_opts *o,
                               struct kv_case_result *res)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = c->k;
    struct kv_plan p;
    memset(&p, 0, sizeof p);
    void *first[KV_MAX_TENSORS][2] = {{0}};
    int run_stage[KV_MAX_STAGES] = {0}, chain_stage[KV_MAX_STAGES] = {0}, ran[KV_MAX_TENSORS] = {0};
    int any_stage = 0, all_inputs_given = 1;

    KV_TRY(kv_case_check(c, r->d ? &r->d->info : NULL));
    /* A stage runs unless every output it writes has a candidate; a stage fed
     * intermediates reruns on the device's own only where their producers ran. */
    for (int t = 0; t < k->n_tensors; t++) {
        if (!kv_tensor_on(c, t)) continue;
        if (k->tensors[t].role == KV_OUTPUT && !c->given[t]) run_stage[k->tensors[t].stage] = r->d != NULL;
        if (k->tensors[t].role == KV_INPUT && !c->given[t]) all_inputs_given = 0;
    }
    for (int s = 0; s < k->n_stages; s++) {
        any_stage |= run_stage[s];
        chain_stage[s] = run_stage[s] && kv_consumes_intermediate(k, s);
        for (int b = 0; chain_stage[s] && b < k->stages[s].n_bindings; b++) {
            const struct kv_tensor_def *td = &k->tensors[k->stages[s].bindings[b]];
            if (td->role == KV_OUTPUT && td->stage != s && !run_stage[td->stage]) chain_stage[s] = 0;
        }
    }
    for (int s = 0; s < k->n_stages; s++)
        KV_CHECK(!run_stage[s] || !r->missing[s][0], KV_ENODEV, "%s", r->missing[s]);
    double t0 = kv_now_ms();
    KV_TRY(kv_case_alloc(c));
    if (!all_inputs_given) KV_TRY(k->inputs(c));
    for (int t = 0; o->sample > 0 && t < k->n_tensors; t++)
        if (k->tensors[t].role == KV_OUTPUT && kv_tensor_on(c, t) && !kv_is_intermediate(c, t) &&
            (size_t)o->sample < c->t[t].count)
            KV_TRY(make_sample(c, t, o->sample));
    for (int t = 0; t < k->n_tensors; t++)
        if (k->tensors[t].role == KV_INPUT && c->given[t] && kv_tensor_on(c, t))
            memcpy(c->t[t].data, c->given[t]->data, kv_tensor_bytes(&c->t[t]));
    double t1 = kv_now_ms();
    if (o->oracle == KV_ORACLE_BOTH) {
        /* The exact oracle first, set aside; then the spec oracle, which
         * judges and feeds the stages their rounded intermediates. */
        c->exact = 1;
        KV_TRY(k->oracle(c));
        for (int t = 0; t < k->n_tensors; t++) {
            if (k->tensors[t].role != KV_OUTPUT || !kv_tensor_on(c, t)) continue;
            c->y_exact[t] = c->y[t], c->S_exact[t] = c->S[t], c->bound_exact[t] = c->bound[t];
            c->y[t] = calloc(c->t[t].count, sizeof(double));
            c->S[t] = calloc(c->t[t].count, sizeof(double));
            KV_CHECK(c->y[t] && c->S[t], KV_EDEVICE, "out of host memory for the oracle of %s", k->tensors[t].name);
        }
    }
    c->exact = o->oracle == KV_ORACLE_EXACT;
    KV_TRY(k->oracle(c));
    double t2 = kv_now_ms();
    res->ms.inputs = t1 - t0;
    snprintf(res->note, sizeof res->note, "%s", c->note);
    res->ms.oracle = t2 - t1;

    if (any_stage) {
        KV_TRY(kv_plan_make(r->d, k, c, chain_stage, &p));
        double stage_runs[64][KV_MAX_STAGES];
        int repeat = o->repeat < 1 ? 1 : o->repeat > 64 ? 64 : o->repeat;
        for (int rep = 0; rep < repeat; rep++) {
            double up_ms, down_ms;
            KV_TRY(kv_plan_run(r, c, &p, run_stage, chain_stage, o->max_groups, 0, stage_runs[rep], &up_ms, &down_ms));
            if (rep == 0) res->ms.upload = up_ms, res->ms.download = down_ms;
            for (int t = 0; t < k->n_tensors; t++) {
                if (k->tensors[t].role != KV_OUTPUT || !kv_tensor_on(c, t) || !run_stage[k->tensors[t].stage]) continue;
                for (int ch = 0; ch < 2; ch++) {
                    if (ch == 1 && !p.has_chain[t]) continue;
                    const char *src = (const char *)p.down.map + p.down_off[ch][t];
                    size_t padded = ch ? p.chain[t].size : p.dev[t].size;
                    if (rep == 0) {
                        first[t][ch] = malloc(padded);
                        KV_CHECK(first[t][ch], KV_EDEVICE, "out of host memory");
                        memcpy(first[t][ch], src, padded);
                    } else {
                        p.nondet[t][ch] += count_diff(first[t][ch], src, c->t[t].count,
                                                    kv_dtype_info(c->t[t].dtype)->size);
                    }
                }
            }
        }
        if (o->bench > 0) {
            double mn[KV_MAX_STAGES], md[KV_MAX_STAGES];
            KV_TRY(kv_plan_bench(r, c, &p, run_stage, o->bench, o->bench_warmup_s, o->max_groups, mn, md));
            res->bench_runs = o->bench;
            res->bench_warmup_s = o->bench_warmup_s;
            for (int s = 0; s < k->n_stages; s++) {
                if (!run_stage[s]) continue;
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
                res->bench[s].n_stats = kv_vk_pipeline_stats(r->d, &r->pipe[s], res->bench[s].stats, KV_BENCH_STATS);
            }
        }
        for (int s = 0; s < k->n_stages; s++) {
            double v[64];
            for (int rep = 0; rep < repeat; rep++) v[rep] = stage_runs[rep][s];
            res->stage_ms[s] = kv_quantile(v, (size_t)repeat, 0.5);
            res->stage_min_ms[s] = kv_quantile(v, (size_t)repeat, 0.0);
            res->ms.device += res->stage_ms[s];
        }
    }

    double t3 = kv_now_ms();
    int all_pass = 1;
    /* Rows: the device's isolated outputs (or candidates), chained reruns,
     * a fixture's expected outputs, then with --oracle both the exact
     * oracle's view of the device's outputs (shown, not judged). */
    const char *oracle_name = o->oracle == KV_ORACLE_EXACT ? "exact" : "spec";
    for (int ch = 0; ch < 4; ch++)
        for (int t = 0; t < k->n_tensors; t++) {
            if (k->tensors[t].role != KV_OUTPUT || !kv_tensor_on(c, t)) continue;
            int s = k->tensors[t].stage;
            /* Another backend computes later stages from its own intermediates:
             * candidates and expected outputs get the chained allowance. */
            int other = kv_consumes_intermediate(k, s);
            struct oracle_ref spec = {c->y[t], c->S[t], c->bound[t], {c->slack[t], c->tie[t], c->flush[t]},
                                      oracle_name};
            struct oracle_ref spec_other = spec;
            if (c->slack_chain[t]) spec_other.allow.slack = c->slack_chain[t];
            if (ch == 3) {
                if (!c->y_exact[t] || !run_stage[s]) continue;
                struct oracle_ref exact = {c->y_exact[t], c->S_exact[t], c->bound_exact[t], {0}, "exact"};
                KV_TRY(compare_one(c, t, &exact, first[t][0], ".exact", 0, "device", 0, 0, o, res));
                res->out[res->n_outputs - 1].judged = 0;
                continue;
            }
            if (ch == 2) {
                if (!c->expected[t]) continue;
                KV_TRY(compare_one(c, t, other ? &spec_other : &spec, c->expected[t]->data, ".expected", other,
                                   "expected", 0, 0, o, res));
            } else if (c->given[t]) {
                if (ch == 1) continue;
                KV_TRY(compare_one(c, t, other ? &spec_other : &spec, c->given[t]->data, "", other, "candidate", 0,
                                   0, o, res));
            } else if (run_stage[s] && (ch == 0 || p.has_chain[t])) {
                size_t bytes = kv_tensor_bytes(&c->t[t]);
                size_t padded = ch ? p.chain[t].size : p.dev[t].size;
                size_t far, bad = kv_guard_check(first[t][ch], bytes, padded, &far);
                if (ch == 0) memcpy(c->t[t].data, first[t][ch], bytes), ran[t] = 1;
                KV_TRY(compare_one(c, t, ch ? &spec_other : &spec, first[t][ch], ch ? ".chained" : "", ch,
                                   "device", bad, p.nondet[t][ch], o, res));
                res->out[res->n_outputs - 1].guard_far = far;
            } else {
                continue;
            }
            all_pass = all_pass && res->out[res->n_outputs - 1].pass;
        }
    /* The kernel's checks, on the composed result where there is one. */
    for (int j = 0; j < k->n_checks; j++) {
        const struct kv_check_def *cd = &k->checks[j];
        int t = cd->output, s = k->tensors[t].stage;
        if (!kv_tensor_on(c, t) || !c->chk[j].y) continue;
        const void *data = NULL;
        const char *source = "device";
        int chained = 0;
        if (c->given[t]) data = c->given[t]->data, source = "candidate";
        else if (run_stage[s] && p.has_chain[t]) data = first[t][1], chained = 1;
        else if (run_stage[s]) data = first[t][0];
        if (!data) continue;
        struct oracle_ref ref = {c->chk[j].y, c->chk[j].S, c->chk[j].bound, {c->chk[j].slack, NULL, NULL},
                                 oracle_name};
        char suffix[64];
        snprintf(suffix, sizeof suffix, ".%s", cd->name);
        KV_TRY(compare_one(c, t, &ref, data, suffix, 0, source, 0, 0, o, res));
        res->out[res->n_outputs - 1].chained = chained;
        res->out[res->n_outputs - 1].check = 1;
        all_pass = all_pass && res->out[res->n_outputs - 1].pass;
    }
    if (any_stage && o->stress && !(o->fail_fast && !all_pass))
        KV_TRY(stress(r, c, &p, run_stage, chain_stage, first, o, res, &all_pass));
    res->ms.compare = kv_now_ms() - t3;
    res->status = all_pass ? KV_CASE_PASS : KV_CASE_FAIL;
    if (o->save_dir) {
        void *chained[KV_MAX_TENSORS] = {0};
        for (int t = 0; t < k->n_tensors; t++) chained[t] = p.has_chain[t] ? first[t][1] : NULL;
        KV_TRY(kv_save_case(o->save_dir, c, chained, ran, r->d ? &r->d->info : NULL, res));
    }
cleanup:
    for (int t = 0; t < KV_MAX_TENSORS; t++) free(first[t][0]), free(first[t][1]);
    kv_plan_free(r->d, &p);
    return st;
}

void kv_run_case(struct kv_runner *r, struct kv_case *c, const struct kv_run_opts *o,
                 struct kv_case_result *res)
{
    fill_params(c, res);
    kv_error_clear();
    enum kv_status st = run_case(r, c, o, res);
    if (st == KV_ENODEV) {
        res->status = KV_CASE_SKIP;
        snprintf(res->error, sizeof res->error, "%s", kv_error_msg());
    } else if (st != KV_OK) {
        res->status = KV_CASE_ERROR;
        res->error_code = st;
        res->n_outputs = 0;
        snprintf(res->error, sizeof res->error, "%s", kv_error_msg());
    }
    kv_case_free(c);
}
