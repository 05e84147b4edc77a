#include "pipeline/abi_stage.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/expr.h"

static const char *const type_names[] = {"uint", "int", "float"};

/* The SPIR-V scalar kind (KV_SCALAR_*) a push field or specialization constant of type t is. */
static int scalar_kind(enum kv_abi_type t)
{
    return t == KV_ABI_FLOAT ? KV_SCALAR_FLOAT : t == KV_ABI_INT ? KV_SCALAR_INT : KV_SCALAR_UINT;
}

/* Whether elements of kind/bits can hold a tensor of dtype t (raw words may
 * hold anything of their width or narrower, packed). */
static int element_fits(int kind, uint32_t bits, enum kv_dtype t)
{
    size_t size = kv_dtype_info(t)->size * 8;
    if (kind == KV_SCALAR_OTHER) return 1; /* a struct of fields: not checked */
    if (kind == KV_SCALAR_FLOAT) return (t == KV_F32 && bits == 32) || (t == KV_F16 && bits == 16) || (t == KV_F64 && bits == 64);
    return bits >= size && bits % size == 0 && bits <= 32;
}

static const char *tensor_name(const struct kv_kernel *k, const struct kv_abi_binding *b)
{
    return b->tensor >= 0 ? k->tensors[b->tensor].name : "a product";
}

static enum kv_status check_bindings(const char *what, const struct kv_abi *a, const struct kv_kernel *k,
                                     const struct kv_spirv_iface *got)
{
    for (int i = 0; i < got->n_bindings; i++) {
        uint32_t bn = got->b[i].binding;
        const struct kv_abi_binding *b = NULL;
        for (int j = 0; j < a->n_bindings; j++)
            if (a->b[j].binding == bn) b = &a->b[j];
        if (got->b[i].set != 0) return kv_error(KV_EDATA, "%s: binding %u is in set %u; kverify binds set 0", what, bn, got->b[i].set);
        if (!b) return kv_error(KV_EDATA, "%s: the shader declares binding %u, which %s does not map", what, bn, a->path);
        if (got->b[i].kind != KV_BIND_STORAGE)
            return kv_error(KV_EDATA, "%s: %s: binding %u is not a storage buffer", what, a->path, bn);
        int out = b->tensor >= 0 && k->tensors[b->tensor].role == KV_OUTPUT && k->tensors[b->tensor].stage == a->stage;
        if (out && !got->b[i].writable)
            return kv_error(KV_EDATA, "%s: %s: binding %u (%s) is read-only in the shader, but %s is an output", what,
                            a->path, bn, tensor_name(k, b), tensor_name(k, b));
        if (!out && !got->b[i].readable)
            return kv_error(KV_EDATA, "%s: %s: binding %u (%s) is write-only in the shader, but %s is an input", what,
                            a->path, bn, tensor_name(k, b), tensor_name(k, b));
        enum kv_dtype t = k->tensors[b->tensor >= 0 ? b->tensor : b->a].dtype;
        if (!element_fits(got->b[i].elem_kind, got->b[i].elem_bits, t))
            return kv_error(KV_EDATA, "%s: %s: binding %u (%s) holds %u-bit %s elements in the shader, but %s is %s", what,
                            a->path, bn, tensor_name(k, b), got->b[i].elem_bits, kv_spirv_kind_name(got->b[i].elem_kind),
                            tensor_name(k, b), kv_dtype_info(t)->name);
    }
    for (int j = 0; j < a->n_bindings; j++) {
        const struct kv_abi_binding *b = &a->b[j];
        int declared = 0;
        for (int i = 0; i < got->n_bindings; i++) declared |= got->b[i].binding == b->binding;
        if (!declared && b->tensor >= 0 && kv_abi_writes(a, k, b->tensor))
            return kv_error(KV_EDATA, "%s: %s: binding %u (%s, written) is not declared by the shader", what, a->path,
                            b->binding, tensor_name(k, b));
    }
    return KV_OK;
}

/* The shader's push block within the file's fields, member by member; members
 * may be left out (an optimising compiler drops those never read). */
static enum kv_status check_push(const char *what, const struct kv_abi *a, const struct kv_spirv_iface *got)
{
    int kinds[KV_ABI_MAX];
    for (int i = 0; i < a->n_push; i++) kinds[i] = scalar_kind(a->push[i].type);
    const int m = kv_spirv_push_misfit(got, kv_abi_push_size(a), kinds, 0);
    if (m < 0) return KV_OK;
    const uint32_t off = got->push[m].offset, size = got->push[m].size;
    if (off % 4 || off / 4 >= (uint32_t)a->n_push)
        return kv_error(KV_EDATA, "%s: %s: push: the shader's member %d (%u bytes at offset %u) is past the file's %d "
                        "fields (4 bytes each)", what, a->path, m, size, off, a->n_push);
    const struct kv_abi_value *f = &a->push[off / 4];
    return kv_error(KV_EDATA, "%s: %s: push[%u] (%s %s): the shader's member %d is %u bytes of %u-bit %s at offset %u, "
                    "expected 32-bit %ss from there%s", what, a->path, off / 4, type_names[f->type], f->name, m, size,
                    got->push[m].bits, kv_spirv_kind_name(got->push[m].kind), off, type_names[f->type],
                    off + size > kv_abi_push_size(a) ? ", within the file's fields" : "");
}

static int no_names(void *ctx, const char *name, double *v)
{
    (void)ctx, (void)name, (void)v;
    return 0;
}

static enum kv_status check_spec(const char *what, const struct kv_abi *a, const struct kv_spirv_iface *got,
                                 struct kv_vk_spec *spec)
{
    spec->n = 0;
    for (int i = 0; i < a->n_spec; i++) {
        const struct kv_abi_value *v = &a->spec[i];
        int j = 0;
        while (j < got->n_spec && got->spec[j].id != v->id) j++;
        if (j == got->n_spec)
            return kv_error(KV_EDATA, "%s: %s: specialization[%d]: the shader has no constant with id %u", what, a->path, i, v->id);
        if (got->spec[j].kind != scalar_kind(v->type) && !(got->spec[j].kind == KV_SCALAR_BOOL && v->type == KV_ABI_UINT))
            return kv_error(KV_EDATA, "%s: %s: specialization[%d]: constant %u is a %s in the shader, not a %s", what,
                            a->path, i, v->id, kv_spirv_kind_name(got->spec[j].kind), type_names[v->type]);
        char field[1200];
        snprintf(field, sizeof field, "%s: specialization[%d].value (a constant: pipelines are made once)", a->path, i);
        double x;
        KV_TRY_RET(kv_expr_eval(field, v->expr, no_names, NULL, &x));
        if (v->type != KV_ABI_FLOAT && (x != floor(x) || x < (v->type == KV_ABI_INT ? -2147483648.0 : 0) ||
                                        x > (v->type == KV_ABI_INT ? 2147483647.0 : 4294967295.0)))
            return kv_error(KV_EDATA, "%s: %g does not fit a 32-bit %s", field, x, type_names[v->type]);
        float fx = (float)x;
        int32_t ix = (int32_t)x;
        uint32_t bits = v->type == KV_ABI_UINT ? (uint32_t)x : 0;
        if (v->type == KV_ABI_FLOAT) memcpy(&bits, &fx, 4);
        if (v->type == KV_ABI_INT) memcpy(&bits, &ix, 4);
        spec->id[spec->n] = v->id, spec->value[spec->n++] = bits;
    }
    return KV_OK;
}

enum kv_status kv_abi_check(const char *what, const struct kv_abi *a, const struct kv_kernel *k,
                            const struct kv_spirv_iface *got, struct kv_vk_spec *spec)
{
    KV_TRY_RET(check_bindings(what, a, k, got));
    KV_TRY_RET(check_push(what, a, got));
    return check_spec(what, a, got, spec);
}

uint32_t kv_abi_slots(const struct kv_abi *a)
{
    uint32_t n = 0;
    for (int i = 0; i < a->n_bindings; i++) n = a->b[i].binding + 1 > n ? a->b[i].binding + 1 : n;
    return n;
}

enum kv_status kv_abi_product(const struct kv_case *c, const struct kv_abi_binding *b, struct kv_tensor *out)
{
    int ta = kv_case_tensor(c, c->k->tensors[b->a].name), tb = kv_case_tensor(c, c->k->tensors[b->b].name);
    if (ta < 0 || tb < 0) return kv_error(KV_EDATA, "product %s * %s: a tensor this case does not have",
                                          c->k->tensors[b->a].name, c->k->tensors[b->b].name);
    const struct kv_tensor *x = &c->t[ta], *y = &c->t[tb];
    int tail = y->ndim <= x->ndim;
    for (int d = 0; tail && d < y->ndim; d++) tail = y->shape[y->ndim - 1 - d] == x->shape[x->ndim - 1 - d];
    if (!tail || y->count == 0)
        return kv_error(KV_EDATA, "product %s * %s: the second's shape is not the tail of the first's", c->k->tensors[b->a].name,
                          c->k->tensors[b->b].name);
    KV_TRY_RET(kv_tensor_alloc(out, "product", x->dtype, x->ndim, x->shape));
    /* the first's rows of the second's length, on every thread (2^31
     * elements took 23 s on one, with a division each) */
    const size_t n = y->count, rows = x->count / n;
#pragma omp parallel for collapse(2) schedule(static)
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < n; j++)
            kv_store_f64(x->dtype, out->data, r * n + j,
                         kv_load_f64(x->dtype, x->data, r * n + j) * kv_load_f64(y->dtype, y->data, j));
    return KV_OK;
}

enum kv_status kv_abi_launch(const struct kv_case *c, const struct kv_abi *a, const uint32_t max[3], void *push,
                             uint32_t groups[3])
{
    char field[1200];
    for (int i = 0; i < a->n_push; i++) {
        double v;
        snprintf(field, sizeof field, "%s: push[%d] (%s)", a->path, i, a->push[i].name);
        KV_TRY_RET(kv_abi_value(c, field, a->push[i].expr, a->push[i].type, &v));
        float f = (float)v;
        int32_t s = (int32_t)v;
        uint32_t u = a->push[i].type == KV_ABI_UINT ? (uint32_t)v : 0;
        memcpy((char *)push + 4 * i, a->push[i].type == KV_ABI_FLOAT ? (void *)&f : a->push[i].type == KV_ABI_INT ? (void *)&s : (void *)&u, 4);
    }
    for (int i = 0; i < 3; i++) {
        double v;
        snprintf(field, sizeof field, "%s: dispatch[%d]", a->path, i);
        KV_TRY_RET(kv_abi_value(c, field, a->dispatch[i], KV_ABI_UINT, &v));
        if (v > max[i])
            return kv_error(KV_EDATA, "%s: %.0f groups, more than the device's %u", field, v, max[i]);
        groups[i] = (uint32_t)v;
    }
    return KV_OK;
}

const struct kv_glsl_extra *kv_abi_glsl_extra(const struct kv_abi *a, struct kv_glsl_extra *x)
{
    if (!a) return NULL;
    *x = (struct kv_glsl_extra){a->n_defines, (const char(*)[2][256])a->define, a->n_include,
                                (const char(*)[1024])a->include};
    return x;
}
