/* Elementwise operations of the evaluator with their error rules (eval.h).
 * Each result's error is the first-order propagation of its operands'
 * (|df/da| * E_a + |df/db| * E_b) plus the operation's own rounding, in the
 * Vulkan spec's budgets for f32 (u = 2^-24; 1 ulp <= 2u|x|):
 *   + - *: correctly rounded, u|r| (a contraction into fma errs no more);
 *   /: 2.5 ulp, 5u|r|; rsqrt: 2 ulp, 4u|r|; sqrt (1/rsqrt): 4.5 ulp, 9u|r|;
 *   exp: 3+2|x| ulp; log: 3 ulp outside [0.5, 2], 2^-21 absolute inside;
 *   pow: inherited from exp2(b log2 a);
 *   tanh, sigmoid: inherited from exp (tanh's absolute, |x| capped at 9 where
 *   it is +-1 in f32); sin, cos: 2^-11 absolute; erf (no GLSL built-in): 16u
 *   absolute, room for a polynomial good to 1e-6;
 *   comparisons: exact, but a result its operands' errors could flip carries
 *   an error of 1 (and where() the distance between its branches);
 *   and any result (or input) below f32's smallest normal may be flushed to
 *   zero (Vulkan allows it without shaderDenormPreserve): its magnitude more. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clones.h"
#include "core/dtype.h"
#include "core/judge_tile.h" /* kv_bits_of, kv_double_of */
#include "core/mathfn.h"
#include "specs/ev_ops.h"

#define LANES KV_EV_LANES

double kv_ev_round(int t, double v)
{
    if (t == KV_F32) return (double)(float)v; /* one rounding, round to nearest even */
    const struct kv_dtype_info *ti = kv_dtype_info((enum kv_dtype)t);
    if (!isfinite(v) || v == 0 || !ti->is_float || t == KV_F64) return v;
    /* straight from the double (through float first could round twice) */
    int e;
    frexp(v, &e);
    const int ex = e - 1 < ti->emin ? ti->emin : e - 1;
    const double q = ldexp(1.0, ex - ti->precision + 1);
    const double r = nearbyint(v / q) * q;
    const double top = ldexp(2.0 - ldexp(1.0, 1 - ti->precision), 1 - ti->emin);
    return fabs(r) > top ? copysign(INFINITY, v) : r;
}

int kv_ev_ctx_init(struct kv_ev_ctx *c, const struct kv_ev *x, const struct kv_spec_stmt *st, int i, int stage)
{
    (void)i;
    memset(c, 0, sizeof *c);
    c->x = x;
    c->st = st;
    c->stmt_pos = st->pos;
    c->stage = stage;
    const size_t nodes = st->rhs ? (size_t)st->n_nodes : 1;
    /* 0 from the start: the parts known to be 0 are never written (c->zero) */
    c->scr = calloc(nodes * KV_EV_PARTS * KV_EV_STRIDE, sizeof(double));
    c->zero = calloc(nodes, 1);
    if (c->zero) kv_ev_zero_parts(x, st, stage, c->zero);
    const char *check = getenv("KVERIFY_TEST_EV_ZEROS");
    if (c->zero && check && *check == '1') c->zero_want = c->zero, c->zero = calloc(nodes, 1); /* all written */
    c->kept = calloc(nodes, sizeof *c->kept);
    c->key = malloc(nodes * KV_SX_MAX_VARS * sizeof *c->key);
    c->pool = malloc((size_t)(KV_SX_MAX_VARS + 1) * KV_SX_MAX_VARS * LANES * sizeof(int64_t));
    for (int v = 0; c->pool && v < KV_SX_MAX_VARS; v++) c->var[v] = c->pool + (size_t)v * LANES;
    c->depth = 1;
    /* a context for each virtual temp the statement reads, made here */
    const struct kv_spec *s = x->s;
    int bad = !c->scr || !c->zero || !c->pool || !c->kept || !c->key;
    for (int y = 0; y < s->n_syms && !bad; y++) {
        if (!s->sym[y].virt || !kv_sx_reads(st->rhs, y)) continue;
        if (!c->sub && !(c->sub = calloc((size_t)s->n_syms, sizeof *c->sub))) bad = 1;
        else if (!(c->sub[y] = malloc(sizeof *c->sub[y]))) bad = 1;
        else if (kv_ev_ctx_init(c->sub[y], x, &s->stmt[s->sym[y].stmt], s->sym[y].stmt, x->arr[y].stage))
            bad = 1, free(c->sub[y]), c->sub[y] = NULL;
    }
    if (bad) {
        kv_ev_ctx_free(c);
        c->failed = 1;
        return -1;
    }
    return 0;
}

void kv_ev_ctx_values(struct kv_ev_ctx *c, int values)
{
    c->values = values;
    for (int y = 0; c->sub && y < c->x->s->n_syms; y++)
        if (c->sub[y]) kv_ev_ctx_values(c->sub[y], values);
}

void kv_ev_ctx_free(struct kv_ev_ctx *c)
{
    for (int y = 0; c->sub && y < c->x->s->n_syms; y++)
        if (c->sub[y]) kv_ev_ctx_free(c->sub[y]), free(c->sub[y]);
    free(c->sub);
    c->sub = NULL;
    free(c->scr);
    free(c->zero);
    free(c->zero_want);
    free(c->pool);
    free(c->kept);
    free(c->key);
    c->scr = NULL;
    c->zero = c->zero_want = NULL;
    c->pool = NULL;
    c->kept = NULL;
    c->key = NULL;
}

/* The pool: a slot is taken by setting busy from 0 to 1; its context is
 * made by the taker, on first use, for the taker's statement. */
#define POOL 128
struct kv_ev_pool {
    struct {
        atomic_int busy;
        int made;
        struct kv_ev_ctx c;
    } slot[POOL];
};

int kv_ev_pool_new(struct kv_ev *x)
{
    x->pool = calloc(1, sizeof *x->pool);
    return x->pool ? 0 : -1;
}

void kv_ev_pool_free(struct kv_ev *x)
{
    for (int k = 0; x->pool && k < POOL; k++)
        if (x->pool->slot[k].made) kv_ev_ctx_free(&x->pool->slot[k].c);
    free(x->pool);
    x->pool = NULL;
}

struct kv_ev_ctx *kv_ev_ctx_take(const struct kv_ev *x, const struct kv_spec_stmt *st, int i, int stage)
{
    struct kv_ev_pool *p = x->pool;
    for (int pass = 0; p && pass < 2; pass++) /* one made for st first, then an empty one */
        for (int k = 0; k < POOL; k++) {
            int idle = 0;
            if (!atomic_compare_exchange_strong(&p->slot[k].busy, &idle, 1)) continue;
            struct kv_ev_ctx *c = &p->slot[k].c;
            if (p->slot[k].made && c->st == st && c->stage == stage) return c;
            if (pass == 1 && !p->slot[k].made) {
                if (kv_ev_ctx_init(c, x, st, i, stage) == 0) return p->slot[k].made = 1, c->slot = k + 1, c;
                atomic_store(&p->slot[k].busy, 0);
                return NULL;
            }
            atomic_store(&p->slot[k].busy, 0);
        }
    struct kv_ev_ctx *c = malloc(sizeof *c); /* the pool's slots all taken or made for others */
    if (c && kv_ev_ctx_init(c, x, st, i, stage)) free(c), c = NULL;
    return c;
}

void kv_ev_ctx_give(const struct kv_ev *x, struct kv_ev_ctx *c)
{
    struct kv_ev_pool *p = x->pool;
    const int k = c->slot - 1;
    if (k >= 0) {
        if (c->failed) kv_ev_ctx_free(c), p->slot[k].made = 0;
        atomic_store(&p->slot[k].busy, 0);
        return;
    }
    kv_ev_ctx_free(c);
    free(c);
}

int kv_ev_fail_at(struct kv_ev_ctx *c, const struct kv_sx *e, int lane, const char *fmt, double a, double b)
{
    if (c->failed) return -1;
    char cause[200], where[160] = "";
    snprintf(cause, sizeof cause, fmt, a, b);
    size_t o = 0;
    for (int v = 0; v < c->st->n_target && o < sizeof where; v++)
        o += (size_t)snprintf(where + o, sizeof where - o, "%s%s=%lld", v ? ", " : "", c->st->var[v],
                              (long long)c->var[v][lane]);
    snprintf(c->err, sizeof c->err, "%s: %s[%d] column %d: %s (at %s)", c->x->s->path,
             c->st->prepare ? "prepare" : "math", c->stmt_pos, e->pos, cause, where);
    c->failed = 1;
    return -1;
}

/* a * e without the NaN of Inf * 0: an error of 0 stays 0 (+0). The
 * product made on every lane, and cleared by a mask of its bits where e is
 * 0: a product under a condition is one the compiler may not make ahead of
 * it (it could raise a floating-point exception), so that without masked
 * vector operations (AVX2) its loops stayed scalar, a branch per lane. */
static inline double mulE(double a, double e)
{
    return kv_double_of(kv_bits_of(fabs(a) * e) & -(int64_t)(e != 0));
}

struct parts {
    double *p[KV_EV_PARTS];
};

static struct parts parts_of(const struct kv_ev_ctx *c, const struct kv_sx *e)
{
    struct parts r;
    for (int k = 0; k < KV_EV_PARTS; k++) r.p[k] = kv_ev_part(c, e, k);
    return r;
}

/* the flush of a subnormal result */
static inline double flush(double r)
{
    return fabs(r) < 0x1p-126 ? fabs(r) : 0;
}

static double total_err(const struct parts *a, int l)
{
    return 8 * a->p[KV_EV_LAM][l] + a->p[KV_EV_FIX][l] + a->p[KV_EV_CHN][l];
}

/* Each unary operation's value over the lanes (the switch outside the
 * loops): the one definition the full rules and values alone both use. */
static void unary_value_lanes(const struct kv_ev_ctx *c, const struct kv_sx *e, const double *restrict x,
                              double *restrict r, int nl)
{
    if (e->op == KV_SX_NEG) {
        for (int l = 0; l < nl; l++) r[l] = -x[l];
        return;
    }
    if (e->op == KV_SX_NOT) {
        for (int l = 0; l < nl; l++) r[l] = x[l] == 0;
        return;
    }
    if (e->op == KV_SX_ROUND) {
        for (int l = 0; l < nl; l++) r[l] = c->x->exact ? x[l] : kv_ev_round(e->ref, x[l]);
        return;
    }
    switch (e->ref) {
    case KV_FN_EXP: for (int l = 0; l < nl; l++) r[l] = kv_exp(x[l]); break;
    case KV_FN_LOG: for (int l = 0; l < nl; l++) r[l] = kv_log(x[l]); break;
    case KV_FN_SQRT: for (int l = 0; l < nl; l++) r[l] = sqrt(x[l]); break;
    case KV_FN_RSQRT: for (int l = 0; l < nl; l++) r[l] = 1 / sqrt(x[l]); break;
    case KV_FN_TANH: for (int l = 0; l < nl; l++) r[l] = tanh(x[l]); break;
    case KV_FN_SIGMOID: for (int l = 0; l < nl; l++) r[l] = 1 / (1 + kv_exp(-x[l])); break;
    case KV_FN_ERF: for (int l = 0; l < nl; l++) r[l] = erf(x[l]); break;
    case KV_FN_SIN: for (int l = 0; l < nl; l++) r[l] = sin(x[l]); break;
    case KV_FN_COS: for (int l = 0; l < nl; l++) r[l] = cos(x[l]); break;
    case KV_FN_FLOOR: for (int l = 0; l < nl; l++) r[l] = floor(x[l]); break;
    default: for (int l = 0; l < nl; l++) r[l] = fabs(x[l]); break; /* abs */
    }
}

/* A function of one operand at its values r (the switch outside the loop):
 * its derivative d (a NaN derivative taken as 0), own error and magnitude
 * S, for unary_parts' rule. */
static void function(const struct kv_ev_ctx *c, int fn, const struct parts *a, int nl, const double *restrict r,
                     double *restrict d, double *restrict own, double *restrict S)
{
    const double u = c->x->u, *x = a->p[KV_EV_V];
    switch (fn) {
    case KV_FN_EXP:
        for (int l = 0; l < nl; l++) d[l] = r[l], own[l] = 2 * u * (3 + 2 * fabs(x[l])) * r[l];
        break;
    case KV_FN_LOG:
        for (int l = 0; l < nl; l++) d[l] = 1 / x[l], own[l] = x[l] >= 0.5 && x[l] <= 2 ? 0x1p-21 : 6 * u * fabs(r[l]);
        break;
    case KV_FN_SQRT:
        for (int l = 0; l < nl; l++) d[l] = 0.5 / r[l], own[l] = 9 * u * r[l];
        break;
    case KV_FN_RSQRT:
        for (int l = 0; l < nl; l++) d[l] = 0.5 * r[l] / x[l], own[l] = 4 * u * r[l];
        break;
    case KV_FN_TANH:
        for (int l = 0; l < nl; l++) d[l] = 1 - r[l] * r[l], own[l] = 4 * u * (3 + 2 * fmin(fabs(x[l]), 9));
        break;
    case KV_FN_SIGMOID:
        for (int l = 0; l < nl; l++)
            d[l] = r[l] * (1 - r[l]), own[l] = 2 * u * (3 + 2 * fabs(x[l])) * d[l] + 6 * u * r[l];
        break;
    case KV_FN_ERF:
        for (int l = 0; l < nl; l++) d[l] = 1.1283791670955126 * kv_exp(-x[l] * x[l]), own[l] = 16 * u;
        break;
    case KV_FN_SIN:
        for (int l = 0; l < nl; l++) d[l] = cos(x[l]), own[l] = 0x1p-11;
        break;
    case KV_FN_COS:
        for (int l = 0; l < nl; l++) d[l] = sin(x[l]), own[l] = 0x1p-11;
        break;
    case KV_FN_FLOOR: /* flips to the next integer where the error reaches it */
        for (int l = 0; l < nl; l++) {
            const double t = total_err(a, l);
            d[l] = 0, own[l] = t >= fmin(x[l] - r[l], r[l] + 1 - x[l]) && t > 0 ? 1 : 0;
        }
        break;
    default: /* abs */
        for (int l = 0; l < nl; l++) d[l] = 1, own[l] = 0, S[l] = a->p[KV_EV_S][l];
        return;
    }
    for (int l = 0; l < nl; l++) d[l] = d[l] != d[l] ? 0 : d[l], S[l] = fabs(r[l]);
}

/* A comparison's (== != < <= > >= && ||) value over the lanes, inlined into
 * its callers' vectorised loops; & and | of the compares, not && and ||:
 * each compare made on every lane (no branch), so that these loops vectorise. */
static inline __attribute__((always_inline)) void compare_values(enum kv_sx_op op, const double *restrict x,
                                                                 const double *restrict y, double *restrict r, int nl)
{
    switch (op) {
    case KV_SX_EQ: for (int l = 0; l < nl; l++) r[l] = x[l] == y[l]; break;
    case KV_SX_NE: for (int l = 0; l < nl; l++) r[l] = x[l] != y[l]; break;
    case KV_SX_LT: for (int l = 0; l < nl; l++) r[l] = x[l] < y[l]; break;
    case KV_SX_LE: for (int l = 0; l < nl; l++) r[l] = x[l] <= y[l]; break;
    case KV_SX_GT: for (int l = 0; l < nl; l++) r[l] = x[l] > y[l]; break;
    case KV_SX_GE: for (int l = 0; l < nl; l++) r[l] = x[l] >= y[l]; break;
    case KV_SX_AND: for (int l = 0; l < nl; l++) r[l] = (x[l] != 0) & (y[l] != 0); break;
    default: for (int l = 0; l < nl; l++) r[l] = (x[l] != 0) | (y[l] != 0); break;
    }
}

/* Whether min or max (is_max) of x and y is x: NaN wins, x on a tie. Both
 * compares made, no branch: the loops that call it vectorise. */
static inline int picks_x(double x, double y, int is_max)
{
    const int ge = x >= y, le = x <= y;
    return isnan(x) | ((!isnan(y)) & ((is_max & ge) | ((!is_max) & le)));
}

/* For values alone (c->values: a prepare statement's), each binary
 * operation's value as the full rules make it: the same expression (the
 * full rules keep theirs in their vectorised loops: arith, compare, minmax,
 * power; unit.spec's prepare_ops holds the two to the same bits). */
KV_CLONES static void binary_values(const struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    double *restrict o = kv_ev_part(c, e, KV_EV_V);
    const double *restrict a = kv_ev_part(c, e->kid[0], KV_EV_V), *restrict b = kv_ev_part(c, e->kid[1], KV_EV_V);
    /* the switch outside the loops, each a loop without a branch that vectorises */
    switch (e->op) {
    case KV_SX_ADD: for (int l = 0; l < nl; l++) o[l] = a[l] + 1 * b[l]; break;
    case KV_SX_SUB: for (int l = 0; l < nl; l++) o[l] = a[l] + -1 * b[l]; break;
    case KV_SX_MUL: for (int l = 0; l < nl; l++) o[l] = a[l] * b[l]; break;
    case KV_SX_DIV: for (int l = 0; l < nl; l++) o[l] = a[l] / b[l]; break;
    case KV_SX_MOD: for (int l = 0; l < nl; l++) o[l] = a[l] - b[l] * floor(a[l] / b[l]); break;
    case KV_SX_EQ: case KV_SX_NE: case KV_SX_LT: case KV_SX_LE:
    case KV_SX_GT: case KV_SX_GE: case KV_SX_AND: case KV_SX_OR: compare_values(e->op, a, b, o, nl); break;
    default: /* a function of two */
        if (e->ref == KV_FN_POW) {
            for (int l = 0; l < nl; l++) o[l] = pow(a[l], b[l]);
        } else { /* minmax's choice */
            const int is_max = e->ref == KV_FN_MAX;
            for (int l = 0; l < nl; l++) o[l] = picks_x(a[l], b[l], is_max) ? a[l] : b[l];
        }
        break;
    }
}

/* The rule of a unary operation, part by part over the lanes (loops the
 * compiler vectorises): r with derivative d, the operand's errors scaled by
 * |d|, plus own (and the flush of a subnormal result); S, the magnitudes. */
KV_CLONES static void unary_parts(struct parts *o, const struct parts *a, int nl, const double *restrict r,
                                  const double *restrict d, const double *restrict own, const double *restrict S,
                                  unsigned zero)
{
    for (int k = KV_EV_LAM; k <= KV_EV_CHN; k++) {
        if (kv_ev_known_zero(zero, k)) continue;
        const double *restrict ea = a->p[k];
        double *restrict eo = o->p[k];
        if (k == KV_EV_FIX)
            for (int l = 0; l < nl; l++) eo[l] = mulE(d[l], ea[l]) + (own[l] + flush(r[l]));
        else
            for (int l = 0; l < nl; l++) eo[l] = mulE(d[l], ea[l]);
    }
    double *restrict v = o->p[KV_EV_V], *restrict so = o->p[KV_EV_S], *restrict pk = o->p[KV_EV_PK];
    const double *restrict pa = a->p[KV_EV_PK];
    for (int l = 0; l < nl; l++) v[l] = r[l], so[l] = S[l], pk[l] = kv_maxd(pa[l], fabs(r[l]));
}

void kv_ev_unary(struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    if (c->values) { /* a prepare statement's: the value alone */
        unary_value_lanes(c, e, kv_ev_part(c, e->kid[0], KV_EV_V), kv_ev_part(c, e, KV_EV_V), nl);
        return;
    }
    struct parts o = parts_of(c, e), a = parts_of(c, e->kid[0]);
    const double *x = a.p[KV_EV_V], *Sa = a.p[KV_EV_S];
    double r[LANES], d[LANES], own[LANES], S[LANES];
    unary_value_lanes(c, e, x, r, nl);
    if (e->op == KV_SX_NEG) {
        for (int l = 0; l < nl; l++) d[l] = 1, own[l] = 0, S[l] = Sa[l];
    } else if (e->op == KV_SX_NOT) {
        const double *fa = a.p[KV_EV_FIX];
        for (int l = 0; l < nl; l++) d[l] = 0, own[l] = fa[l] > 0, S[l] = 1;
    } else if (e->op == KV_SX_ROUND) {
        /* the spec's rounding: the device's value, off by its error, may
         * round to the neighbour: one ulp of the type more (below) */
        for (int l = 0; l < nl; l++) d[l] = 1, own[l] = 0, S[l] = Sa[l];
    } else {
        function(c, e->ref, &a, nl, r, d, own, S);
    }
    unary_parts(&o, &a, nl, r, d, own, S, c->zero[e->id]);
    if (e->op != KV_SX_ROUND || c->x->exact) return;
    for (int l = 0; l < nl; l++) {
        const double ulp = kv_ulp((enum kv_dtype)e->ref, x[l]);
        if (a.p[KV_EV_LAM][l] + a.p[KV_EV_FIX][l] > 0) o.p[KV_EV_FIX][l] += ulp;
        else if (a.p[KV_EV_CHN][l] > 0) o.p[KV_EV_CHN][l] += ulp;
    }
}

/* A comparison's result and whether the operands' errors could flip it,
 * part by part over the lanes (loops the compiler vectorises). */
KV_CLONES static void compare(const struct kv_sx *e, struct parts *o, const struct parts *a, const struct parts *b,
                              int nl, unsigned zero)
{
    const double *restrict x = a->p[KV_EV_V], *restrict y = b->p[KV_EV_V];
    double *restrict r = o->p[KV_EV_V], *restrict fix = o->p[KV_EV_FIX];
    compare_values(e->op, x, y, r, nl);
    const double *restrict fa = a->p[KV_EV_FIX], *restrict fb = b->p[KV_EV_FIX];
    if (e->op == KV_SX_AND || e->op == KV_SX_OR) {
        for (int l = 0; l < nl; l++) fix[l] = (fa[l] > 0) | (fb[l] > 0);
    } else {
        const double *restrict la = a->p[KV_EV_LAM], *restrict lb = b->p[KV_EV_LAM];
        const double *restrict ca = a->p[KV_EV_CHN], *restrict cb = b->p[KV_EV_CHN];
        for (int l = 0; l < nl; l++) {
            const double err = (8 * la[l] + fa[l] + ca[l]) + (8 * lb[l] + fb[l] + cb[l]); /* total_err's */
            fix[l] = (err > 0) & (fabs(x[l] - y[l]) <= err);
        }
    }
    double *restrict S = o->p[KV_EV_S], *restrict lam = o->p[KV_EV_LAM], *restrict chn = o->p[KV_EV_CHN];
    double *restrict pk = o->p[KV_EV_PK];
    const double *restrict pa = a->p[KV_EV_PK], *restrict pb = b->p[KV_EV_PK];
    for (int l = 0; l < nl; l++) S[l] = 1, pk[l] = kv_maxd(pa[l], pb[l]);
    if (zero != KV_EV_ZALL) /* known 0 (ev_zero.c), but where every part is written */
        for (int l = 0; l < nl; l++) lam[l] = chn[l] = 0;
}

/* + - * / % on every lane, all of a lane's parts in one pass (op is a
 * constant in each caller, so the loop has no branch left and vectorises):
 * the value and the derivatives da, db, then each error part, the
 * operation's own rounding into fix, and the magnitudes. One pass reads each
 * operand part once and writes each result part once, where a loop per part
 * wrote the derivatives and fix out and read them back (the evaluator's
 * stores bound it). The same operations in the same order per lane. */
static inline __attribute__((always_inline)) void arith_lanes(int op, double u, const struct parts *a,
                                                             const struct parts *b, struct parts *o, int nl,
                                                             unsigned zero)
{
    const double *restrict x = a->p[KV_EV_V], *restrict y = b->p[KV_EV_V], *restrict Sa = a->p[KV_EV_S],
                 *restrict Sb = b->p[KV_EV_S], *restrict la = a->p[KV_EV_LAM], *restrict lb = b->p[KV_EV_LAM],
                 *restrict fa = a->p[KV_EV_FIX], *restrict fb = b->p[KV_EV_FIX], *restrict ca = a->p[KV_EV_CHN],
                 *restrict cb = b->p[KV_EV_CHN], *restrict pa = a->p[KV_EV_PK], *restrict pb = b->p[KV_EV_PK];
    double *restrict rv = o->p[KV_EV_V], *restrict S = o->p[KV_EV_S], *restrict lo = o->p[KV_EV_LAM],
                     *restrict fo = o->p[KV_EV_FIX], *restrict co = o->p[KV_EV_CHN], *restrict po = o->p[KV_EV_PK];
    const double sg = op == KV_SX_SUB ? -1 : 1;
    /* no lane reads what another writes (the result's parts are its node's,
     * apart from its operands'): restrict on these locals, once inlined, is
     * not enough for GCC, which would test 18 ranges against each other */
#ifdef __clang__
#pragma clang loop vectorize(assume_safety)
#else
#pragma GCC ivdep
#endif
    for (int l = 0; l < nl; l++) {
        double r, da, db, s, own;
        switch (op) {
        case KV_SX_ADD:
        case KV_SX_SUB: r = x[l] + sg * y[l], da = 1, db = 1, s = Sa[l] + Sb[l], own = u * fabs(r); break;
        case KV_SX_MUL: r = x[l] * y[l], da = y[l], db = x[l], s = Sa[l] * Sb[l], own = u * fabs(r); break;
        case KV_SX_DIV: r = x[l] / y[l], da = 1 / y[l], db = r / y[l], s = Sa[l] / fabs(y[l]), own = 5 * u * fabs(r); break;
        default: /* % on integers: the result in [0, y) */
            r = x[l] - y[l] * floor(x[l] / y[l]), da = 1, db = 0, s = fabs(r), own = 0;
            break;
        }
        rv[l] = r, S[l] = s;
        if (!(zero & KV_EV_ZLAM)) lo[l] = mulE(da, la[l]) + mulE(db, lb[l]); /* else 0, as both operands' */
        fo[l] = (mulE(da, fa[l]) + mulE(db, fb[l])) + (own + flush(r));
        if (!(zero & KV_EV_ZCHN)) co[l] = mulE(da, ca[l]) + mulE(db, cb[l]);
        po[l] = kv_maxd(kv_maxd(pa[l], pb[l]), fabs(r));
    }
}

/* The operation and the parts known to be 0 (c->zero), constants in each
 * loop: an element-wise statement's (both 0) reads 8 parts and writes 4. */
#define ARITH(Z)                                                                                                       \
    switch (e->op) {                                                                                                   \
    case KV_SX_ADD: arith_lanes(KV_SX_ADD, u, a, b, o, nl, Z); break;                                                  \
    case KV_SX_SUB: arith_lanes(KV_SX_SUB, u, a, b, o, nl, Z); break;                                                  \
    case KV_SX_MUL: arith_lanes(KV_SX_MUL, u, a, b, o, nl, Z); break;                                                  \
    case KV_SX_DIV: arith_lanes(KV_SX_DIV, u, a, b, o, nl, Z); break;                                                  \
    default: arith_lanes(KV_SX_MOD, u, a, b, o, nl, Z); break;                                                         \
    }
KV_CLONES static void arith(const struct kv_ev_ctx *c, const struct kv_sx *e, struct parts *o,
                            const struct parts *a, const struct parts *b, int nl)
{
    const double u = c->x->u;
    switch (c->zero[e->id]) {
    case KV_EV_ZALL: ARITH(KV_EV_ZALL) break;
    case KV_EV_ZLAM: ARITH(KV_EV_ZLAM) break;
    case KV_EV_ZCHN: ARITH(KV_EV_ZCHN) break;
    default: ARITH(0) break;
    }
}
#undef ARITH

/* pow(a, b), as GLSL defines it: exp2(b * log2(a)), with their budgets
 * (exp2: 3 + 2|x| ulp; log2: 3 ulp outside [0.5, 2], 2^-21 absolute inside),
 * log2's error carried through exp2 (d r / d log2(a) = r b ln 2). */
static void power(const struct kv_ev_ctx *c, struct parts *o, const struct parts *a, const struct parts *b, int l)
{
    const double u = c->x->u, x = a->p[KV_EV_V][l], y = b->p[KV_EV_V][l], r = pow(x, y);
    const double l2 = log2(x), e_log2 = x >= 0.5 && x <= 2 ? 0x1p-21 : 6 * u * fabs(l2);
    const double own = 2 * u * (3 + 2 * fabs(y * l2)) * fabs(r) + fabs(r * y) * 0.6931471805599453 * e_log2 + flush(r);
    const double da = x != 0 ? y * r / x : 0, db = r * log(fabs(x));
    o->p[KV_EV_V][l] = r;
    for (int k = KV_EV_LAM; k <= KV_EV_CHN; k++) o->p[k][l] = mulE(da, a->p[k][l]) + mulE(db, b->p[k][l]);
    o->p[KV_EV_FIX][l] += own;
    o->p[KV_EV_S][l] = fabs(r);
    o->p[KV_EV_PK][l] = kv_maxd(kv_maxd(a->p[KV_EV_PK][l], b->p[KV_EV_PK][l]), fabs(r));
}

/* min and max of two: the chosen operand's parts, the larger error (part
 * by part over the lanes) */
KV_CLONES static void minmax(const struct kv_sx *e, struct parts *o, const struct parts *a, const struct parts *b,
                             int nl, unsigned zero)
{
    const double *restrict x = a->p[KV_EV_V], *restrict y = b->p[KV_EV_V];
    const double *restrict Sa = a->p[KV_EV_S], *restrict Sb = b->p[KV_EV_S];
    double *restrict v = o->p[KV_EV_V], *restrict S = o->p[KV_EV_S];
    const int is_max = e->ref == KV_FN_MAX;
    for (int l = 0; l < nl; l++) {
        const int pick_a = picks_x(x[l], y[l], is_max);
        const double sa = Sa[l], sb = Sb[l]; /* both loaded, then one chosen */
        v[l] = pick_a ? x[l] : y[l], S[l] = pick_a ? sa : sb;
    }
    for (int k = KV_EV_LAM; k <= KV_EV_PK; k++) { /* S is not among them */
        if (kv_ev_known_zero(zero, k)) continue;
        const double *restrict pa = a->p[k], *restrict pb = b->p[k];
        double *restrict po = o->p[k];
        for (int l = 0; l < nl; l++) po[l] = kv_maxd(pa[l], pb[l]);
    }
}

void kv_ev_binary(struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    if (c->values) {
        binary_values(c, e, nl);
        return;
    }
    struct parts o = parts_of(c, e), a = parts_of(c, e->kid[0]), b = parts_of(c, e->kid[1]);
    if (e->op == KV_SX_FUNC && e->ref == KV_FN_POW) {
        for (int l = 0; l < nl; l++) power(c, &o, &a, &b, l);
    } else if (e->op == KV_SX_FUNC) {
        minmax(e, &o, &a, &b, nl, c->zero[e->id]);
    } else if (e->op >= KV_SX_EQ && e->op <= KV_SX_OR) {
        compare(e, &o, &a, &b, nl, c->zero[e->id]);
    } else {
        arith(c, e, &o, &a, &b, nl);
    }
}

/* where(q, a, b), part by part over the lanes: the branch each lane takes
 * and, where the condition may flip, the distance to the other branch and
 * that branch's error. A branch that no lane takes is not read (it may not
 * have been evaluated, eval.c): where every lane takes one branch, its parts
 * are copied; otherwise both are, and each lane picks (loads of both, then
 * a select: no masked loads, which a page never touched makes slow). */
KV_CLONES static void where_parts(struct parts *o, const struct parts *q, const struct parts *a,
                                  const struct parts *b, int nl, unsigned zero)
{
    const double *restrict qv = q->p[KV_EV_V];
    int n_a = 0;
    for (int l = 0; l < nl; l++) n_a += qv[l] != 0;
    for (int k = 0; k < KV_EV_PARTS; k++) {
        if (kv_ev_known_zero(zero, k)) continue;
        const double *restrict pa = a->p[k], *restrict pb = b->p[k];
        double *restrict po = o->p[k];
        if (n_a == nl || n_a == 0) {
            memcpy(po, n_a ? pa : pb, (size_t)nl * sizeof *po);
            continue;
        }
        for (int l = 0; l < nl; l++) {
            const double va = pa[l], vb = pb[l];
            po[l] = qv[l] != 0 ? va : vb;
        }
    }
    double *restrict pk = o->p[KV_EV_PK], *restrict fix = o->p[KV_EV_FIX];
    const double *restrict qpk = q->p[KV_EV_PK], *restrict qf = q->p[KV_EV_FIX];
    for (int l = 0; l < nl; l++) pk[l] = kv_maxd(pk[l], qpk[l]);
    for (int l = 0; l < nl; l++)
        if (qf[l] > 0) { /* the condition may flip: the other branch is legal too (both evaluated) */
            const struct parts *other = qv[l] != 0 ? b : a;
            fix[l] += fabs(a->p[KV_EV_V][l] - b->p[KV_EV_V][l]) + total_err(other, l);
        }
}

void kv_ev_where(struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    struct parts o = parts_of(c, e), q = parts_of(c, e->kid[0]), a = parts_of(c, e->kid[1]),
                 b = parts_of(c, e->kid[2]);
    where_parts(&o, &q, &a, &b, nl, c->zero[e->id]);
}
