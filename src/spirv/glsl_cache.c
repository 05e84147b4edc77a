#include "spirv/glsl_cache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/files.h"

/* The compiler's identity (CMakeLists.txt): the digest of the archives it is
 * linked from and of glsl.c and this file. */
#ifndef KV_COMPILER_ID
#error "KV_COMPILER_ID must name the shader compiler (CMakeLists.txt)"
#endif

enum { SLOTS = 4096 };
static const char MAGIC[8] = "KVGLSL1\n";
#define MAX_ENTRY ((size_t)64 << 20)

static int append(char **buf, size_t *len, size_t *cap, const void *data, size_t n)
{
    if (*len + n > *cap) {
        size_t want = *cap ? *cap : 4096;
        while (want < *len + n) want *= 2;
        char *b = realloc(*buf, want);
        if (!b) return 0;
        *buf = b, *cap = want;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    return 1;
}

/* A length, then the bytes. */
static int append_item(char **buf, size_t *len, size_t *cap, const void *data, size_t n)
{
    uint64_t n64 = n;
    return append(buf, len, cap, &n64, sizeof n64) && append(buf, len, cap, data, n);
}

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

void kv_glsl_cache_begin(struct kv_glsl_cache *c, const void *opts, size_t opts_len, const char *name,
                         const char *text, size_t len)
{
    memset(c, 0, sizeof *c);
    const char *off = getenv("KVERIFY_NO_SHADER_CACHE");
    char dir[1000];
    if ((off && *off && strcmp(off, "0")) || !kv_cache_dir(dir, sizeof dir)) return;
    size_t cap = 0;
    if (!append(&c->key, &c->key_len, &cap, MAGIC, sizeof MAGIC) ||
        !append_item(&c->key, &c->key_len, &cap, KV_COMPILER_ID, sizeof KV_COMPILER_ID - 1) ||
        !append_item(&c->key, &c->key_len, &cap, opts, opts_len) ||
        !append_item(&c->key, &c->key_len, &cap, name, strlen(name)) ||
        !append_item(&c->key, &c->key_len, &cap, text, len)) {
        kv_glsl_cache_end(c);
        return;
    }
    size_t n = strlen(dir);
    snprintf(dir + n, sizeof dir - n, "/glsl");
    if (!kv_make_dir(dir)) {
        kv_glsl_cache_end(c);
        return;
    }
    snprintf(c->path, sizeof c->path, "%s/%03x.bin", dir, (unsigned)(fnv1a(c->key, c->key_len) % SLOTS));
    c->on = 1;
}

void kv_glsl_cache_include(struct kv_glsl_cache *c, const char *name, const char *text, size_t len)
{
    if (c->on && !(append_item(&c->incl, &c->incl_len, &c->incl_cap, name, strlen(name)) &&
                   append_item(&c->incl, &c->incl_len, &c->incl_cap, text, len)))
        c->on = 0; /* out of memory: this compile is not kept */
}

/* The next length-prefixed item of [*p, end), or NULL. */
static const char *take(const char **p, const char *end, size_t *n)
{
    uint64_t n64;
    if ((size_t)(end - *p) < sizeof n64) return NULL;
    memcpy(&n64, *p, sizeof n64);
    if (n64 > (uint64_t)(end - *p) - sizeof n64) return NULL;
    const char *item = *p + sizeof n64;
    *p = item + n64;
    *n = (size_t)n64;
    return item;
}

/* Whether every included file of the entry, [p, end), reads the same now. */
static int includes_same(const char *p, const char *end, kv_glsl_cache_load load, const void *ctx)
{
    while (p < end) {
        size_t nn, tn, len;
        const char *name = take(&p, end, &nn), *text = name ? take(&p, end, &tn) : NULL;
        if (!text || nn == 0 || nn >= 4096) return 0;
        char path[4096], *now = NULL;
        memcpy(path, name, nn);
        path[nn] = '\0';
        int same = load(ctx, path, &now, &len) == 0 && len == tn && !memcmp(now, text, tn);
        free(now);
        if (!same) return 0;
    }
    return 1;
}

int kv_glsl_cache_get(struct kv_glsl_cache *c, kv_glsl_cache_load load, const void *ctx, void **out, size_t *bytes)
{
    if (!c->on) return 0;
    FILE *f = fopen(c->path, "rb");
    if (!f) return 0;
    char *buf = NULL;
    size_t got = 0, cap = 0, n;
    char chunk[65536];
    int ok = 1;
    while (ok && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        ok = got + n <= MAX_ENTRY && append(&buf, &got, &cap, chunk, n);
    fclose(f);
    const char *p = buf, *end = buf + got, *key = NULL, *incl = NULL, *spv = NULL;
    size_t kn = 0, in = 0, sn = 0;
    if (ok && buf) key = take(&p, end, &kn);
    if (key) incl = take(&p, end, &in);
    if (incl) spv = take(&p, end, &sn);
    int hit = spv && p == end && kn == c->key_len && !memcmp(key, c->key, kn) &&
              includes_same(incl, incl + in, load, ctx) && (*out = malloc(sn + 1)) != NULL;
    if (hit) {
        memcpy(*out, spv, sn);
        ((char *)*out)[sn] = '\0';
        *bytes = sn;
    }
    free(buf);
    return hit;
}

void kv_glsl_cache_put(const struct kv_glsl_cache *c, const void *out, size_t bytes)
{
    if (!c->on) return;
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", c->path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    uint64_t len[3] = {c->key_len, c->incl_len, bytes};
    const void *part[3] = {c->key, c->incl, out};
    int ok = 1;
    for (int i = 0; i < 3; i++)
        ok = ok && fwrite(&len[i], sizeof len[i], 1, f) == 1 && (!len[i] || fwrite(part[i], len[i], 1, f) == 1);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, c->path) != 0) remove(tmp);
}

void kv_glsl_cache_end(struct kv_glsl_cache *c)
{
    free(c->key);
    free(c->incl);
    memset(c, 0, sizeof *c);
}
