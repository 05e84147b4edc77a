/* The runner: a kernel's pipelines on one device, made once per process and
 * shared by every case (run.h) and by the device-side plan (plan.h), and the
 * options a case runs under. */
#ifndef KV_RUNNER_H
#define KV_RUNNER_H

#include "formats/abi.h"
#include "sanitize/san.h"
#include "kernels/kernel.h"
#include "reports/report.h"
#include "spirv/glsl.h"
#include "vk/vk.h"

enum { KV_ORACLE_SPEC, KV_ORACLE_EXACT, KV_ORACLE_BOTH };

struct kv_run_opts {
    struct kv_criteria crit;
    int repeat;                         /* device runs per case (>= 1) */
    const char *shader[KV_MAX_STAGES];  /* user shader per stage, or NULL */
    int no_subgroup;                    /* force the shared-memory reduction shaders */
    int no_8bit;                        /* force the packed-word code access shaders */
    const char *save_dir;               /* --save DIR, or NULL */
    int save_format;                    /* --save-format: KV_SAVE_NPY or KV_SAVE_SAFETENSORS (formats/save.h) */
    int oracle;                         /* KV_ORACLE_SPEC, _EXACT or _BOTH */
    int64_t sample;                     /* --sample N: random elements per output (0: all) */
    int bench;                          /* --bench N: timed runs per stage after warm-up (0: none) */
    double bench_warmup_s;              /* --bench-warmup S: busy seconds before the first timed stage */
    uint32_t max_groups;                /* --max-groups N: at most N workgroups per dispatch (0: no cap) */
    int stress;                         /* rerun each case with groups capped at 1 and 3, and with the
                                           subgroups of each workgroup in reverse order (kv_run_case) */
    /* A stage's GLSL in memory (kverify mutate: a mutant through its env),
     * with its module when already compiled; used instead of shader[s]. */
    const struct kv_glsl_env *src_env[KV_MAX_STAGES];
    const char *src_name[KV_MAX_STAGES];
    const uint32_t *src_words[KV_MAX_STAGES];
    size_t src_bytes[KV_MAX_STAGES];
    int fail_fast;                      /* stop a case at its first failing output row (kverify mutate) */
    int no_dist;                        /* no error distribution per row (kverify mutate needs only verdicts) */
    const struct kv_abi *abi[KV_MAX_STAGES]; /* --abi: the user shader's own interface, or NULL */
    int keep_outputs;                   /* keep each device output in its row (several devices' agreement) */
    int sanitize;                       /* the sanitized run: 0 none, 1 with the stress runs, 2 alone (--sanitize) */
    /* Set (jobs.c) for the last case that uses the device: called once that
     * case's device work is over and its buffers are destroyed, on
     * kv_plan_retire's thread while the case is judged, so that the device
     * is released meanwhile; not called where the case keeps its buffers. */
    void (*device_done)(void *ctx);
    void *device_done_ctx;
};

/* The stress runs: group caps that make every grid-stride loop iterate and
 * shared memory be reused across its iterations, in both subgroup orders,
 * and the reversed order uncapped (spirv/glsl.h). */
#define KV_STRESS_RUNS 4
enum {
    KV_VARIANT_PLAIN,
    KV_VARIANT_REVERSED,
    KV_VARIANT_SANITIZED,
    KV_VARIANT_LOOPS,
    KV_VARIANT_LOOPS_REVERSED,
    KV_VARIANT_LOOPS_SANITIZED
};
extern const struct kv_stress_run {
    uint32_t cap;
    int variant; /* KV_VARIANT_* */
    const char *tag; /* the suffix of a row that differs from the plain run */
} kv_stress_runs[KV_STRESS_RUNS];

/* Pipelines for one kernel on one device, created once per process. */
struct kv_runner {
    struct kv_vk_device *d;
    const struct kv_kernel *k;
    struct kv_vk_pipeline pipe[KV_MAX_STAGES];
    uint32_t local[KV_MAX_STAGES][3];
    char missing[KV_MAX_STAGES][512]; /* why a stage has no pipeline here (a device feature it needs), or "" */
    struct kv_vk_pipeline rev[KV_MAX_STAGES]; /* with o->stress: the stage with its subgroups reversed */
    struct kv_vk_pipeline alt[KV_MAX_STAGES]; /* built-in stages' aligned build (kv_stage_def.aligned) */
    char rev_missing[KV_MAX_STAGES][160];     /* why a stage has no reversed pipeline, or "" */
    const struct kv_abi *abi[KV_MAX_STAGES];  /* --abi stages: their interface file */
    struct kv_vk_spec spec[KV_MAX_STAGES];    /* and its specialization constants */
    struct kv_vk_pipeline san[KV_MAX_STAGES]; /* with o->sanitize: the instrumented build (pipeline/sanitize.h) */
    struct kv_san_module *san_mod[KV_MAX_STAGES];
    char san_missing[KV_MAX_STAGES][256];     /* why a stage has no sanitized build, or "" */
    /* Each stage's build bound by address, [0] plain and [1] with its subgroups
     * reversed: made when a case first needs it (pipeline/addr.h), from
     * addr_src with addr_env where the source has a KV_ADDR build (addr_glsl),
     * else from the bound build's words (addr_words, owned); addr_why: why the
     * stage has none, or "". */
    struct kv_vk_pipeline addr[KV_MAX_STAGES][2];
    struct kv_glsl_env addr_env[KV_MAX_STAGES];
    char addr_src[KV_MAX_STAGES][1024];
    char addr_why[KV_MAX_STAGES][160];
    int addr_glsl[KV_MAX_STAGES];
    int addr_len[KV_MAX_STAGES][2]; /* the build reads a buffer's length(): the ranges follow the addresses */
    uint32_t *addr_words[KV_MAX_STAGES][2];
    size_t addr_bytes[KV_MAX_STAGES][2];
    /* Each stage's loop-cut build (pipeline/loops.h), [0] of the plain build,
     * [1] of the aligned one (alt, from alt_words: the built-in's, not owned),
     * [2] of the reversed one and [3] of the sanitized one (past its record
     * and shadow buffers): made when a failing case first needs it
     * (kv_runner_loops, variant KV_VARIANT_LOOPS, _REVERSED or _SANITIZED);
     * loops_tried: 1 made, or none made (a workgroup size not fixed, no binding
     * left), 2 the build has no loop; its count buffer at binding
     * loops_binding, its flags at the next. */
    struct kv_vk_pipeline loops[KV_MAX_STAGES][4];
    int loops_tried[KV_MAX_STAGES][4];
    uint32_t loops_binding[KV_MAX_STAGES][4];
    const uint32_t *alt_words[KV_MAX_STAGES];
    size_t alt_bytes[KV_MAX_STAGES];
    double pipeline_ms;
};

/* Build every stage's pipeline (d may be NULL when no stage needs a device:
 * then there is nothing to build) (user shaders compiled and checked against the
 * stage's interface). KV_EDATA for a bad user shader, KV_EDEVICE otherwise. */
enum kv_status kv_runner_init(struct kv_runner *r, struct kv_vk_device *d, const struct kv_kernel *k,
                              const struct kv_run_opts *o);
void kv_runner_free(struct kv_runner *r);
/* The KV_SHADER_* defines stage sd's GLSL is built with on dev, the built-in
 * source and a user's .comp alike: KV_SUBGROUP and KV_INT8 as the device
 * allows, and the stage's variant defines (sd->source_defines: KV_ABF16, or
 * KV_BF16CM with its rewrite to KHR bfloat16 matrices). */
unsigned kv_stage_defines(const struct kv_vk_info *dev, const struct kv_stage_def *sd, const struct kv_run_opts *o);
/* The device feature stage sd needs and dev lacks, as text, or NULL. */
const char *kv_stage_lacks(const struct kv_vk_info *dev, const struct kv_stage_def *sd);
/* The pipeline that runs stage s for case c in a variant (KV_VARIANT_*):
 * the reversed, sanitized or loop-cut one where asked and built, else the
 * aligned build where it holds for c, else the plain one. */
const struct kv_vk_pipeline *kv_runner_pipe(const struct kv_runner *r, const struct kv_case *c, int s, int variant);
/* Stage s's sanitized build (r->san[s], r->san_mod[s]): the source the
 * stage runs compiled again with debug information (a .spv as it is) and
 * instrumented; a stage it cannot instrument keeps the reason in
 * r->san_missing[s]. Freed with kv_runner_sanitized_free, with its loop-cut
 * build (r->loops[s][3]). */
enum kv_status kv_runner_sanitized(struct kv_runner *r, int s, const struct kv_run_opts *o, unsigned defines);
void kv_runner_sanitized_free(struct kv_runner *r, int s);

/* Stage s's loop-cut build for case c in a variant (KV_VARIANT_LOOPS: of
 * its plain or aligned build; _REVERSED: of its reversed one; _SANITIZED: of
 * its sanitized one), rewritten
 * (sanitize/loops.h) where it is not yet; *at: its index in r->loops[s].
 * None where the build has no loop or was not kept (kv_runner_pipe then
 * gives the build it would rewrite). */
enum kv_status kv_runner_loops(struct kv_runner *r, const struct kv_case *c, int s, int variant, int *at);

/* (Re)build stage s's pipelines of r (the plain one, and the reversed one
 * with o->stress) from o; kverify mutate swaps one stage of a runner this way. */
enum kv_status kv_runner_stage(struct kv_runner *r, int s, const struct kv_run_opts *o);

/* Why stage s cannot be bound by address in this run, or NULL. */
const char *kv_runner_addr_lacks(const struct kv_runner *r, int s);
/* The bindings stage s's address build reads through addresses, and the
 * push bytes after them: its --abi file's slots and push, or the stage's. */
void kv_runner_addr_layout(const struct kv_runner *r, int s, uint32_t *n_bind, uint32_t *push_size);
/* Stage s's address build, reversed (the stress runs' subgroup order) or
 * not, compiled and made where it is not yet; *lengths: whether it reads a
 * buffer's length() (kv_addr_push then writes the ranges). */
enum kv_status kv_runner_addr(struct kv_runner *r, int s, int reversed, const struct kv_vk_pipeline **out,
                              int *lengths);
/* The address builds made in r and not in base (a runner copied from base
 * for one mutant), destroyed; base NULL: all of r's. */
void kv_runner_addr_free(struct kv_runner *r, const struct kv_runner *base);

#endif
