/* The evaluator's parts known to be 0 before a block is evaluated (ev_ops.h,
 * kv_ev_zero_parts): lam and chn, by the rules the operations follow
 * (ev_ops.c, ev_reduce.c, eval.c). An element-wise statement that reads
 * inputs alone carries neither anywhere, and its operations then read and
 * write four parts of the six. */
#include <stdio.h>
#include <stdlib.h>

#include "specs/ev_ops.h"

static unsigned node_zero(const struct kv_ev *x, const struct kv_sx *e, int stage, unsigned char *out);

/* A read of symbol e->ref, as eval_access makes it: an input, exact;
 * another stage's output, isolated (its chn the producer's allowance, no
 * lam); an array of values alone (no error part at all); a temp or an
 * output of the reader's stage, its statement's parts, evaluated for its
 * own stage, there (a virtual temp) or stored whole (kv_ev_stmt, or as a
 * contraction, kv_ev_contract: the same parts, chn 0). */
static unsigned access_zero(const struct kv_ev *x, const struct kv_sx *e, int stage)
{
    const struct kv_spec *s = x->s;
    const struct kv_ev_arr *a = &x->arr[e->ref];
    const int st = s->sym[e->ref].stmt;
    if (!s->sym[e->ref].virt) { /* eval_access's order: a virtual temp is evaluated before any of these */
        if (a->raw) return KV_EV_ZALL;
        if (a->output && a->stage != stage) return KV_EV_ZLAM;
        if (a->values_only) return KV_EV_ZALL;
    }
    return st >= 0 ? node_zero(x, s->stmt[st].rhs, a->stage, NULL) : 0;
}

static unsigned node_zero(const struct kv_ev *x, const struct kv_sx *e, int stage, unsigned char *out)
{
    unsigned k[KV_SX_MAX_KIDS] = {0}, z = 0;
    for (int i = 0; i < e->n; i++) k[i] = node_zero(x, e->kid[i], stage, out);
    switch (e->op) {
    case KV_SX_NUM: case KV_SX_PARAM: case KV_SX_VAR: z = KV_EV_ZALL; break; /* leaves: exact */
    case KV_SX_ACCESS: z = access_zero(x, e, stage); break;
    case KV_SX_NEG: case KV_SX_NOT: case KV_SX_ROUND: z = k[0]; break; /* the operand's, scaled */
    case KV_SX_ADD: case KV_SX_SUB: case KV_SX_MUL: case KV_SX_DIV: case KV_SX_MOD: z = k[0] & k[1]; break;
    case KV_SX_EQ: case KV_SX_NE: case KV_SX_LT: case KV_SX_LE: case KV_SX_GT: case KV_SX_GE:
    case KV_SX_AND: case KV_SX_OR: z = KV_EV_ZALL; break; /* a flip's error goes into fix */
    case KV_SX_FUNC:
        if (e->ref == KV_FN_NORMAL || e->ref == KV_FN_UNIFORM) z = KV_EV_ZALL; /* draws: leaves */
        else z = e->n == 2 ? k[0] & k[1] : k[0]; /* pow: both scaled; min, max: the larger of each */
        break;
    case KV_SX_WHERE: z = k[1] & k[2]; break; /* a branch's parts; a flip's distance into fix */
    case KV_SX_SUM: z = k[2] & KV_EV_ZCHN; break; /* its own lam, the terms' chn */
    case KV_SX_RMAX: case KV_SX_RMIN: z = k[2]; break; /* the largest of the terms' */
    }
    if (out) out[e->id] = (unsigned char)z;
    return z;
}

void kv_ev_zero_parts(const struct kv_ev *x, const struct kv_spec_stmt *st, int stage, unsigned char *out)
{
    if (st->rhs) node_zero(x, st->rhs, stage, out);
}

void kv_ev_zero_check(const struct kv_ev_ctx *c, const struct kv_sx *e, int nl)
{
    for (int part = KV_EV_LAM; part <= KV_EV_CHN; part++) {
        if (!kv_ev_known_zero(c->zero_want[e->id], part)) continue;
        const double *p = kv_ev_part(c, e, part);
        for (int l = 0; l < nl; l++)
            if (p[l] != 0) {
                fprintf(stderr, "kverify: %s: statement %d, node %d (column %d): its %s is %g on lane %d, "
                                "where the evaluator takes it to be 0\n",
                        c->x->s->path, c->stmt_pos, e->id, e->pos, part == KV_EV_LAM ? "lam" : "chn", p[l], l);
                abort();
            }
    }
}
