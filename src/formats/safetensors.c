#include "formats/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"

/* The format's own limit on the header, against a length that would make
 * a reader allocate without bound. */
#define ST_MAX_HEADER 100000000ull
#define ST_MAX_DIMS 64

/* The format's dtypes; kv = -1 where kverify does not read them, bits = 0
 * where the element is narrower than a byte (its range is not sized). */
static const struct {
    const char *name;
    int bits;
    int kv;
} dtypes[] = {
    {"F64", 64, KV_F64}, {"F32", 32, KV_F32}, {"F16", 16, KV_F16}, {"BF16", 16, KV_BF16},
    {"U8", 8, KV_U8}, {"U16", 16, KV_U16}, {"I32", 32, KV_I32}, {"I64", 64, -2},
    {"BOOL", 8, -1}, {"I8", 8, -1}, {"I16", 16, -1}, {"U32", 32, -1}, {"U64", 64, -1},
    {"F8_E5M2", 8, -1}, {"F8_E4M3", 8, -1}, {"F8_E8M0", 8, -1}, {"E8M0", 8, -1},
    {"F6_E2M3", 0, -1}, {"F6_E3M2", 0, -1}, {"F4", 0, -1},
};

struct st_tensor {
    const char *name;  /* in the parsed header */
    int dtype;         /* index in dtypes[] */
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    uint64_t begin, end;
};

struct kv_st {
    char path[1024];
    void *map;         /* the mapping, or NULL for a caller's buffer */
    size_t size;
    const unsigned char *bytes;
    const unsigned char *data; /* the byte buffer after the header */
    uint64_t data_size;
    cJSON *header;
    long n, n_meta;
    struct st_tensor *t;
    const char **meta; /* key, value pairs */
};

/* name made printable on one line (control bytes become '?'), cut at 80. */
static const char *show(const char *name, char *buf, size_t size)
{
    size_t i = 0;
    for (; name[i] && i + 1 < size && i < 80; i++) buf[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
    buf[i] = '\0';
    return buf;
}

/* Length of a valid UTF-8 string, or the offset of its first bad byte
 * (*bad = 1): no overlong forms, surrogates or code points past U+10FFFF. */
static size_t utf8_check(const char *s, int *bad)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    *bad = 0;
    while (p[i]) {
        unsigned c = p[i];
        int n = c < 0x80 ? 0 : c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
        if (n < 0) break;
        unsigned lo = 0x80, hi = 0xbf;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
        int j = 1;
        for (; j <= n; j++) {
            unsigned d = p[i + (size_t)j];
            if (d < (j == 1 ? lo : 0x80) || d > (j == 1 ? hi : 0xbf)) break;
        }
        if (j <= n) break;
        i += (size_t)n + 1;
    }
    *bad = p[i] != 0;
    return i;
}

/* A JSON number that is an integer in [0, 2^53]. */
static int get_u64(const cJSON *x, uint64_t *v)
{
    if (!cJSON_IsNumber(x)) return 0;
    double d = x->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return 0;
    *v = (uint64_t)d;
    return 1;
}

static enum kv_status parse_meta(struct kv_st *f, const cJSON *m)
{
    char a[96];
    if (!cJSON_IsObject(m)) return kv_error(KV_EDATA, "%s: __metadata__ is not an object of strings", f->path);
    long n = cJSON_GetArraySize(m);
    f->meta = calloc((size_t)(2 * n + 1), sizeof *f->meta);
    if (!f->meta) return kv_error(KV_EDATA, "%s: out of memory", f->path);
    for (const cJSON *e = m->child; e; e = e->next) {
        int bad;
        utf8_check(e->string, &bad);
        if (bad) return kv_error(KV_EDATA, "%s: __metadata__: a key is not valid UTF-8", f->path);
        if (!cJSON_IsString(e)) return kv_error(KV_EDATA, "%s: __metadata__.%s is not a string", f->path, show(e->string, a, sizeof a));
        utf8_check(e->valuestring, &bad);
        if (bad) return kv_error(KV_EDATA, "%s: __metadata__.%s is not valid UTF-8", f->path, show(e->string, a, sizeof a));
        for (long i = 0; i < f->n_meta; i++)
            if (!strcmp(f->meta[2 * i], e->string))
                return kv_error(KV_EDATA, "%s: __metadata__.%s appears twice", f->path, show(e->string, a, sizeof a));
        f->meta[2 * f->n_meta] = e->string;
        f->meta[2 * f->n_meta + 1] = e->valuestring;
        f->n_meta++;
    }
    return KV_OK;
}

static enum kv_status parse_tensor(struct kv_st *f, const cJSON *e, struct st_tensor *t)
{
    char a[96];
    const char *name = show(e->string, a, sizeof a);
    t->name = e->string;
    if (!cJSON_IsObject(e)) return kv_error(KV_EDATA, "%s: tensor '%s': not an object", f->path, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype"), *sh = cJSON_GetObjectItemCaseSensitive(e, "shape"),
                *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt)) return kv_error(KV_EDATA, "%s: tensor '%s': no \"dtype\" string", f->path, name);
    t->dtype = -1;
    for (int i = 0; i < (int)(sizeof dtypes / sizeof dtypes[0]); i++)
        if (!strcmp(dt->valuestring, dtypes[i].name)) t->dtype = i;
    char b[96];
    if (t->dtype < 0) return kv_error(KV_EDATA, "%s: tensor '%s': unknown dtype '%s'", f->path, name, show(dt->valuestring, b, sizeof b));
    if (!cJSON_IsArray(sh)) return kv_error(KV_EDATA, "%s: tensor '%s': no \"shape\" list", f->path, name);
    if (cJSON_GetArraySize(sh) > ST_MAX_DIMS)
        return kv_error(KV_EDATA, "%s: tensor '%s': %d dimensions, more than %d", f->path, name, cJSON_GetArraySize(sh), ST_MAX_DIMS);
    uint64_t count = 1;
    int overflow = 0;
    t->ndim = 0;
    for (const cJSON *d = sh->child; d; d = d->next) {
        uint64_t v;
        if (!get_u64(d, &v)) return kv_error(KV_EDATA, "%s: tensor '%s': shape holds something not a size", f->path, name);
        t->shape[t->ndim++] = (int64_t)v;
        if (v && count > UINT64_MAX / v) overflow = 1;
        count *= v;
    }
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || !get_u64(off->child, &t->begin) ||
        !get_u64(off->child->next, &t->end))
        return kv_error(KV_EDATA, "%s: tensor '%s': \"data_offsets\" is not [begin, end]", f->path, name);
    if (t->begin > t->end || t->end > f->data_size)
        return kv_error(KV_EDATA, "%s: tensor '%s': data_offsets [%llu, %llu] out of the data's %llu bytes", f->path, name,
                        (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)f->data_size);
    int bits = dtypes[t->dtype].bits;
    if (bits) {
        char s[160];
        kv_shape_str(t->ndim > KV_MAX_DIMS ? 0 : t->ndim, t->shape, s, sizeof s);
        uint64_t es = (uint64_t)bits / 8;
        if (overflow || count > UINT64_MAX / es || count * es != t->end - t->begin)
            return kv_error(KV_EDATA, "%s: tensor '%s': shape %s of %s does not fill its %llu bytes", f->path, name,
                            t->ndim > KV_MAX_DIMS ? "(long)" : s, dtypes[t->dtype].name,
                            (unsigned long long)(t->end - t->begin));
    }
    return KV_OK;
}

static int by_range(const void *a, const void *b)
{
    const struct st_tensor *x = *(const struct st_tensor *const *)a, *y = *(const struct st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const struct st_tensor *const *)a)->name, (*(const struct st_tensor *const *)b)->name);
}

/* No name twice, and the ranges tile the data: no overlap, no hole. */
static enum kv_status check_layout(struct kv_st *f)
{
    enum kv_status st = KV_OK;
    char a[96], b[96];
    struct st_tensor **o = malloc((size_t)(f->n ? f->n : 1) * sizeof *o);
    KV_CHECK(o, KV_EDATA, "%s: out of memory", f->path);
    for (long i = 0; i < f->n; i++) o[i] = &f->t[i];
    qsort(o, (size_t)f->n, sizeof *o, by_name);
    for (long i = 1; i < f->n; i++)
        KV_CHECK(strcmp(o[i - 1]->name, o[i]->name), KV_EDATA, "%s: tensor '%s' appears twice", f->path,
                 show(o[i]->name, a, sizeof a));
    qsort(o, (size_t)f->n, sizeof *o, by_range);
    uint64_t at = 0;
    for (long i = 0; i < f->n; i++) {
        KV_CHECK(o[i]->begin >= at, KV_EDATA, "%s: tensors '%s' and '%s' overlap (bytes %llu..%llu)", f->path,
                 show(o[i - 1]->name, a, sizeof a), show(o[i]->name, b, sizeof b), (unsigned long long)o[i]->begin,
                 (unsigned long long)at);
        KV_CHECK(o[i]->begin == at, KV_EDATA, "%s: bytes %llu..%llu of the data belong to no tensor (before '%s')", f->path,
                 (unsigned long long)at, (unsigned long long)o[i]->begin, show(o[i]->name, a, sizeof a));
        at = o[i]->end;
    }
    KV_CHECK(at == f->data_size, KV_EDATA, "%s: bytes %llu..%llu of the data belong to no tensor (after the last)", f->path,
             (unsigned long long)at, (unsigned long long)f->data_size);
cleanup:
    free(o);
    return st;
}

static enum kv_status parse(struct kv_st *f)
{
    enum kv_status st = KV_OK;
    KV_CHECK(f->size >= 8, KV_EDATA, "%s: %zu bytes, shorter than the 8-byte header length", f->path, f->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->bytes[i];
    KV_CHECK(n <= ST_MAX_HEADER, KV_EDATA, "%s: header length %llu is over the format's limit of %llu", f->path,
             (unsigned long long)n, ST_MAX_HEADER);
    KV_CHECK(n <= f->size - 8, KV_EDATA, "%s: header length %llu runs past the file's %zu bytes", f->path,
             (unsigned long long)n, f->size);
    const char *h = (const char *)f->bytes + 8, *end = NULL;
    KV_CHECK(n >= 2 && h[0] == '{', KV_EDATA, "%s: the header does not start with '{'", f->path);
    f->header = cJSON_ParseWithLengthOpts(h, (size_t)n, &end, 0);
    KV_CHECK(f->header, KV_EDATA, "%s: the header is not JSON (at byte %ld of %llu)", f->path,
             (long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - h : 0), (unsigned long long)n);
    KV_CHECK(cJSON_IsObject(f->header), KV_EDATA, "%s: the header is not a JSON object", f->path);
    for (const char *p = end; p < h + n; p++)
        KV_CHECK(*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t', KV_EDATA,
                 "%s: bytes after the header's JSON (at byte %ld of %llu)", f->path, (long)(p - h), (unsigned long long)n);
    f->data = f->bytes + 8 + n;
    f->data_size = f->size - 8 - n;
    long count = cJSON_GetArraySize(f->header);
    f->t = calloc((size_t)(count ? count : 1), sizeof *f->t);
    KV_CHECK(f->t, KV_EDATA, "%s: out of memory", f->path);
    int seen_meta = 0;
    for (const cJSON *e = f->header->child; e; e = e->next) {
        int bad;
        size_t at = utf8_check(e->string, &bad);
        char a[96];
        KV_CHECK(!bad, KV_EDATA, "%s: a tensor name is not valid UTF-8 (byte %zu of '%s')", f->path, at,
                 show(e->string, a, at + 1 < sizeof a ? at + 1 : sizeof a));
        if (!strcmp(e->string, "__metadata__")) {
            KV_CHECK(!seen_meta++, KV_EDATA, "%s: __metadata__ appears twice", f->path);
            KV_TRY(parse_meta(f, e));
            continue;
        }
        KV_TRY(parse_tensor(f, e, &f->t[f->n]));
        f->n++;
    }
    KV_TRY(check_layout(f));
cleanup:
    return st;
}

enum kv_status kv_st_open_mem(const char *what, const void *buf, size_t size, struct kv_st **out)
{
    *out = NULL;
    struct kv_st *f = calloc(1, sizeof *f);
    if (!f) return kv_error(KV_EDATA, "%s: out of memory", what);
    snprintf(f->path, sizeof f->path, "%s", what);
    f->bytes = buf;
    f->size = size;
    enum kv_status st = parse(f);
    if (st) {
        kv_st_close(f);
        return st;
    }
    *out = f;
    return KV_OK;
}

enum kv_status kv_st_open(const char *path, struct kv_st **out)
{
    *out = NULL;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return kv_error(KV_EDATA, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return kv_error(KV_EDATA, "%s: not a regular file", path);
    }
    size_t size = (size_t)sb.st_size;
    void *map = NULL;
    if (size) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            close(fd);
            return kv_error(KV_EDATA, "%s: cannot map: %s", path, strerror(errno));
        }
    }
    close(fd);
    static const unsigned char none[1];
    enum kv_status st = kv_st_open_mem(path, map ? map : none, size, out);
    if (st) {
        if (map) munmap(map, size);
        return st;
    }
    (*out)->map = map;
    return KV_OK;
}

long kv_st_count(const struct kv_st *f) { return f->n; }
const char *kv_st_name(const struct kv_st *f, long i) { return i >= 0 && i < f->n ? f->t[i].name : NULL; }
const char *kv_st_dtype(const struct kv_st *f, long i) { return i >= 0 && i < f->n ? dtypes[f->t[i].dtype].name : NULL; }
long kv_st_meta_count(const struct kv_st *f) { return f->n_meta; }
const char *kv_st_meta_key(const struct kv_st *f, long i) { return i >= 0 && i < f->n_meta ? f->meta[2 * i] : NULL; }
const char *kv_st_meta_value(const struct kv_st *f, long i) { return i >= 0 && i < f->n_meta ? f->meta[2 * i + 1] : NULL; }
const char *kv_st_path(const struct kv_st *f) { return f->path; }

long kv_st_find(const struct kv_st *f, const char *name)
{
    for (long i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name)) return i;
    return -1;
}

const char *kv_st_meta(const struct kv_st *f, const char *key)
{
    for (long i = 0; i < f->n_meta; i++)
        if (!strcmp(f->meta[2 * i], key)) return f->meta[2 * i + 1];
    return NULL;
}

enum kv_status kv_st_read(struct kv_st *f, long i, struct kv_tensor *out)
{
    memset(out, 0, sizeof *out);
    const struct st_tensor *t = &f->t[i];
    char a[96];
    const char *name = show(t->name, a, sizeof a);
    int kv = dtypes[t->dtype].kv;
    if (kv == -1)
        return kv_error(KV_EDATA, "%s: tensor '%s' is %s; kverify reads F32, F64, F16, BF16, U8, U16, I32 and I64", f->path,
                        name, dtypes[t->dtype].name);
    if (t->ndim > KV_MAX_DIMS)
        return kv_error(KV_EDATA, "%s: tensor '%s' has %d dimensions; kverify reads at most %d", f->path, name, t->ndim,
                        KV_MAX_DIMS);
    enum kv_dtype d = kv == -2 ? KV_I32 : (enum kv_dtype)kv;
    for (int k = 0; k < t->ndim; k++)
        if (t->shape[k] < 1) {
            char s[96];
            kv_shape_str(t->ndim, t->shape, s, sizeof s);
            return kv_error(KV_EDATA, "%s: tensor '%s' has shape %s: no elements", f->path, name, s);
        }
    if (kv_tensor_alloc(out, name, d, t->ndim, t->shape) != KV_OK)
        return kv_error(KV_EDATA, "%s: tensor '%s': %s", f->path, name, kv_error_msg());
    const unsigned char *src = f->data + t->begin;
    if (kv != -2) {
        memcpy(out->data, src, kv_tensor_bytes(out));
        return KV_OK;
    }
    int32_t *dst = out->data;
    for (size_t j = 0; j < out->count; j++) {
        int64_t v;
        memcpy(&v, src + 8 * j, 8);
        if (v < INT32_MIN || v > INT32_MAX) {
            kv_tensor_free(out);
            return kv_error(KV_EDATA, "%s: tensor '%s' (I64): element %zu = %lld does not fit i32", f->path, name, j,
                            (long long)v);
        }
        dst[j] = (int32_t)v;
    }
    return KV_OK;
}

void kv_st_close(struct kv_st *f)
{
    if (!f) return;
    if (f->map) munmap(f->map, f->size);
    cJSON_Delete(f->header);
    free(f->t);
    free(f->meta);
    free(f);
}

static const char *st_dtype_name(enum kv_dtype d)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].kv == (int)d) return dtypes[i].name;
    return NULL;
}

static cJSON *add_u64(cJSON *arr, uint64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%llu", (unsigned long long)v);
    cJSON *x = cJSON_CreateRaw(s);
    if (x) cJSON_AddItemToArray(arr, x);
    return x;
}

enum kv_status kv_st_write(const char *path, const struct kv_st_entry *e, int n, const char *const *meta, int n_meta)
{
    enum kv_status st = KV_OK;
    cJSON *root = cJSON_CreateObject();
    char *text = NULL, *head = NULL;
    const void **parts = calloc((size_t)n + 1, sizeof *parts);
    size_t *sizes = calloc((size_t)n + 1, sizeof *sizes);
    KV_CHECK(root && parts && sizes, KV_EDATA, "%s: out of memory", path);
    if (n_meta) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        KV_CHECK(m, KV_EDATA, "%s: out of memory", path);
        for (int i = 0; i < n_meta; i++) KV_CHECK(cJSON_AddStringToObject(m, meta[2 * i], meta[2 * i + 1]), KV_EDATA, "%s: out of memory", path);
    }
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        const char *dt = st_dtype_name(e[i].dtype);
        KV_CHECK(dt, KV_EDATA, "%s: %s: dtype %s has no safetensors form", path, e[i].name, kv_dtype_info(e[i].dtype)->name);
        size_t count;
        KV_TRY(kv_shape_count(e[i].name, e[i].dtype, e[i].ndim, e[i].shape, &count));
        cJSON *x = cJSON_AddObjectToObject(root, e[i].name), *sh, *off;
        KV_CHECK(x && cJSON_AddStringToObject(x, "dtype", dt) && (sh = cJSON_AddArrayToObject(x, "shape")) &&
                     (off = cJSON_AddArrayToObject(x, "data_offsets")),
                 KV_EDATA, "%s: out of memory", path);
        for (int d = 0; d < e[i].ndim; d++) KV_CHECK(add_u64(sh, (uint64_t)e[i].shape[d]), KV_EDATA, "%s: out of memory", path);
        sizes[i + 1] = count * kv_dtype_info(e[i].dtype)->size;
        parts[i + 1] = e[i].data;
        KV_CHECK(add_u64(off, at) && add_u64(off, at + sizes[i + 1]), KV_EDATA, "%s: out of memory", path);
        at += sizes[i + 1];
    }
    text = cJSON_PrintUnformatted(root);
    KV_CHECK(text, KV_EDATA, "%s: out of memory", path);
    size_t len = strlen(text), padded = (len + 7) / 8 * 8;
    head = malloc(8 + padded);
    KV_CHECK(head, KV_EDATA, "%s: out of memory", path);
    for (int i = 0; i < 8; i++) head[i] = (char)(unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(head + 8, text, len);
    memset(head + 8 + len, ' ', padded - len);
    parts[0] = head;
    sizes[0] = 8 + padded;
    KV_TRY(kv_write_atomic_parts(path, parts, sizes, n + 1));
cleanup:
    cJSON_Delete(root);
    free(text);
    free(head);
    free(parts);
    free(sizes);
    return st;
}
