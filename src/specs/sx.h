/* The math of a spec kernel: one statement per named array,
 *   target[i, j] = expr
 * where expr has numbers, parameters, index variables, array elements
 * a[i, j+1] (an index may be any integer-valued expression, labels[r] too),
 * + - * / %, unary - and !, comparisons (== != < <= > >=, value 1 or 0),
 * && ||, the functions exp log sqrt rsqrt tanh erf sigmoid sin cos abs floor
 * min max pow(a, b) where(c, a, b), the random draws normal() and uniform() (in [0, 1),
 * input preparation only, outside reductions), reductions sum(k in lo..hi, e), max(...), min(...)
 * over lo <= k < hi, and rounding points round(bf16|f16|f32, e). A target
 * index that indexes no array names its extent: z[r in rows, c in dim]. */
#ifndef KV_SX_H
#define KV_SX_H

#include "core/status.h"

#define KV_SX_MAX_KIDS 4
#define KV_SX_MAX_VARS 16

enum kv_sx_op {
    KV_SX_NUM, KV_SX_PARAM, KV_SX_VAR, KV_SX_ACCESS,
    KV_SX_NEG, KV_SX_NOT,
    KV_SX_ADD, KV_SX_SUB, KV_SX_MUL, KV_SX_DIV, KV_SX_MOD,
    KV_SX_EQ, KV_SX_NE, KV_SX_LT, KV_SX_LE, KV_SX_GT, KV_SX_GE, KV_SX_AND, KV_SX_OR,
    KV_SX_FUNC, KV_SX_WHERE, KV_SX_ROUND,
    KV_SX_SUM, KV_SX_RMAX, KV_SX_RMIN, /* kids: lo, hi, body; ref: the variable's slot */
};

enum kv_sx_fn {
    KV_FN_EXP, KV_FN_LOG, KV_FN_SQRT, KV_FN_RSQRT, KV_FN_TANH, KV_FN_ERF, KV_FN_SIGMOID, KV_FN_SIN, KV_FN_COS,
    KV_FN_ABS, KV_FN_FLOOR, KV_FN_MIN, KV_FN_MAX, KV_FN_POW,
    KV_FN_NORMAL, KV_FN_UNIFORM, /* random draws: input preparation only */
    KV_FN_COUNT,
};

struct kv_sx {
    enum kv_sx_op op;
    int pos;    /* 1-based column in the statement */
    int ref;    /* PARAM: index; VAR: slot; ACCESS: symbol; FUNC: kv_sx_fn; ROUND: dtype; reductions: slot */
    double num; /* NUM */
    int n;
    struct kv_sx *kid[KV_SX_MAX_KIDS];
    int id;     /* post-order number within its statement (the evaluator's scratch slot) */
    unsigned vars; /* the index variables (bit per slot) its value depends on; ~0u: each element's own (draws) */
};

/* What a name in the math means to the spec (lookups return -1 when not). */
struct kv_sx_names {
    void *ctx;
    int (*param)(void *ctx, const char *name);
    int (*array)(void *ctx, const char *name, int *ndim); /* a symbol and its index count (-1: not yet known) */
};

/* A parsed statement: the target's symbol name and index variables, the
 * variables' names by slot, and the expression. */
struct kv_sx_stmt {
    char target[64];
    int n_target, n_vars;
    char var[KV_SX_MAX_VARS][32];
    char ext[4][64]; /* "r in rows": a target index's extent where it indexes no array ("" else) */
    struct kv_sx *rhs;
    int n_nodes;
};

/* Parse text into st. Errors are KV_EDATA "<what> column N: cause". */
enum kv_status kv_sx_parse(const char *what, const char *text, const struct kv_sx_names *names, struct kv_sx_stmt *st);
void kv_sx_free(struct kv_sx *e);
/* Whether e reads symbol sym (anywhere), and whether it holds a ROUND. */
int kv_sx_reads(const struct kv_sx *e, int sym);
int kv_sx_rounds(const struct kv_sx *e);
/* The column of the first random draw in e (inside a reduction when
 * in_reduction), 0 if none. */
int kv_sx_draws(const struct kv_sx *e, int in_reduction);
/* The name of function f ("exp"). */
const char *kv_sx_fn_name(int f);

#endif
