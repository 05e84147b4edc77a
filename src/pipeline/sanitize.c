#include "pipeline/sanitize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/abi_stage.h"
#include "spirv/shader.h"

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
        const struct kv_glsl_extra *x = NULL;
        if (a) {
            extra = (struct kv_glsl_extra){a->n_defines, (const char(*)[2][256])a->define, a->n_include,
                                           (const char(*)[1024])a->include};
            x = &extra;
        }
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
    if (n + 1 > KV_VK_MAX_BINDINGS || n > KV_SAN_MAX_BINDINGS) {
        snprintf(r->san_missing[s], sizeof r->san_missing[s], "stage %s: %u bindings leave no room for the record buffer",
                 sd->name, n);
        return KV_OK;
    }
    snprintf(what, sizeof what, "%s stage %s (sanitized)", r->k->name, sd->name);
    r->san_mod[s] = calloc(1, sizeof *r->san_mod[s]);
    KV_CHECK(r->san_mod[s], KV_EDEVICE, "out of host memory");
    KV_TRY(debug_words(r, s, o, defines, &words, &bytes));
    KV_TRY(kv_san_instrument(what, words, bytes, n, r->d->info.max_shared, r->san_mod[s]));
    const struct kv_san_module *m = r->san_mod[s];
    uint32_t nb = n + 1 + (m->shadow_binding ? 1 : 0);
    if (nb > KV_VK_MAX_BINDINGS) {
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
    if (r->san_mod[s]) kv_san_module_free(r->san_mod[s]);
    free(r->san_mod[s]);
    r->san_mod[s] = NULL;
}

int kv_sanitize_logical(const struct kv_runner *r, const struct kv_case *c, const struct kv_plan *p, int s,
                        uint64_t *bytes)
{
    const struct kv_kernel *k = r->k;
    const struct kv_abi *a = r->abi[s];
    if (!a) {
        const struct kv_stage_def *sd = &k->stages[s];
        for (int i = 0; i < sd->n_bindings; i++) bytes[i] = kv_tensor_bytes(&c->t[sd->bindings[i]]);
        return sd->n_bindings;
    }
    uint32_t n = kv_abi_slots(a);
    for (uint32_t i = 0; i < n; i++) bytes[i] = UINT64_MAX; /* a slot the file leaves out: not checked */
    for (int i = 0; i < a->n_bindings; i++) {
        const struct kv_abi_binding *b = &a->b[i];
        int t = b->tensor < 0 ? -1 : kv_case_tensor(c, k->tensors[b->tensor].name);
        if (b->tensor >= 0 && t < 0) t = b->tensor;
        bytes[b->binding] = t < 0 ? p->product_bytes[s][i] : kv_tensor_bytes(&c->t[t]);
    }
    return (int)n;
}

struct names {
    const struct kv_kernel *k;
    const struct kv_runner *r;
    int s;
    char buf[96];
};

/* The tensor at a binding of stage s, for a reason. */
static const char *binding_name(const void *ctx, int binding)
{
    struct names *n = (struct names *)ctx;
    const struct kv_abi *a = n->r->abi[n->s];
    const struct kv_stage_def *sd = &n->k->stages[n->s];
    const char *name = NULL;
    if (!a && binding < sd->n_bindings) name = n->k->tensors[sd->bindings[binding]].name;
    for (int i = 0; a && i < a->n_bindings; i++)
        if (a->b[i].binding == (uint32_t)binding && a->b[i].tensor >= 0) name = n->k->tensors[a->b[i].tensor].name;
    if (!name) return "a buffer";
    snprintf(n->buf, sizeof n->buf, "tensor %s", name);
    return n->buf;
}

/* The rows of one stage's records. */
static int stage_rows(struct kv_runner *r, int s, int pass, const uint32_t *buf, struct kv_case_result *res,
                      unsigned *shown)
{
    struct kv_san_result sr;
    const struct kv_san_module *m = r->san_mod[s];
    kv_san_read(m, buf, &sr);
    int clean = 1;
    struct names nm = {r->k, r, s, ""};
    char stage[80];
    snprintf(stage, sizeof stage, "%s%s", r->k->stages[s].name, pass ? " (chained)" : "");
    for (int kind = 0; kind < KV_SAN_KINDS; kind++) {
        if (!sr.count[kind]) continue;
        clean = 0;
        /* the chained rerun's records of a kind the isolated run has shown already add nothing */
        if ((*shown & (1u << kind)) || res->n_outputs >= (int)KV_COUNT(res->out)) continue;
        *shown |= 1u << kind;
        struct kv_output_result *out = &res->out[res->n_outputs++];
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", kv_san_kind_name(kind));
        out->stage = r->k->stages[s].name;
        out->source = "device";
        out->oracle = "sanitizer";
        out->judged = 1;
        out->sanitizer = kv_san_kind_name(kind);
        out->total = (size_t)sr.count[kind];
        kv_san_reason(m, &sr, kind, stage, binding_name, &nm, out->remark, sizeof out->remark);
    }
    return clean;
}

int kv_sanitize_rows(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage,
                     const int *chain_stage, struct kv_case_result *res)
{
    int clean = 1;
    size_t used = strlen(res->sanitize);
    for (int s = 0; s < c->k->n_stages; s++) {
        if (!run_stage[s]) continue;
        char why[400] = "";
        if (r->san_missing[s][0]) snprintf(why, sizeof why, "%s", r->san_missing[s]);
        else if (r->san_mod[s] && r->san_mod[s]->note[0])
            snprintf(why, sizeof why, "stage %s: %s", c->k->stages[s].name, r->san_mod[s]->note);
        if (why[0] && !strstr(res->sanitize, why) && used + strlen(why) + 3 < sizeof res->sanitize)
            used += (size_t)snprintf(res->sanitize + used, sizeof res->sanitize - used, "%s%s", used ? "; " : "", why);
        if (!r->san[s].pipeline) continue;
        unsigned shown = 0;
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1 && !chain_stage[s]) continue;
            const uint32_t *buf = (const uint32_t *)((const char *)p->san_down.map + (size_t)(2 * s + pass) * KV_SAN_SLOT);
            clean &= stage_rows(r, s, pass, buf, res, &shown);
        }
    }
    return clean;
}
