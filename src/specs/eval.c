/* The evaluator (eval.h): a statement's elements in blocks of LANES, every
 * node of its expression computed for the whole block before its parent,
 * so the cost of walking the tree is paid once per block, not per element.
 * The operations' rounding budgets are the Vulkan spec's ("Precision and
 * Operation of SPIR-V Instructions"), man kverify lists them. */
#include "specs/eval.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clones.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "specs/contract.h"

#define LANES KV_EV_LANES

/* flat[l] += iv[l] * stride over the lanes; whether some iv[l] lies outside
 * [0, ext). A loop that vectorizes; without the 64-bit products (emulated
 * in AVX2) where the stride is 1, as a dimension's last one is. */
KV_CLONES static int index_lanes(int64_t *restrict flat, const int64_t *restrict iv, int nl, int64_t ext,
                                 int64_t stride)
{
    int out = 0;
    if (stride == 1) {
        for (int l = 0; l < nl; l++) {
            out |= (uint64_t)iv[l] >= (uint64_t)ext;
            flat[l] += iv[l];
        }
        return out;
    }
    for (int l = 0; l < nl; l++) {
        out |= (uint64_t)iv[l] >= (uint64_t)ext; /* negative or past the end */
        flat[l] += iv[l] * stride;
    }
    return out;
}

/* flat[l] += k over the lanes: a variable the same on every lane (c->uni). */
KV_CLONES static void add_lanes(int64_t *restrict flat, int nl, int64_t k)
{
    for (int l = 0; l < nl; l++) flat[l] += k;
}

/* The flat index of an access for each lane; -1 on a bad index. */
static int access_index(struct kv_ev_ctx *c, const struct kv_sx *e, const struct kv_ev_arr *a, int nl, int64_t *flat)
{
    memset(flat, 0, (size_t)nl * sizeof *flat);
    for (int d = 0; d < e->n; d++) {
        const int64_t ext = a->shape[d], stride = a->stride[d];
        /* a plain index: its lanes, unevaluated (kv_ev_node); one outside
         * the array is reported below, as a computed one is */
        if (e->kid[d]->op == KV_SX_VAR) {
            const int ref = e->kid[d]->ref;
            const int64_t v0 = c->var[ref][0];
            if (c->uni >> ref & 1u && (uint64_t)v0 < (uint64_t)ext) { /* the same index on every lane */
                add_lanes(flat, nl, v0 * stride);
                continue;
            }
            if (!index_lanes(flat, c->var[ref], nl, ext, stride)) continue;
        }
        const double *iv = kv_ev_part(c, e->kid[d], KV_EV_V);
        if (e->kid[d]->op == KV_SX_VAR) kv_ev_node(c, e->kid[d], nl); /* for the message below */
        for (int l = 0; l < nl; l++) {
            double v = iv[l];
            if (!(v >= 0 && v < (double)ext) || v != floor(v)) {
                char fmt[160];
                snprintf(fmt, sizeof fmt, "index %d of %s is %%g, outside [0, %%g)%s", d + 1,
                         c->x->s->sym[e->ref].name, v == floor(v) || !isfinite(v) ? "" : " (not an integer)");
                return kv_ev_fail_at(c, e, l, fmt, v, (double)ext);
            }
            flat[l] += (int64_t)v * stride;
        }
    }
    return 0;
}

/* A virtual temp (spec.h, sym.virt) at the flat elements of e's lanes: its
 * statement evaluated there, in a context of its own, as a whole-array
 * evaluation would at those elements (the same operations, the same values). */
static int eval_virtual(struct kv_ev_ctx *c, const struct kv_sx *e, const struct kv_ev_arr *a, int nl,
                        const int64_t *flat)
{
    const struct kv_spec *s = c->x->s;
    const struct kv_spec_stmt *st = &s->stmt[s->sym[e->ref].stmt];
    struct kv_ev_ctx *v = c->sub[e->ref]; /* made with c (kv_ev_ctx_init) */
    if (v->memo_n == nl && !memcmp(v->memo, flat, (size_t)nl * sizeof *flat)) goto copy; /* read again */
    v->flat = flat;
    v->uni = 0;
    for (int d = 0; d < a->ndim; d++) {
        if (e->kid[d]->op == KV_SX_VAR) { /* a plain index: the reader's variable, lane by lane */
            memcpy(v->var[d], c->var[e->kid[d]->ref], (size_t)nl * sizeof(int64_t));
            v->uni |= (c->uni >> e->kid[d]->ref & 1u) << d;
            continue;
        }
        const int64_t stride = a->stride[d], ext = a->shape[d];
        int same = 1;
        for (int l = 0; l < nl; l++) v->var[d][l] = flat[l] / stride % ext, same &= v->var[d][l] == v->var[d][0];
        v->uni |= (unsigned)same << d;
    }
    v->memo_n = 0;
    if (kv_ev_node(v, st->rhs, nl)) {
        snprintf(c->err, sizeof c->err, "%s", v->err);
        v->failed = 0;
        return c->failed = 1, -1;
    }
    v->memo_n = nl;
    memcpy(v->memo, flat, (size_t)nl * sizeof *flat);
copy:
    for (int k = 0; k < (c->values ? 1 : KV_EV_PARTS); k++) /* values alone: v made its value alone */
        if (kv_ev_live(c, e, k)) memcpy(kv_ev_part(c, e, k), kv_ev_part(v, st->rhs, k), (size_t)nl * sizeof(double));
    return 0;
}

/* Whether flat[l] = flat[0] + l on every lane (consecutive elements: loads, not gathers). */
static inline int consecutive(const int64_t *restrict flat, int nl)
{
    int ok = 1;
    for (int l = 0; l < nl; l++) ok &= flat[l] == flat[0] + l;
    return ok;
}

/* An exact input's parts from its values v: S and pk its magnitude, no
 * error but a subnormal's, which may be flushed. The parts are arguments,
 * restrict: GCC keeps no restrict of a local pointer, and with six arrays
 * that may alias it leaves the loop scalar. */
static inline __attribute__((always_inline)) void exact_parts(const double *restrict v, double *restrict S,
                                                              double *restrict pk, double *restrict fix, int nl)
{
    for (int l = 0; l < nl; l++) {
        const double m = fabs(v[l]);
        S[l] = pk[l] = m;
        fix[l] = m < 0x1p-126 ? m : 0;
    }
}

/* A leaf's lam and chn, 0: written only where not known to be (never, but
 * under KVERIFY_TEST_EV_ZEROS=1, which writes every part). */
static void exact_errors(const struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    for (int k = KV_EV_LAM; k <= KV_EV_CHN; k += KV_EV_CHN - KV_EV_LAM)
        if (kv_ev_live(c, e, k)) memset(kv_ev_part(c, e, k), 0, (size_t)nl * sizeof(double));
}

/* An input's elements at flat[0..nl) into a leaf's parts (values: the
 * value alone): exact as the device sees them; a subnormal may be flushed.
 * The consecutive elements' test, an f32 gather and the parts in loops
 * that vectorize (in the clones: the baseline has no 64-bit integer
 * compare); consecutive elements by their dtype's typed loop. */
KV_CLONES static void load_input(double *const p[KV_EV_PARTS], enum kv_dtype t, const void *raw,
                                 const int64_t *restrict flat, int nl, int values)
{
    double *restrict v = p[KV_EV_V];
    const float *restrict f32 = raw;
    if (consecutive(flat, nl)) kv_load_f64_n(t, raw, (size_t)flat[0], v, (size_t)nl);
    else if (t == KV_F32)
        for (int l = 0; l < nl; l++) v[l] = f32[flat[l]];
    else
        for (int l = 0; l < nl; l++) v[l] = kv_load_f64(t, raw, (size_t)flat[l]);
    if (!values) exact_parts(v, p[KV_EV_S], p[KV_EV_PK], p[KV_EV_FIX], nl);
}

/* dst[l] = src[flat[l]]: a loop that vectorizes. */
KV_CLONES static void gather(double *restrict dst, const double *restrict src, const int64_t *restrict flat, int nl)
{
    if (consecutive(flat, nl)) memcpy(dst, src + flat[0], (size_t)nl * sizeof *dst);
    else
        for (int l = 0; l < nl; l++) dst[l] = src[flat[l]];
}

static int eval_access(struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    const struct kv_ev_arr *a = &c->x->arr[e->ref];
    int64_t flat[LANES];
    if (access_index(c, e, a, nl, flat)) return -1;
    if (c->x->s->sym[e->ref].virt) return eval_virtual(c, e, a, nl, flat);
    double *p[KV_EV_PARTS];
    for (int k = 0; k < KV_EV_PARTS; k++) p[k] = kv_ev_part(c, e, k);
    if (a->raw) { /* an input: exact as the device sees it */
        load_input(p, a->dtype, a->raw, flat, nl, c->values);
        if (!c->values) exact_errors(c, e, nl);
        return 0;
    }
    /* another stage's output: the device is fed the oracle's value rounded to
     * its dtype (stage isolation); a chained rerun, the producer's, within its
     * allowed error (iso, made once per array: kv_ev_isolate) */
    const int iso = a->output && a->stage != c->stage;
    for (int k = 0; k < (c->values ? 1 : KV_EV_PARTS); k++) { /* values: a prepare statement's array */
        if (!kv_ev_live(c, e, k)) continue; /* known 0 (iso's lam) */
        const double *src = !iso || k == KV_EV_S || k == KV_EV_PK ? a->part[k]
                            : k == KV_EV_V                          ? a->iso[0]
                            : k == KV_EV_CHN                        ? a->iso[1]
                                                                    : NULL; /* lam, fix: none when isolated */
        if (src) gather(p[k], src, flat, nl);
        else memset(p[k], 0, (size_t)nl * sizeof(double));
    }
    return 0;
}

/* A leaf's parts: vals[l] on each lane (or v on all), exact but for
 * fix_rel of its magnitude. Loops that vectorize. */
KV_CLONES static void leaf(struct kv_ev_ctx *c, const struct kv_sx *e, int nl, const double *vals, double v,
                           double fix_rel)
{
    double *restrict val = kv_ev_part(c, e, KV_EV_V);
    if (vals)
        for (int l = 0; l < nl; l++) val[l] = vals[l];
    else
        for (int l = 0; l < nl; l++) val[l] = v;
    if (c->values) return;
    double *restrict S = kv_ev_part(c, e, KV_EV_S), *restrict pk = kv_ev_part(c, e, KV_EV_PK);
    double *restrict fix = kv_ev_part(c, e, KV_EV_FIX);
    for (int l = 0; l < nl; l++) {
        const double m = fabs(val[l]);
        S[l] = pk[l] = m, fix[l] = fix_rel * m;
    }
    exact_errors(c, e, nl);
}

static int eval_leaf(struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    double vals[LANES];
    switch (e->op) {
    case KV_SX_NUM: /* a literal the shader holds as a float: its rounding is an error */
        leaf(c, e, nl, NULL, e->num, (double)(float)e->num == e->num ? 0 : c->x->u);
        return 0;
    case KV_SX_PARAM:
        leaf(c, e, nl, NULL, c->x->param[e->ref], 0);
        return 0;
    case KV_SX_VAR:
        for (int l = 0; l < nl; l++) vals[l] = (double)c->var[e->ref][l];
        leaf(c, e, nl, vals, 0, 0);
        return 0;
    default: { /* a random draw (input preparation) */
        uint32_t stream = 1000u + 64u * (uint32_t)c->stmt_pos + (uint32_t)e->id;
        /* normals of consecutive elements (a prepare statement's block, as
         * they always are: such a statement is never virtual) drawn as a
         * block, the same values as one at a time */
        int run = e->ref == KV_FN_NORMAL && nl > 1;
        for (int l = 1; run && l < nl; l++) run = c->flat[l] == c->flat[0] + l;
        if (run) kv_rng_normal_block(c->x->c->seed, stream, (uint64_t)c->flat[0], (size_t)nl, vals);
        for (int l = 0; l < nl && !run; l++)
            vals[l] = e->ref == KV_FN_NORMAL ? kv_rng_normal(c->x->c->seed, stream, (uint64_t)c->flat[l])
                                             : kv_rng_uniform(c->x->c->seed, stream, (uint64_t)c->flat[l]);
        leaf(c, e, nl, vals, 0, 0);
        return 0;
    }
    }
}

/* p[0] into p[1..nl): in the widest stores the CPU has (as many bytes as a
 * block of the node's lanes, for every part of every node a block reads
 * uniformly: a tenth of a spec kernel's time in 16-byte stores). */
KV_CLONES static void copy_lane0(double *p, int nl)
{
    const double v = p[0];
    for (int l = 1; l < nl; l++) p[l] = v;
}

/* A node whose variables hold one value on every lane: once, then copied.
 * Its value depends on nothing else in the context's life (one case's spec,
 * one statement, one mode; draws depend on every variable, ~0u, and are
 * never uniform across lanes): where its scratch still holds the lanes made
 * so at the same values of its variables (kept, key: a block after another
 * in the same row reads the row's mean and rstd again), they are kept. Any
 * other evaluation of the node writes its scratch, and clears kept
 * (kv_ev_node), but one of a node of no variable at all, which makes the
 * same value again. */
static int once(struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    int64_t *key = c->key + (size_t)e->id * KV_SX_MAX_VARS;
    const int keep = !(e->vars >> KV_SX_MAX_VARS); /* a draw's lanes (never uniform) are not kept */
    if (keep && c->kept[e->id] >= nl) {
        int same = 1;
        for (unsigned m = e->vars; m && same; m &= m - 1) same = key[__builtin_ctz(m)] == c->var[__builtin_ctz(m)][0];
        if (same) return 0;
    }
    if (kv_ev_node(c, e, 1)) return -1; /* clears kept (a node with variables) */
    for (int k = 0; k < (c->values ? 1 : KV_EV_PARTS); k++)
        if (kv_ev_live(c, e, k)) copy_lane0(kv_ev_part(c, e, k), nl);
    if (!keep) return 0;
    for (unsigned m = e->vars; m; m &= m - 1) key[__builtin_ctz(m)] = c->var[__builtin_ctz(m)][0];
    c->kept[e->id] = nl;
    return 0;
}

/* Whether evaluating e can fail: only an array read at a computed index
 * (one outside the array) or a reduction (its range) can; a plain index
 * variable stays inside (bind checks the extents). */
static int may_fail(const struct kv_sx *e)
{
    if (e->op == KV_SX_SUM || e->op == KV_SX_RMAX || e->op == KV_SX_RMIN) return 1;
    for (int i = 0; i < e->n; i++)
        if ((e->op == KV_SX_ACCESS && e->kid[i]->op != KV_SX_VAR) || may_fail(e->kid[i])) return 1;
    return 0;
}

/* where(q, a, b): a branch that no lane takes and that no lane's condition
 * may flip to (kv_ev_where reads it only there) is not evaluated, unless its
 * evaluation could fail (then it is, as every branch always was, for the
 * same error). Evaluating for values alone (c->values), a flip is nobody's:
 * the value of the branch taken. */
static int eval_where(struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    if (kv_ev_node(c, e->kid[0], nl)) return -1;
    const double *q = kv_ev_part(c, e->kid[0], KV_EV_V), *qf = kv_ev_part(c, e->kid[0], KV_EV_FIX);
    int take[3] = {0, 0, 0}, flip = 0;
    for (int l = 0; l < nl; l++) take[q[l] != 0 ? 1 : 2] = 1, flip |= !c->values && qf[l] > 0;
    for (int i = 1; i <= 2; i++)
        if ((flip || take[i] || may_fail(e->kid[i])) && kv_ev_node(c, e->kid[i], nl)) return -1;
    if (!c->values) {
        kv_ev_where(c, e, nl);
        return 0;
    }
    double *o = kv_ev_part(c, e, KV_EV_V);
    const double *a = kv_ev_part(c, e->kid[1], KV_EV_V), *b = kv_ev_part(c, e->kid[2], KV_EV_V);
    for (int l = 0; l < nl; l++) o[l] = q[l] != 0 ? a[l] : b[l];
    return 0;
}

/* a && b, a || b evaluated for values alone (c->values): where a decides
 * every lane (all 0 for &&, none 0 for ||) and b's evaluation cannot fail,
 * b is not evaluated. */
static int eval_logic(struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    if (kv_ev_node(c, e->kid[0], nl)) return -1;
    const double *a = kv_ev_part(c, e->kid[0], KV_EV_V);
    const int is_and = e->op == KV_SX_AND;
    int decided = !may_fail(e->kid[1]);
    for (int l = 0; l < nl && decided; l++) decided = (a[l] != 0) != is_and;
    if (!decided) {
        if (kv_ev_node(c, e->kid[1], nl)) return -1;
        kv_ev_binary(c, e, nl);
        return 0;
    }
    double *v = kv_ev_part(c, e, KV_EV_V);
    for (int l = 0; l < nl; l++) v[l] = !is_and;
    return 0;
}

static int node(struct kv_ev_ctx *c, const struct kv_sx *e, int nl);

int kv_ev_node(struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    const int rc = node(c, e, nl);
    if (!rc && c->zero_want && !c->values) kv_ev_zero_check(c, e, nl);
    return rc;
}

static int node(struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    if (nl > 1 && !(e->vars & ~c->uni)) return once(c, e, nl);
    if (e->vars) c->kept[e->id] = 0; /* its scratch written below: once's lanes gone */
    if (e->op == KV_SX_WHERE) return eval_where(c, e, nl);
    if (c->values && (e->op == KV_SX_AND || e->op == KV_SX_OR)) return eval_logic(c, e, nl);
    if (e->op == KV_SX_SUM || e->op == KV_SX_RMAX || e->op == KV_SX_RMIN) return kv_ev_reduce(c, e, nl, kv_ev_node);
    if (e->op == KV_SX_FUNC && (e->ref == KV_FN_NORMAL || e->ref == KV_FN_UNIFORM)) return eval_leaf(c, e, nl);
    for (int i = 0; i < e->n; i++)
        if ((e->op != KV_SX_ACCESS || e->kid[i]->op != KV_SX_VAR) && kv_ev_node(c, e->kid[i], nl)) return -1;
    switch (e->op) {
    case KV_SX_NUM:
    case KV_SX_PARAM:
    case KV_SX_VAR:
        return eval_leaf(c, e, nl);
    case KV_SX_ACCESS:
        return eval_access(c, e, nl);
    case KV_SX_FUNC:
        if (e->n == 2) kv_ev_binary(c, e, nl);
        else kv_ev_unary(c, e, nl);
        return 0;
    case KV_SX_NEG:
    case KV_SX_ROUND:
    case KV_SX_NOT:
        kv_ev_unary(c, e, nl);
        return 0;
    default:
        kv_ev_binary(c, e, nl);
        return 0;
    }
}

/* A block of nl consecutive elements from lo that lies within one row of
 * the target (its last index steps, the others stay): each lane's flat
 * index and index variables, in loops that vectorize; 0 where the block
 * crosses a row (eval_block carries lane by lane then). */
KV_CLONES static int block_in_row(struct kv_ev_ctx *c, const struct kv_ev_arr *t, size_t lo, int nl,
                                  int64_t *restrict flat)
{
    const int last = t->ndim - 1;
    if (last < 0) return 0;
    size_t i = lo;
    int64_t v0[KV_MAX_DIMS];
    for (int d = last; d >= 0; d--) v0[d] = (int64_t)(i % (size_t)t->shape[d]), i /= (size_t)t->shape[d];
    if (v0[last] + nl > t->shape[last]) return 0;
    for (int d = 0; d < last; d++) {
        int64_t *restrict v = c->var[d];
        for (int l = 0; l < nl; l++) v[l] = v0[d];
    }
    int64_t *restrict v = c->var[last];
    for (int l = 0; l < nl; l++) v[l] = v0[last] + l, flat[l] = (int64_t)lo + l;
    return 1;
}

/* Elements [lo, hi) of statement st's target, one block, into dst[k][0..hi-lo)
 * (dst NULL: left in the statement's scratch, kv_ev_part of its rhs). */
static int eval_block(struct kv_ev_ctx *c, const struct kv_ev_arr *t, size_t lo, size_t hi,
                      double *const dst[KV_EV_PARTS])
{
    const int nl = (int)(hi - lo);
    int64_t flat[LANES];
    const int in_row = !t->at && block_in_row(c, t, lo, nl, flat);
    for (int l = 0; l < nl && !in_row; l++) {
        size_t i = t->at ? t->at[lo + (size_t)l] : lo + (size_t)l;
        flat[l] = (int64_t)i;
        if (!t->at && l > 0) { /* the next element: the last index up by one, carried */
            int d = t->ndim - 1;
            for (; d >= 0 && c->var[d][l - 1] + 1 == t->shape[d]; d--) c->var[d][l] = 0;
            if (d >= 0) c->var[d][l] = c->var[d][l - 1] + 1;
            for (d--; d >= 0; d--) c->var[d][l] = c->var[d][l - 1];
            continue;
        }
        for (int d = t->ndim - 1; d >= 0; d--) {
            c->var[d][l] = (int64_t)(i % (size_t)t->shape[d]);
            i /= (size_t)t->shape[d];
        }
    }
    c->flat = flat;
    c->uni = 0;
    for (int v = 0; v < c->st->n_target; v++) {
        int same = 1;
        for (int l = 1; l < nl && same; l++) same = c->var[v][l] == c->var[v][0];
        c->uni |= (unsigned)same << v;
    }
    if (kv_ev_node(c, c->st->rhs, nl)) return -1;
    for (int k = 0; dst && k < KV_EV_PARTS; k++)
        if (dst[k]) memcpy(dst[k], kv_ev_part(c, c->st->rhs, k), (size_t)nl * sizeof(double));
    return 0;
}

enum kv_status kv_ev_stmt(struct kv_ev *x, int i)
{
    const struct kv_spec_stmt *st = &x->s->stmt[i];
    const struct kv_ev_arr *t = &x->arr[st->sym];
    /* at least 64 blocks where the array allows (the threads share them);
     * a value does not depend on its block: a lane's reductions run in order */
    const size_t count = t->at ? t->n_at : t->count; /* a compact output: its sampled elements */
    size_t per = (count + 63) / 64;
    per = per < 32 ? 32 : per > LANES ? LANES : (per + 31) / 32 * 32;
    const size_t nblocks = (count + per - 1) / per;
    size_t first_bad = (size_t)-1;
    char err[1600] = "";
    int oom = 0;
    enum kv_status fast;
    if (!t->at && !t->store && kv_ev_contract(x, i, &fast)) return fast;
#pragma omp parallel
    {
        struct kv_ev_ctx c;
        if (kv_ev_ctx_init(&c, x, st, i, t->stage) == 0) kv_ev_ctx_values(&c, t->values_only);
        else {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(dynamic, 4)
        for (size_t b = 0; b < nblocks; b++) {
            if (c.failed || oom) continue;
            size_t lo = b * per, hi = lo + per < count ? lo + per : count;
            double *dst[KV_EV_PARTS];
            for (int k = 0; k < KV_EV_PARTS; k++) dst[k] = t->part[k] ? t->part[k] + lo : NULL; /* values_only */
            if (eval_block(&c, t, lo, hi, t->store ? NULL : dst)) {
#pragma omp critical(kv_ev_error)
                if (b < first_bad) first_bad = b, snprintf(err, sizeof err, "%s", c.err);
            } else if (t->store) {
                kv_store_f64_n(t->dtype, t->store, lo, kv_ev_part(&c, st->rhs, KV_EV_V), hi - lo);
            }
        }
        kv_ev_ctx_free(&c);
    }
    if (oom) return kv_error(KV_EDEVICE, "out of host memory evaluating %s", x->s->path);
    if (first_bad != (size_t)-1) return kv_error(KV_EDATA, "%s", err);
    return KV_OK;
}

enum kv_status kv_ev_range(const struct kv_ev *x, int i, size_t lo, size_t hi,
                           void (*out)(void *ctx, size_t at, size_t n, double *const part[KV_EV_PARTS]), void *ctx)
{
    const struct kv_spec_stmt *st = &x->s->stmt[i];
    const struct kv_ev_arr *t = &x->arr[st->sym];
    struct kv_ev_ctx *c = kv_ev_ctx_take(x, st, i, t->stage);
    if (!c) return kv_error(KV_EDEVICE, "out of host memory evaluating %s", x->s->path);
    enum kv_status rc = KV_OK;
    double *part[KV_EV_PARTS]; /* out() reads the lanes where they were made */
    for (int k = 0; k < KV_EV_PARTS; k++) part[k] = kv_ev_part(c, st->rhs, k);
    for (size_t b = lo; !rc && b < hi; b += LANES) {
        const size_t e = hi - b < LANES ? hi : b + LANES;
        if (eval_block(c, t, b, e, NULL)) rc = kv_error(KV_EDATA, "%s", c->err);
        else out(ctx, b - lo, e - b, part);
    }
    kv_ev_ctx_give(x, c);
    return rc;
}

enum kv_status kv_ev_isolate(struct kv_ev_arr *a)
{
    for (int k = 0; k < 2; k++)
        if (!a->iso[k] && !(a->iso[k] = malloc(a->count * sizeof(double))))
            return kv_error(KV_EDEVICE, "out of host memory for an intermediate");
    const double *v = a->part[KV_EV_V], *lam = a->part[KV_EV_LAM], *fix = a->part[KV_EV_FIX], *chn = a->part[KV_EV_CHN];
    const enum kv_dtype t = a->dtype;
#pragma omp parallel for schedule(static)
    for (size_t n = 0; n < a->count; n++) {
        /* lambda = 8 in the chained allowance, as the built-ins' */
        double allowed = 8 * lam[n] + fix[n] + 0.5 * kv_ulp(t, v[n]) + chn[n];
        a->iso[0][n] = kv_ev_round(t, v[n]);
        a->iso[1][n] = isfinite(allowed) ? allowed : 0;
    }
    return KV_OK;
}
