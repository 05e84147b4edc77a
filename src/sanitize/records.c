/* The record buffer: its first contents, and the records read back as rows' reasons. */
#include <stdio.h>
#include <string.h>

#include "sanitize/san.h"

uint32_t kv_san_buffer_init(const struct kv_san_module *m, uint32_t *buf, const uint64_t *bytes, int n)
{
    memset(buf, 0, KV_SAN_BUFFER_BYTES);
    uint64_t units = 0;
    for (int b = 0; b < KV_SAN_MAX_BINDINGS; b++) {
        const uint32_t logical = b >= n ? 0 : bytes[b] > KV_SAN_MAX_LOGICAL ? KV_SAN_MAX_LOGICAL : (uint32_t)bytes[b];
        buf[KV_SAN_LOGICAL + b] = logical;
        buf[KV_SAN_GBASE + b] = KV_SAN_GBASE_NONE;
        if (!m->global_binding || !(m->global_mask >> b & 1u)) continue;
        /* a unit (four words) per global_unit bytes of the tensor, and of the
         * last element an access may cover past it (its index is below the
         * ceiling of the bytes over the array's stride, at most 64 bytes) */
        buf[KV_SAN_GBASE + b] = (uint32_t)units;
        units += ((uint64_t)logical + 64) / m->global_unit + 1;
    }
    if (4 * units <= KV_SAN_GLOBAL_MAX) return (uint32_t)(4 * units);
    for (int b = 0; b < KV_SAN_MAX_BINDINGS; b++) buf[KV_SAN_GBASE + b] = KV_SAN_GBASE_NONE;
    buf[KV_SAN_FLAGS] |= KV_SAN_FLAG_GLOBAL_OFF;
    return 0;
}

void kv_san_read(const struct kv_san_module *m, const uint32_t *buf, struct kv_san_result *out)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < KV_SAN_KINDS; k++) out->count[k] = buf[k];
    out->flags = buf[KV_SAN_FLAGS];
    for (uint32_t i = 0; i < KV_SAN_RECORDS; i++) { /* a slot no record took is zero */
        const uint32_t *w = buf + KV_SAN_HEADER + (size_t)i * KV_SAN_REC_WORDS;
        if (w[0] < 1 || w[0] > KV_SAN_KINDS || w[1] < 1 || w[1] > (uint32_t)m->n_sites) continue;
        struct kv_san_record *r = &out->rec[out->n++];
        *r = (struct kv_san_record){(int)w[0] - 1, &m->site[w[1] - 1], w[2], w[3], w[4], w[5], {w[6], w[7], w[8]}, w[9]};
    }
}

const char *kv_san_kind_name(int kind)
{
    static const char *names[KV_SAN_KINDS] = {"memcheck", "racecheck", "initcheck", "racecheck-global"};
    return kind >= 0 && kind < KV_SAN_KINDS ? names[kind] : "?";
}

/* The shared array a shadow unit lies in, and the element: "part[1][0] (of [16][64])". */
static void shared_elem(const struct kv_san_module *m, uint32_t unit, char *out, size_t size)
{
    for (int g = 0; g < m->n_wg; g++) {
        const struct kv_san_wg *w = &m->wg[g];
        if (unit < w->first || unit >= w->first + w->units) continue;
        uint32_t rem = unit - w->first;
        char idx[64] = "", dims[64] = "";
        size_t ni = 0, nd = 0;
        for (int d = 0; d < w->n_dims && w->stride[d]; d++) {
            ni += (size_t)snprintf(idx + ni, sizeof idx - ni, "[%u]", rem / w->stride[d]);
            nd += (size_t)snprintf(dims + nd, sizeof dims - nd, "[%u]", w->dim[d]);
            rem %= w->stride[d];
            if (ni >= sizeof idx || nd >= sizeof dims) break;
        }
        /* (each part cut, so that the whole fits the caller's 128 bytes) */
        snprintf(out, size, "shared %.40s%.36s%s%.36s%s", w->name[0] ? w->name : "variable", idx,
                 w->n_dims ? " (of " : "", dims, w->n_dims ? ")" : "");
        return;
    }
    snprintf(out, size, "shared scalar %u", unit);
}

/* The first record of kind (a bounds record before any other). */
static const struct kv_san_record *first_of(const struct kv_san_result *r, int kind)
{
    for (int i = 0; i < r->n; i++)
        if (r->rec[i].kind == kind) return &r->rec[i];
    return NULL;
}

void kv_san_reason(const struct kv_san_module *m, const struct kv_san_result *r, int kind, const char *stage,
                   const char *(*binding_name)(const void *ctx, int binding), const void *ctx, char *out, size_t size)
{
    const struct kv_san_record *x = first_of(r, kind);
    unsigned long long n = (unsigned long long)r->count[kind];
    static const char *what[KV_SAN_KINDS][2] = {{"out-of-bounds access", "out-of-bounds accesses"},
                                                {"shared-memory race", "shared-memory races"},
                                                {"read of shared memory never written",
                                                 "reads of shared memory never written"},
                                                {"race through a storage buffer", "races through storage buffers"}};
    int len = snprintf(out, size, "stage %s: %llu %s", stage, n, what[kind][n != 1]);
    if (!x || len < 0 || (size_t)len >= size) return;
    char arr[128];
    if (kind == KV_SAN_GLOBAL) {
        static const char *how[3][2] = {{"stored", "stored"}, {"stored", "loaded"}, {"loaded", "stored"}};
        const int h = x->bound % 3, intra = x->bound >= 3 && x->bound < 6;
        len += snprintf(out + len, size - (size_t)len, "; the first at %s: byte %u of %s (binding %d) %s by ",
                        x->site->where, x->index, binding_name ? binding_name(ctx, x->site->binding) : "buffer",
                        x->site->binding, how[h][0]);
        if (len < 0 || (size_t)len >= size) return;
        if (intra)
            snprintf(out + len, size - (size_t)len, "invocation %u of workgroup (%u,%u,%u) where invocation %u %s it "
                     "with no workgroup barrier between", x->invocation, x->group[0], x->group[1], x->group[2], x->other,
                     how[h][1]);
        else
            snprintf(out + len, size - (size_t)len, "workgroup (%u,%u,%u) (invocation %u) where workgroup %u (linear "
                     "index) %s it in the same dispatch, and no order holds between workgroups", x->group[0],
                     x->group[1], x->group[2], x->invocation, x->other, how[h][1]);
        return;
    }
    if (kind == KV_SAN_MEMCHECK && x->site->binding >= 0)
        snprintf(arr, sizeof arr, "index %u of %s (binding %d, %u elements)", x->index,
                 binding_name ? binding_name(ctx, x->site->binding) : "buffer", x->site->binding, x->bound);
    else if (kind == KV_SAN_MEMCHECK)
        snprintf(arr, sizeof arr, "index %u of %s (length %u)", x->index, x->site->array[0] ? x->site->array : "an array",
                 x->bound);
    else shared_elem(m, x->index, arr, sizeof arr);
    char who[96];
    if (kind == KV_SAN_RACECHECK)
        snprintf(who, sizeof who, "invocations %u and %u", x->invocation, x->other);
    else snprintf(who, sizeof who, "invocation %u", x->invocation);
    snprintf(out + len, size - (size_t)len, "; the first at %s: %s%s, %s of workgroup (%u,%u,%u)", x->site->where, arr,
             kind == KV_SAN_RACECHECK ? " accessed between two barriers" : "", who, x->group[0], x->group[1],
             x->group[2]);
}
