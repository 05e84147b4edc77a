#include "formats/npz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "formats/npy.h"

struct kv_npz {
    zip_t *zip;
    char what[1024];
};

static enum kv_status open_source(const char *what, zip_source_t *src, zip_error_t *err, struct kv_npz **out)
{
    struct kv_npz *z = calloc(1, sizeof *z);
    if (!z) {
        zip_source_free(src);
        return kv_error(KV_EDATA, "%s: out of memory", what);
    }
    snprintf(z->what, sizeof z->what, "%s", what);
    z->zip = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, err);
    if (!z->zip) {
        enum kv_status st = kv_error(KV_EDATA, "%s: not a readable .npz archive: %s", what, zip_error_strerror(err));
        zip_source_free(src);
        free(z);
        return st;
    }
    *out = z;
    return KV_OK;
}

enum kv_status kv_npz_open(const char *path, struct kv_npz **out)
{
    zip_error_t err;
    zip_error_init(&err);
    *out = NULL;
    zip_source_t *src = zip_source_file_create(path, 0, -1, &err);
    enum kv_status st;
    if (!src) st = kv_error(KV_EDATA, "%s: cannot open: %s", path, zip_error_strerror(&err));
    else st = open_source(path, src, &err, out);
    zip_error_fini(&err);
    return st;
}

enum kv_status kv_npz_open_mem(const char *what, const void *buf, size_t size, struct kv_npz **out)
{
    zip_error_t err;
    zip_error_init(&err);
    *out = NULL;
    zip_source_t *src = zip_source_buffer_create(buf, size, 0, &err);
    enum kv_status st;
    if (!src) st = kv_error(KV_EDATA, "%s: %s", what, zip_error_strerror(&err));
    else st = open_source(what, src, &err, out);
    zip_error_fini(&err);
    return st;
}

long kv_npz_count(struct kv_npz *z) { return (long)zip_get_num_entries(z->zip, 0); }

const char *kv_npz_name(struct kv_npz *z, long i) { return zip_get_name(z->zip, (zip_uint64_t)i, 0); }

enum kv_status kv_npz_read(struct kv_npz *z, const char *name, struct kv_tensor *out, int *found)
{
    enum kv_status st = KV_OK;
    char member[256], what[1400];
    zip_file_t *f = NULL;
    char *buf = NULL;
    *found = 0;
    snprintf(member, sizeof member, "%s.npy", name);
    snprintf(what, sizeof what, "%s: member %s", z->what, member);
    zip_int64_t idx = zip_name_locate(z->zip, member, 0);
    if (idx < 0) return KV_OK;
    *found = 1;
    zip_stat_t sb;
    zip_stat_init(&sb);
    KV_CHECK(zip_stat_index(z->zip, (zip_uint64_t)idx, 0, &sb) == 0 && (sb.valid & ZIP_STAT_SIZE), KV_EDATA,
             "%s: cannot read its size: %s", what, zip_strerror(z->zip));
    KV_CHECK(sb.size <= kv_io_max_bytes, KV_EDATA, "%s: %llu bytes, more than the %zu accepted", what,
             (unsigned long long)sb.size, kv_io_max_bytes);
    KV_CHECK(sb.size >= 10, KV_EDATA, "%s: not a .npy file (truncated)", what);
    f = zip_fopen_index(z->zip, (zip_uint64_t)idx, 0);
    KV_CHECK(f, KV_EDATA, "%s: cannot open: %s", what, zip_strerror(z->zip));
    buf = malloc((size_t)sb.size);
    KV_CHECK(buf, KV_EDATA, "%s: out of memory for %llu bytes", what, (unsigned long long)sb.size);
    size_t got = 0;
    while (got < sb.size) {
        zip_int64_t r = zip_fread(f, buf + got, sb.size - got);
        KV_CHECK(r >= 0, KV_EDATA, "%s: corrupt data: %s", what, zip_error_strerror(zip_file_get_error(f)));
        if (r == 0) break;
        got += (size_t)r;
    }
    KV_CHECK(got == sb.size, KV_EDATA, "%s: truncated: %zu of %llu bytes", what, got, (unsigned long long)sb.size);
    /* One more read reports a CRC mismatch detected at the end of the stream. */
    char extra;
    KV_CHECK(zip_fread(f, &extra, 1) == 0, KV_EDATA, "%s: corrupt data: %s", what,
             zip_error_strerror(zip_file_get_error(f)));
    KV_TRY(kv_npy_parse(what, buf, got, out));
cleanup:
    if (f) zip_fclose(f);
    free(buf);
    return st;
}

void kv_npz_close(struct kv_npz *z)
{
    if (!z) return;
    if (z->zip) zip_discard(z->zip);
    free(z);
}
