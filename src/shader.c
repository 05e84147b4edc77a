#include "shader.h"

#include <errno.h>
#include <limits.h>
#include <shaderc/shaderc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *size, enum kv_status *st)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    *size = 0;
    if (!f) {
        *st = kv_error(KV_EDATA, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    buf = malloc(cap + 1);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        if (cap > (64u << 20)) {
            free(buf);
            buf = NULL;
            *st = kv_error(KV_EDATA, "%s: larger than 64 MiB, not a shader", path);
            break;
        }
        char *nb = realloc(buf, 2 * cap + 1);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
        *st = kv_error(KV_EDATA, "%s: read error", path);
    } else if (!buf && *st == KV_OK) {
        *st = kv_error(KV_EDATA, "%s: out of memory", path);
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *size = n;
    }
    return buf;
}

struct inc_result {
    shaderc_include_result r;
    char name[PATH_MAX];
    char *content;
    char err[PATH_MAX + 64];
};

static shaderc_include_result *resolve_include(void *user, const char *requested, int type,
                                               const char *requesting, size_t depth)
{
    (void)user, (void)type, (void)depth;
    struct inc_result *ir = calloc(1, sizeof *ir);
    if (!ir) return NULL;
    const char *slash = strrchr(requesting, '/');
    if (requested[0] == '/' || !slash)
        snprintf(ir->name, sizeof ir->name, "%s", requested);
    else
        snprintf(ir->name, sizeof ir->name, "%.*s/%s", (int)(slash - requesting), requesting, requested);
    size_t size = 0;
    enum kv_status st = KV_OK;
    ir->content = slurp(ir->name, &size, &st);
    if (ir->content) {
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

static enum kv_status compile_glsl(const char *path, const char *src, size_t len, unsigned defines,
                                   uint32_t **words, size_t *bytes)
{
    enum kv_status st = KV_OK;
    shaderc_compiler_t c = shaderc_compiler_initialize();
    shaderc_compile_options_t o = shaderc_compile_options_initialize();
    shaderc_compilation_result_t res = NULL;
    KV_CHECK(c && o, KV_EDATA, "%s: cannot initialise the shader compiler", path);
    shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
    shaderc_compile_options_set_optimization_level(o, shaderc_optimization_level_performance);
    shaderc_compile_options_set_include_callbacks(o, resolve_include, release_include, NULL);
    if (defines & KV_SHADER_SUBGROUP) shaderc_compile_options_add_macro_definition(o, "KV_SUBGROUP", 11, "1", 1);
    if (defines & KV_SHADER_INT8) shaderc_compile_options_add_macro_definition(o, "KV_INT8", 7, "1", 1);
    res = shaderc_compile_into_spv(c, src, len, shaderc_compute_shader, path, "main", o);
    if (shaderc_result_get_compilation_status(res) != shaderc_compilation_status_success) {
        char line[512];
        first_error(shaderc_result_get_error_message(res), line, sizeof line);
        size_t nerr = shaderc_result_get_num_errors(res);
        st = kv_error(KV_EDATA, "%s: does not compile: %s%s", path, line,
                      nerr > 1 ? " (and more errors)" : "");
        goto cleanup;
    }
    *bytes = shaderc_result_get_length(res);
    *words = malloc(*bytes);
    KV_CHECK(*words, KV_EDATA, "%s: out of memory", path);
    memcpy(*words, shaderc_result_get_bytes(res), *bytes);
cleanup:
    if (res) shaderc_result_release(res);
    if (o) shaderc_compile_options_release(o);
    if (c) shaderc_compiler_release(c);
    return st;
}

enum kv_status kv_shader_load(const char *path, unsigned defines, uint32_t **words, size_t *bytes)
{
    enum kv_status st = KV_OK;
    size_t size = 0;
    *words = NULL;
    *bytes = 0;
    char *buf = slurp(path, &size, &st);
    if (!buf) return st;
    size_t plen = strlen(path);
    if (plen > 4 && strcmp(path + plen - 4, ".spv") == 0) {
        uint32_t magic = 0;
        if (size >= 4) memcpy(&magic, buf, 4);
        KV_CHECK(size >= 20 && size % 4 == 0 && magic == 0x07230203u, KV_EDATA,
                 "%s: not a SPIR-V module (%s)", path,
                 size % 4 ? "size is not a multiple of 4" : "bad magic number");
        *words = (uint32_t *)buf;
        *bytes = size;
        buf = NULL;
    } else {
        KV_TRY(compile_glsl(path, buf, size, defines, words, bytes));
    }
cleanup:
    free(buf);
    return st;
}
