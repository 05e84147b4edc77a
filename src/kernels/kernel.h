/* A kernel describes itself as data: parameters, tensors, stages (each a
 * compute shader with a documented interface), the input generator and the
 * float64 oracle. The pipeline (src/pipeline/run.c) does everything else generically, so
 * adding a kernel is one C file, its shaders and one registry line. */
#ifndef KV_KERNEL_H
#define KV_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/compare.h"
#include "core/judge.h"
#include "core/status.h"
#include "core/tensor.h"
#include "spirv/glsl.h"
#include "vk/vk.h"

#define KV_MAX_PARAMS 16
#define KV_MAX_TENSORS 24
#define KV_MAX_STAGES 8
#define KV_MAX_CHECKS 4

struct kv_case;

enum kv_param_type { KV_PARAM_INT, KV_PARAM_FLOAT, KV_PARAM_CHOICE };

struct kv_param_def {
    const char *name;     /* the flag is --name; also the report key */
    enum kv_param_type type;
    const char *def;      /* default value as text */
    double min, max;      /* inclusive range for INT and FLOAT */
    const char *choices;  /* "normal|uniform" for CHOICE */
    const char *help;
    int in_name;          /* always part of the case name (else only when not default) */
};

struct kv_pval {
    int64_t i;
    double f;
    int c;  /* index into choices */
};

enum kv_role { KV_INPUT, KV_OUTPUT };

struct kv_tensor_def {
    const char *name;
    enum kv_dtype dtype;
    enum kv_role role;
    int stage;            /* producing stage of an output */
    /* The shape, outermost first, as comma-separated extents: each a parameter
     * name, an integer, or a product "a*b". A lone parameter name can be
     * inferred from an input file's shape (--inputs). */
    const char *dims;
    /* Whether the tensor exists for a case (variants); NULL: always. Several
     * tensors may share a name when at most one is active per case. */
    int (*active)(const struct kv_case *c);
};

struct kv_spirv_blob {
    const uint32_t *words;
    size_t bytes;
};

struct kv_stage_def {
    const char *name;
    struct kv_spirv_blob subgroup;  /* built with subgroup arithmetic */
    struct kv_spirv_blob fallback;  /* shared-memory reductions only */
    int n_bindings;
    int bindings[KV_VK_MAX_BINDINGS]; /* tensor index bound at binding i */
    uint32_t push_size;
    const char *push_doc;      /* the push-constant block, as GLSL */
    const char *dispatch_doc;  /* how groups are counted, for list --abi */
    /* Fill the push constants and group counts for case c, given the shader's
     * workgroup size and the device's group-count limits. */
    void (*launch)(const struct kv_case *c, const uint32_t local[3],
                   const uint32_t max_groups[3], void *push, uint32_t groups[3]);
    int (*active)(const struct kv_case *c); /* NULL: always */
    /* Optional builds with KV_INT8 (8-bit storage buffers), used instead of
     * the two above where the device has storageBuffer8BitAccess. */
    struct kv_spirv_blob subgroup8, fallback8;
    unsigned needs; /* KV_NEED_* device features the stage cannot run without */
    /* Floating-point operations of one run of the stage (--bench GFLOP/s);
     * NULL: none worth counting (memory-bound stages report GB/s only). */
    double (*flops)(const struct kv_case *c);
    int flops_f16; /* its products take 16-bit operands, f16 or bf16 (judged against the f16 matmul ceiling) */
    /* The built-in GLSL source (shaders/), when not <kernel>_<stage>.comp
     * with dashes as underscores, and the defines it is built with beyond
     * KV_SUBGROUP and KV_INT8 (KV_SHADER_BF16CM, spirv/glsl.h), a user's
     * --shader .comp for the stage as well. */
    const char *source;
    unsigned source_defines;
    /* Optional build with KV_ALIGNED8: its paths for the cases where
     * aligned_case holds only (rows of whole 16-byte words), so that its
     * code and registers are those paths' alone. The runner uses it instead
     * of the subgroup build for those cases when the stage runs its built-in
     * shader; sources (mutants, the reversed stress runs) hold both paths. */
    struct kv_spirv_blob aligned;
    int (*aligned_case)(const struct kv_case *c);
    /* Optional builds with KV_CM_EL (the source's epilogues on the
     * accumulators' elements, by position): of the subgroup build and of the
     * aligned one. Where the device has the layout they are written for
     * (kv_vk_info.cm_layout), the runner uses them instead, and builds from
     * the source (mutants, --shader .comp) get KV_CM_EL too. */
    struct kv_spirv_blob el, aligned_el;
    /* The launch rule cannot honour --max-groups (a fixed grid, no grid-stride
     * loop): the stage runs uncapped, and list --abi says so. */
    int fixed_grid;
    /* A stage without built SPIR-V (no subgroup blob) is compiled at run time
     * from its source: an embedded file, or with source_disk a path on disk
     * (a spec kernel's shader beside its spec file). */
    int source_disk;
    /* Its source also builds with KV_ADDR (shaders/addr.glsl): each tensor
     * read through a device address in the push constants, in binding order
     * before the stage's own, so that a tensor longer than a binding reaches
     * (maxStorageBufferRange) runs in one dispatch where the device has
     * bufferDeviceAddress (pipeline/addr.h). */
    int addr;
};

enum {
    KV_NEED_STORAGE16 = 1, /* storageBuffer16BitAccess */
    KV_NEED_COOPMAT16 = 2, /* kv_vk_info.coopmat16: NV cooperative matrices, 16x16x16 f16 -> f32 */
    KV_NEED_COOPMAT_BF16 = 4, /* kv_vk_info.coopmat_bf16: KHR cooperative matrices, 16x16x16 bf16 -> f32 */
};

/* A property checked on an output beside the oracle comparison (qdq-affine's
 * round trip |qdq - w| <= s/2): the oracle fills a reference (y, S, bound,
 * slack) per element and the runner judges the output against it, reading
 * the chained rerun where there is one (the composed result), else the
 * isolated output or the candidate. The row is named "<output>.<name>". */
struct kv_check_def {
    const char *name;
    int output;
    const char *doc;
};

struct kv_check_ref {
    double *y, *S, *slack;  /* allocated by the oracle; freed with the case */
    struct kv_bound bound;
};

struct kv_kernel {
    const char *name;
    const char *summary;
    const struct kv_param_def *params;
    int n_params;
    const struct kv_tensor_def *tensors;
    int n_tensors;
    const struct kv_stage_def *stages;
    int n_stages;
    /* Whether the kernel rounds on purpose in the middle (then --oracle exact
     * and both apply: the oracle is called with c->exact set). */
    int has_exact;
    const struct kv_check_def *checks;
    int n_checks;
    const char *const *sweep;  /* NULL-terminated "k=v,k=v" overrides */
    int sweep_seeds;           /* seeds per sweep shape unless --seeds says otherwise */
    /* Validate the parameters beyond their ranges (the shapes are already
     * set from dims in c->t, and are >= 1 and free of overflow). */
    enum kv_status (*validate)(struct kv_case *c);
    /* Optional: the host bytes oracle() holds beyond the y and S of the
     * outputs it holds whole (their slack, flags, per-group state), a lower
     * bound, for the check that a case fits the host's memory
     * (pipeline/hostmem.h). whole: the mask of those outputs (the others made
     * block by block); sampled: the outputs verified at a sample of their
     * elements (--sample below their count); len[t]: output t's oracle
     * length (its elements, or its sample's where the oracle holds the
     * sample alone). */
    uint64_t (*oracle_host)(const struct kv_case *c, uint32_t whole, uint32_t sampled, const uint64_t *len);
    /* Fill the input tensors (already allocated) from c->seed. */
    enum kv_status (*inputs)(struct kv_case *c);
    /* Fill c->y, c->S (allocated, one per element) and c->bound for every
     * output, from the inputs the device sees. Intermediates that later stages
     * consume must be computed from the output rounded to its dtype, as the
     * runner feeds that rounded value to the device (stage isolation). */
    enum kv_status (*oracle)(struct kv_case *c);
    /* Optional: output t's oracle for the flat elements [lo, hi) into
     * b->y[0..hi-lo) and b->S, the same values oracle() would give, from the
     * case as oracle() left it (it may keep what the blocks need in c->aux[t]
     * or c->state); called from several threads at once, for the outputs in
     * block_outputs. There, the pipeline may mark t in c->blocked before
     * oracle(), which then leaves c->y[t] and c->S[t] (NULL) and t's
     * allowances alone, and judges t block by block: the float64 oracle of a
     * whole output is never held. For the outputs in block_slack, the block
     * holds the slack too (b->slack: what oracle() would put in c->slack or,
     * chained, c->slack_chain), and in block_bound the per-element bound
     * (b->lam, fix, ovf: c->lam, fix, ovf). */
    enum kv_status (*oracle_block)(const struct kv_case *c, int t, size_t lo, size_t hi, int chained,
                                   const struct kv_oracle_block *b);
    uint64_t block_outputs; /* the outputs (bit t) oracle_block makes */
    uint64_t block_slack, block_bound; /* those of them whose blocks hold their slack, their bound */
    /* Those of them made in blocks also where a later stage reads them (an
     * intermediate): oracle() then writes their rounded values, in their
     * dtype, into c->iso[t] (allocated by the pipeline), which the isolated
     * stage is given and oracle_block reads; their allowances stay whole. */
    uint64_t block_iso;
    /* Those of them whose block for the isolated row (chained 0) also holds,
     * where b->slack2 is not NULL, the slack the chained row's block would
     * hold: the two rows are then judged in one pass, each block made once. */
    uint64_t block_pair;
    /* Optional: check j's reference (what oracle() would put in c->chk[j]:
     * b->y, b->S and b->slack) for the flat elements [lo, hi) of its output,
     * for the checks in block_checks (bit j), made where the check's output
     * is made in blocks (kv_check_blocked): oracle() then leaves c->chk[j]
     * alone. Called from several threads at once. */
    enum kv_status (*check_block)(const struct kv_case *c, int j, size_t lo, size_t hi,
                                  const struct kv_oracle_block *b);
    uint64_t block_checks;
    /* The outputs (bit t) whose oracle, with --sample, holds only the sampled
     * elements: the runner marks them in c->compact and sizes y, S and every
     * allowance the oracle allocates by c->n_sample[t] (kv_oracle_len), in
     * the sample's order (kv_oracle_pos); an intermediate among them gets
     * c->iso[t], its whole oracle in its dtype, for the next stage's isolated
     * run (the oracle fills it instead of y there). */
    uint64_t sample_outputs;
    /* Optional: the stages may run in windows of the sequence where a
     * tensor is longer than a binding reaches (maxStorageBufferRange). Every
     * tensor a stage binds is laid out [batch, seq, ...] (the parameters at
     * window_batch and window_seq), and each stage's work is local to chunks
     * of window_chunk rows of one sequence: so a window of whole sequences, or
     * of whole chunks of one, runs as the case with that batch and seq, every
     * tensor bound from the window's first row (pipeline/binding.h).
     * window_chunk 0: whole tensors only. */
    int window_batch, window_seq, window_chunk;
    /* A spec kernel read from a folder: the folder (a case's command repeats
     * it as --kernels); NULL for the built-ins and the embedded specs. */
    const char *origin;
};

struct kv_case {
    const struct kv_kernel *k;
    struct kv_pval p[KV_MAX_PARAMS];
    uint64_t seed;
    char name[256];
    const char *label;  /* where given tensors came from (case name), or NULL */
    const char *inputs; /* the --inputs path, or NULL */
    /* Tensors given by files instead of generated (inputs) or run on the
     * device (outputs: candidates); borrowed, not owned. */
    const struct kv_tensor *given[KV_MAX_TENSORS];
    const char *given_from[KV_MAX_TENSORS];
    int given_kind[KV_MAX_TENSORS];  /* enum kv_given_kind (formats/source.h) */
    /* A fixture's expected outputs: judged in addition to the device's. */
    const struct kv_tensor *expected[KV_MAX_TENSORS];
    struct kv_tensor t[KV_MAX_TENSORS];
    double *y[KV_MAX_TENSORS];
    double *S[KV_MAX_TENSORS];
    /* Outputs whose oracle is made in blocks (oracle_block), and what the
     * kernel keeps for them (freed with the case). */
    int blocked[KV_MAX_TENSORS];
    double *aux[KV_MAX_TENSORS];
    void *state;                    /* what oracle() keeps for the blocks beyond aux, or NULL */
    void (*state_free)(void *state); /* frees it with the case */
    struct kv_bound bound[KV_MAX_TENSORS];
    int exact;                           /* the oracle call is for the exact oracle */
    /* --sample: the flat indices (sorted, unique) of output t to verify, or
     * NULL for all. An oracle may compute only those; others are ignored. */
    size_t *sample[KV_MAX_TENSORS];
    size_t n_sample[KV_MAX_TENSORS];
    int compact[KV_MAX_TENSORS];          /* kernel.sample_outputs: per sampled element */
    struct kv_tensor iso[KV_MAX_TENSORS]; /* a compact intermediate's whole oracle, in its dtype (the runner allocates it) */
    double *y_exact[KV_MAX_TENSORS];     /* with --oracle both: the exact oracle's */
    double *S_exact[KV_MAX_TENSORS];
    struct kv_bound bound_exact[KV_MAX_TENSORS];
    /* Per-element allowances (core/compare.h, struct kv_allow), allocated by the
     * oracle where it needs them and freed with the case; NULL: none.
     * slack applies to every row of the output; slack_chain replaces it on
     * rows computed from another implementation's intermediates (chained
     * reruns, candidates and expected outputs of later stages), so it must
     * include slack. tie and flush are for integer outputs; alt (NaN: none)
     * for float outputs of the isolated rows. */
    double *slack[KV_MAX_TENSORS], *slack_chain[KV_MAX_TENSORS], *alt[KV_MAX_TENSORS];
    unsigned char *ovf[KV_MAX_TENSORS]; /* kv_allow.ovf, for every row of the output */
    double *lam[KV_MAX_TENSORS], *fix[KV_MAX_TENSORS]; /* kv_allow.lam and .fix (a bound per element) */
    int16_t *tie[KV_MAX_TENSORS], *flush[KV_MAX_TENSORS];
    struct kv_check_ref chk[KV_MAX_CHECKS];
    /* Elements of each output whose oracle value has a legal alternative (a
     * rounding that a legal computation may flip), counted by the oracle. */
    size_t ambiguous[KV_MAX_TENSORS];
    /* A remark of the input generator for the report (e.g. poor conditioning). */
    char note[256];
    /* Extra k_op (units of u_acc) for the chained result of an output whose
     * stage consumes device intermediates: it carries their allowed error. */
    double k_chain[KV_MAX_TENSORS];
};

/* The registry: every kernel, NULL-terminated. */
extern const struct kv_kernel *const kv_kernels[];
const struct kv_kernel *kv_kernel_find(const char *name);
/* Every kernel, built-in then registered, by index (NULL past the end). */
const struct kv_kernel *kv_kernel_at(int i);
/* Add a kernel made at run time (a spec kernel, read from `from`); k must
 * outlive the process's use of the registry. KV_EDATA on a name taken. */
enum kv_status kv_kernel_register(const struct kv_kernel *k, const char *from);

/* Index of a parameter or tensor by name, -1 if none. */
int kv_param_index(const struct kv_kernel *k, const char *name);
int kv_tensor_index(const struct kv_kernel *k, const char *name);
/* Whether tensor t / stage s exists for case c, and the active tensor named
 * name (-1 if none). */
int kv_tensor_on(const struct kv_case *c, int t);
/* Whether check j's reference is made in blocks (kernel.check_block). */
int kv_check_blocked(const struct kv_case *c, int j);
int kv_stage_on(const struct kv_case *c, int s);
int kv_case_tensor(const struct kv_case *c, const char *name);
/* Set parameter i of c from text (range-checked); KV_EUSAGE names --flag. */
enum kv_status kv_param_set(struct kv_case *c, int i, const char *text);
/* Apply "k=v,k=v" overrides (a sweep entry). */
enum kv_status kv_param_apply(struct kv_case *c, const char *list);
/* Initialise c with the kernel's defaults. */
enum kv_status kv_case_init(struct kv_case *c, const struct kv_kernel *k, uint64_t seed);
/* Set every tensor's dtype and shape from its dims, then the kernel's
 * validate(). KV_EUSAGE on an overflowing or empty shape. */
enum kv_status kv_case_shapes(struct kv_case *c);
/* Allocate every active tensor from its shape (zeroed) and the oracle's y
 * and S for every active output. */
enum kv_status kv_case_alloc(struct kv_case *c);
/* The length of output t's oracle arrays (its elements, or its sample's when
 * compact); where element e's oracle goes: e, or the place in the sample of
 * the first sampled element >= e (n_sample past the last). */
size_t kv_oracle_len(const struct kv_case *c, int t);
size_t kv_oracle_pos(const struct kv_case *c, int t, size_t e);
/* The element whose oracle is at place q of output t's arrays (the inverse
 * of kv_oracle_pos): q, or the q-th sampled element where compact. */
static inline size_t kv_oracle_elem(const struct kv_case *c, int t, size_t q)
{
    return c->compact[t] ? c->sample[t][q] : q;
}
/* Output t's oracle for the n elements from e (y, S, the slack where sl is
 * given, and the overflow flag ovf: c->ovf[t], zeroed, and with sl
 * c->slack[t] allocated) into its arrays: in one piece where t is whole, the
 * sampled ones alone where it is compact. A zero flag is not written (where
 * none is set, the flags' pages are never touched). */
void kv_oracle_put_row(struct kv_case *c, int t, size_t e, size_t n, const double *y, const double *S,
                       const double *sl, unsigned char ovf);
/* A walk over output t's elements in ascending order from e0: where each
 * goes in the oracle arrays. kv_oracle_next(w, e, &q): 1 and q where
 * element e's oracle is held (every element, or where t is compact its
 * sampled ones alone); e may skip elements, never go back. */
struct kv_oracle_walk {
    const size_t *idx;
    size_t n, at;
    int compact;
};
struct kv_oracle_walk kv_oracle_walk(const struct kv_case *c, int t, size_t e0);
static inline int kv_oracle_next(struct kv_oracle_walk *w, size_t e, size_t *q)
{
    if (!w->compact) return *q = e, 1;
    while (w->at < w->n && w->idx[w->at] < e) w->at++;
    if (w->at < w->n && w->idx[w->at] == e) return *q = w->at++, 1;
    return 0;
}
/* "[rows, dim]" for documentation. */
void kv_dims_doc(const struct kv_tensor_def *t, char *buf, size_t size);
/* The built-in source file of stage s ("rmsnorm_bwd_dx.comp"). */
void kv_stage_source(const struct kv_kernel *k, int s, char *buf, size_t size);
/* Build the stable case name from the parameters and seed. */
void kv_case_name(struct kv_case *c);
/* Format parameter i's value as text. */
void kv_param_str(const struct kv_case *c, int i, char *buf, size_t size);
void kv_case_free(struct kv_case *c);

/* Ceiling division and the capped group count for grid-stride loops. */
static inline uint32_t kv_groups(uint64_t items, uint32_t per_group, uint32_t max)
{
    uint64_t g = (items + per_group - 1) / per_group;
    if (g < 1) g = 1;
    return g > max ? max : (uint32_t)g;
}

#define KV_SPIRV(arr) {arr, sizeof(arr)}
#define KV_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

#endif
