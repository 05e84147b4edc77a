/* The field helpers every part of the spec parser uses (load.h). */
#include <stdio.h>
#include <string.h>

#include "core/expr.h"
#include "specs/load.h"

enum kv_status kv_spec_field_error(const struct kv_spec *s, const char *field, const char *cause)
{
    return kv_error(KV_EDATA, "%s: %s: %s", s->path, field, cause);
}

enum kv_status kv_spec_text(const struct kv_spec *s, const cJSON *o, const char *key, const char *field, int required,
                            char *out, size_t size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    char f[160];
    snprintf(f, sizeof f, "%s.%s", field, key);
    if (!v) {
        if (required) KV_SPEC_BAD(s, f, "missing");
        return KV_OK;
    }
    if (cJSON_IsNumber(v)) {
        snprintf(out, size, "%.17g", v->valuedouble);
        return KV_OK;
    }
    if (!cJSON_IsString(v)) KV_SPEC_BAD(s, f, "not a string");
    if (strlen(v->valuestring) >= size) KV_SPEC_BAD(s, f, "longer than %zu characters", size - 1);
    snprintf(out, size, "%s", v->valuestring);
    return KV_OK;
}


int kv_spec_param(const struct kv_kernel *k, const char *name)
{
    int p = kv_param_index(k, name);
    char dashed[64];
    if (p >= 0 || strlen(name) >= sizeof dashed) return p;
    snprintf(dashed, sizeof dashed, "%s", name);
    for (char *c = dashed; *c; c++)
        if (*c == '_') *c = '-';
    return kv_param_index(k, dashed);
}

struct lookup_ctx {
    const struct kv_case *c;
    const uint32_t *local;
};

static int lookup(void *ctx, const char *name, double *v)
{
    const struct lookup_ctx *x = ctx;
    const struct kv_case *c = x->c;
    if (x->local && !strncmp(name, "local_", 6) && name[6] >= 'x' && name[6] <= 'z' && !name[7]) {
        *v = x->local[name[6] - 'x'];
        return 1;
    }
    int p = kv_spec_param(c->k, name);
    if (p < 0) return 0;
    const struct kv_param_def *d = &c->k->params[p];
    *v = d->type == KV_PARAM_INT ? (double)c->p[p].i : d->type == KV_PARAM_FLOAT ? c->p[p].f : (double)c->p[p].c;
    return 1;
}

enum kv_status kv_spec_param_expr(const struct kv_case *c, const char *what, const char *expr, double *out)
{
    struct lookup_ctx x = {c, NULL};
    return kv_expr_eval(what, expr, lookup, &x, out);
}

enum kv_status kv_spec_groups(const struct kv_case *c, const char *what, const char *expr, const uint32_t local[3],
                              double *out)
{
    struct lookup_ctx x = {c, local};
    return kv_expr_eval(what, expr, lookup, &x, out);
}


enum kv_status kv_spec_const(const struct kv_case *c, int j, double *v)
{
    const struct kv_spec *s = (const struct kv_spec *)(const void *)c->k;
    char what[1200];
    snprintf(what, sizeof what, "%s: constants[%d]", s->path, j);
    return kv_spec_param_expr(c, what, s->const_expr[j], v);
}
