/* The evaluator's reductions (eval.h): sum, max and min over a range, each
 * lane's terms in the range's order, with a sum's accumulation error. */
#include <math.h>
#include <string.h>

#include "core/clones.h"
#include "core/judge_tile.h" /* kv_bits_of */
#include "specs/ev_ops.h"

#define LANES KV_EV_LANES

/* A reduction's running state for one lane. */
struct acc {
    double p[KV_EV_PARTS], abs;
    int64_t n;
};

static void acc_init(struct acc *a, enum kv_sx_op op)
{
    memset(a, 0, sizeof *a);
    if (op != KV_SX_SUM) a->p[KV_EV_V] = op == KV_SX_RMAX ? -INFINITY : INFINITY;
}

/* Whether a max's (is_max) or min's term v replaces its running value cur:
 * the first NaN stays, the first of equal terms stays. Both compares made,
 * no branch: value_lanes' loop vectorises. */
static inline int replaces(double cur, double v, int is_max)
{
    const int past = (is_max & (v > cur)) | ((!is_max) & (v < cur));
    return (!isnan(cur)) & (isnan(v) | past);
}

/* A max's or min's term l of b into a: NaN wins; the errors are the
 * largest of any term's. (A sum's terms: sum_lanes and sum_terms.) */
static void acc_extreme(struct acc *a, enum kv_sx_op op, const double *const b[KV_EV_PARTS], int l)
{
    const double v = b[KV_EV_V][l];
    a->n++;
    a->p[KV_EV_PK] = kv_maxd(a->p[KV_EV_PK], b[KV_EV_PK][l]);
    const double cur = a->p[KV_EV_V];
    if (replaces(cur, v, op == KV_SX_RMAX)) {
        a->p[KV_EV_V] = v;
        a->p[KV_EV_S] = b[KV_EV_S][l];
    }
    for (int k = KV_EV_LAM; k <= KV_EV_CHN; k++) a->p[k] = kv_maxd(a->p[k], b[k][l]);
}

/* Into lane l of e: a sum's accumulation error is lambda*sqrt(n)*u*sum|terms|
 * (Higham and Mary's probabilistic bound, metrics.md), in whatever order. */
static void acc_done(struct kv_ev_ctx *c, const struct kv_sx *e, const struct acc *a, int l)
{
    double *p[KV_EV_PARTS];
    for (int k = 0; k < KV_EV_PARTS; k++) p[k] = kv_ev_part(c, e, k), p[k][l] = a->p[k];
    if (e->op != KV_SX_SUM) return;
    if (a->n > 1) p[KV_EV_LAM][l] += sqrt((double)a->n) * c->x->u * a->abs;
    p[KV_EV_PK][l] = kv_maxd(p[KV_EV_PK][l], a->abs);
}

/* The bounds of e's range per lane; *uniform when every lane has the same. */
static int reduce_range(struct kv_ev_ctx *c, const struct kv_sx *e, int nl, int64_t *lo, int64_t *hi, int *uniform,
                        kv_ev_node_fn *node)
{
    if (node(c, e->kid[0], nl) || node(c, e->kid[1], nl)) return -1;
    const double *a = kv_ev_part(c, e->kid[0], KV_EV_V), *b = kv_ev_part(c, e->kid[1], KV_EV_V);
    *uniform = 1;
    for (int l = 0; l < nl; l++) {
        if (!(fabs(a[l]) < 9e15 && a[l] == floor(a[l]) && fabs(b[l]) < 9e15 && b[l] == floor(b[l])))
            return kv_ev_fail_at(c, e, l, "a range's bounds %g..%g are not integers", a[l], b[l]);
        lo[l] = (int64_t)a[l], hi[l] = (int64_t)b[l];
        *uniform &= lo[l] == lo[0] && hi[l] == hi[0];
    }
    return 0;
}

/* A sum adds each term as follows: the peak takes the larger, then the
 * value, S and each error part add the term's, and the magnitude its |v|.
 * reduce_outer's sums, one per lane, held part by part, each lane's term
 * added so (as sum_terms adds one), in a loop that vectorizes across the
 * lanes. */
struct lane_sums {
    double p[KV_EV_PARTS][LANES], abs[LANES];
};

KV_CLONES static void sum_lanes(struct lane_sums *restrict a, const double *const b[KV_EV_PARTS], int nl)
{
    const double *restrict bv = b[KV_EV_V], *restrict bs = b[KV_EV_S], *restrict bl = b[KV_EV_LAM];
    const double *restrict bf = b[KV_EV_FIX], *restrict bc = b[KV_EV_CHN], *restrict bp = b[KV_EV_PK];
    double *restrict v = a->p[KV_EV_V], *restrict S = a->p[KV_EV_S], *restrict lam = a->p[KV_EV_LAM];
    double *restrict fix = a->p[KV_EV_FIX], *restrict chn = a->p[KV_EV_CHN], *restrict pk = a->p[KV_EV_PK];
    double *restrict abs_ = a->abs;
    for (int l = 0; l < nl; l++) {
        pk[l] = kv_maxd(pk[l], bp[l]);
        v[l] += bv[l], S[l] += bs[l], lam[l] += bl[l], fix[l] += bf[l], chn[l] += bc[l];
        abs_[l] += fabs(bv[l]);
    }
}

/* The values alone (c->values), one term per lane added as value_terms
 * adds it, the running values held per lane (a loop that vectorizes). */
KV_CLONES static void value_lanes(double *restrict acc, const double *restrict v, int nl, enum kv_sx_op op)
{
    if (op == KV_SX_SUM) {
        for (int l = 0; l < nl; l++) acc[l] += v[l];
        return;
    }
    const int is_max = op == KV_SX_RMAX;
    for (int l = 0; l < nl; l++) acc[l] = replaces(acc[l], v[l], is_max) ? v[l] : acc[l];
}

/* Lanes across the outer elements, the range walked one index at a time. */
static int reduce_outer(struct kv_ev_ctx *c, const struct kv_sx *e, int nl, int64_t lo, int64_t hi, kv_ev_node_fn *node)
{
    struct acc a[LANES];
    struct lane_sums s_, *sums = e->op == KV_SX_SUM ? &s_ : NULL;
    const double *b[KV_EV_PARTS];
    for (int k = 0; k < KV_EV_PARTS; k++) b[k] = kv_ev_part(c, e->kid[2], k);
    if (sums) memset(sums, 0, sizeof *sums);
    double vals[LANES]; /* c->values: each lane's running value */
    for (int l = 0; l < nl; l++) acc_init(&a[l], e->op), vals[l] = a[l].p[KV_EV_V];
    const unsigned uni = c->uni;
    c->uni |= 1u << e->ref;
    for (int64_t k = lo; k < hi; k++) {
        for (int l = 0; l < nl; l++) c->var[e->ref][l] = k;
        if (node(c, e->kid[2], nl)) {
            c->uni = uni;
            return -1;
        }
        if (c->values) value_lanes(vals, b[KV_EV_V], nl, e->op);
        else if (sums) sum_lanes(sums, b, nl);
        else
            for (int l = 0; l < nl; l++) acc_extreme(&a[l], e->op, b, l);
    }
    c->uni = uni;
    for (int l = 0; l < nl; l++) {
        if (c->values) a[l].p[KV_EV_V] = vals[l], a[l].n = hi - lo;
        if (sums && !c->values) {
            for (int k = 0; k < KV_EV_PARTS; k++) a[l].p[k] = sums->p[k][l];
            a[l].abs = sums->abs[l], a[l].n = hi - lo;
        }
        acc_done(c, e, &a[l], l);
    }
    return 0;
}

/* Terms 0..m of v into a's value alone (c->values: a prepare statement's),
 * in order: a sum adds each, a max or min takes it where it replaces the
 * running value (the running value in a register, a loop per operation). */
static void value_terms(struct acc *a, enum kv_sx_op op, const double *restrict v, int m)
{
    double cur = a->p[KV_EV_V];
    if (op == KV_SX_SUM)
        for (int j = 0; j < m; j++) cur += v[j];
    else if (op == KV_SX_RMAX)
        for (int j = 0; j < m; j++) cur = replaces(cur, v[j], 1) ? v[j] : cur;
    else
        for (int j = 0; j < m; j++) cur = replaces(cur, v[j], 0) ? v[j] : cur;
    a->p[KV_EV_V] = cur, a->n += m;
}

/* The largest (smallest) of r0, not NaN, and x[0..m), as one term after
 * another replaces the running value where past it (kv_maxd's rule, NaN
 * never): in eight lanes, each from r0 and replaced only by a term past it,
 * so that the lanes' largest is that value (a term equal to it, +0 to -0
 * included, replaces nothing). Loops that vectorize. */
#define EXTREME(NAME, PAST)                                                                                            \
    KV_CLONES static double NAME(double r0, const double *restrict x, int m)                                           \
    {                                                                                                                  \
        double p[8];                                                                                                   \
        for (int l = 0; l < 8; l++) p[l] = r0;                                                                         \
        int j = 0;                                                                                                     \
        for (; j + 8 <= m; j += 8)                                                                                     \
            for (int l = 0; l < 8; l++) p[l] = x[j + l] PAST p[l] ? x[j + l] : p[l];                                   \
        for (; j < m; j++) p[0] = x[j] PAST p[0] ? x[j] : p[0];                                                        \
        double r = p[0];                                                                                               \
        for (int l = 1; l < 8; l++) r = p[l] PAST r ? p[l] : r;                                                        \
        return r;                                                                                                      \
    }
EXTREME(largest, >)
EXTREME(smallest, <)
#undef EXTREME

/* The peak part's fold over terms 0..m of x from r0: kv_maxd's, one term
 * after another (a NaN term replaces nothing, a NaN running value is
 * replaced), as largest's lanes make it where r0 is not NaN, which it never
 * is from acc_init's 0: out of the sum's serial chain of adds, whose
 * latency it lengthened (a compare and a select a term). */
static double peak_of(double r0, const double *x, int m)
{
    if (!isnan(r0)) return largest(r0, x, m);
    for (int j = 0; j < m; j++) r0 = kv_maxd(r0, x[j]);
    return r0;
}

/* Terms 0..m of b added into one sum in order, as sum_lanes adds each
 * lane's (the same operations in the same order), the running sums held in
 * registers. */
static void sum_terms(struct acc *a, const double *const b[KV_EV_PARTS], int m)
{
    double v = a->p[KV_EV_V], S = a->p[KV_EV_S], lam = a->p[KV_EV_LAM], fix = a->p[KV_EV_FIX];
    double chn = a->p[KV_EV_CHN], ab = a->abs;
    const double *bv = b[KV_EV_V], *bs = b[KV_EV_S], *bl = b[KV_EV_LAM], *bf = b[KV_EV_FIX], *bc = b[KV_EV_CHN];
    for (int j = 0; j < m; j++) {
        v += bv[j], S += bs[j], lam += bl[j], fix += bf[j], chn += bc[j];
        ab += fabs(bv[j]);
    }
    a->p[KV_EV_V] = v, a->p[KV_EV_S] = S, a->p[KV_EV_LAM] = lam, a->p[KV_EV_FIX] = fix;
    a->p[KV_EV_CHN] = chn, a->abs = ab, a->n += m;
    a->p[KV_EV_PK] = peak_of(a->p[KV_EV_PK], b[KV_EV_PK], m);
}

/* Terms 0..m of b into a max's or min's state, as acc_extreme adds them one
 * at a time: the largest magnitude and errors (those known to be 0 stay
 * so), and the value (with its S): the first NaN term, else the first term
 * at the extreme, where that is past the running value; a NaN running
 * value stays. */
static void extreme_terms(struct acc *a, enum kv_sx_op op, const double *const b[KV_EV_PARTS], int m, unsigned zero)
{
    for (int k = KV_EV_LAM; k <= KV_EV_PK; k++) {
        if (!kv_ev_known_zero(zero, k)) a->p[k] = peak_of(a->p[k], b[k], m);
    }
    a->n += m;
    const double cur = a->p[KV_EV_V], *v = b[KV_EV_V];
    if (isnan(cur)) return;
    int nan = 0;
    for (int j = 0; j < m; j++) nan |= (kv_bits_of(v[j]) & INT64_MAX) > 0x7ff0000000000000; /* isnan, on the bits: vectorizes */
    const double best = nan ? NAN : op == KV_SX_RMAX ? largest(cur, v, m) : smallest(cur, v, m);
    if (!nan && best == cur) return; /* no term past it */
    for (int j = 0; j < m; j++)
        if (nan ? isnan(v[j]) : v[j] == best) {
            a->p[KV_EV_V] = v[j], a->p[KV_EV_S] = b[KV_EV_S][j];
            return;
        }
}

/* Terms 0..m of b into a, in order: values alone, a sum's, or a max's or min's
 * (zero: the terms' parts known to be 0). */
static void add_terms(const struct kv_ev_ctx *c, struct acc *a, enum kv_sx_op op, const double *const b[KV_EV_PARTS],
                      int m, unsigned zero)
{
    if (c->values) value_terms(a, op, b[KV_EV_V], m);
    else if (op == KV_SX_SUM) sum_terms(a, b, m);
    else extreme_terms(a, op, b, m, zero);
}

/* One outer element at a time, lanes across the range: for few outer
 * elements or ranges that differ between them. */
static int reduce_inner(struct kv_ev_ctx *c, const struct kv_sx *e, int nl, const int64_t *lo, const int64_t *hi,
                        kv_ev_node_fn *node)
{
    if (c->depth > KV_SX_MAX_VARS)
        return kv_ev_fail_at(c, e, 0, "reductions nested %g deep, more than %g", c->depth, KV_SX_MAX_VARS);
    int64_t *saved[KV_SX_MAX_VARS], *mine = c->pool + (size_t)c->depth * KV_SX_MAX_VARS * LANES;
    memcpy(saved, c->var, sizeof saved);
    const double *b[KV_EV_PARTS];
    for (int k = 0; k < KV_EV_PARTS; k++) b[k] = kv_ev_part(c, e->kid[2], k);
    struct acc a;
    int rc = 0;
    const unsigned uni = c->uni;
    c->depth++;
    for (int l = 0; l < nl && !rc; l++) {
        acc_init(&a, e->op);
        for (int64_t k0 = lo[l]; k0 < hi[l] && !rc; k0 += LANES) {
            const int m = hi[l] - k0 < LANES ? (int)(hi[l] - k0) : LANES;
            for (int v = 0; v < c->st->n_vars; v++) {
                int64_t *restrict to = c->var[v] = mine + (size_t)v * LANES;
                if (v == e->ref) {
                    for (int j = 0; j < m; j++) to[j] = k0 + j;
                } else { /* lane l's, read once (a store may alias it): a loop that vectorizes */
                    const int64_t at = saved[v][l];
                    for (int j = 0; j < m; j++) to[j] = at;
                }
            }
            c->uni = m > 1 ? ~(1u << e->ref) : ~0u; /* the others are copies of lane l's */
            rc = node(c, e->kid[2], m);
            if (!rc) add_terms(c, &a, e->op, b, m, c->zero[e->kid[2]->id]);
            memcpy(c->var, saved, sizeof saved);
        }
        if (!rc) acc_done(c, e, &a, l);
    }
    c->depth--;
    c->uni = uni;
    return rc;
}

/* The index variables (bit per slot) at which e reads last some array
 * whose element read depends on the variables v (consecutive elements as
 * the variable steps). */
static unsigned read_last(const struct kv_sx *e, unsigned v)
{
    const struct kv_sx *k = e->op == KV_SX_ACCESS && e->n > 0 && (e->vars & v) ? e->kid[e->n - 1] : NULL;
    unsigned m = k && k->op == KV_SX_VAR ? 1u << k->ref : 0;
    for (int i = 0; i < e->n; i++) m |= read_last(e->kid[i], v);
    return m;
}

int kv_ev_reduce(struct kv_ev_ctx *c, const struct kv_sx *e, int nl, kv_ev_node_fn *node)
{
    int64_t lo[LANES], hi[LANES];
    int uniform;
    if (reduce_range(c, e, nl, lo, hi, &uniform, node)) return -1;
    /* A long range whose body reads memory in order along it, and none of
     * the arrays it steps through along a variable that differs between the
     * lanes (sum over a row's columns, lanes across rows), is walked with its
     * lanes across the range (reduce_inner); else one index at a time across
     * the outer elements (reduce_outer), whose lanes then read in order.
     * Either adds a lane's terms in the same order: the same values. */
    if (uniform && nl >= 32) {
        const unsigned v = 1u << e->ref, last = hi[0] - lo[0] >= LANES ? read_last(e->kid[2], v) : 0;
        if (!(last & v) || (last & ~v & ~c->uni)) return reduce_outer(c, e, nl, lo[0], hi[0], node);
    }
    return reduce_inner(c, e, nl, lo, hi, node);
}
