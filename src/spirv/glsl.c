#include "spirv/glsl.h"

#include <ctype.h>
#include <limits.h>
#include <shaderc/shaderc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include "core/files.h"
#include "spirv/glsl_cache.h"
#include "spirv/spirv_khr.h"

#include "kv_shader_sources.h"

const struct kv_glsl_file *kv_glsl_builtin_at(size_t i)
{
    return i < sizeof kv_builtin_sources / sizeof *kv_builtin_sources ? &kv_builtin_sources[i] : NULL;
}

const struct kv_glsl_file *kv_glsl_builtin(const char *name)
{
    for (size_t i = 0; kv_glsl_builtin_at(i); i++)
        if (!strcmp(kv_builtin_sources[i].name, name)) return &kv_builtin_sources[i];
    return NULL;
}

enum kv_status kv_glsl_read(const struct kv_glsl_env *env, const char *name, char **text, size_t *len)
{
    const struct kv_glsl_file *f = NULL;
    for (int i = 0; i < env->n_over && !f; i++)
        if (!strcmp(env->over[i].name, name)) f = &env->over[i];
    if (!f && env->builtin) {
        f = kv_glsl_builtin(name);
        if (!f) return kv_error(KV_EDATA, "%s: no such built-in shader source", name);
    }
    if (!f) return kv_read_file(name, (size_t)64 << 20, text, len);
    *text = malloc(f->len + 1);
    if (!*text) return kv_error(KV_EDATA, "%s: out of memory", name);
    memcpy(*text, f->text, f->len);
    (*text)[f->len] = '\0';
    *len = f->len;
    return KV_OK;
}

void kv_glsl_include_path(const char *requesting, const char *requested, char *out, size_t size)
{
    const char *slash = strrchr(requesting, '/');
    if (requested[0] == '/' || !slash) snprintf(out, size, "%s", requested);
    else snprintf(out, size, "%.*s/%s", (int)(slash - requesting), requesting, requested);
}

/* The reordered numbering (kv_glsl_compile): with N invocations in G = N/S
 * whole subgroups of S, logical index (G - 1 - P/S)*S + P%S for physical P;
 * transposed (KV_REV_T, a shader that names nothing of subgroups),
 * (P%S)*G + G - 1 - P/S, so that logical neighbours sit in different
 * subgroups, the later one in the subgroup that runs first. */
static const char REVERSE_PROLOGUE[] =
    "#extension GL_KHR_shader_subgroup_basic : enable\n"
    "#define KV_REV_N (gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z)\n"
    "#define KV_REV_WHOLE ((KV_REV_N % gl_SubgroupSize) == 0u)\n"
    "#define KV_REV_G (KV_REV_N / gl_SubgroupSize)\n"
    "#define KV_REV_IDX (!KV_REV_WHOLE ? gl_LocalInvocationIndex : KV_REV_T != 0 ? (gl_LocalInvocationIndex % "
    "gl_SubgroupSize) * KV_REV_G + KV_REV_G - 1u - gl_LocalInvocationIndex / gl_SubgroupSize : KV_REV_N - "
    "gl_SubgroupSize * (gl_LocalInvocationIndex / gl_SubgroupSize + 1u) + gl_LocalInvocationIndex % gl_SubgroupSize)\n"
    "#define KV_REV_LID uvec3(KV_REV_IDX % gl_WorkGroupSize.x, (KV_REV_IDX / gl_WorkGroupSize.x) % gl_WorkGroupSize.y,"
    " KV_REV_IDX / (gl_WorkGroupSize.x * gl_WorkGroupSize.y))\n"
    "#define KV_REV_GID (gl_WorkGroupID * gl_WorkGroupSize + KV_REV_LID)\n"
    "#define KV_REV_SGID (KV_REV_WHOLE ? gl_NumSubgroups - 1u - gl_SubgroupID : gl_SubgroupID)\n";

static const char *const REVERSED[][2] = {
    {"gl_LocalInvocationID", "KV_REV_LID"},
    {"gl_LocalInvocationIndex", "KV_REV_IDX"},
    {"gl_GlobalInvocationID", "KV_REV_GID"},
    {"gl_SubgroupID", "KV_REV_SGID"},
};

static int ident_char(int c) { return isalnum(c) || c == '_'; }

/* text with the built-in ids renamed (and, in the main file, the prologue
 * after #version); malloc'd, NULL when out of memory. */
static char *reverse_ids(const char *text, size_t len, int main_file, int transpose, size_t *out_len)
{
    size_t cap = len * 2 + sizeof REVERSE_PROLOGUE + 64, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    int prologue = main_file;
    for (size_t i = 0; i < len;) {
        if (prologue && (i == 0 || text[i - 1] == '\n') && !strncmp(text + i, "#version", 8)) {
            size_t e = i;
            while (e < len && text[e] != '\n') e++;
            memcpy(out + n, text + i, e - i);
            n += e - i;
            out[n++] = '\n';
            n += (size_t)snprintf(out + n, 32, "#define KV_REV_T %d\n", transpose != 0);
            memcpy(out + n, REVERSE_PROLOGUE, sizeof REVERSE_PROLOGUE - 1);
            n += sizeof REVERSE_PROLOGUE - 1;
            i = e < len ? e + 1 : e;
            prologue = 0;
            continue;
        }
        int done = 0;
        if (!(i > 0 && ident_char((unsigned char)text[i - 1])))
            for (size_t r = 0; r < sizeof REVERSED / sizeof *REVERSED && !done; r++) {
                size_t k = strlen(REVERSED[r][0]);
                if (i + k <= len && !strncmp(text + i, REVERSED[r][0], k) &&
                    !(i + k < len && ident_char((unsigned char)text[i + k]))) {
                    size_t m = strlen(REVERSED[r][1]);
                    memcpy(out + n, REVERSED[r][1], m);
                    n += m;
                    i += k;
                    done = 1;
                }
            }
        if (!done) out[n++] = text[i++];
        if (n + 64 >= cap) {
            char *o2 = realloc(out, cap *= 2);
            if (!o2) return free(out), NULL;
            out = o2;
        }
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}

/* A file's text as the compile sees it: read through env, renumbered. */
static enum kv_status load(const struct kv_glsl_env *env, const char *name, int main_file, char **text, size_t *len)
{
    enum kv_status st = kv_glsl_read(env, name, text, len);
    if (st || !env->reverse) return st;
    char *r = reverse_ids(*text, *len, main_file, env->transpose, len);
    free(*text);
    *text = r;
    return r ? KV_OK : kv_error(KV_EDATA, "%s: out of memory", name);
}

struct inc_result {
    shaderc_include_result r;
    char name[PATH_MAX];
    char *content;
    char err[PATH_MAX + 64];
};

/* What the include callbacks need: where files are read, and the cache entry
 * that records what was read. */
struct compile_ctx {
    const struct kv_glsl_env *env;
    struct kv_glsl_cache *cache;
};

static shaderc_include_result *resolve_include(void *user, const char *requested, int type, const char *requesting,
                                               size_t depth)
{
    (void)type, (void)depth;
    const struct compile_ctx *cc = user;
    const struct kv_glsl_env *env = cc->env;
    struct inc_result *ir = calloc(1, sizeof *ir);
    if (!ir) return NULL;
    kv_glsl_include_path(requesting, requested, ir->name, sizeof ir->name);
    /* not beside the including file: the include folders, in order */
    for (int i = 0; !env->builtin && env->extra && i < env->extra->n_dirs && access(ir->name, R_OK) != 0; i++)
        snprintf(ir->name, sizeof ir->name, "%s/%s", env->extra->dir[i], requested);
    if (!env->builtin && env->extra && access(ir->name, R_OK) != 0)
        kv_glsl_include_path(requesting, requested, ir->name, sizeof ir->name);
    size_t size = 0;
    if (load(env, ir->name, 0, &ir->content, &size) == KV_OK) {
        kv_glsl_cache_include(cc->cache, ir->name, ir->content, size);
        ir->r.source_name = ir->name;
        ir->r.source_name_length = strlen(ir->name);
        ir->r.content = ir->content;
        ir->r.content_length = size;
    } else {
        snprintf(ir->err, sizeof ir->err, "cannot include '%s'", ir->name);
        ir->r.content = ir->err;
        ir->r.content_length = strlen(ir->err);
    }
    ir->r.user_data = ir;
    return &ir->r;
}

static void release_include(void *user, shaderc_include_result *r)
{
    (void)user;
    struct inc_result *ir = r->user_data;
    free(ir->content);
    free(ir);
}

/* First line of a compiler log that says "error", for a one-line message. */
static void first_error(const char *log, char *out, size_t size)
{
    const char *p = strstr(log, "error");
    const char *start = p ? p : log;
    while (p && start > log && start[-1] != '\n') start--;
    size_t n = strcspn(start, "\n");
    snprintf(out, size, "%.*s", (int)n, start);
}

/* An included file as a compile reads it, for the cache's lookup. */
static int load_include(const void *env, const char *name, char **text, size_t *len)
{
    return load(env, name, 0, text, len) != KV_OK;
}

/* Begin the cache entry of a compile: its options (every setting run_shaderc
 * gives the compiler beside the files; each macro's name and value with their
 * lengths, so that no two lists read alike) and its main file. A mutant's compile
 * (files overridden) is not kept: kverify mutate makes hundreds, each once; a
 * user's include folders are searched, which the entry does not follow. */
static void cache_begin(struct kv_glsl_cache *cache, const struct kv_glsl_env *env, const char *name, int preprocess,
                        const char *src, size_t len)
{
    char opts[8192];
    int n = snprintf(opts, sizeof opts, "vulkan1.2 main compute pre=%d opt=%d g=%d rev=%d t=%d defs=%u builtin=%d",
                     preprocess, !env->no_optimize, env->debug, env->reverse, env->transpose, env->defines,
                     env->builtin);
    for (int i = 0; env->extra && i < env->extra->n_macros && n > 0 && (size_t)n < sizeof opts; i++)
        n += snprintf(opts + n, sizeof opts - (size_t)n, " -D%zu:%s=%zu:%s", strlen(env->extra->macro[i][0]),
                      env->extra->macro[i][0], strlen(env->extra->macro[i][1]), env->extra->macro[i][1]);
    memset(cache, 0, sizeof *cache);
    if (env->n_over || (env->extra && env->extra->n_dirs) || n <= 0 || (size_t)n >= sizeof opts) return;
    kv_glsl_cache_begin(cache, opts, (size_t)n, name, src, len);
}

static enum kv_status run_shaderc(const struct kv_glsl_env *env, const char *name, int preprocess, void **out,
                                  size_t *bytes)
{
    enum kv_status st = KV_OK;
    char *src = NULL;
    size_t len = 0;
    struct kv_glsl_cache cache = {0};
    struct compile_ctx cc = {env, &cache};
    shaderc_compiler_t c = NULL;
    shaderc_compile_options_t o = NULL;
    shaderc_compilation_result_t res = NULL;
    KV_TRY(load(env, name, 1, &src, &len));
    cache_begin(&cache, env, name, preprocess, src, len);
    if (kv_glsl_cache_get(&cache, load_include, env, out, bytes)) goto cleanup;
    c = shaderc_compiler_initialize();
    o = shaderc_compile_options_initialize();
    KV_CHECK(c && o, KV_EDATA, "%s: cannot initialise the shader compiler", name);
    shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
    if (!env->no_optimize)
        shaderc_compile_options_set_optimization_level(o, shaderc_optimization_level_performance);
    if (env->debug) shaderc_compile_options_set_generate_debug_info(o);
    shaderc_compile_options_set_include_callbacks(o, resolve_include, release_include, &cc);
    if (env->defines & KV_SHADER_SUBGROUP) shaderc_compile_options_add_macro_definition(o, "KV_SUBGROUP", 11, "1", 1);
    if (env->defines & KV_SHADER_INT8) shaderc_compile_options_add_macro_definition(o, "KV_INT8", 7, "1", 1);
    if (env->defines & KV_SHADER_BF16CM) shaderc_compile_options_add_macro_definition(o, "KV_BF16CM", 9, "1", 1);
    if (env->defines & KV_SHADER_CMEL) shaderc_compile_options_add_macro_definition(o, "KV_CM_EL", 8, "1", 1);
    if (env->defines & KV_SHADER_ABF16) shaderc_compile_options_add_macro_definition(o, "KV_ABF16", 8, "1", 1);
    if (env->defines & KV_SHADER_ADDR) shaderc_compile_options_add_macro_definition(o, "KV_ADDR", 7, "1", 1);
    for (int i = 0; env->extra && i < env->extra->n_macros; i++)
        shaderc_compile_options_add_macro_definition(o, env->extra->macro[i][0], strlen(env->extra->macro[i][0]),
                                                     env->extra->macro[i][1], strlen(env->extra->macro[i][1]));
    res = preprocess ? shaderc_compile_into_preprocessed_text(c, src, len, shaderc_compute_shader, name, "main", o)
                     : shaderc_compile_into_spv(c, src, len, shaderc_compute_shader, name, "main", o);
    if (shaderc_result_get_compilation_status(res) != shaderc_compilation_status_success) {
        char line[512];
        first_error(shaderc_result_get_error_message(res), line, sizeof line);
        size_t nerr = shaderc_result_get_num_errors(res);
        st = kv_error(KV_EDATA, "%s: does not compile: %s%s", name, line, nerr > 1 ? " (and more errors)" : "");
        goto cleanup;
    }
    *bytes = shaderc_result_get_length(res);
    *out = malloc(*bytes + 1);
    KV_CHECK(*out, KV_EDATA, "%s: out of memory", name);
    memcpy(*out, shaderc_result_get_bytes(res), *bytes);
    ((char *)*out)[*bytes] = '\0';
    kv_glsl_cache_put(&cache, *out, *bytes);
cleanup:
    kv_glsl_cache_end(&cache);
    free(src);
    if (res) shaderc_result_release(res);
    if (o) shaderc_compile_options_release(o);
    if (c) shaderc_compiler_release(c);
    return st;
}

/* Whether the program text names anything of subgroups (case aside):
 * subgroup operations, gl_Subgroup* or cooperative matrices. */
static int names_subgroups(const char *text)
{
    static const char *const words[] = {"subgroup", "coopmat"};
    for (const char *p = text; *p; p++)
        for (size_t w = 0; w < sizeof words / sizeof *words; w++)
            if (!strncasecmp(p, words[w], strlen(words[w]))) return 1;
    return 0;
}

enum kv_status kv_glsl_compile(const struct kv_glsl_env *env_in, const char *name, uint32_t **words, size_t *bytes)
{
    enum kv_status st = KV_OK;
    void *spv = NULL;
    struct kv_glsl_env e = *env_in;
    const struct kv_glsl_env *env = &e;
    *words = NULL;
    e.transpose = 0;
    if (e.reverse) { /* transposed unless the program names subgroups (before the renumbering adds some) */
        char *pre = NULL;
        size_t len = 0;
        e.reverse = 0;
        st = run_shaderc(&e, name, 1, (void **)&pre, &len);
        e.reverse = 1;
        e.transpose = st == KV_OK && !names_subgroups(pre);
        free(pre);
        KV_TRY(st);
    }
    KV_TRY(run_shaderc(env, name, 0, &spv, bytes));
    if (env->defines & KV_SHADER_BF16CM) {
        uint32_t *khr = NULL;
        size_t n = 0;
        char err[256];
        KV_CHECK(kv_spirv_nv_to_khr(spv, *bytes / 4, 1, &khr, &n, err, sizeof err) == 0, KV_EDATA,
                 "%s: cannot rewrite as bf16 cooperative matrices: %s", name, err);
        free(spv);
        spv = khr;
        *bytes = n * 4;
    }
    *words = spv;
    spv = NULL;
cleanup:
    free(spv);
    return st;
}

enum kv_status kv_glsl_preprocess(const struct kv_glsl_env *env, const char *name, char **out, size_t *len)
{
    return run_shaderc(env, name, 1, (void **)out, len);
}
