/* Pipelines for one kernel on one device: every stage's plain pipeline, and
 * with --stress the one with its subgroups in reverse order; user shaders
 * and mutants are compiled and checked against the stage's interface here. */
#include "pipeline/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "pipeline/abi_stage.h"
#include "pipeline/addr.h"
#include "sanitize/loops.h"
#include "spirv/spirv_addr.h"
#include "spirv/shader.h"
#include "spirv/spirv.h"

const struct kv_stress_run kv_stress_runs[KV_STRESS_RUNS] = {
    {1, KV_VARIANT_PLAIN, "@groups=1"},
    {3, KV_VARIANT_REVERSED, "@groups=3+reversed"},
    {0, KV_VARIANT_REVERSED, "@reversed"},
    {3, KV_VARIANT_SANITIZED, "@sanitized"},
};

/* Stage s's pipeline from words: the stage's interface, or its --abi file's. */
static enum kv_status stage_pipeline(struct kv_runner *r, int s, const char *what, const uint32_t *words, size_t bytes,
                                     struct kv_vk_pipeline *out)
{
    const struct kv_stage_def *sd = &r->k->stages[s];
    if (!r->abi[s]) return kv_vk_pipeline_create(r->d, what, words, bytes, (uint32_t)sd->n_bindings, sd->push_size, out);
    return kv_vk_pipeline_create_spec(r->d, what, words, bytes, kv_abi_slots(r->abi[s]), kv_abi_push_size(r->abi[s]),
                                      &r->spec[s], out);
}

/* A copy of a bound build's words, for its address build (r->addr_words). */
static enum kv_status keep_words(struct kv_runner *r, int s, int v, const uint32_t *words, size_t bytes)
{
    r->addr_words[s][v] = malloc(bytes ? bytes : 1);
    if (!r->addr_words[s][v]) return kv_error(KV_EDEVICE, "out of host memory");
    memcpy(r->addr_words[s][v], words, bytes);
    r->addr_bytes[s][v] = bytes;
    return KV_OK;
}

/* Stage s recompiled with its subgroups numbered in reverse (spirv/glsl.h), from
 * the GLSL it runs: the built-in source, the user's .comp or a mutant. A
 * .spv has no source to renumber: the stress run keeps its plain pipeline,
 * and the reason is kept. */
static enum kv_status reversed_pipeline(struct kv_runner *r, int s, const struct kv_run_opts *o, unsigned defines,
                                        const char *what)
{
    enum kv_status st = KV_OK;
    const struct kv_stage_def *sd = &r->k->stages[s];
    char name[1024];
    struct kv_glsl_env env = {.builtin = !sd->source_disk, .defines = defines, .reverse = 1};
    const char *file = name;
    struct kv_glsl_extra extra;
    uint32_t *words = NULL;
    size_t bytes = 0;
    if (o->src_env[s]) {
        env = *o->src_env[s];
        env.reverse = 1;
        file = o->src_name[s];
    } else if (o->shader[s]) {
        size_t n = strlen(o->shader[s]);
        if (n > 4 && !strcmp(o->shader[s] + n - 4, ".spv")) {
            snprintf(r->rev_missing[s], sizeof r->rev_missing[s], "stage %s: a .spv shader cannot be renumbered",
                     sd->name);
            return KV_OK;
        }
        env = (struct kv_glsl_env){.defines = defines, .reverse = 1, .extra = kv_abi_glsl_extra(o->abi[s], &extra)};
        file = o->shader[s];
    } else {
        kv_stage_source(r->k, s, name, sizeof name);
    }
    KV_TRY(kv_glsl_compile(&env, file, &words, &bytes));
    KV_TRY(keep_words(r, s, 1, words, bytes));
    char rwhat[1200];
    snprintf(rwhat, sizeof rwhat, "%s, subgroups reversed", what);
    KV_TRY(stage_pipeline(r, s, rwhat, words, bytes, &r->rev[s]));
cleanup:
    free(words);
    return st;
}

/* The element-epilogue build (KV_CM_EL) stands in for the subgroup build only:
 * its reductions are subgroup shuffles, so --no-subgroup keeps the build that
 * reduces through shared memory. */
unsigned kv_stage_defines(const struct kv_vk_info *dev, const struct kv_stage_def *sd, const struct kv_run_opts *o)
{
    const int subgroup = dev->subgroup_arith && !o->no_subgroup;
    return (subgroup ? KV_SHADER_SUBGROUP : 0u) |
           (dev->storage8 && !o->no_8bit && sd->subgroup8.words ? KV_SHADER_INT8 : 0u) | sd->source_defines |
           (sd->el.words && dev->cm_layout && subgroup ? KV_SHADER_CMEL : 0u);
}

const char *kv_stage_lacks(const struct kv_vk_info *dev, const struct kv_stage_def *sd)
{
    return (sd->needs & KV_NEED_STORAGE16) && !dev->storage16 ? "storageBuffer16BitAccess"
           : (sd->needs & KV_NEED_COOPMAT16) && !dev->coopmat16
               ? "VK_NV_cooperative_matrix with 16x16x16 f16 products into f32 on 32-wide subgroups"
           : (sd->needs & KV_NEED_COOPMAT_BF16) && !dev->coopmat_bf16
               ? "VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16 with 16x16x16 bf16 products "
                 "into f32 on 32-wide subgroups"
               : NULL;
}

/* A stage the device cannot run gets no pipeline (r->missing says why);
 * a case that runs it is skipped. */
static int stage_missing(struct kv_runner *r, int s)
{
    const struct kv_stage_def *sd = &r->k->stages[s];
    const char *lacks = kv_stage_lacks(&r->d->info, sd);
    r->missing[s][0] = '\0';
    if (lacks)
        snprintf(r->missing[s], sizeof r->missing[s], "%s: stage %s needs %s, which %s lacks", r->k->name, sd->name,
                 lacks, r->d->info.name);
    return lacks != NULL;
}

/* Stage s's pipelines: the plain one (of the build the device takes), the
 * aligned, reversed and sanitized ones where they apply. */
static enum kv_status stage_pipelines(struct kv_runner *r, int s, const struct kv_run_opts *o)
{
    enum kv_status st = KV_OK;
    uint32_t *user = NULL;
    struct kv_vk_device *d = r->d;
    const struct kv_kernel *k = r->k;
    const struct kv_stage_def *sd = &k->stages[s];
    unsigned defines = kv_stage_defines(&d->info, sd, o);
    int subgroup = (defines & KV_SHADER_SUBGROUP) != 0, int8 = (defines & KV_SHADER_INT8) != 0;
    if (stage_missing(r, s)) return KV_OK;
    const uint32_t *words;
    size_t bytes;
    char what[1100];
    if (o->src_words[s]) {
        words = o->src_words[s];
        bytes = o->src_bytes[s];
        snprintf(what, sizeof what, "%s (stage %s)", o->src_name[s], sd->name);
    } else if (o->src_env[s]) {
        KV_TRY(kv_glsl_compile(o->src_env[s], o->src_name[s], &user, &bytes));
        words = user;
        snprintf(what, sizeof what, "%s (stage %s)", o->src_name[s], sd->name);
    } else if (o->shader[s]) {
        struct kv_glsl_extra extra;
        KV_TRY(kv_shader_load(o->shader[s], defines, kv_abi_glsl_extra(o->abi[s], &extra), &user, &bytes));
        words = user;
        snprintf(what, sizeof what, "%s (stage %s)", o->shader[s], sd->name);
    } else if (!sd->subgroup.words) { /* compiled at run time from its source */
        char name[1024];
        struct kv_glsl_env env = {.builtin = !sd->source_disk, .defines = defines};
        kv_stage_source(k, s, name, sizeof name);
        KV_TRY(kv_glsl_compile(&env, name, &user, &bytes));
        words = user;
        snprintf(what, sizeof what, "%s stage %s (%s)", k->name, sd->name, name);
    } else {
        const struct kv_spirv_blob *b = int8 ? (subgroup ? &sd->subgroup8 : &sd->fallback8)
                                        : (defines & KV_SHADER_CMEL) ? &sd->el
                                        : (subgroup ? &sd->subgroup : &sd->fallback);
        words = b->words;
        bytes = b->bytes;
        snprintf(what, sizeof what, "built-in %s stage %s", k->name, sd->name);
    }
    struct kv_spirv_iface iface;
    KV_TRY(kv_spirv_reflect(what, words, bytes / 4, &iface));
    r->abi[s] = o->shader[s] ? o->abi[s] : NULL;
    if (r->abi[s]) {
        KV_TRY(kv_abi_check(what, r->abi[s], k, &iface, &r->spec[s]));
    } else {
        uint32_t outputs = 0;
        for (int b = 0; b < sd->n_bindings; b++) {
            const struct kv_tensor_def *td = &k->tensors[sd->bindings[b]];
            if (td->role == KV_OUTPUT && td->stage == s) outputs |= 1u << b;
        }
        KV_TRY(kv_spirv_check(what, &iface, (uint32_t)sd->n_bindings, outputs, sd->push_size, sd->push_doc));
    }
    uint64_t inv = (uint64_t)iface.local[0] * iface.local[1] * iface.local[2];
    KV_CHECK(inv <= d->info.max_invocations, KV_EDATA,
             "%s: workgroup of %llu invocations exceeds the device's %u", what,
             (unsigned long long)inv, d->info.max_invocations);
    memcpy(r->local[s], iface.local, sizeof iface.local);
    KV_TRY(stage_pipeline(r, s, what, words, bytes, &r->pipe[s]));
    KV_TRY(keep_words(r, s, 0, words, bytes));
    if (!o->shader[s] && !o->src_env[s] && !o->src_words[s] && sd->aligned.words && subgroup && !int8) {
        const struct kv_spirv_blob *al = (defines & KV_SHADER_CMEL) ? &sd->aligned_el : &sd->aligned;
        snprintf(what, sizeof what, "built-in %s stage %s (aligned build)", k->name, sd->name);
        KV_TRY(stage_pipeline(r, s, what, al->words, al->bytes, &r->alt[s]));
        r->alt_words[s] = al->words, r->alt_bytes[s] = al->bytes;
    }
    free(user);
    user = NULL;
    if (o->stress) KV_TRY(reversed_pipeline(r, s, o, defines, what));
    if (o->sanitize > 0) KV_TRY(kv_runner_sanitized(r, s, o, defines));
cleanup:
    free(user);
    return st;
}

/* At kv_runner_stage: what stage s's address build is made from (its
 * source's KV_ADDR build, where it has one: the built-in source, a
 * --shader's or the mutant o gives, with defines; else the bound build's
 * words), or why there is none. */
static void addr_source(struct kv_runner *r, int s, const struct kv_run_opts *o, unsigned defines)
{
    const struct kv_stage_def *sd = &r->k->stages[s];
    const char *lacks = kv_addr_lacks(&r->d->info);
    snprintf(r->addr_why[s], sizeof r->addr_why[s], "%s", lacks ? lacks : "");
    r->addr_glsl[s] = !o->abi[s] && !kv_addr_guarded(&r->d->info) && /* (an --abi stage's own words) */
                      kv_addr_source(r->k, s, o->shader[s]);
    r->addr_env[s] = (struct kv_glsl_env){.builtin = !sd->source_disk && !o->shader[s], .defines = defines};
    if (o->src_env[s]) {
        r->addr_env[s] = *o->src_env[s];
        snprintf(r->addr_src[s], sizeof r->addr_src[s], "%s", o->src_name[s]);
    } else if (o->shader[s]) {
        snprintf(r->addr_src[s], sizeof r->addr_src[s], "%s", o->shader[s]);
    } else {
        kv_stage_source(r->k, s, r->addr_src[s], sizeof r->addr_src[s]);
    }
    r->addr_env[s].defines |= KV_SHADER_ADDR;
}

void kv_runner_addr_layout(const struct kv_runner *r, int s, uint32_t *n_bind, uint32_t *push_size)
{
    const struct kv_stage_def *sd = &r->k->stages[s];
    *n_bind = r->abi[s] ? kv_abi_slots(r->abi[s]) : (uint32_t)sd->n_bindings;
    *push_size = r->abi[s] ? kv_abi_push_size(r->abi[s]) : sd->push_size;
}

const char *kv_runner_addr_lacks(const struct kv_runner *r, int s)
{
    return r->addr_why[s][0] ? r->addr_why[s] : NULL;
}

/* Stage s's address build's words (malloc'd into *words): its source's
 * KV_ADDR build, or the bound build's words; either rewritten so that its
 * tensors are read through addresses with 64-bit offsets. */
static enum kv_status addr_words(struct kv_runner *r, int s, int reversed, const char *what, uint32_t **words,
                                 size_t *bytes, int *lengths)
{
    enum kv_status st = KV_OK;
    uint32_t *src = NULL, *out = NULL;
    size_t n_src = 0, n_out = 0;
    uint32_t n_bind = 0;
    char err[300];
    if (r->addr_glsl[s]) {
        struct kv_glsl_env env = r->addr_env[s];
        env.reverse = reversed != 0;
        KV_TRY(kv_glsl_compile(&env, r->addr_src[s], &src, &n_src));
    } else {
        uint32_t push;
        KV_CHECK(r->addr_words[s][reversed != 0], KV_EUSAGE, "%s: no build of it to rewrite", what);
        kv_runner_addr_layout(r, s, &n_bind, &push);
    }
    const uint32_t *in = src ? src : r->addr_words[s][reversed != 0];
    const size_t n_in = (src ? n_src : r->addr_bytes[s][reversed != 0]) / 4;
    const int guard = kv_addr_guarded(&r->d->info);
    KV_CHECK(!kv_spirv_addr(in, n_in, n_bind, guard, &out, &n_out, lengths, err, sizeof err), KV_EUSAGE,
             "%s: cannot be bound by address: %s", what, err);
    *words = out, *bytes = 4 * n_out;
    out = NULL;
cleanup:
    free(src), free(out);
    return st;
}

enum kv_status kv_runner_addr(struct kv_runner *r, int s, int reversed, const struct kv_vk_pipeline **out,
                              int *lengths)
{
    enum kv_status st = KV_OK;
    const struct kv_stage_def *sd = &r->k->stages[s];
    /* a .spv has no reversed build: its stress run keeps the plain one, as bound */
    if (reversed && !r->addr_glsl[s] && !r->addr_words[s][1]) reversed = 0;
    struct kv_vk_pipeline *p = &r->addr[s][reversed != 0];
    uint32_t *words = NULL;
    size_t bytes = 0;
    *out = p;
    *lengths = r->addr_len[s][reversed != 0];
    if (p->pipeline) return KV_OK;
    KV_CHECK(!r->addr_why[s][0], KV_EUSAGE, "%s: stage %s cannot be bound by address: %s", r->k->name, sd->name,
             r->addr_why[s]);
    char what[1200];
    snprintf(what, sizeof what, "%s stage %s (%s, bound by address%s)", r->k->name, sd->name, r->addr_src[s],
             reversed ? ", subgroups reversed" : "");
    KV_TRY(addr_words(r, s, reversed, what, &words, &bytes, &r->addr_len[s][reversed != 0]));
    *lengths = r->addr_len[s][reversed != 0];
    struct kv_spirv_iface iface;
    KV_TRY(kv_spirv_reflect(what, words, bytes / 4, &iface));
    uint32_t n_bind, own;
    kv_runner_addr_layout(r, s, &n_bind, &own);
    const uint32_t push = 8u * n_bind * (*lengths ? 2 : 1) + own;
    KV_CHECK(push <= r->d->info.max_push, KV_EDATA, "%s: %u bytes of addresses and push constants, more than this "
             "device's maxPushConstantsSize (%u)", what, push, r->d->info.max_push);
    KV_TRY(kv_spirv_check(what, &iface, 0, 0, push, NULL));
    KV_CHECK(!memcmp(iface.local, r->local[s], sizeof iface.local), KV_EDATA,
             "%s: its workgroup (%u, %u, %u) is not the bound build's (%u, %u, %u)", what, iface.local[0],
             iface.local[1], iface.local[2], r->local[s][0], r->local[s][1], r->local[s][2]);
    KV_TRY(kv_vk_pipeline_create_spec(r->d, what, words, bytes, 0, push, r->abi[s] ? &r->spec[s] : NULL, p));
cleanup:
    free(words);
    return st;
}

void kv_runner_addr_free(struct kv_runner *r, const struct kv_runner *base)
{
    for (int s = 0; s < KV_MAX_STAGES; s++)
        for (int v = 0; v < 2; v++) {
            if (r->addr[s][v].pipeline && (!base || base->addr[s][v].pipeline != r->addr[s][v].pipeline))
                kv_vk_pipeline_destroy(r->d, &r->addr[s][v]);
            if (!base || base->addr_words[s][v] != r->addr_words[s][v]) free(r->addr_words[s][v]);
            r->addr_words[s][v] = NULL;
        }
}

enum kv_status kv_runner_stage(struct kv_runner *r, int s, const struct kv_run_opts *o)
{
    r->addr_words[s][0] = r->addr_words[s][1] = NULL; /* a mutant's runner: the base's stay the base's */
    KV_TRY_RET(stage_pipelines(r, s, o));
    addr_source(r, s, o, kv_stage_defines(&r->d->info, &r->k->stages[s], o));
    return KV_OK;
}

enum kv_status kv_runner_init(struct kv_runner *r, struct kv_vk_device *d, const struct kv_kernel *k,
                              const struct kv_run_opts *o)
{
    enum kv_status st = KV_OK;
    double t0 = kv_now_ms();
    memset(r, 0, sizeof *r);
    r->d = d;
    r->k = k;
    if (!d) return KV_OK; /* every output has a candidate: nothing runs on a device */
    for (int s = 0; s < k->n_stages; s++) KV_TRY(kv_runner_stage(r, s, o));
    r->pipeline_ms = kv_now_ms() - t0;
cleanup:
    if (st) kv_runner_free(r);
    return st;
}

void kv_runner_free(struct kv_runner *r)
{
    if (!r->d) return;
    for (int s = 0; s < KV_MAX_STAGES; s++) {
        kv_vk_pipeline_destroy(r->d, &r->pipe[s]);
        kv_vk_pipeline_destroy(r->d, &r->rev[s]);
        kv_vk_pipeline_destroy(r->d, &r->alt[s]);
        for (int v = 0; v < 4; v++) kv_vk_pipeline_destroy(r->d, &r->loops[s][v]);
        kv_runner_sanitized_free(r, s);
    }
    kv_runner_addr_free(r, NULL);
    memset(r, 0, sizeof *r);
}

/* Whether case c runs stage s's aligned build. */
static int aligned(const struct kv_runner *r, const struct kv_case *c, int s)
{
    return r->alt[s].pipeline && r->k->stages[s].aligned_case && r->k->stages[s].aligned_case(c);
}

const struct kv_vk_pipeline *kv_runner_pipe(const struct kv_runner *r, const struct kv_case *c, int s, int variant)
{
    if (variant == KV_VARIANT_SANITIZED && r->san[s].pipeline) return &r->san[s];
    if (variant == KV_VARIANT_LOOPS_SANITIZED && r->san[s].pipeline)
        return r->loops[s][3].pipeline ? &r->loops[s][3] : &r->san[s];
    if (variant == KV_VARIANT_REVERSED && r->rev[s].pipeline) return &r->rev[s];
    if (variant == KV_VARIANT_LOOPS_REVERSED && r->rev[s].pipeline)
        return r->loops[s][2].pipeline ? &r->loops[s][2] : &r->rev[s];
    if (variant >= KV_VARIANT_LOOPS && r->loops[s][aligned(r, c, s)].pipeline) /* (no reversed build: the plain one's) */
        return &r->loops[s][aligned(r, c, s)];
    if (aligned(r, c, s)) return &r->alt[s];
    return &r->pipe[s];
}

enum kv_status kv_runner_loops(struct kv_runner *r, const struct kv_case *c, int s, int variant, int *at)
{
    enum kv_status st = KV_OK;
    const int rev = variant == KV_VARIANT_LOOPS_REVERSED && r->rev[s].pipeline;
    const int san = variant == KV_VARIANT_LOOPS_SANITIZED && r->san[s].pipeline;
    const int al = san ? 3 : rev ? 2 : aligned(r, c, s);
    *at = al; /* (a stage without a reversed or sanitized build runs its plain one there) */
    if (r->loops_tried[s][al]) return KV_OK;
    r->loops_tried[s][al] = 1;
    const struct kv_stage_def *sd = &r->k->stages[s];
    const struct kv_san_module *m = r->san_mod[s];
    const uint32_t *words = san ? m->words : rev ? r->addr_words[s][1] : al ? r->alt_words[s] : r->addr_words[s][0];
    const size_t bytes = san ? m->bytes : rev ? r->addr_bytes[s][1] : al ? r->alt_bytes[s] : r->addr_bytes[s][0];
    uint32_t *out = NULL, n = r->abi[s] ? kv_abi_slots(r->abi[s]) : (uint32_t)sd->n_bindings;
    if (san) n = m->binding + 1 + (m->shadow_binding ? 1 : 0) + (m->global_binding ? 1 : 0); /* past the record buffer and the shadows */
    size_t out_bytes = 0;
    int loops = 0;
    char what[600];
    snprintf(what, sizeof what, "%s stage %s (loop-cut build%s)", r->k->name, sd->name,
             san ? ", sanitized" : rev ? ", reversed" : al ? ", aligned" : "");
    if (!words || n + 2 > KV_VK_MAX_BINDINGS || (r->d->info.max_stage_buffers && n + 2 > r->d->info.max_stage_buffers))
        return KV_OK; /* no build kept, or no bindings left for its count and flags */
    KV_TRY(kv_loops_instrument(what, words, bytes, n, &out, &out_bytes, &loops));
    r->loops_binding[s][al] = n;
    if (!loops && kv_loops_none(words, bytes)) r->loops_tried[s][al] = 2; /* no loop to cut */
    if (!loops) goto cleanup;
    if (!r->abi[s]) KV_TRY(kv_vk_pipeline_create(r->d, what, out, out_bytes, n + 2, sd->push_size, &r->loops[s][al]));
    else
        KV_TRY(kv_vk_pipeline_create_spec(r->d, what, out, out_bytes, n + 2, kv_abi_push_size(r->abi[s]), &r->spec[s],
                                          &r->loops[s][al]));
cleanup:
    free(out);
    return st;
}

/* The words stage s runs, with OpLine where there is a source: the
 * built-in source, the user's .comp or the mutant recompiled with -g; a
 * .spv (or a mutant's words without a source) as it is. */
static enum kv_status debug_words(struct kv_runner *r, int s, const struct kv_run_opts *o, unsigned defines,
                                  uint32_t **words, size_t *bytes)
{
    const struct kv_stage_def *sd = &r->k->stages[s];
    struct kv_glsl_env env = {.builtin = !sd->source_disk, .defines = defines, .debug = 1};
    char name[1024];
    struct kv_glsl_extra extra;
    if (o->src_env[s]) {
        env = *o->src_env[s];
        env.debug = 1;
        return kv_glsl_compile(&env, o->src_name[s], words, bytes);
    }
    if (o->src_words[s]) {
        *words = malloc(o->src_bytes[s]);
        if (!*words) return kv_error(KV_EDEVICE, "out of host memory");
        memcpy(*words, o->src_words[s], *bytes = o->src_bytes[s]);
        return KV_OK;
    }
    if (o->shader[s]) {
        size_t n = strlen(o->shader[s]);
        const struct kv_abi *a = o->abi[s];
        const struct kv_glsl_extra *x = kv_abi_glsl_extra(a, &extra);
        if (n > 4 && !strcmp(o->shader[s] + n - 4, ".spv")) return kv_shader_load(o->shader[s], defines, x, words, bytes);
        env = (struct kv_glsl_env){.defines = defines, .extra = x, .debug = 1};
        return kv_glsl_compile(&env, o->shader[s], words, bytes);
    }
    kv_stage_source(r->k, s, name, sizeof name);
    return kv_glsl_compile(&env, name, words, bytes);
}

enum kv_status kv_runner_sanitized(struct kv_runner *r, int s, const struct kv_run_opts *o, unsigned defines)
{
    enum kv_status st = KV_OK;
    const struct kv_stage_def *sd = &r->k->stages[s];
    uint32_t *words = NULL, n = r->abi[s] ? kv_abi_slots(r->abi[s]) : (uint32_t)sd->n_bindings;
    size_t bytes = 0;
    char what[600];
    r->san_missing[s][0] = '\0';
    /* the bindings a stage may have: kverify's own limit and the device's */
    uint32_t room = r->d->info.max_stage_buffers && r->d->info.max_stage_buffers < KV_VK_MAX_BINDINGS
                        ? r->d->info.max_stage_buffers
                        : KV_VK_MAX_BINDINGS;
    if (n + 1 > room || n > KV_SAN_MAX_BINDINGS) {
        snprintf(r->san_missing[s], sizeof r->san_missing[s], "stage %s: %u bindings leave no room for the record buffer",
                 sd->name, n);
        return KV_OK;
    }
    snprintf(what, sizeof what, "%s stage %s (sanitized)", r->k->name, sd->name);
    r->san_mod[s] = calloc(1, sizeof *r->san_mod[s]);
    KV_CHECK(r->san_mod[s], KV_EDEVICE, "out of host memory");
    KV_TRY(debug_words(r, s, o, defines, &words, &bytes));
    KV_TRY(kv_san_instrument(what, words, bytes, n, r->d->info.max_shared, room, r->san_mod[s]));
    const struct kv_san_module *m = r->san_mod[s];
    uint32_t nb = n + 1 + (m->shadow_binding ? 1 : 0) + (m->global_binding ? 1 : 0);
    if (nb > room) {
        snprintf(r->san_missing[s], sizeof r->san_missing[s],
                 "stage %s: %u bindings leave no room for the shadow of shared memory", sd->name, n);
        kv_runner_sanitized_free(r, s);
        goto cleanup;
    }
    if (!r->abi[s])
        KV_TRY(kv_vk_pipeline_create(r->d, what, m->words, m->bytes, nb, sd->push_size, &r->san[s]));
    else
        KV_TRY(kv_vk_pipeline_create_spec(r->d, what, m->words, m->bytes, nb, kv_abi_push_size(r->abi[s]),
                                          &r->spec[s], &r->san[s]));
cleanup:
    free(words);
    return st;
}

void kv_runner_sanitized_free(struct kv_runner *r, int s)
{
    if (r->d) kv_vk_pipeline_destroy(r->d, &r->san[s]);
    if (r->d) kv_vk_pipeline_destroy(r->d, &r->loops[s][3]); /* made from san_mod: made again from the next */
    r->loops_tried[s][3] = 0;
    if (r->san_mod[s]) kv_san_module_free(r->san_mod[s]);
    free(r->san_mod[s]);
    r->san_mod[s] = NULL;
}
