#include "formats/abi.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"
#include "core/files.h"

static const char *type_names[] = {"uint", "int", "float"};

/* Names are checked when the file is read: a lookup that knows every
 * numeric parameter and answers 1. */
static int known_param(void *ctx, const char *name, double *v)
{
    const struct kv_kernel *k = ctx;
    int p = kv_param_index(k, name);
    *v = 1;
    return p >= 0 && k->params[p].type != KV_PARAM_CHOICE;
}

/* An expression's names, without evaluating it (a value of 1 could divide by zero). */
static enum kv_status check_names(const struct kv_kernel *k, const char *field, const char *e)
{
    for (const char *p = e; *p;) {
        if (isalpha((unsigned char)*p) || *p == '_') {
            char name[64];
            size_t n = 0;
            while ((isalnum((unsigned char)*p) || *p == '_') && n + 1 < sizeof name) name[n++] = *p++;
            name[n] = '\0';
            while (*p == ' ') p++;
            double v;
            if (*p != '(' && !known_param((void *)k, name, &v))
                return kv_error(KV_EDATA, "%s: '%s': unknown name '%s' (%s's numeric parameters; see kverify list)",
                                field, e, name, k->name);
        } else if (isdigit((unsigned char)*p) || *p == '.') { /* a number, exponent included */
            char *end;
            (void)strtod(p, &end);
            p = end > p ? end : p + 1;
        } else {
            p++;
        }
    }
    return KV_OK;
}

static enum kv_status expr_field(const struct kv_kernel *k, const char *field, const cJSON *v, char *out, size_t size)
{
    if (cJSON_IsNumber(v)) snprintf(out, size, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v) && v->valuestring[0] && strlen(v->valuestring) < size) snprintf(out, size, "%s", v->valuestring);
    else return kv_error(KV_EDATA, "%s: not a number or an expression (a string of at most %zu characters)", field, size - 1);
    return check_names(k, field, out);
}

/* A tensor by name; of several with the name (variants), the output of
 * stage s if there is one. */
static int tensor_named_at(const struct kv_kernel *k, const char *name, int s)
{
    if (!name) return -1;
    for (int t = 0; t < k->n_tensors; t++)
        if (!strcmp(k->tensors[t].name, name) && k->tensors[t].role == KV_OUTPUT && k->tensors[t].stage == s) return t;
    return kv_tensor_index(k, name);
}
#define tensor_named(k, name) tensor_named_at(k, name, s)

/* o must be an object whose keys are among the allowed (a typo is an error,
 * not a silent default; a list or a scalar in its place too). */
static enum kv_status only_keys(const char *what, const cJSON *o, const char *const *keys)
{
    if (!cJSON_IsObject(o)) return kv_error(KV_EDATA, "%s: not an object", what);
    const cJSON *x;
    cJSON_ArrayForEach(x, o)
    {
        int ok = 0;
        for (int i = 0; keys[i] && !ok; i++) ok = !strcmp(x->string, keys[i]);
        if (!ok) return kv_error(KV_EDATA, "%s: unknown key \"%s\"", what, x->string);
    }
    return KV_OK;
}

static enum kv_status binding_of(const struct kv_kernel *k, int s, const char *f, const cJSON *e, struct kv_abi_binding *b)
{
    static const char *const keys[] = {"set", "binding", "tensor", "product", NULL};
    KV_TRY_RET(only_keys(f, e, keys));
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(e, "set"), *bn = cJSON_GetObjectItemCaseSensitive(e, "binding");
    if (set && !(cJSON_IsNumber(set) && set->valuedouble == 0))
        return kv_error(KV_EDATA, "%s.set: kverify binds descriptor set 0 only", f);
    if (!cJSON_IsNumber(bn) || bn->valuedouble < 0 || bn->valuedouble >= 32 || bn->valuedouble != floor(bn->valuedouble))
        return kv_error(KV_EDATA, "%s.binding: not a binding number 0..31", f);
    b->binding = (uint32_t)bn->valuedouble;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "tensor"), *p = cJSON_GetObjectItemCaseSensitive(e, "product");
    if ((t != NULL) == (p != NULL)) return kv_error(KV_EDATA, "%s: give one of \"tensor\" and \"product\"", f);
    if (t) {
        b->tensor = tensor_named(k, cJSON_GetStringValue(t));
        if (b->tensor < 0) return kv_error(KV_EDATA, "%s.tensor: %s has no tensor '%s' (see kverify list)", f, k->name,
                                           cJSON_IsString(t) ? t->valuestring : "?");
        const struct kv_tensor_def *td = &k->tensors[b->tensor];
        if (td->role == KV_OUTPUT && td->stage > s)
            return kv_error(KV_EDATA, "%s.tensor: %s is written by a later stage (%s)", f, td->name,
                            k->stages[td->stage].name);
        return KV_OK;
    }
    b->tensor = -1;
    if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2)
        return kv_error(KV_EDATA, "%s.product: not a list of two input tensors", f);
    b->a = tensor_named(k, cJSON_GetStringValue(cJSON_GetArrayItem(p, 0)));
    b->b = tensor_named(k, cJSON_GetStringValue(cJSON_GetArrayItem(p, 1)));
    for (int i = 0; i < 2; i++) {
        int t2 = i ? b->b : b->a;
        if (t2 < 0 || k->tensors[t2].role != KV_INPUT)
            return kv_error(KV_EDATA, "%s.product[%d]: not an input tensor of %s (see kverify list)", f, i, k->name);
    }
    return KV_OK;
}

static enum kv_status value_of(const struct kv_kernel *k, const char *f, const cJSON *e, int spec, struct kv_abi_value *v)
{
    static const char *const pkeys[] = {"name", "type", "value", NULL}, *const skeys[] = {"id", "type", "value", NULL};
    KV_TRY_RET(only_keys(f, e, spec ? skeys : pkeys));
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "type"));
    int t;
    for (t = 0; t < 3 && !(type && !strcmp(type, type_names[t])); t++) {}
    if (t == 3) return kv_error(KV_EDATA, "%s.type: not one of uint, int, float", f);
    v->type = (enum kv_abi_type)t;
    if (spec) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > 65535 || id->valuedouble != floor(id->valuedouble))
            return kv_error(KV_EDATA, "%s.id: not a specialization constant id", f);
        v->id = (uint32_t)id->valuedouble;
    } else {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
        snprintf(v->name, sizeof v->name, "%s", name ? name : "");
    }
    char vf[1300];
    snprintf(vf, sizeof vf, "%s.value", f);
    return expr_field(k, vf, cJSON_GetObjectItemCaseSensitive(e, "value"), v->expr, sizeof v->expr);
}

static enum kv_status values_of(const struct kv_kernel *k, const char *path, const cJSON *arr, const char *key, int spec,
                                struct kv_abi_value *v, int *n)
{
    if (!arr) return KV_OK;
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > KV_ABI_MAX)
        return kv_error(KV_EDATA, "%s: %s: not a list of at most %d entries", path, key, KV_ABI_MAX);
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        char f[1200];
        snprintf(f, sizeof f, "%s: %s[%d]", path, key, *n);
        KV_TRY_RET(value_of(k, f, e, spec, &v[(*n)++]));
    }
    return KV_OK;
}

static enum kv_status strings_of(const char *path, const cJSON *o, const char *key, struct kv_abi *a)
{
    const cJSON *e;
    if (!strcmp(key, "defines")) {
        if (!o) return KV_OK;
        if (!cJSON_IsObject(o) || cJSON_GetArraySize(o) > KV_ABI_MAX)
            return kv_error(KV_EDATA, "%s: defines: not an object of at most %d NAME: value", path, KV_ABI_MAX);
        cJSON_ArrayForEach(e, o)
        {
            if (!cJSON_IsString(e) && !cJSON_IsNumber(e))
                return kv_error(KV_EDATA, "%s: defines.%s: not a string or number", path, e->string);
            snprintf(a->define[a->n_defines][0], sizeof a->define[0][0], "%s", e->string);
            if (cJSON_IsString(e)) snprintf(a->define[a->n_defines][1], sizeof a->define[0][1], "%s", e->valuestring);
            else snprintf(a->define[a->n_defines][1], sizeof a->define[0][1], "%.17g", e->valuedouble);
            a->n_defines++;
        }
        return KV_OK;
    }
    if (!o) return KV_OK;
    if (!cJSON_IsArray(o) || cJSON_GetArraySize(o) > 8) return kv_error(KV_EDATA, "%s: include: not a list of at most 8 folders", path);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    cJSON_ArrayForEach(e, o)
    {
        if (!cJSON_IsString(e)) return kv_error(KV_EDATA, "%s: include[%d]: not a folder name", path, a->n_include);
        if (e->valuestring[0] == '/') snprintf(a->include[a->n_include], sizeof a->include[0], "%s", e->valuestring);
        else snprintf(a->include[a->n_include], sizeof a->include[0], "%.500s/%.500s", dir, e->valuestring);
        a->n_include++;
    }
    return KV_OK;
}

static enum kv_status parse(const struct kv_kernel *k, int s, const char *path, const cJSON *root, struct kv_abi *a)
{
    static const char *const keys[] = {"bindings", "push", "specialization", "defines", "include", "dispatch",
                                       "constants", "writes", "stage", "comment", NULL};
    if (!cJSON_IsObject(root)) return kv_error(KV_EDATA, "%s: not a JSON object", path);
    char f[1200];
    snprintf(f, sizeof f, "%s", path);
    KV_TRY_RET(only_keys(f, root, keys));
    const char *stage = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "stage"));
    if (stage && strcmp(stage, k->stages[s].name))
        return kv_error(KV_EDATA, "%s: stage: the file is for stage '%s', given for stage '%s'", path, stage, k->stages[s].name);
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(root, "bindings"), *e;
    if (!cJSON_IsArray(bs) || cJSON_GetArraySize(bs) < 1 || cJSON_GetArraySize(bs) > KV_ABI_MAX)
        return kv_error(KV_EDATA, "%s: bindings: not a list of 1 to %d bindings", path, KV_ABI_MAX);
    cJSON_ArrayForEach(e, bs)
    {
        snprintf(f, sizeof f, "%s: bindings[%d]", path, a->n_bindings);
        KV_TRY_RET(binding_of(k, s, f, e, &a->b[a->n_bindings]));
        for (int i = 0; i < a->n_bindings; i++)
            if (a->b[i].binding == a->b[a->n_bindings].binding)
                return kv_error(KV_EDATA, "%s.binding: binding %u is given twice", f, a->b[i].binding);
        a->n_bindings++;
    }
    KV_TRY_RET(values_of(k, path, cJSON_GetObjectItemCaseSensitive(root, "push"), "push", 0, a->push, &a->n_push));
    KV_TRY_RET(values_of(k, path, cJSON_GetObjectItemCaseSensitive(root, "specialization"), "specialization", 1, a->spec,
                         &a->n_spec));
    KV_TRY_RET(strings_of(path, cJSON_GetObjectItemCaseSensitive(root, "defines"), "defines", a));
    KV_TRY_RET(strings_of(path, cJSON_GetObjectItemCaseSensitive(root, "include"), "include", a));
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "dispatch");
    if (!cJSON_IsArray(d) || cJSON_GetArraySize(d) != 3)
        return kv_error(KV_EDATA, "%s: dispatch: not a list of three group counts (x, y, z)", path);
    for (int i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s: dispatch[%d]", path, i);
        KV_TRY_RET(expr_field(k, f, cJSON_GetArrayItem(d, i), a->dispatch[i], sizeof a->dispatch[i]));
    }
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(root, "constants");
    if (cs && (!cJSON_IsObject(cs) || cJSON_GetArraySize(cs) > 8))
        return kv_error(KV_EDATA, "%s: constants: not an object of at most 8 INPUT: number", path);
    cJSON_ArrayForEach(e, cs)
    {
        int t = tensor_named(k, e->string);
        if (t < 0 || k->tensors[t].role != KV_INPUT || !cJSON_IsNumber(e) || !isfinite(e->valuedouble))
            return kv_error(KV_EDATA, "%s: constants.%s: not an input tensor of %s set to a finite number", path,
                            e->string, k->name);
        a->const_tensor[a->n_constants] = t, a->const_value[a->n_constants++] = e->valuedouble;
    }
    return KV_OK;
}

/* The outputs written: "writes", else every output of the stage that is bound. */
static enum kv_status writes_of(const struct kv_kernel *k, int s, const char *path, const cJSON *w, struct kv_abi *a)
{
    if (!w) {
        for (int i = 0; i < a->n_bindings; i++)
            if (a->b[i].tensor >= 0 && k->tensors[a->b[i].tensor].role == KV_OUTPUT && k->tensors[a->b[i].tensor].stage == s)
                a->writes |= 1u << a->b[i].tensor;
    } else {
        const cJSON *e;
        if (!cJSON_IsArray(w)) return kv_error(KV_EDATA, "%s: writes: not a list of output names", path);
        cJSON_ArrayForEach(e, w)
        {
            int t = tensor_named(k, cJSON_GetStringValue(e)), bound = 0;
            if (t < 0 || k->tensors[t].role != KV_OUTPUT || k->tensors[t].stage != s)
                return kv_error(KV_EDATA, "%s: writes: '%s' is not an output of stage %s", path,
                                cJSON_IsString(e) ? e->valuestring : "?", k->stages[s].name);
            for (int i = 0; i < a->n_bindings; i++) bound |= a->b[i].tensor == t;
            if (!bound) return kv_error(KV_EDATA, "%s: writes: '%s' is bound to no binding", path, e->valuestring);
            a->writes |= 1u << t;
        }
    }
    if (!a->writes) return kv_error(KV_EDATA, "%s: writes: the shader writes none of stage %s's outputs", path, k->stages[s].name);
    return KV_OK;
}

enum kv_status kv_abi_load(const struct kv_kernel *k, int s, const char *path, struct kv_abi *out)
{
    char *buf = NULL;
    size_t size;
    memset(out, 0, sizeof *out);
    enum kv_status st = kv_read_file(path, (size_t)1 << 20, &buf, &size);
    if (!st) st = kv_abi_parse(k, s, path, buf, size, out);
    free(buf);
    return st;
}

enum kv_status kv_abi_parse(const struct kv_kernel *k, int s, const char *path, const char *buf, size_t size,
                            struct kv_abi *out)
{
    enum kv_status st = KV_OK;
    cJSON *root = NULL;
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    out->stage = s;
    root = cJSON_ParseWithLength(buf, size);
    KV_CHECK(root, KV_EDATA, "%s: not JSON (near byte %ld)", path,
             cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - buf) : 0L);
    KV_TRY(parse(k, s, path, root, out));
    KV_TRY(writes_of(k, s, path, cJSON_GetObjectItemCaseSensitive(root, "writes"), out));
cleanup:
    cJSON_Delete(root);
    return st;
}

static int case_param(void *ctx, const char *name, double *v)
{
    const struct kv_case *c = ctx;
    int p = kv_param_index(c->k, name);
    if (p < 0 || c->k->params[p].type == KV_PARAM_CHOICE) return 0;
    *v = c->k->params[p].type == KV_PARAM_INT ? (double)c->p[p].i : c->p[p].f;
    return 1;
}

enum kv_status kv_abi_value(const struct kv_case *c, const char *field, const char *expr, enum kv_abi_type type,
                            double *out)
{
    KV_TRY_RET(kv_expr_eval(field, expr, case_param, (void *)c, out));
    if (type == KV_ABI_FLOAT) return KV_OK;
    if (*out != floor(*out)) return kv_error(KV_EDATA, "%s: '%s' is %.17g, not an integer", field, expr, *out);
    double lo = type == KV_ABI_UINT ? 0 : -2147483648.0, hi = type == KV_ABI_UINT ? 4294967295.0 : 2147483647.0;
    if (*out < lo || *out > hi)
        return kv_error(KV_EDATA, "%s: '%s' is %.17g, outside the range of a 32-bit %s", field, expr, *out,
                        type_names[type]);
    return KV_OK;
}

int kv_abi_writes(const struct kv_abi *a, const struct kv_kernel *k, int t)
{
    for (int i = 0; i < k->n_tensors; i++)
        if ((a->writes & (1u << i)) && !strcmp(k->tensors[i].name, k->tensors[t].name)) return 1;
    return 0;
}
