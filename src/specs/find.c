/* Where spec kernels come from: the ones shipped with kverify (embedded: the
 * .kernel.json files of shaders/), the folders of --kernels, $KVERIFY_KERNELS
 * (colon-separated) and the installed share folder; every file named
 * *.kernel.json in them, in name order. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "specs/spec.h"
#include "spirv/glsl.h"

#ifndef KV_SHARE_KERNELS
#define KV_SHARE_KERNELS "/usr/local/share/kverify/kernels"
#endif

static const char suffix[] = ".kernel.json";

static int is_spec(const char *name)
{
    size_t n = strlen(name), k = sizeof suffix - 1;
    return n > k && !strcmp(name + n - k, suffix);
}

static enum kv_status add(const char *path, const char *text, size_t len, int builtin, const char *dir)
{
    struct kv_spec *s = NULL;
    enum kv_status st = kv_spec_parse(path, text, len, builtin, &s);
    if (st) return st;
    s->k.origin = dir;
    st = kv_kernel_register(&s->k, path);
    if (st) kv_spec_free(s);
    return st; /* registered specs live as long as the process */
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum kv_status load_dir(const char *dir, const char *from)
{
    enum kv_status st = KV_OK;
    DIR *d = opendir(dir);
    char **names = NULL, *text = NULL;
    size_t n = 0, cap = 0;
    if (!d) return from ? kv_error(KV_EUSAGE, "%s %s: not a folder kverify can read", from, dir) : KV_OK;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_spec(e->d_name)) continue;
        if (n == cap) {
            char **m = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *m);
            KV_CHECK(m, KV_EDEVICE, "out of host memory listing %s", dir);
            names = m;
        }
        KV_CHECK(names[n] = strdup(e->d_name), KV_EDEVICE, "out of host memory listing %s", dir);
        n++;
    }
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        KV_TRY(kv_read_file(path, (size_t)1 << 22, &text, &len));
        KV_TRY(add(path, text, len, 0, dir));
        free(text);
        text = NULL;
    }
cleanup:
    closedir(d);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    free(text);
    return st;
}

/* A folder once, however many ways it is named. */
static int seen(const char *dir, char (*done)[PATH_MAX], int *n_done)
{
    char real[PATH_MAX];
    if (!realpath(dir, real)) return 0;
    for (int i = 0; i < *n_done; i++)
        if (!strcmp(done[i], real)) return 1;
    if (*n_done < 64) snprintf(done[(*n_done)++], PATH_MAX, "%s", real);
    return 0;
}

static char *env_dirs;

enum kv_status kv_specs_load(const char *const *dirs, int n_dirs)
{
    static char done[64][PATH_MAX];
    int n_done = 0;
    for (size_t i = 0; kv_glsl_builtin_at(i); i++) {
        const struct kv_glsl_file *f = kv_glsl_builtin_at(i);
        if (is_spec(f->name)) KV_TRY_RET(add(f->name, f->text, f->len, 1, NULL));
    }
    for (int i = 0; i < n_dirs; i++)
        if (!seen(dirs[i], done, &n_done)) KV_TRY_RET(load_dir(dirs[i], "--kernels"));
    const char *env = getenv("KVERIFY_KERNELS");
    if (env && *env) {
        free(env_dirs);
        if (!(env_dirs = strdup(env))) return kv_error(KV_EDEVICE, "out of host memory");
        for (char *save = NULL, *d = strtok_r(env_dirs, ":", &save); d; d = strtok_r(NULL, ":", &save))
            if (!seen(d, done, &n_done)) KV_TRY_RET(load_dir(d, "KVERIFY_KERNELS:"));
    }
    if (!seen(KV_SHARE_KERNELS, done, &n_done)) KV_TRY_RET(load_dir(KV_SHARE_KERNELS, NULL));
    return KV_OK;
}
