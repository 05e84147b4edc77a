#include "spirv/shader.h"

#include <errno.h>
#include <limits.h>
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

enum kv_status kv_shader_load(const char *path, unsigned defines, const struct kv_glsl_extra *extra, uint32_t **words,
                              size_t *bytes)
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
        struct kv_glsl_env env = {.defines = defines, .extra = extra};
        KV_TRY(kv_glsl_compile(&env, path, words, bytes));
    }
cleanup:
    free(buf);
    return st;
}
