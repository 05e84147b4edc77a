/* One row of a case's result: an output (all of it, or its sample)
 * compared with an oracle, its metrics and error distribution. */
#include "pipeline/row.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/judge.h"
#include "pipeline/chains.h"
#include "pipeline/plan.h"

int kv_test_full_oracle(void)
{
    const char *e = getenv("KVERIFY_TEST_FULL_ORACLE");
    return e && *e == '1';
}

int kv_output_sampled(const struct kv_case *c, int t, const struct kv_run_opts *o)
{
    return o->sample > 0 && (size_t)o->sample < c->t[t].count;
}

int kv_output_blocked(const struct kv_case *c, int t, const struct kv_run_opts *o)
{
    const struct kv_kernel *k = c->k;
    return k->oracle_block && (k->block_outputs >> t & 1) && kv_tensor_on(c, t) &&
           (!kv_is_intermediate(c, t) || (k->block_iso >> t & 1)) && o->oracle == KV_ORACLE_SPEC && !o->save_dir &&
           !kv_test_full_oracle() && !(kv_output_sampled(c, t, o) && (k->sample_outputs >> t & 1));
}

int kv_output_compact(const struct kv_case *c, int t, const struct kv_run_opts *o)
{
    return c->k->tensors[t].role == KV_OUTPUT && kv_tensor_on(c, t) && kv_output_sampled(c, t, o) &&
           (c->k->sample_outputs >> t & 1) && !o->save_dir && !kv_test_full_oracle();
}

/* Gather src[idx[i]] (elements of es bytes) into a new array; NULL src: NULL;
 * idx NULL: src as it is (a compact oracle's array, already gathered), kept. */
static void *gather(const void *src, const size_t *idx, size_t n, size_t es, int *oom)
{
    if (!src || !idx) return (void *)src;
    char *d = malloc(n * es + 1);
    if (!d) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) memcpy(d + i * es, (const char *)src + idx[i] * es, es);
    return d;
}

/* An output whose oracle is made in blocks (c->blocked), or a check's
 * reference (ref->check): the kernel's. */
struct block_ctx {
    const struct kv_case *c;
    int t, chained, check;
};

static enum kv_status block_fill(void *ctx, size_t lo, size_t hi, const struct kv_oracle_block *b)
{
    const struct block_ctx *x = ctx;
    if (x->check) return x->c->k->check_block(x->c, x->check - 1, lo, hi, b);
    return x->c->k->oracle_block(x->c, x->t, lo, hi, x->chained, b);
}

/* What the blocks of ref hold beside y and S (KV_BLOCK_*): a check's, its slack. */
static int block_allow(const struct kv_case *c, int t, const struct kv_oracle_ref *ref)
{
    if (ref->check) return KV_BLOCK_SLACK;
    return (c->k->block_slack >> t & 1 ? KV_BLOCK_SLACK : 0) | (c->k->block_bound >> t & 1 ? KV_BLOCK_BOUND : 0);
}

/* A blocked oracle at its n sampled elements idx (sorted), into b (from
 * element 0): the kernel's blocks, one per run of consecutive indices. */
static enum kv_status sample_blocks(struct block_ctx *x, const size_t *idx, size_t n, const struct kv_oracle_block *b)
{
#define AT(p) ((p) ? (p) + q : NULL)
    for (size_t q = 0, r; q < n; q = r) {
        for (r = q + 1; r < n && idx[r] == idx[r - 1] + 1;) r++;
        const struct kv_oracle_block at = {AT(b->y), AT(b->S), AT(b->slack), AT(b->lam), AT(b->fix), AT(b->ovf), NULL};
        KV_TRY_RET(block_fill(x, idx[q], idx[r - 1] + 1, &at));
    }
#undef AT
    return KV_OK;
}

/* Output t's sampled elements (gathered, or the compact oracle's own)
 * judged; the worst mapped back to its index. An output whose oracle counts
 * ambiguous elements (c->ambiguous: those with a slack of their own) has
 * them counted among the sampled ones, so that the count is the same
 * whether the oracle holds the sample or the whole. */
static enum kv_status judge_sample(const struct kv_case *c, int t, const struct kv_oracle_ref *ref, const void *data,
                                   int chained, const struct kv_bound *bound, const struct kv_run_opts *o,
                                   struct kv_output_result *out, size_t *ambiguous)
{
    enum kv_status st;
    size_t n = c->n_sample[t], es = kv_dtype_info(c->t[t].dtype)->size;
    const size_t *idx = c->sample[t], *ri = c->compact[t] ? NULL : idx; /* the oracle's own, or gathered */
    int oom = 0;
    char *cand = gather(data, idx, n, es, &oom);
    const int blocked = !ref->y && (ref->check || c->blocked[t]); /* made here, at the sampled elements alone */
    double *y = blocked ? malloc(n * sizeof *y + 1) : gather(ref->y, ri, n, sizeof *y, &oom);
    double *S = blocked ? malloc(n * sizeof *S + 1) : gather(ref->S, ri, n, sizeof *S, &oom);
    oom |= blocked && (!y || !S);
    struct kv_allow a = {gather(ref->allow.slack, ri, n, sizeof(double), &oom),
                         gather(ref->allow.tie, ri, n, sizeof(int16_t), &oom),
                         gather(ref->allow.flush, ri, n, sizeof(int16_t), &oom),
                         gather(ref->allow.alt, ri, n, sizeof(double), &oom),
                         gather(ref->allow.ovf, ri, n, 1, &oom),
                         gather(ref->allow.lam, ri, n, sizeof(double), &oom),
                         gather(ref->allow.fix, ri, n, sizeof(double), &oom)};
    /* blocks that hold their allowances: those of the sample, made with y
     * and S, in place of the gathered ones (freed below as a's) */
    const int allow = blocked ? block_allow(c, t, ref) : 0;
    const int sl_on = allow & KV_BLOCK_SLACK, bd = allow & KV_BLOCK_BOUND;
    struct block_ctx bc = {c, t, chained, ref->check};
    struct kv_oracle_block b = {y, S, NULL, NULL, NULL, NULL, NULL};
    if (sl_on) {
        if (ri) free((void *)a.slack);
        a.slack = b.slack = malloc(n * sizeof(double) + 1);
        oom |= !b.slack;
    }
    if (bd) {
        if (ri) free((void *)a.lam), free((void *)a.fix), free((void *)a.ovf);
        a.lam = b.lam = malloc(n * sizeof(double) + 1), a.fix = b.fix = malloc(n * sizeof(double) + 1);
        a.ovf = b.ovf = malloc(n + 1);
        oom |= !b.lam || !b.fix || !b.ovf;
    }
    if (oom) st = kv_error(KV_EDEVICE, "out of host memory comparing a sample");
    else st = blocked ? sample_blocks(&bc, idx, n, &b) : KV_OK;
    if (st == KV_OK) {
        st = kv_judge(c->t[t].dtype, cand, y, S, n, idx, c->t[t].ndim, c->t[t].shape, bound, &a, &o->crit, &out->m,
                      out->dist);
        if (!st && out->m.has_worst) out->m.worst_index = idx[out->m.worst_index];
        if (*ambiguous && ref->allow.slack == c->slack[t]) {
            *ambiguous = 0;
            for (size_t i = 0; i < n; i++) *ambiguous += a.slack[i] > 0;
        }
    }
    free(cand);
    if (ri || blocked) free(y), free(S);
    if (ri) {
        free((void *)a.slack), free((void *)a.tie), free((void *)a.flush), free((void *)a.alt);
        free((void *)a.ovf), free((void *)a.lam), free((void *)a.fix);
    } else {
        free(b.slack), free(b.lam), free(b.fix), free(b.ovf);
    }
    return st;
}

/* A row's fields before it is judged: its name <output><suffix>, source,
 * oracle, the guard words and --repeat differences; its distribution's room. */
static enum kv_status row_begin(struct kv_output_result *out, const struct kv_case *c, int t,
                                const struct kv_oracle_ref *ref, const char *suffix, int chained, const char *source,
                                size_t guard_bad, size_t nondet, const struct kv_run_opts *o)
{
    const struct kv_kernel *k = c->k;
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
    free(out->dist);
    out->dist = NULL;
    if (!o->no_dist) {
        out->dist = malloc(sizeof *out->dist);
        if (!out->dist) return kv_error(KV_EDEVICE, "out of host memory for an error map");
    }
    out->total = c->t[t].count;
    return KV_OK;
}

/* A row's fields once judged: the worst element's place and the verdict. */
static void row_end(struct kv_output_result *out, const struct kv_case *c, int t, const struct kv_oracle_ref *ref,
                    size_t ambiguous)
{
    if (!out->m.integer && ref->allow.slack) out->m.ambiguous = ambiguous;
    if (out->m.has_worst) kv_tensor_unravel(&c->t[t], out->m.worst_index, out->worst_idx);
    out->pass = out->m.pass && out->guard_bad == 0 && out->nondet == 0;
}

/* Compare data (output t, from `source`) against ref and append a row named
 * <output><suffix>. chained adds the allowance for device intermediates. */
enum kv_status kv_compare_row(struct kv_case *c, int t, const struct kv_oracle_ref *ref, const void *data,
                                  const char *suffix, int chained, const char *source, size_t guard_bad,
                                  size_t nondet, const struct kv_run_opts *o, struct kv_case_result *res)
{
    struct kv_output_result *out = &res->out[res->n_outputs++];
    KV_TRY_RET(row_begin(out, c, t, ref, suffix, chained, source, guard_bad, nondet, o));
    struct kv_bound bound = ref->bound;
    if (chained) bound.k_op += c->k_chain[t];
    enum kv_status st;
    size_t ambiguous = c->ambiguous[t];
    if (c->sample[t]) {
        st = judge_sample(c, t, ref, data, chained, &bound, o, out, &ambiguous);
    } else {
        struct block_ctx bc = {c, t, chained, ref->check};
        const struct kv_oracle_src src = {ref->y, ref->S, ref->y ? NULL : block_fill, &bc,
                                          ref->y ? 0 : block_allow(c, t, ref)};
        st = kv_judge_src(c->t[t].dtype, data, &src, c->t[t].count, NULL, c->t[t].ndim, c->t[t].shape, &bound,
                          &ref->allow, &o->crit, &out->m, out->dist);
    }
    if (st) return st;
    row_end(out, c, t, ref, ambiguous);
    return KV_OK;
}

int kv_row_pairable(const struct kv_case *c, int t, const struct kv_oracle_ref *ref)
{
    const char *off = getenv("KVERIFY_TEST_NO_PAIR");
    const struct kv_allow *a = &ref->allow;
    const int blocks = (c->k->block_pair >> t & 1) && (c->k->block_slack >> t & 1) && c->blocked[t] && !ref->y;
    const int whole_allow = a->slack || a->tie || a->flush || a->alt || a->ovf || a->lam || a->fix;
    return !(off && *off == '1') && blocks && !ref->check && !c->sample[t] && !c->slack_chain[t] && !whole_allow;
}

enum kv_status kv_compare_pair(struct kv_case *c, int t, const struct kv_oracle_ref *ref, const void *const data[2],
                               const size_t guard_bad[2], const size_t nondet[2], const struct kv_run_opts *o,
                               struct kv_case_result *res, struct kv_output_result *chained)
{
    struct kv_output_result *out[2] = {&res->out[res->n_outputs++], chained};
    KV_TRY_RET(row_begin(out[0], c, t, ref, "", 0, "device", guard_bad[0], nondet[0], o));
    KV_TRY_RET(row_begin(out[1], c, t, ref, ".chained", 1, "device", guard_bad[1], nondet[1], o));
    struct kv_bound bound[2] = {ref->bound, ref->bound};
    bound[1].k_op += c->k_chain[t];
    struct block_ctx bc = {c, t, 0, 0}; /* the isolated row's blocks, the chained row's slack beside */
    const struct kv_oracle_src src = {NULL, NULL, block_fill, &bc, block_allow(c, t, ref)};
    struct kv_metrics m[2];
    struct kv_error_dist *d[2] = {out[0]->dist, out[1]->dist};
    KV_TRY_RET(kv_judge_pair(c->t[t].dtype, data, &src, c->t[t].count, c->t[t].ndim, c->t[t].shape, bound, &o->crit,
                             m, d));
    for (int j = 0; j < 2; j++) out[j]->m = m[j], row_end(out[j], c, t, ref, c->ambiguous[t]);
    return KV_OK;
}

/* How a candidate of a later stage is judged when an intermediate it
 * depends on has no candidate: against the oracle, which computes the
 * intermediate itself (stage isolation). */
void kv_row_isolation_remark(const struct kv_case *c, int t, struct kv_case_result *res)
{
    const struct kv_kernel *k = c->k;
    const struct kv_stage_def *sd = &k->stages[k->tensors[t].stage];
    char names[96] = "";
    for (int b = 0; b < sd->n_bindings; b++) {
        int i = sd->bindings[b];
        if (k->tensors[i].role != KV_OUTPUT || k->tensors[i].stage == k->tensors[t].stage || c->given[i]) continue;
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", k->tensors[i].name);
    }
    struct kv_output_result *out = &res->out[res->n_outputs - 1];
    if (names[0])
        snprintf(out->remark, sizeof out->remark, "judged with the oracle's %s (no candidate for it: stage isolation)",
                 names);
}
