#include "formats/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "reports/report.h"

size_t kv_io_max_bytes = (size_t)1 << 36;

/* --- the header: a Python dict literal, parsed just enough --- */

struct header {
    char descr[32];
    int fortran, have_descr, have_fortran, have_shape;
    int ndim;
    int64_t shape[KV_MAX_DIMS];
};

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static enum kv_status parse_header(const char *what, const char *p, const char *end, struct header *h)
{
    memset(h, 0, sizeof *h);
    p = skip_ws(p, end);
    if (p >= end || *p != '{') return kv_error(KV_EDATA, "%s: .npy header is not a dict", what);
    p++;
    for (;;) {
        p = skip_ws(p, end);
        if (p < end && *p == '}') break;
        if (p >= end || (*p != '\'' && *p != '"')) return kv_error(KV_EDATA, "%s: .npy header: expected a key", what);
        char q = *p++;
        const char *k = p;
        while (p < end && *p != q) p++;
        if (p >= end) return kv_error(KV_EDATA, "%s: .npy header: unterminated key", what);
        size_t klen = (size_t)(p - k);
        p = skip_ws(p + 1, end);
        if (p >= end || *p != ':') return kv_error(KV_EDATA, "%s: .npy header: expected ':'", what);
        p = skip_ws(p + 1, end);
        if (klen == 5 && !memcmp(k, "descr", 5)) {
            if (p >= end || (*p != '\'' && *p != '"'))
                return kv_error(KV_EDATA, "%s: structured dtypes are not supported (descr is not a string)", what);
            char dq = *p++;
            const char *d = p;
            while (p < end && *p != dq) p++;
            if (p >= end || (size_t)(p - d) >= sizeof h->descr)
                return kv_error(KV_EDATA, "%s: .npy header: bad descr", what);
            memcpy(h->descr, d, (size_t)(p - d));
            h->have_descr = 1;
            p++;
        } else if (klen == 13 && !memcmp(k, "fortran_order", 13)) {
            if (end - p >= 4 && !memcmp(p, "True", 4)) h->fortran = 1, p += 4;
            else if (end - p >= 5 && !memcmp(p, "False", 5)) p += 5;
            else return kv_error(KV_EDATA, "%s: .npy header: fortran_order is not True/False", what);
            h->have_fortran = 1;
        } else if (klen == 5 && !memcmp(k, "shape", 5)) {
            if (p >= end || *p != '(') return kv_error(KV_EDATA, "%s: .npy header: shape is not a tuple", what);
            p++;
            for (;;) {
                p = skip_ws(p, end);
                if (p < end && *p == ')') break;
                if (p >= end || *p < '0' || *p > '9')
                    return kv_error(KV_EDATA, "%s: .npy header: bad shape", what);
                if (h->ndim == KV_MAX_DIMS)
                    return kv_error(KV_EDATA, "%s: more than %d dimensions", what, KV_MAX_DIMS);
                int64_t v = 0;
                while (p < end && *p >= '0' && *p <= '9') {
                    if (v > (INT64_MAX - 9) / 10) return kv_error(KV_EDATA, "%s: shape extent overflows", what);
                    v = v * 10 + (*p++ - '0');
                }
                if (p < end && *p == 'L') p++; /* Python 2 longs */
                h->shape[h->ndim++] = v;
                p = skip_ws(p, end);
                if (p < end && *p == ',') p++;
            }
            p++;
            h->have_shape = 1;
        } else {
            return kv_error(KV_EDATA, "%s: .npy header: unknown key '%.*s'", what, (int)(klen < 40 ? klen : 40), k);
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') p++;
        else {
            p = skip_ws(p, end);
            if (p >= end || *p != '}') return kv_error(KV_EDATA, "%s: .npy header: expected ',' or '}'", what);
        }
    }
    if (!h->have_descr || !h->have_fortran || !h->have_shape)
        return kv_error(KV_EDATA, "%s: .npy header lacks %s", what,
                        !h->have_descr ? "descr" : !h->have_fortran ? "fortran_order" : "shape");
    return KV_OK;
}

static enum kv_status map_descr(const char *what, const char *d, enum kv_dtype *t, int *swap)
{
    char order = d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return kv_error(KV_EDATA, "%s: unsupported dtype '%s'", what, d);
    const char *c = d + 1;
    static const struct { const char *code; enum kv_dtype t; } map[] = {
        {"f2", KV_F16}, {"f4", KV_F32}, {"f8", KV_F64}, {"u1", KV_U8}, {"u2", KV_U16}, {"i4", KV_I32},
        {"V2", KV_U16},
    };
    if (!strcmp(c, "O") || c[0] == 'O')
        return kv_error(KV_EDATA, "%s: object arrays are not supported (dtype '%s')", what, d);
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(c, map[i].code)) {
            *t = map[i].t;
            *swap = order == '>' && kv_dtype_info(*t)->size > 1;
            return KV_OK;
        }
    return kv_error(KV_EDATA, "%s: unsupported dtype '%s' (accepted: f2 f4 f8 u1 u2 i4 V2)", what, d);
}

static void byteswap(void *data, size_t n, size_t esize)
{
    unsigned char *b = data;
    for (size_t i = 0; i < n; i++, b += esize)
        for (size_t j = 0; j < esize / 2; j++) {
            unsigned char t = b[j];
            b[j] = b[esize - 1 - j];
            b[esize - 1 - j] = t;
        }
}

enum kv_status kv_npy_parse(const char *what, const void *buf, size_t size, struct kv_tensor *out)
{
    const unsigned char *u = buf;
    memset(out, 0, sizeof *out);
    if (size < 10 || memcmp(u, "\x93NUMPY", 6) != 0)
        return kv_error(KV_EDATA, "%s: not a .npy file (%s)", what, size < 10 ? "truncated" : "wrong magic");
    int major = u[6];
    size_t hlen, hstart;
    if (major == 1) hlen = (size_t)u[8] | (size_t)u[9] << 8, hstart = 10;
    else if (major == 2 || major == 3) {
        if (size < 12) return kv_error(KV_EDATA, "%s: truncated .npy header", what);
        hlen = (size_t)u[8] | (size_t)u[9] << 8 | (size_t)u[10] << 16 | (size_t)u[11] << 24;
        hstart = 12;
    } else {
        return kv_error(KV_EDATA, "%s: unsupported .npy format version %d.%d", what, major, u[7]);
    }
    if (hlen > size - hstart)
        return kv_error(KV_EDATA, "%s: .npy header of %zu bytes is longer than the file", what, hlen);
    struct header h;
    enum kv_status st = parse_header(what, (const char *)u + hstart, (const char *)u + hstart + hlen, &h);
    if (st) return st;
    enum kv_dtype t = KV_F32;
    int swap = 0;
    if ((st = map_descr(what, h.descr, &t, &swap))) return st;
    size_t n = 1, esize = kv_dtype_info(t)->size;
    for (int d = 0; d < h.ndim; d++) {
        if (h.shape[d] == 0) return kv_error(KV_EDATA, "%s: empty array (dimension %d is 0)", what, d);
        if ((uint64_t)h.shape[d] > SIZE_MAX / n / esize) return kv_error(KV_EDATA, "%s: shape product overflows", what);
        n *= (size_t)h.shape[d];
    }
    size_t data_off = hstart + hlen, bytes = n * esize;
    if (bytes > size - data_off)
        return kv_error(KV_EDATA, "%s: header claims %zu bytes of data, the file has %zu", what, bytes, size - data_off);
    if (bytes < size - data_off)
        return kv_error(KV_EDATA, "%s: %zu bytes after the data (corrupt or not one array)", what,
                        size - data_off - bytes);
    int ndim = h.ndim ? h.ndim : 1; /* a 0-d array is one element */
    int64_t one = 1;
    if ((st = kv_tensor_alloc(out, what, t, ndim, h.ndim ? h.shape : &one))) return kv_error(KV_EDATA, "%s", kv_error_msg());
    const unsigned char *src = u + data_off;
    if (!h.fortran || h.ndim < 2) {
        memcpy(out->data, src, bytes);
    } else {
        /* Column-major: element (i0..ik) is at sum i_j * prod_{l<j} d_l. */
        int64_t idx[KV_MAX_DIMS];
        for (size_t i = 0; i < n; i++) {
            kv_tensor_unravel(out, i, idx);
            size_t off = 0, stride = 1;
            for (int d = 0; d < h.ndim; d++) off += (size_t)idx[d] * stride, stride *= (size_t)h.shape[d];
            memcpy((char *)out->data + i * esize, src + off * esize, esize);
        }
    }
    if (swap) byteswap(out->data, n, esize);
    return KV_OK;
}

enum kv_status kv_npy_read(const char *path, struct kv_tensor *out)
{
    char *buf;
    size_t size;
    enum kv_status st = kv_read_file(path, (size_t)-1 / 2, &buf, &size);
    if (st) return st;
    st = kv_npy_parse(path, buf, size, out);
    free(buf);
    return st;
}

enum kv_status kv_npy_encode(const struct kv_tensor *t, char **buf, size_t *size)
{
    static const char *descr[KV_DTYPE_COUNT] = {
        [KV_F32] = "<f4", [KV_F64] = "<f8", [KV_F16] = "<f2", [KV_BF16] = "<u2",
        [KV_U8] = "|u1", [KV_I32] = "<i4", [KV_U16] = "<u2",
    };
    char dict[512];
    size_t o = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr[t->dtype]);
    /* Python's tuple syntax: (3,) for one dimension, (3, 4) for more. */
    for (int d = 0; d < t->ndim; d++)
        o += (size_t)snprintf(dict + o, sizeof dict - o, "%s%lld%s", d ? ", " : "", (long long)t->shape[d],
                              t->ndim == 1 ? "," : "");
    o += (size_t)snprintf(dict + o, sizeof dict - o, "), }");
    size_t pre = 10, total_h = pre + o + 1;
    size_t pad = (64 - total_h % 64) % 64;
    size_t hlen = o + pad + 1, bytes = kv_tensor_bytes(t);
    *size = pre + hlen + bytes;
    *buf = malloc(*size);
    if (!*buf) return kv_error(KV_EDATA, "out of memory encoding .npy");
    memcpy(*buf, "\x93NUMPY\x01\x00", 8);
    (*buf)[8] = (char)(hlen & 0xff);
    (*buf)[9] = (char)(hlen >> 8);
    memcpy(*buf + pre, dict, o);
    memset(*buf + pre + o, ' ', pad);
    (*buf)[pre + o + pad] = '\n';
    memcpy(*buf + pre + hlen, t->data, bytes);
    return KV_OK;
}

enum kv_status kv_npy_write(const char *path, const struct kv_tensor *t)
{
    char *buf;
    size_t size;
    enum kv_status st = kv_npy_encode(t, &buf, &size);
    if (st) return st;
    st = kv_write_atomic(path, buf, size);
    free(buf);
    return st;
}
