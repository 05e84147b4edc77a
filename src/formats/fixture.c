#include "formats/fixture.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "formats/npy.h"

static enum kv_status tensor_from_json(const char *what, const char *field, const cJSON *j, struct kv_tensor *out)
{
    if (!cJSON_IsObject(j)) return kv_error(KV_EDATA, "%s: %s is not an object", what, field);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
    const cJSON *da = cJSON_GetObjectItemCaseSensitive(j, "data");
    if (!cJSON_IsString(dt)) return kv_error(KV_EDATA, "%s: %s.dtype is missing or not a string", what, field);
    int t = kv_dtype_from_name(dt->valuestring);
    if (t < 0) return kv_error(KV_EDATA, "%s: %s.dtype '%s' is not one of f32 f64 f16 bf16 u8 i32 u16", what, field,
                               dt->valuestring);
    if (!cJSON_IsArray(sh)) return kv_error(KV_EDATA, "%s: %s.shape is missing or not an array", what, field);
    int ndim = cJSON_GetArraySize(sh);
    if (ndim < 1 || ndim > KV_MAX_DIMS)
        return kv_error(KV_EDATA, "%s: %s.shape has %d dimensions (1..%d accepted)", what, field, ndim, KV_MAX_DIMS);
    int64_t shape[KV_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        const cJSON *e = cJSON_GetArrayItem(sh, d);
        if (!cJSON_IsNumber(e) || e->valuedouble < 1 || e->valuedouble > 9e15 || e->valuedouble != floor(e->valuedouble))
            return kv_error(KV_EDATA, "%s: %s.shape[%d] is not a positive integer", what, field, d);
        shape[d] = (int64_t)e->valuedouble;
    }
    size_t n;
    if (kv_shape_count(field, (enum kv_dtype)t, ndim, shape, &n))
        return kv_error(KV_EDATA, "%s: %s.shape: product overflows", what, field);
    if (!cJSON_IsArray(da)) return kv_error(KV_EDATA, "%s: %s.data is missing or not an array", what, field);
    size_t len = (size_t)cJSON_GetArraySize(da);
    if (len != n)
        return kv_error(KV_EDATA, "%s: %s.data has %zu values, its shape needs %zu", what, field, len, n);
    if (kv_tensor_alloc(out, field, (enum kv_dtype)t, ndim, shape))
        return kv_error(KV_EDATA, "%s: %s: out of memory", what, field);
    const struct kv_dtype_info *info = kv_dtype_info((enum kv_dtype)t);
    size_t i = 0;
    for (const cJSON *e = da->child; e; e = e->next, i++) {
        double v;
        if (cJSON_IsNumber(e)) v = e->valuedouble;
        else if (cJSON_IsString(e) && !strcmp(e->valuestring, "NaN")) v = NAN;
        else if (cJSON_IsString(e) && !strcmp(e->valuestring, "Infinity")) v = INFINITY;
        else if (cJSON_IsString(e) && !strcmp(e->valuestring, "-Infinity")) v = -INFINITY;
        else {
            kv_tensor_free(out);
            return kv_error(KV_EDATA, "%s: %s.data[%zu] is not a number", what, field, i);
        }
        if (!info->is_float) {
            double hi = t == KV_U8 ? 255 : t == KV_U16 ? 65535 : 2147483647.0, lo = t == KV_I32 ? -2147483648.0 : 0;
            if (!(v >= lo && v <= hi) || v != floor(v)) {
                kv_tensor_free(out);
                return kv_error(KV_EDATA, "%s: %s.data[%zu] = %g is not a %s", what, field, i, v, info->name);
            }
        }
        kv_store_f64((enum kv_dtype)t, out->data, i, v);
    }
    return KV_OK;
}

static enum kv_status tensors(const char *what, const char *key, const cJSON *obj, struct kv_fixture *fx)
{
    if (!cJSON_IsObject(obj)) return kv_error(KV_EDATA, "%s: \"%s\" is not an object", what, key);
    for (const cJSON *e = obj->child; e; e = e->next) {
        if (fx->n_tensors == KV_MAX_TENSORS) return kv_error(KV_EDATA, "%s: too many tensors", what);
        char field[96];
        snprintf(field, sizeof field, "%s.%s", key, e->string);
        if (strlen(e->string) >= sizeof fx->tname[0]) return kv_error(KV_EDATA, "%s: %s: name too long", what, field);
        enum kv_status st = tensor_from_json(what, field, e, &fx->t[fx->n_tensors]);
        if (st) return st;
        snprintf(fx->tname[fx->n_tensors], sizeof fx->tname[0], "%s", e->string);
        fx->n_tensors++;
    }
    return KV_OK;
}

enum kv_status kv_fixture_parse(const char *what, const char *text, size_t len, struct kv_fixture *fx)
{
    enum kv_status st = KV_OK;
    memset(fx, 0, sizeof *fx);
    cJSON *root = cJSON_ParseWithLength(text, len);
    KV_CHECK(root, KV_EDATA, "%s: not valid JSON (near byte %ld)", what,
             cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - text) : -1L);
    KV_CHECK(cJSON_IsObject(root), KV_EDATA, "%s: a fixture is a JSON object", what);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(root, "kernel");
    KV_CHECK(cJSON_IsString(k), KV_EDATA, "%s: \"kernel\" is missing or not a string", what);
    KV_CHECK(strlen(k->valuestring) < sizeof fx->kernel, KV_EDATA, "%s: \"kernel\" is too long", what);
    snprintf(fx->kernel, sizeof fx->kernel, "%s", k->valuestring);
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
    if (params) {
        KV_CHECK(cJSON_IsObject(params), KV_EDATA, "%s: \"params\" is not an object", what);
        for (const cJSON *e = params->child; e; e = e->next) {
            KV_CHECK(fx->n_params < KV_MAX_PARAMS, KV_EDATA, "%s: too many params", what);
            KV_CHECK(strlen(e->string) < sizeof fx->pname[0], KV_EDATA, "%s: params: name too long", what);
            snprintf(fx->pname[fx->n_params], sizeof fx->pname[0], "%s", e->string);
            if (cJSON_IsNumber(e)) snprintf(fx->pval[fx->n_params], sizeof fx->pval[0], "%.17g", e->valuedouble);
            else if (cJSON_IsString(e) && strlen(e->valuestring) < sizeof fx->pval[0])
                snprintf(fx->pval[fx->n_params], sizeof fx->pval[0], "%s", e->valuestring);
            else KV_CHECK(0, KV_EDATA, "%s: params.%s is not a number or a short string", what, e->string);
            fx->n_params++;
        }
    }
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(root, "seed");
    if (seed) {
        KV_CHECK(cJSON_IsNumber(seed) && seed->valuedouble >= 0 && seed->valuedouble <= 9e15 &&
                     seed->valuedouble == floor(seed->valuedouble), KV_EDATA,
                 "%s: \"seed\" is not a non-negative integer", what);
        fx->has_seed = 1;
        fx->seed = (uint64_t)seed->valuedouble;
    }
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "inputs");
    KV_CHECK(in, KV_EDATA, "%s: \"inputs\" is missing", what);
    KV_TRY(tensors(what, "inputs", in, fx));
    fx->n_inputs = fx->n_tensors;
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(root, "expected");
    if (ex) KV_TRY(tensors(what, "expected", ex, fx));
cleanup:
    cJSON_Delete(root);
    if (st) kv_fixture_free(fx);
    return st;
}

enum kv_status kv_fixture_read(const char *path, struct kv_fixture *fx)
{
    char *buf;
    size_t size;
    memset(fx, 0, sizeof *fx);
    enum kv_status st = kv_read_file(path, (size_t)1 << 31, &buf, &size);
    if (st) return st;
    st = kv_fixture_parse(path, buf, size, fx);
    free(buf);
    return st;
}

void kv_fixture_free(struct kv_fixture *fx)
{
    for (int i = 0; i < KV_MAX_TENSORS; i++) kv_tensor_free(&fx->t[i]);
    fx->n_tensors = fx->n_inputs = 0;
}
