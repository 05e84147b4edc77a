/* Whole files in and out. */
#include "core/files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum kv_status kv_read_file(const char *path, size_t max, char **buf, size_t *size)
{
    enum kv_status st = KV_OK;
    *buf = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return kv_error(KV_EDATA, "%s: cannot open: %s", path, strerror(errno));
    KV_CHECK(fseek(f, 0, SEEK_END) == 0, KV_EDATA, "%s: cannot seek (not a regular file?)", path);
    long n = ftell(f);
    KV_CHECK(n >= 0, KV_EDATA, "%s: cannot tell its size", path);
    KV_CHECK((unsigned long)n <= max, KV_EDATA, "%s: %ld bytes, larger than the %zu accepted", path, n, max);
    KV_CHECK(fseek(f, 0, SEEK_SET) == 0, KV_EDATA, "%s: cannot seek", path);
    *buf = malloc((size_t)n + 1);
    KV_CHECK(*buf, KV_EDATA, "%s: out of memory for %ld bytes", path, n);
    KV_CHECK(fread(*buf, 1, (size_t)n, f) == (size_t)n, KV_EDATA, "%s: read error", path);
    (*buf)[n] = '\0';
    *size = (size_t)n;
cleanup:
    fclose(f);
    if (st) {
        free(*buf);
        *buf = NULL;
    }
    return st;
}

enum kv_status kv_write_atomic(const char *path, const char *data, size_t size)
{
    const void *parts[1] = {data};
    return kv_write_atomic_parts(path, parts, &size, 1);
}

enum kv_status kv_write_atomic_parts(const char *path, const void *const *data, const size_t *size, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) total += size[i];
    if (strcmp(path, "-") == 0) {
        for (int i = 0; i < n; i++)
            if (size[i] && fwrite(data[i], 1, size[i], stdout) != size[i]) return kv_error(KV_EDATA, "stdout: write failed");
        if (fflush(stdout) != 0) return kv_error(KV_EDATA, "stdout: write failed");
        return KV_OK;
    }
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return kv_error(KV_EUSAGE, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return kv_error(KV_EDATA, "%s: cannot write: %s", path, strerror(errno));
    /* KVERIFY_TEST_WRITE_PAUSE_MS: pause half-way through the write, so a
     * test can kill the process there and find the previous file whole. */
    const char *pause = getenv("KVERIFY_TEST_WRITE_PAUSE_MS");
    size_t half = pause ? total / 2 : total, done = 0;
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        const char *p = data[i];
        size_t left = size[i];
        while (ok && left) {
            size_t chunk = left;
            if (done < half && done + chunk > half) chunk = half - done;
            ok = fwrite(p, 1, chunk, f) == chunk;
            p += chunk, left -= chunk, done += chunk;
            if (pause && done == half) {
                fflush(f);
                usleep((useconds_t)(atoi(pause) > 0 ? atoi(pause) : 0) * 1000u);
                pause = NULL;
            }
        }
    }
    ok = fflush(f) == 0 && ok;
    ok = fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return kv_error(KV_EDATA, "%s: cannot write: %s", path, strerror(e));
    }
    return KV_OK;
}

int kv_make_dir(const char *dir)
{
    struct stat sb;
    return mkdir(dir, 0755) == 0 || (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode));
}

int kv_cache_dir(char *dir, size_t size)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(dir, size, "%s/kverify", xdg);
    else if (home && *home) snprintf(dir, size, "%s/.cache/kverify", home);
    else return 0;
    char parent[1024];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        mkdir(parent, 0755);
    }
    return kv_make_dir(dir);
}
