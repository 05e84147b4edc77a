/* The evaluator's inner parts (eval.h says what is carried): the storage of
 * a case's arrays, each thread's scratch, and the elementwise operations
 * with their error rules; eval.c walks the tree and reduces. */
#ifndef KV_SPEC_EV_OPS_H
#define KV_SPEC_EV_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "specs/spec.h"

enum { KV_EV_V, KV_EV_S, KV_EV_LAM, KV_EV_FIX, KV_EV_CHN, KV_EV_PK, KV_EV_PARTS };

/* A node's parts known to be 0 on every lane before it is evaluated
 * (ev_zero.c): its lam, its chn, or both. */
enum { KV_EV_ZLAM = 1, KV_EV_ZCHN = 2, KV_EV_ZALL = 3 };

/* A symbol's storage for one case. */
struct kv_ev_arr {
    int ndim;
    int64_t shape[KV_MAX_DIMS], stride[KV_MAX_DIMS];
    size_t count;
    const void *raw;              /* inputs: the tensor's elements, of dtype */
    enum kv_dtype dtype;
    double *part[KV_EV_PARTS];    /* computed arrays: v, S, lam, fix, chn, pk */
    double *iso[2];               /* outputs read by a later stage: the value rounded to dtype, and its
                                     allowed error (what the later stage is fed; eval.h) */
    int stage;                    /* outputs: the producing stage; temps: the stage that reads them; -1 */
    int output;                   /* a kernel output (another stage reads it isolated) */
    int owned;                    /* part[] allocated here (else borrowed from the case) */
    int values_only;              /* part[KV_EV_V] alone (the others NULL, read as 0): a prepare
                                     statement's array, whose errors nothing reads */
    void *store;                  /* a prepare statement's input: its values rounded into the tensor (of
                                     dtype) block by block as they are made, no array of them held */
    const size_t *at;             /* a compact output: part[] holds the flat elements at[0..n_at) alone */
    size_t n_at;
};

struct kv_ev {
    const struct kv_spec *s;
    const struct kv_case *c;
    int exact;                    /* no rounding points (the exact oracle) */
    double u;                     /* unit roundoff of the arithmetic (f32) */
    double param[KV_MAX_PARAMS + KV_SPEC_MAX_CONSTS]; /* parameters, then constants, as the device sees them */
    struct kv_ev_arr arr[KV_SPEC_MAX_SYMS];
    /* Contexts kept between kv_ev_range calls (an output made block by
     * block: a call per block of the judge's), or NULL: each call makes its
     * own. */
    struct kv_ev_pool *pool;
};


#define KV_EV_LANES 256
/* A part's place in the scratch: its lanes, then 8 doubles of padding, so
 * that the parts an operation reads and writes side by side (18 of them for
 * a + b) do not all fall at the same address modulo 4 KiB, where a store
 * delays the loads that follow it (arith's one pass lost a third to that). */
#define KV_EV_STRIDE (KV_EV_LANES + 8)

/* One thread evaluating one statement. */
struct kv_ev_ctx {
    const struct kv_ev *x;
    const struct kv_spec_stmt *st;
    int stmt_pos; /* the statement's place in its list (messages, random streams) */
    int stage;    /* the stage the statement is evaluated for (stage isolation) */
    double *scr;  /* every node's parts for a block: node id * KV_EV_PARTS * KV_EV_STRIDE */
    int64_t *var[KV_SX_MAX_VARS]; /* each index variable's value per lane */
    int64_t *pool;                /* variables of reductions evaluated one lane at a time, by depth */
    unsigned uni;                 /* the variables whose value is the same on every lane (bit per slot) */
    int depth;
    const int64_t *flat;          /* the target's flat index per lane */
    struct kv_ev_ctx **sub;       /* per symbol: the context computing a virtual temp where it is read */
    int memo_n;                   /* a virtual temp's context: the elements its scratch holds, */
    int64_t memo[KV_EV_LANES];    /* by flat index (a read of the same elements again is a copy) */
    char err[1600];
    int failed;
    int slot; /* its slot in x->pool + 1; 0: made for one caller */
    int values; /* for a values_only target: only the values must be right (its errors are nobody's) */
    int *kept;  /* per node id: the lanes its scratch holds from once (eval.c), 0: none */
    /* per node id: its parts known to be 0 (KV_EV_Z*, ev_zero.c), which the
     * operations leave unwritten: the scratch holds 0 there from the start */
    unsigned char *zero;
    unsigned char *zero_want; /* KVERIFY_TEST_EV_ZEROS=1: the analysis, checked (zero then all 0); else NULL */
    int64_t *key; /* per node id, KV_SX_MAX_VARS each: the values of its variables they were made at */
};

/* fmax, inlined: the larger, a NaN only where both are */
static inline double kv_maxd(double a, double b)
{
    return b > a || a != a ? b : a;
}

static inline double *kv_ev_part(const struct kv_ev_ctx *c, const struct kv_sx *e, int part)
{
    return c->scr + ((size_t)e->id * KV_EV_PARTS + (size_t)part) * KV_EV_STRIDE;
}

/* Whether part is among those a KV_EV_Z* mask calls 0. */
static inline int kv_ev_known_zero(unsigned zero, int part)
{
    return (part == KV_EV_LAM && (zero & KV_EV_ZLAM)) || (part == KV_EV_CHN && (zero & KV_EV_ZCHN));
}

/* Whether node e's part is written when it is evaluated (not known 0). */
static inline int kv_ev_live(const struct kv_ev_ctx *c, const struct kv_sx *e, int part)
{
    return !kv_ev_known_zero(c->zero[e->id], part);
}

/* A context for statement i of x (at st, for stage) from x->pool where one
 * is free (made there on first use), else made for the caller alone; NULL
 * when out of memory. kv_ev_ctx_give hands it back: to the pool unless it
 * failed (its state then is the error's), else freed. A context's state
 * between calls is a virtual temp's memo, whose values depend only on the
 * elements it holds. Thread-safe. */
struct kv_ev_ctx *kv_ev_ctx_take(const struct kv_ev *x, const struct kv_spec_stmt *st, int i, int stage);
void kv_ev_ctx_give(const struct kv_ev *x, struct kv_ev_ctx *c);
/* x->pool made (0), or -1 when out of memory; kv_ev_pool_free frees it and its contexts. */
int kv_ev_pool_new(struct kv_ev *x);
void kv_ev_pool_free(struct kv_ev *x);

/* out[id] for each node of st's expression, evaluated for stage: the parts
 * (KV_EV_ZLAM, KV_EV_ZCHN) that are 0 on every lane whatever the inputs. A
 * node's lam and chn are first-order sums of its operands' (an error of 0
 * scaled stays +0), so they are 0 where its operands' are: leaves and
 * inputs carry neither, a comparison neither, a sum makes lam, another
 * stage's output read isolated brings chn, and a temp brings its
 * statement's. KVERIFY_TEST_EV_ZEROS=1: no part is left unwritten,
 * and each one called 0 is checked to be (kv_ev_zero_check). */
void kv_ev_zero_parts(const struct kv_ev *x, const struct kv_spec_stmt *st, int stage, unsigned char *out);
/* Under KVERIFY_TEST_EV_ZEROS=1, node e's parts that its analysis calls 0
 * (c->zero_want) checked over nl lanes: a message and abort() where one is
 * not. */
void kv_ev_zero_check(const struct kv_ev_ctx *c, const struct kv_sx *e, int nl);

/* 0, or -1 when out of memory. */
int kv_ev_ctx_init(struct kv_ev_ctx *c, const struct kv_ev *x, const struct kv_spec_stmt *st, int i, int stage);
void kv_ev_ctx_free(struct kv_ev_ctx *c);
/* c->values set, and so in the contexts of the virtual temps it reads (a
 * prepare statement's: its virtual temps' values alone too, which are the
 * full rules' values, unit.spec's prepare_ops). */
void kv_ev_ctx_values(struct kv_ev_ctx *c, int values);

/* Node e and its kids for nl lanes (eval.c: kv_ev_node); a reduction node
 * (ev_reduce.c), its range and terms by node; 0, or -1 with c->err set
 * (kv_ev_fail_at: the element at lane, formatted from fmt with a and b). */
typedef int kv_ev_node_fn(struct kv_ev_ctx *c, const struct kv_sx *e, int nl);
kv_ev_node_fn kv_ev_node;
int kv_ev_reduce(struct kv_ev_ctx *c, const struct kv_sx *e, int nl, kv_ev_node_fn *node);
int kv_ev_fail_at(struct kv_ev_ctx *c, const struct kv_sx *e, int lane, const char *fmt, double a, double b);

/* Node e for nl lanes, its kids already evaluated. */
void kv_ev_unary(struct kv_ev_ctx *c, const struct kv_sx *e, int nl);
void kv_ev_binary(struct kv_ev_ctx *c, const struct kv_sx *e, int nl);
void kv_ev_where(struct kv_ev_ctx *c, const struct kv_sx *e, int nl);

/* v rounded to dtype t (RNE, as kv_store_f64 does). */
double kv_ev_round(int t, double v);

#endif
