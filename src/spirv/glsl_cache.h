/* Compiled GLSL kept on disk ($XDG_CACHE_HOME/kverify/glsl, else
 * ~/.cache/kverify/glsl), so that a stage recompiled at run time (with its
 * subgroups reversed for --stress, with -g for the sanitizer, a --shader
 * file) costs the compiler once, not in every process.
 *
 * An entry holds everything the compile read: the compiler that compiled it
 * (the digest of its archives and of the code that drives it, made at
 * configure time, so that every build of one compiler shares the entries), the
 * options, the main file's name and text and each included file's name and
 * text as the compile saw them. A lookup compares all of it, byte for byte,
 * reading each included file again, so that an entry is used only where the
 * compile would read the same files and produce the same words. 4096 slots,
 * each holding one entry (a newer compile takes over its slot): the cache
 * stays bounded. KVERIFY_NO_SHADER_CACHE=1 turns it off. Any failure to read
 * or write it is a miss, never an error. */
#ifndef KV_GLSL_CACHE_H
#define KV_GLSL_CACHE_H

#include <stddef.h>

/* What one compile read, gathered as it goes. */
struct kv_glsl_cache {
    int on;
    char *key;   /* the options, the main file's name and text */
    size_t key_len;
    char *incl;  /* the included files: name and text, each with its length */
    size_t incl_len, incl_cap;
    char path[1100];
};

/* Reads a file as the compile would see it (malloc'd text); 0 on success. */
typedef int (*kv_glsl_cache_load)(const void *ctx, const char *name, char **text, size_t *len);

/* Begin: the options (opts, opts_len bytes) and the main file. c->on is 0
 * where the cache is off or cannot hold this compile. */
void kv_glsl_cache_begin(struct kv_glsl_cache *c, const void *opts, size_t opts_len, const char *name,
                         const char *text, size_t len);
/* The compile read an included file. */
void kv_glsl_cache_include(struct kv_glsl_cache *c, const char *name, const char *text, size_t len);
/* The entry for this compile, if its included files read the same now
 * (load, ctx): *out malloc'd (one NUL byte past *bytes); 1 on a hit. */
int kv_glsl_cache_get(struct kv_glsl_cache *c, kv_glsl_cache_load load, const void *ctx, void **out, size_t *bytes);
/* Keep a successful compile's result. */
void kv_glsl_cache_put(const struct kv_glsl_cache *c, const void *out, size_t bytes);
void kv_glsl_cache_end(struct kv_glsl_cache *c);

#endif
