/* A spec kernel's callbacks (struct kv_kernel): validation, input
 * preparation and the oracles, by evaluating its statements (eval.h) over
 * arrays shaped for the case. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clones.h"
#include "core/dtype.h"
#include "specs/contract.h"
#include "specs/eval.h"
#include "specs/load.h"

const struct kv_spec *kv_spec_of(const struct kv_kernel *k)
{
    return k && k->oracle == kv_spec_oracle ? (const struct kv_spec *)(const void *)k : NULL;
}

/* The extent index variable v of statement st runs over, from the arrays
 * it indexes directly; 0 when none says, -1 (with msg) when two disagree. */
static int64_t var_extent(const struct kv_ev *x, const struct kv_spec_stmt *st, const struct kv_sx *e, int v,
                          int64_t ext, char *msg, size_t size)
{
    if (!e || ext < 0) return ext;
    if (e->op == KV_SX_ACCESS && x->arr[e->ref].ndim == e->n)
        for (int d = 0; d < e->n; d++) {
            if (e->kid[d]->op != KV_SX_VAR || e->kid[d]->ref != v) continue;
            int64_t here = x->arr[e->ref].shape[d];
            if (here <= 0) continue; /* not shaped yet */
            if (ext > 0 && here != ext) {
                snprintf(msg, size, "column %d: index %s runs over %lld, but %s's index %d has extent %lld",
                         e->pos, st->var[v], (long long)ext, x->s->sym[e->ref].name, d + 1, (long long)here);
                return -1;
            }
            ext = here;
        }
    for (int i = 0; i < e->n; i++) ext = var_extent(x, st, e->kid[i], v, ext, msg, size);
    return ext;
}

/* e's value when it depends on the parameters only (1), else 0. */
static int const_value(const struct kv_ev *x, const struct kv_sx *e, double *v)
{
    double a = 0, b = 0;
    if (e->vars || e->op == KV_SX_ACCESS) return 0;
    if (e->op == KV_SX_NUM) return *v = e->num, 1;
    if (e->op == KV_SX_PARAM) return *v = x->param[e->ref], 1;
    if (e->n < 1 || !const_value(x, e->kid[0], &a) || (e->n > 1 && !const_value(x, e->kid[1], &b))) return 0;
    switch (e->op) {
    case KV_SX_NEG: return *v = -a, 1;
    case KV_SX_ADD: return *v = a + b, 1;
    case KV_SX_SUB: return *v = a - b, 1;
    case KV_SX_MUL: return *v = a * b, 1;
    case KV_SX_DIV: return *v = a / b, 1;
    case KV_SX_FUNC: return e->ref == KV_FN_MIN || e->ref == KV_FN_MAX ? (*v = e->ref == KV_FN_MIN ? fmin(a, b) : fmax(a, b), 1) : 0;
    default: return 0;
    }
}

/* A reduction whose range is fixed by the parameters must hold a term. */
static enum kv_status check_ranges(const struct kv_ev *x, const struct kv_spec_stmt *st, const struct kv_sx *e)
{
    double lo, hi;
    if (!e) return KV_OK;
    if ((e->op == KV_SX_SUM || e->op == KV_SX_RMAX || e->op == KV_SX_RMIN) && const_value(x, e->kid[0], &lo) &&
        const_value(x, e->kid[1], &hi) && !(hi > lo))
        return kv_error(KV_EDATA, "%s: %s[%d] column %d: a reduction over nothing (%g..%g)", x->s->path,
                        st->prepare ? "prepare" : "math", st->pos, e->pos, lo, hi);
    for (int i = 0; i < e->n; i++) KV_TRY_RET(check_ranges(x, st, e->kid[i]));
    return KV_OK;
}

/* The range [*lo, *hi] e takes where each index variable v in known takes
 * [vlo[v], vhi[v]]: 1, or 0 where it depends on data or is not affine enough. */
static int interval(const struct kv_ev *x, const struct kv_sx *e, unsigned known, const double *vlo, const double *vhi,
                    double *lo, double *hi)
{
    double a0, a1, b0 = 0, b1 = 0;
    if (e->op == KV_SX_NUM || e->op == KV_SX_PARAM) return *lo = *hi = e->op == KV_SX_NUM ? e->num : x->param[e->ref], 1;
    if (e->op == KV_SX_VAR) return (known >> e->ref & 1) ? (*lo = vlo[e->ref], *hi = vhi[e->ref], 1) : 0;
    if (e->op < KV_SX_NEG || e->op > KV_SX_MOD || !interval(x, e->kid[0], known, vlo, vhi, &a0, &a1)) return 0;
    if (e->n > 1 && !interval(x, e->kid[1], known, vlo, vhi, &b0, &b1)) return 0;
    switch (e->op) {
    case KV_SX_NEG: return *lo = -a1, *hi = -a0, 1;
    case KV_SX_ADD: return *lo = a0 + b0, *hi = a1 + b1, 1;
    case KV_SX_SUB: return *lo = a0 - b1, *hi = a1 - b0, 1;
    case KV_SX_MUL:
        *lo = fmin(fmin(a0 * b0, a0 * b1), fmin(a1 * b0, a1 * b1));
        *hi = fmax(fmax(a0 * b0, a0 * b1), fmax(a1 * b0, a1 * b1));
        return 1;
    case KV_SX_DIV: return b0 == b1 && b0 > 0 ? (*lo = a0 / b0, *hi = a1 / b0, 1) : 0;
    case KV_SX_MOD: return b0 == b1 && b0 > 0 ? (*lo = 0, *hi = b0 - 1, 1) : 0;
    default: return 0;
    }
}

/* Every index of an array in e within its extent, for every value the
 * index variables take (a case's evaluation would stop there). */
static enum kv_status check_indices(const struct kv_ev *x, const struct kv_spec_stmt *st, const struct kv_sx *e,
                                    unsigned known, double *vlo, double *vhi)
{
    double lo, hi;
    if (e->op == KV_SX_ACCESS)
        for (int d = 0; d < e->n; d++) {
            const int64_t ext = x->arr[e->ref].shape[d];
            if (ext > 0 && interval(x, e->kid[d], known, vlo, vhi, &lo, &hi) && (lo < 0 || hi > (double)(ext - 1)))
                return kv_error(KV_EDATA, "%s: %s[%d] column %d: index %d of %s runs over %g..%g, outside [0, %lld)",
                                x->s->path, st->prepare ? "prepare" : "math", st->pos, e->pos, d + 1,
                                x->s->sym[e->ref].name, lo, hi, (long long)ext);
        }
    if (e->op == KV_SX_SUM || e->op == KV_SX_RMAX || e->op == KV_SX_RMIN) {
        double l0, l1, h0, h1;
        KV_TRY_RET(check_indices(x, st, e->kid[0], known, vlo, vhi));
        KV_TRY_RET(check_indices(x, st, e->kid[1], known, vlo, vhi));
        unsigned inner = known & ~(1u << e->ref);
        if (interval(x, e->kid[0], known, vlo, vhi, &l0, &l1) && interval(x, e->kid[1], known, vlo, vhi, &h0, &h1) &&
            h1 - 1 >= l0)
            inner |= 1u << e->ref, vlo[e->ref] = l0, vhi[e->ref] = h1 - 1;
        return check_indices(x, st, e->kid[2], inner, vlo, vhi);
    }
    for (int i = 0; i < e->n; i++) KV_TRY_RET(check_indices(x, st, e->kid[i], known, vlo, vhi));
    return KV_OK;
}

/* Shape every array of the case: tensors from c->t, temps from their uses. */
static enum kv_status bind(struct kv_ev *x)
{
    const struct kv_spec *s = x->s;
    for (int y = 0; y < s->n_syms; y++) {
        struct kv_ev_arr *a = &x->arr[y];
        int t = s->sym[y].tensor;
        a->ndim = s->sym[y].ndim;
        a->stage = s->sym[y].stage;
        a->output = t >= 0 && s->tensors[t].role == KV_OUTPUT;
        if (t >= 0) memcpy(a->shape, x->c->t[t].shape, sizeof a->shape), a->dtype = x->c->t[t].dtype;
        else memset(a->shape, 0, sizeof a->shape), a->dtype = KV_F32;
    }
    for (int k = 0; k < s->n_stmts; k++) {
        const struct kv_spec_stmt *st = &s->stmt[s->order[k]];
        struct kv_ev_arr *a = &x->arr[st->sym];
        char msg[300] = "";
        KV_TRY_RET(check_ranges(x, st, st->rhs));
        for (int v = 0; v < st->n_target; v++) {
            if (st->ext[v][0]) {
                double e;
                KV_TRY_RET(kv_spec_param_expr(x->c, s->path, st->ext[v], &e));
                if (!(e >= 1 && e <= 9007199254740992.0))
                    return kv_error(KV_EUSAGE, "%s: %s[%d]: %s in %s = %g: an extent is at least 1", s->path,
                                    st->prepare ? "prepare" : "math", st->pos, st->var[v], st->ext[v], e);
                if (s->sym[st->sym].tensor >= 0 && (int64_t)e != a->shape[v])
                    return kv_error(KV_EDATA, "%s: math[%d]: %s runs over %s = %lld, but %s's extent is %lld", s->path,
                                    st->pos, st->var[v], st->ext[v], (long long)e, s->sym[st->sym].name,
                                    (long long)a->shape[v]);
                a->shape[v] = (int64_t)e;
            }
            const int known = s->sym[st->sym].tensor >= 0 || st->ext[v][0];
            int64_t ext = var_extent(x, st, st->rhs, v, known ? a->shape[v] : 0, msg, sizeof msg);
            if (ext < 0 || ext == 0)
                return kv_error(KV_EDATA, "%s: %s[%d] %s", s->path, st->prepare ? "prepare" : "math", st->pos,
                                ext < 0 ? msg : "an index of the target indexes no array: give its range (i in EXTENT)");
            a->shape[v] = ext;
        }
    }
    for (int k = 0; k < s->n_stmts; k++) {
        const struct kv_spec_stmt *st = &s->stmt[k];
        double vlo[KV_SX_MAX_VARS] = {0}, vhi[KV_SX_MAX_VARS] = {0};
        for (int v = 0; v < st->n_target; v++) vhi[v] = (double)x->arr[st->sym].shape[v] - 1;
        KV_TRY_RET(check_indices(x, st, st->rhs, (1u << st->n_target) - 1, vlo, vhi));
    }
    for (int y = 0; y < s->n_syms; y++) {
        struct kv_ev_arr *a = &x->arr[y];
        a->count = 1;
        for (int d = a->ndim - 1; d >= 0; d--) {
            a->stride[d] = (int64_t)a->count;
            if (a->shape[d] > (int64_t)(SIZE_MAX / 64 / a->count))
                return kv_error(KV_EUSAGE, "%s: \"%s\" is too large", s->path, s->sym[y].name);
            a->count *= (size_t)a->shape[d];
        }
    }
    return KV_OK;
}

static void ev_init(struct kv_ev *x, const struct kv_case *c, int exact)
{
    memset(x, 0, sizeof *x);
    x->s = kv_spec_of(c->k);
    x->c = c;
    x->exact = exact;
    x->u = 0x1p-24;
    for (int i = 0; i < c->k->n_params; i++) {
        const struct kv_param_def *d = &c->k->params[i];
        x->param[i] = d->type == KV_PARAM_INT ? (double)c->p[i].i
                      : d->type == KV_PARAM_FLOAT ? (double)(float)c->p[i].f /* the push constant is a float */
                                                  : (double)c->p[i].c;
    }
    for (int j = 0; j < x->s->n_consts; j++) { /* checked in validate */
        double v = NAN;
        (void)kv_spec_const(c, j, &v);
        x->param[KV_MAX_PARAMS + j] = (double)(float)v; /* a float push constant */
    }
}

static void ev_free(struct kv_ev *x)
{
    kv_ev_pool_free(x);
    for (int y = 0; y < KV_SPEC_MAX_SYMS; y++)
    {
        for (int k = 0; k < KV_EV_PARTS; k++)
            if (x->arr[y].owned & (1 << k)) free(x->arr[y].part[k]);
        free(x->arr[y].iso[0]), free(x->arr[y].iso[1]);
    }
}

/* Symbol y's parts: borrowed[k] where given (the case's arrays), else
 * owned; values_only: its value alone (a prepare statement's: the inputs it
 * makes are its values rounded, and no math statement reads its errors). */
static enum kv_status alloc_parts(struct kv_ev *x, int y, double *const borrowed[KV_EV_PARTS], int values_only)
{
    struct kv_ev_arr *a = &x->arr[y];
    const size_t n = a->at ? (a->n_at ? a->n_at : 1) : a->count;
    a->values_only = values_only;
    for (int k = 0; k < (values_only ? 1 : KV_EV_PARTS); k++) {
        a->part[k] = borrowed && borrowed[k] ? borrowed[k] : malloc(n * sizeof(double));
        if (!a->part[k]) return kv_error(KV_EDEVICE, "out of host memory for \"%s\"", x->s->sym[y].name);
        if (!borrowed || !borrowed[k]) a->owned |= 1 << k;
    }
    return KV_OK;
}

/* Output t's per-element bound arrays, kept by the case (freed with it),
 * of its oracle's length (its sampled elements alone where compact). */
static enum kv_status case_arrays(struct kv_case *c, int t)
{
    double **p[3] = {&c->lam[t], &c->fix[t], &c->slack_chain[t]};
    for (int k = 0; k < 3; k++)
        if (!*p[k] && !(*p[k] = malloc(kv_oracle_len(c, t) * sizeof(double))))
            return kv_error(KV_EDEVICE, "out of host memory for the bound of %s", c->k->tensors[t].name);
    if (!c->ovf[t] && !(c->ovf[t] = malloc(kv_oracle_len(c, t))))
        return kv_error(KV_EDEVICE, "out of host memory for the bound of %s", c->k->tensors[t].name);
    return KV_OK;
}

enum kv_status kv_spec_validate(struct kv_case *c)
{
    const struct kv_spec *s = kv_spec_of(c->k);
    for (int t = 0; t < s->k.n_tensors; t++)
        if (c->t[t].count > UINT32_MAX) /* the shaders' indices are 32-bit unsigned */
            return kv_error(KV_EUSAGE, "%s: tensor %s has %zu elements, more than 2^32-1", s->name, s->tensors[t].name,
                            c->t[t].count);
    for (int i = 0; i < s->k.n_params; i++) {
        const int sgn = s->params[i].min < 0; /* a signed push constant */
        const int64_t v = c->p[i].i, lo = sgn ? INT32_MIN : 0, hi = sgn ? INT32_MAX : (int64_t)UINT32_MAX;
        if (s->params[i].type == KV_PARAM_INT && (v < lo || v > hi))
            return kv_error(KV_EUSAGE, "--%s %lld does not fit the shaders' 32-bit %s push constant", s->params[i].name,
                            (long long)v, sgn ? "signed" : "unsigned");
    }
    for (int j = 0; j < s->n_consts; j++) {
        double v;
        KV_TRY_RET(kv_spec_const(c, j, &v));
    }
    const uint32_t local[3] = {1, 1, 1};
    for (int st = 0; st < s->k.n_stages; st++)
        for (int a = 0; a < 3; a++) {
            double v;
            char what[1200];
            snprintf(what, sizeof what, "%s: stages[%d].groups", s->path, st);
            enum kv_status e = kv_spec_groups(c, what, s->groups[st][a], local, &v);
            if (e) return e;
        }
    struct kv_ev x;
    ev_init(&x, c, 0);
    return bind(&x);
}

/* After the prepare statement at position k of the order: the arrays of
 * values no later prepare statement reads freed (an input's too, once
 * stored: its readers load the tensor), so that the prepare holds at once
 * only what is still to be read. */
static void drop_read(struct kv_ev *x, int k)
{
    const struct kv_spec *s = x->s;
    for (int y = 0; y < s->n_syms; y++) {
        struct kv_ev_arr *a = &x->arr[y];
        int read = 0;
        for (int j = k + 1; j < s->n_stmts && a->owned && !a->raw && !read; j++)
            read = s->stmt[s->order[j]].prepare && kv_sx_reads(s->stmt[s->order[j]].rhs, y);
        for (int p = 0; p < KV_EV_PARTS && a->owned && !read; p++)
            if (a->owned & (1 << p)) free(a->part[p]), a->part[p] = NULL, a->owned &= ~(1 << p);
    }
}

/* The statements of one list (prepare or math) in order. */
static enum kv_status run_list(struct kv_ev *x, int prepare)
{
    const struct kv_spec *s = x->s;
    struct kv_case *c = (struct kv_case *)x->c;
    const int full = getenv("KVERIFY_TEST_FULL_PREPARE") != NULL; /* tests: a prepare's every part, as before */
    for (int k = 0; k < s->n_stmts; k++) {
        const int i = s->order[k];
        const struct kv_spec_stmt *st = &s->stmt[i];
        if (st->prepare != prepare) continue;
        const int t = s->sym[st->sym].tensor;
        if (t < 0 && s->sym[st->sym].virt) continue; /* computed where it is read */
        if (t >= 0 && !prepare && c->blocked[t]) continue; /* made block by block as it is judged */
        if (t >= 0 && !prepare) {
            if (c->compact[t]) x->arr[st->sym].at = c->sample[t], x->arr[st->sym].n_at = c->n_sample[t];
            KV_TRY_RET(case_arrays(c, t));
            double *const parts[KV_EV_PARTS] = {c->y[t], c->S[t], c->lam[t], c->fix[t], c->slack_chain[t], NULL};
            KV_TRY_RET(alloc_parts(x, st->sym, parts, 0));
        } else if (t >= 0 && !full && !kv_ev_contract_form(s, st)) {
            /* an input: its values rounded into the tensor block by block as they are made */
            x->arr[st->sym].store = c->t[t].data, x->arr[st->sym].values_only = 1;
        } else { /* a prepare statement's values alone */
            KV_TRY_RET(alloc_parts(x, st->sym, NULL, prepare && !full));
        }
        KV_TRY_RET(kv_ev_stmt(x, i));
        if (t >= 0 && !prepare && kv_spec_read_by_other_stage(s, st->sym)) KV_TRY_RET(kv_ev_isolate(&x->arr[st->sym]));
        if (t >= 0 && prepare) { /* the input, rounded to its dtype, as every reader sees it (every thread) */
            if (!x->arr[st->sym].store)
                kv_store_f64_all(c->t[t].dtype, c->t[t].data, x->arr[st->sym].part[KV_EV_V], c->t[t].count);
            x->arr[st->sym].store = NULL, x->arr[st->sym].raw = c->t[t].data;
        }
        if (prepare) drop_read(x, k);
    }
    return KV_OK;
}

enum kv_status kv_spec_prepare(struct kv_case *c)
{
    enum kv_status st = KV_OK;
    struct kv_ev x;
    ev_init(&x, c, 0);
    KV_TRY(bind(&x));
    for (int t = 0; t < c->k->n_tensors; t++)
        if (c->k->tensors[t].role == KV_INPUT && x.s->dist[t].gen != KV_GEN_MATH) x.arr[t].raw = c->t[t].data;
    KV_TRY(run_list(&x, 1));
cleanup:
    ev_free(&x);
    return st;
}

/* An element overflows where an intermediate passes f32's range (with room
 * for its rounding): on the device what follows is not the float64 value,
 * any result. */
static inline int overflows(double pk)
{
    return !(pk <= 0x1.fffcp127) && !isnan(pk);
}

/* Output t's verdict inputs: overflow flags from the peaks, the bound. */
static void finish_output(struct kv_case *c, const struct kv_ev_arr *a, int t)
{
    /* the bound is per element (lam, fix); these fields are for the reports */
    c->bound[t] = (struct kv_bound){.n = 1, .k_op = 0, .u_acc = 0x1p-24, .rho = 1};
    if (c->blocked[t]) return; /* kv_spec_block */
    const double *pk = a->part[KV_EV_PK];
    for (size_t e = 0, n = c->compact[t] ? c->n_sample[t] : c->t[t].count; e < n; e++) {
        c->ovf[t][e] = (unsigned char)overflows(pk[e]);
        if (c->ovf[t][e]) c->lam[t][e] = c->fix[t][e] = INFINITY;
    }
}

static void state_free(void *state)
{
    ev_free(state);
    free(state);
}

enum kv_status kv_spec_oracle(struct kv_case *c)
{
    enum kv_status st = KV_OK;
    struct kv_ev *x = malloc(sizeof *x);
    if (!x) return kv_error(KV_EDEVICE, "out of host memory for the oracle");
    ev_init(x, c, c->exact);
    KV_TRY(bind(x));
    for (int t = 0; t < c->k->n_tensors; t++)
        if (c->k->tensors[t].role == KV_INPUT) x->arr[t].raw = c->t[t].data;
    KV_TRY(run_list(x, 0));
    int blocked = 0;
    for (int t = 0; t < c->k->n_tensors; t++)
        if (c->k->tensors[t].role == KV_OUTPUT) finish_output(c, &x->arr[t], t), blocked |= c->blocked[t];
    if (blocked) { /* what the blocks read, kept with the case, and the blocks' contexts */
        KV_CHECK(kv_ev_pool_new(x) == 0, KV_EDEVICE, "out of host memory for the oracle");
        if (c->state && c->state_free) c->state_free(c->state);
        c->state = x, c->state_free = state_free;
        x = NULL;
    }
cleanup:
    if (x) state_free(x);
    return st;
}

/* Where kv_ev_range's lanes go: an output's block for the judge. */
struct block_out {
    const struct kv_oracle_block *b;
    int chained;
};

/* A block's lanes into the judge's block (loops that vectorize). */
KV_CLONES static void block_lanes(void *ctx, size_t at, size_t n, double *const part[KV_EV_PARTS])
{
    const struct block_out *o = ctx;
    const struct kv_oracle_block *b = o->b;
    double *restrict y = b->y + at, *restrict S = b->S + at;
    const double *restrict v = part[KV_EV_V], *restrict ps = part[KV_EV_S], *restrict pk = part[KV_EV_PK];
    for (size_t j = 0; j < n; j++) y[j] = v[j], S[j] = ps[j];
    /* the chained row's allowance (c->slack_chain), none on the others */
    if (b->slack) {
        double *restrict sl = b->slack + at;
        const double *restrict chn = part[KV_EV_CHN];
        for (size_t j = 0; j < n; j++) sl[j] = o->chained ? chn[j] : 0;
    }
    if (b->slack2) { /* the chained row's, beside (kernel.block_pair) */
        double *restrict sl2 = b->slack2 + at;
        const double *restrict chn = part[KV_EV_CHN];
        for (size_t j = 0; j < n; j++) sl2[j] = chn[j];
    }
    if (!b->lam) return;
    double *restrict lam = b->lam + at, *restrict fix = b->fix + at;
    unsigned char *restrict ov = b->ovf + at;
    const double *restrict pl = part[KV_EV_LAM], *restrict pf = part[KV_EV_FIX];
    for (size_t j = 0; j < n; j++) {
        const int ovf = overflows(pk[j]);
        lam[j] = ovf ? INFINITY : pl[j], fix[j] = ovf ? INFINITY : pf[j], ov[j] = (unsigned char)ovf;
    }
}

enum kv_status kv_spec_block(const struct kv_case *c, int t, size_t lo, size_t hi, int chained,
                             const struct kv_oracle_block *b)
{
    const struct kv_ev *x = c->state;
    if (!x || !c->blocked[t])
        return kv_error(KV_EDEVICE, "%s: output %s is not made in blocks", c->k->name, c->k->tensors[t].name);
    const struct block_out o = {b, chained};
    return kv_ev_range(x, x->s->sym[t].stmt, lo, hi, block_lanes, (void *)&o);
}

/* What kv_spec_oracle keeps beyond y and S for an output held whole: its
 * bound's lam, fix and chained slack and its overflow flags (case_arrays),
 * 25 bytes an element. */
static uint64_t oracle_host(const struct kv_case *c, uint32_t whole, uint32_t sampled, const uint64_t *len)
{
    (void)sampled;
    uint64_t b = 0;
    for (int t = 0; t < c->k->n_tensors; t++)
        if (whole >> t & 1) b += (3 * sizeof(double) + 1) * len[t];
    return b;
}

enum kv_status kv_spec_check(struct kv_spec *s)
{
    kv_spec_storage(s);
    s->k.sweep = s->sweep;
    s->k.validate = kv_spec_validate;
    s->k.inputs = kv_spec_inputs;
    s->k.oracle = kv_spec_oracle;
    s->k.oracle_host = oracle_host;
    s->k.oracle_block = kv_spec_block;
    s->k.block_outputs = s->k.block_slack = s->k.block_bound = s->k.sample_outputs; /* the outputs no statement reads */
    s->k.block_pair = s->k.block_outputs;
    for (int i = -1; i < 0 || s->sweep[i]; i++) {
        struct kv_case c;
        enum kv_status st = kv_case_init(&c, &s->k, 1);
        if (!st && i >= 0) st = kv_param_apply(&c, s->sweep[i]);
        if (!st) st = kv_case_shapes(&c);
        kv_case_free(&c);
        if (st) {
            char msg[512];
            const char *m = kv_error_msg();
            size_t n = strlen(s->path);
            if (!strncmp(m, s->path, n) && !strncmp(m + n, ": ", 2)) m += n + 2; /* named once */
            snprintf(msg, sizeof msg, "%s", m);
            if (i < 0) return kv_error(KV_EDATA, "%s: at the default parameters: %s", s->path, msg);
            return kv_error(KV_EDATA, "%s: sweep.shapes[%d] \"%s\": %s", s->path, i, s->sweep[i], msg);
        }
    }
    return KV_OK;
}
