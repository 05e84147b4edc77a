/* A spec file into a struct kv_spec: the header, parameters, tensors and
 * input distributions (stage and math parsing: stages.c). Every error names
 * the file and the field. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "specs/load.h"

#define BAD(field, ...) KV_SPEC_BAD(s, field, __VA_ARGS__)

static int valid_name(const char *n, int dashes)
{
    if (!*n || !((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') || *n == '_')) return 0;
    for (; *n; n++)
        if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') || (*n >= '0' && *n <= '9') || *n == '_' ||
              (dashes && *n == '-')))
            return 0;
    return 1;
}

static enum kv_status param_range(struct kv_spec *s, const cJSON *o, const char *f, struct kv_param_def *d)
{
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(o, "min"), *mx = cJSON_GetObjectItemCaseSensitive(o, "max");
    int isint = d->type == KV_PARAM_INT;
    d->min = isint ? 0 : -1e308;
    d->max = isint ? 2147483647.0 : 1e308;
    if (mn && !cJSON_IsNumber(mn)) BAD(f, "min is not a number");
    if (mx && !cJSON_IsNumber(mx)) BAD(f, "max is not a number");
    if (mn) d->min = mn->valuedouble;
    if (mx) d->max = mx->valuedouble;
    if (isint && (d->min < -9007199254740992.0 || d->max > 9007199254740992.0 || d->min != floor(d->min) ||
                  d->max != floor(d->max)))
        BAD(f, "an integer parameter's min and max are integers within 2^53");
    if (d->min > d->max) BAD(f, "min is above max");
    return KV_OK;
}

static enum kv_status param_choices(struct kv_spec *s, const cJSON *o, const char *f, int i)
{
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(o, "choices"), *c;
    if (!cJSON_IsArray(ch) || cJSON_GetArraySize(ch) < 1) BAD(f, "a choice parameter needs a list of choices");
    size_t len = 0;
    s->choices[i][0] = '\0';
    cJSON_ArrayForEach(c, ch) {
        if (!cJSON_IsString(c) || !valid_name(c->valuestring, 1)) BAD(f, "a choice is not a name");
        len += (size_t)snprintf(s->choices[i] + len, sizeof s->choices[i] - len, "%s%s", len ? "|" : "", c->valuestring);
        if (len >= sizeof s->choices[i]) BAD(f, "choices longer than %zu characters", sizeof s->choices[i] - 1);
    }
    s->params[i].choices = s->choices[i];
    return KV_OK;
}

static enum kv_status parse_param(struct kv_spec *s, const cJSON *o, int i)
{
    char f[64], type[16] = "int";
    struct kv_param_def *d = &s->params[i];
    snprintf(f, sizeof f, "params[%d]", i);
    if (!cJSON_IsObject(o)) BAD(f, "not an object");
    enum kv_status st;
    if ((st = kv_spec_text(s, o, "name", f, 1, s->param_text[i][0], 64)) ||
        (st = kv_spec_text(s, o, "type", f, 0, type, sizeof type)) ||
        (st = kv_spec_text(s, o, "default", f, 1, s->param_text[i][1], 160)) ||
        (st = kv_spec_text(s, o, "help", f, 0, s->param_text[i][2], 160)))
        return st;
    if (!valid_name(s->param_text[i][0], 1)) BAD(f, "name \"%s\" is not a name", s->param_text[i][0]);
    for (int j = 0; j < i; j++)
        if (!strcmp(s->param_text[j][0], s->param_text[i][0])) BAD(f, "parameter \"%s\" twice", s->param_text[i][0]);
    d->name = s->param_text[i][0];
    d->def = s->param_text[i][1];
    d->help = s->param_text[i][2];
    if (!strcmp(type, "int")) d->type = KV_PARAM_INT;
    else if (!strcmp(type, "float")) d->type = KV_PARAM_FLOAT;
    else if (!strcmp(type, "choice")) d->type = KV_PARAM_CHOICE;
    else BAD(f, "unknown type \"%s\" (int, float or choice)", type);
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "in_name");
    d->in_name = in ? cJSON_IsTrue(in) : d->type == KV_PARAM_INT;
    if (d->type == KV_PARAM_CHOICE) return param_choices(s, o, f, i);
    return param_range(s, o, f, d);
}

/* "rows, dim" into "rows,dim": each extent an integer parameter, a positive
 * integer, or a product of them (kernels/kernel.h). */
static enum kv_status parse_dims(struct kv_spec *s, const char *f, const char *in, char *out, size_t size)
{
    size_t o = 0;
    int ndim = 1;
    for (const char *p = in; *p; p++)
        if (*p != ' ') {
            if (o + 1 >= size) BAD(f, "shape too long");
            out[o++] = *p;
            ndim += *p == ',';
        }
    out[o] = '\0';
    if (!o || out[0] == ',' || out[o - 1] == ',' || strstr(out, ",,")) BAD(f, "an empty extent in \"%s\"", in);
    if (ndim > KV_MAX_DIMS) BAD(f, "more than %d dimensions", KV_MAX_DIMS);
    char tok[64];
    for (const char *p = out; *p;) {
        size_t w = strcspn(p, ",*");
        if (w == 0 || w >= sizeof tok) BAD(f, "bad extent in \"%s\"", in);
        memcpy(tok, p, w);
        tok[w] = '\0';
        int pi = kv_param_index(&s->k, tok);
        char *end;
        long long v = strtoll(tok, &end, 10);
        if (pi >= 0 && s->params[pi].type != KV_PARAM_INT) BAD(f, "extent \"%s\" is not an integer parameter", tok);
        if (pi < 0 && (*end || v < 1)) BAD(f, "extent \"%s\" is neither a parameter nor a positive integer", tok);
        p += w + (p[w] != '\0');
    }
    return KV_OK;
}

static enum kv_status parse_const(struct kv_spec *s, const cJSON *o, int i)
{
    char f[64];
    snprintf(f, sizeof f, "constants[%d]", i);
    if (!cJSON_IsObject(o)) BAD(f, "not an object");
    enum kv_status st;
    if ((st = kv_spec_text(s, o, "name", f, 1, s->const_name[i], 64)) ||
        (st = kv_spec_text(s, o, "value", f, 1, s->const_expr[i], 256)))
        return st;
    if (!valid_name(s->const_name[i], 0)) BAD(f, "name \"%s\" is not a name", s->const_name[i]);
    if (kv_spec_param(&s->k, s->const_name[i]) >= 0) BAD(f, "name \"%s\" is a parameter's", s->const_name[i]);
    for (int j = 0; j < i; j++)
        if (!strcmp(s->const_name[j], s->const_name[i])) BAD(f, "constant \"%s\" twice", s->const_name[i]);
    s->n_consts = i + 1;
    return KV_OK;
}

static enum kv_status parse_tensor(struct kv_spec *s, const cJSON *o, int i)
{
    char f[64], role[16], dtype[16], shape[160];
    struct kv_tensor_def *d = &s->tensors[i];
    snprintf(f, sizeof f, "tensors[%d]", i);
    if (!cJSON_IsObject(o)) BAD(f, "not an object");
    enum kv_status st;
    if ((st = kv_spec_text(s, o, "name", f, 1, s->tensor_text[i][0], 64)) ||
        (st = kv_spec_text(s, o, "role", f, 1, role, sizeof role)) ||
        (st = kv_spec_text(s, o, "dtype", f, 1, dtype, sizeof dtype)) ||
        (st = kv_spec_text(s, o, "shape", f, 1, shape, sizeof shape)))
        return st;
    d->name = s->tensor_text[i][0];
    if (!valid_name(d->name, 0)) BAD(f, "name \"%s\" is not a name", d->name);
    int taken = kv_param_index(&s->k, d->name) >= 0 || kv_tensor_index(&s->k, d->name) >= 0;
    for (int j = 0; j < s->n_consts; j++) taken |= !strcmp(s->const_name[j], d->name);
    if (taken)
        BAD(f, "name \"%s\" is taken", d->name);
    if (!strcmp(role, "input")) d->role = KV_INPUT;
    else if (!strcmp(role, "output")) d->role = KV_OUTPUT;
    else BAD(f, "role \"%s\" is neither input nor output", role);
    int t = kv_dtype_from_name(dtype);
    if (t != KV_F32 && t != KV_F16 && t != KV_BF16 && t != KV_U8 && t != KV_I32)
        BAD(f, "unknown dtype \"%s\" (f32, f16, bf16, u8 or i32)", dtype);
    d->dtype = (enum kv_dtype)t;
    if (d->role == KV_OUTPUT && t != KV_F32 && t != KV_F16 && t != KV_BF16) BAD(f, "an output's dtype is a float");
    d->stage = -1;
    if ((st = parse_dims(s, f, shape, s->tensor_text[i][1], sizeof s->tensor_text[i][1]))) return st;
    d->dims = s->tensor_text[i][1];
    s->k.n_tensors = i + 1;
    return d->role == KV_INPUT ? kv_spec_parse_dist(s, o, f, i) : KV_OK;
}

static enum kv_status parse_list(struct kv_spec *s, const cJSON *root, const char *key, int max, int required,
                                 enum kv_status (*each)(struct kv_spec *, const cJSON *, int), int *count)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key), *o;
    if (!a && !required) return KV_OK;
    if (!cJSON_IsArray(a)) BAD(key, a ? "not a list" : "missing");
    if (cJSON_GetArraySize(a) > max) BAD(key, "more than %d entries", max);
    if (required && cJSON_GetArraySize(a) == 0) BAD(key, "empty");
    int i = 0;
    cJSON_ArrayForEach(o, a) {
        enum kv_status st = each(s, o, i++);
        if (st) return st;
        if (count) *count = i;
    }
    return KV_OK;
}

static enum kv_status parse_header(struct kv_spec *s, const cJSON *root)
{
    enum kv_status st;
    if (!cJSON_IsObject(root)) BAD("(top)", "not a JSON object");
    if ((st = kv_spec_text(s, root, "kernel", "(top)", 1, s->name, sizeof s->name)) ||
        (st = kv_spec_text(s, root, "summary", "(top)", 0, s->summary, sizeof s->summary)))
        return st;
    if (!valid_name(s->name, 1)) BAD("kernel", "\"%s\" is not a name (letters, digits, - and _)", s->name);
    const cJSON *f;
    cJSON_ArrayForEach(f, root) {
        static const char *const known[] = {"kernel", "summary", "params", "constants", "tensors", "stages",
                                            "prepare", "math", "sweep", "description"};
        int ok = 0;
        for (size_t i = 0; i < sizeof known / sizeof *known; i++) ok |= !strcmp(f->string, known[i]);
        if (!ok) BAD(f->string, "unknown field");
    }
    s->k.name = s->name;
    s->k.summary = s->summary;
    return KV_OK;
}

enum kv_status kv_spec_parse(const char *path, const char *text, size_t len, int builtin, struct kv_spec **out)
{
    enum kv_status st = KV_OK;
    struct kv_spec *s = calloc(1, sizeof *s);
    cJSON *root = NULL;
    *out = NULL;
    if (!s) return kv_error(KV_EDEVICE, "out of host memory reading %s", path);
    snprintf(s->path, sizeof s->path, "%s", path);
    s->builtin = builtin;
    if (!builtin) { /* shaders are named relative to the spec's folder */
        const char *slash = strrchr(path, '/');
        if (slash) snprintf(s->dir, sizeof s->dir, "%.*s", (int)(slash - path), path);
        else snprintf(s->dir, sizeof s->dir, ".");
        if (!s->dir[0]) snprintf(s->dir, sizeof s->dir, "/");
    }
    root = cJSON_ParseWithLength(text, len);
    if (!root) {
        st = kv_error(KV_EDATA, "%s: not valid JSON (near byte %td)", path, cJSON_GetErrorPtr() - text);
        goto cleanup;
    }
    s->k.params = s->params;
    s->k.tensors = s->tensors;
    s->k.stages = s->stages;
    KV_TRY(parse_header(s, root));
    KV_TRY(parse_list(s, root, "params", KV_MAX_PARAMS, 0, parse_param, &s->k.n_params));
    KV_TRY(parse_list(s, root, "constants", KV_SPEC_MAX_CONSTS, 0, parse_const, NULL));
    KV_TRY(parse_list(s, root, "tensors", KV_MAX_TENSORS, 1, parse_tensor, NULL));
    KV_TRY(kv_spec_parse_math(s, root));
    KV_TRY(kv_spec_parse_stages(s, root));
    KV_TRY(kv_spec_parse_sweep(s, root));
    KV_TRY(kv_spec_check(s));
    *out = s;
    s = NULL;
cleanup:
    cJSON_Delete(root);
    kv_spec_free(s);
    return st;
}

void kv_spec_free(struct kv_spec *s)
{
    if (!s) return;
    for (int i = 0; i < s->n_stmts; i++) kv_sx_free(s->stmt[i].rhs);
    free(s->sweep_text);
    free(s);
}
