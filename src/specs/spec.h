/* Spec kernels: a kernel written down as data (a JSON spec file and its
 * shaders) instead of C. The spec declares what a built-in's C file does
 * (parameters, tensors, stages, input distributions, the sweep) and the math
 * in index notation; the float64 oracles and every element's bound are
 * derived from the math (sx.h: the language, eval.h: the evaluator). A spec
 * kernel registers a struct kv_kernel, so nothing above this layer knows the
 * difference (man kverify, SPEC KERNELS, documents the format). */
#ifndef KV_SPEC_H
#define KV_SPEC_H

#include "core/status.h"
#include "kernels/kernel.h"
#include "specs/sx.h"

#define KV_SPEC_MAX_STMTS 64
#define KV_SPEC_MAX_SYMS (KV_MAX_TENSORS + KV_SPEC_MAX_STMTS)
#define KV_SPEC_MAX_CONSTS 8

/* How an input's elements are drawn (seeded per tensor as the built-ins). */
enum kv_gen { KV_GEN_NORMAL, KV_GEN_UNIFORM, KV_GEN_RANDINT, KV_GEN_CONST, KV_GEN_MATH };

struct kv_spec_dist {
    enum kv_gen gen;
    char scale[128], offset[128]; /* expressions over the parameters (core/expr.h) */
    char lo[128], hi[128];        /* randint's range [lo, hi) */
    double nan_frac, inf_frac;    /* special values, when the choice below holds */
    int when_param, when_choice;  /* -1: always */
};

/* A named array of the math: an input, an output, or an intermediate that a
 * statement defines (temp). */
struct kv_spec_sym {
    char name[64];
    int tensor;  /* index in k.tensors, or -1 for a temp */
    int stmt;    /* defining statement, or -1 for an input */
    int ndim;    /* its index count */
    int stage;   /* outputs: the producing stage; math temps: the first stage reading them; else -1 */
    int virt;    /* a math temp computed where it is read, never stored (kv_spec_storage) */
};

/* "target[i, j] = expr": the target's index variables are var slots
 * 0..n_target-1; reductions take the next ones. */
struct kv_spec_stmt {
    int sym;
    int n_target;
    int n_vars;
    char var[KV_SX_MAX_VARS][32];
    char ext[KV_MAX_DIMS][64]; /* explicit extents of target indices ("" where inferred) */
    struct kv_sx *rhs;
    char text[512];
    int prepare; /* computes an input (input preparation), not the kernel's math */
    int pos;     /* its place in its list ("math" or "prepare") */
    int n_nodes; /* of rhs */
};

struct kv_spec_stage_push {
    int param[KV_MAX_PARAMS + KV_SPEC_MAX_CONSTS]; /* a parameter, or KV_MAX_PARAMS + a constant */
    int n;
};

struct kv_spec {
    struct kv_kernel k; /* first: the registry hands out &spec->k */
    char path[1024];    /* the spec file, for messages */
    char dir[1024];     /* its folder ("" for an embedded spec) */
    int builtin;        /* embedded: its shaders are embedded sources */
    char name[64], summary[160];
    struct kv_param_def params[KV_MAX_PARAMS];
    char param_text[KV_MAX_PARAMS][3][160]; /* name, default, help (or choices) */
    char choices[KV_MAX_PARAMS][160];
    /* Constants the host computes in float64 from the parameters and passes
     * as float push constants (PyTorch's bias corrections): in the math they
     * are exact, as the device sees them; index KV_MAX_PARAMS + j there. */
    char const_name[KV_SPEC_MAX_CONSTS][64], const_expr[KV_SPEC_MAX_CONSTS][256];
    int n_consts;
    struct kv_tensor_def tensors[KV_MAX_TENSORS];
    char tensor_text[KV_MAX_TENSORS][2][64]; /* name, dims */
    struct kv_spec_dist dist[KV_MAX_TENSORS];
    struct kv_stage_def stages[KV_MAX_STAGES];
    char stage_text[KV_MAX_STAGES][4][1024]; /* name, source, push doc, dispatch doc */
    char groups[KV_MAX_STAGES][3][128];      /* group counts, expressions */
    char flops[KV_MAX_STAGES][128];
    struct kv_spec_stage_push push[KV_MAX_STAGES];
    struct kv_spec_sym sym[KV_SPEC_MAX_SYMS];
    int n_syms;
    struct kv_spec_stmt stmt[KV_SPEC_MAX_STMTS];
    int n_stmts;
    int order[KV_SPEC_MAX_STMTS]; /* statements, each after those it reads */
    char *sweep_text;
    const char *sweep[129];
};

/* Parse the spec file at path (text of len bytes) into a new spec (*out,
 * malloc'd; kv_spec_free). builtin: the spec is embedded, its shaders are
 * embedded sources; else they are paths relative to the spec's folder. A bad
 * spec is KV_EDATA naming the file, the field and, in the math, the column. */
enum kv_status kv_spec_parse(const char *path, const char *text, size_t len, int builtin, struct kv_spec **out);
void kv_spec_free(struct kv_spec *s);

/* The spec of a kernel made by kv_spec_parse, or NULL for a built-in. */
const struct kv_spec *kv_spec_of(const struct kv_kernel *k);

/* Which arrays the evaluator stores (storage.c): marks the math temps that
 * are computed where they are read (sym.virt: computed element by element,
 * their arrays indexed by plain variables, no explicit extent, and no
 * statement reading an element of theirs repeatedly along a variable that
 * does not index them), and sets k.sample_outputs to the outputs that no
 * statement reads and BLAS does not make (made block by block as they are
 * judged, or with --sample holding the sample alone). */
void kv_spec_storage(struct kv_spec *s);
/* Whether a math statement of another stage than y's reads symbol y (an
 * output a later stage reads isolated: kv_ev_isolate). */
int kv_spec_read_by_other_stage(const struct kv_spec *s, int y);

/* The kernel callbacks (oracle.c) and their helpers. */
enum kv_status kv_spec_validate(struct kv_case *c);
enum kv_status kv_spec_inputs(struct kv_case *c);
enum kv_status kv_spec_oracle(struct kv_case *c);
/* An output no statement reads, made block by block (kernel.oracle_block)
 * from what kv_spec_oracle kept in c->state. */
enum kv_status kv_spec_block(const struct kv_case *c, int t, size_t lo, size_t hi, int chained,
                             const struct kv_oracle_block *b);
/* The launch rule's cap on groups.x: the device's max_x, and at most 2^31
 * invocations along x, so that a grid-stride step fits 32 bits (stages.c). */
uint32_t kv_spec_max_x(uint32_t max_x, uint32_t local_x);
double kv_spec_flops(const struct kv_case *c);

/* The parameter of k named name, where a dash of its flag may be written as
 * an underscore (--ignore-index is ignore_index); -1 if none. */
int kv_spec_param(const struct kv_kernel *k, const char *name);

/* Constant j of case c (float64, before the device's f32 rounding). */
enum kv_status kv_spec_const(const struct kv_case *c, int j, double *v);

/* Find the symbol named name, -1 if none. */
int kv_spec_sym(const struct kv_spec *s, const char *name);

/* Load every spec kernel: the embedded ones, then each folder of dirs (from
 * --kernels), of $KVERIFY_KERNELS (colon-separated) and the installed share
 * folder, registering each (kernels/kernel.h). */
enum kv_status kv_specs_load(const char *const *dirs, int n_dirs);

#endif
