/* A spec's stages (shader, bindings, push constants, group counts) and its
 * sweep; the interface a stage gets when the spec leaves it out: every
 * tensor the stage's outputs are computed from and the outputs, in declared
 * order, and every parameter as a 32-bit push constant, in declared order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "specs/load.h"

#define BAD(field, ...) KV_SPEC_BAD(s, field, __VA_ARGS__)

/* Mark in used[] every symbol statement i reads, through temps. */
static void reads(const struct kv_spec *s, int i, int *used)
{
    for (int y = 0; y < s->n_syms; y++) {
        if (used[y] || !kv_sx_reads(s->stmt[i].rhs, y)) continue;
        used[y] = 1;
        if (s->sym[y].tensor < 0 && s->sym[y].stmt >= 0) reads(s, s->sym[y].stmt, used);
    }
}

/* The stage of each output (its "stage" field, or the only stage); temps
 * take the first stage that reads them. */
static enum kv_status assign(struct kv_spec *s, const cJSON *root)
{
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    for (int t = 0; t < s->k.n_tensors; t++) {
        struct kv_tensor_def *d = &s->tensors[t];
        char name[64] = "", field[64];
        snprintf(field, sizeof field, "tensors[%d]", t);
        enum kv_status e = kv_spec_text(s, cJSON_GetArrayItem(ts, t), "stage", field, 0, name, sizeof name);
        if (e) return e;
        s->sym[t].stage = -1;
        if (d->role != KV_OUTPUT) {
            if (name[0]) BAD(field, "an input has no stage");
            continue;
        }
        if (!name[0] && s->k.n_stages > 1) BAD(field, "which stage makes \"%s\"? (stage)", d->name);
        d->stage = 0;
        for (int i = 0; name[0] && i < s->k.n_stages; i++)
            if (!strcmp(s->stages[i].name, name)) d->stage = i;
        if (name[0] && strcmp(s->stages[d->stage].name, name)) BAD(field, "no stage \"%s\"", name);
        s->sym[t].stage = d->stage;
    }
    for (int y = s->k.n_tensors; y < s->n_syms; y++) s->sym[y].stage = -1;
    for (int st = 0; st < s->k.n_stages; st++)
        for (int t = 0; t < s->k.n_tensors; t++) {
            if (s->tensors[t].role != KV_OUTPUT || s->tensors[t].stage != st) continue;
            int used[KV_SPEC_MAX_SYMS] = {0};
            reads(s, s->sym[t].stmt, used);
            for (int y = 0; y < s->n_syms; y++) {
                if (!used[y]) continue;
                if (y < s->k.n_tensors && s->tensors[y].role == KV_OUTPUT && s->tensors[y].stage > st)
                    BAD("math", "\"%s\" (stage %s) reads \"%s\", which a later stage makes", s->tensors[t].name,
                        s->stages[st].name, s->tensors[y].name);
                if (y < s->k.n_tensors) continue;
                if (s->sym[y].stage < 0) s->sym[y].stage = st;
                else if (s->sym[y].stage != st) { /* evaluated once: it must not depend on where it is read */
                    int deps[KV_SPEC_MAX_SYMS] = {0};
                    reads(s, s->sym[y].stmt, deps);
                    for (int o = 0; o < s->k.n_tensors; o++)
                        if (deps[o] && s->tensors[o].role == KV_OUTPUT)
                            BAD("math", "\"%s\" reads output \"%s\" and is read by stages %s and %s: give each its own",
                                s->sym[y].name, s->tensors[o].name, s->stages[s->sym[y].stage].name, s->stages[st].name);
                }
            }
        }
    return KV_OK;
}

static enum kv_status bindings(struct kv_spec *s, const cJSON *o, const char *f, int st)
{
    struct kv_stage_def *sd = &s->stages[st];
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "bindings"), *x;
    int used[KV_SPEC_MAX_SYMS] = {0};
    for (int t = 0; t < s->k.n_tensors; t++)
        if (s->tensors[t].role == KV_OUTPUT && s->tensors[t].stage == st) used[t] = 1, reads(s, s->sym[t].stmt, used);
    if (!b) {
        for (int t = 0; t < s->k.n_tensors; t++)
            if (used[t] && sd->n_bindings < KV_VK_MAX_BINDINGS) sd->bindings[sd->n_bindings++] = t;
        return KV_OK;
    }
    if (!cJSON_IsArray(b) || cJSON_GetArraySize(b) > KV_VK_MAX_BINDINGS) BAD(f, "bindings: a list of tensor names");
    cJSON_ArrayForEach(x, b) {
        int t = cJSON_IsString(x) ? kv_tensor_index(&s->k, x->valuestring) : -1;
        if (t < 0) BAD(f, "bindings: \"%s\" is not a tensor", cJSON_IsString(x) ? x->valuestring : "?");
        for (int i = 0; i < sd->n_bindings; i++)
            if (sd->bindings[i] == t) BAD(f, "bindings: \"%s\" twice", x->valuestring);
        sd->bindings[sd->n_bindings++] = t;
        used[t] = 0;
    }
    for (int t = 0; t < s->k.n_tensors; t++)
        if (used[t] && s->tensors[t].role == KV_OUTPUT && s->tensors[t].stage == st)
            BAD(f, "bindings: the stage's output \"%s\" is not bound", s->tensors[t].name);
    return KV_OK;
}

static enum kv_status push(struct kv_spec *s, const cJSON *o, const char *f, int st)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "push"), *x;
    struct kv_spec_stage_push *q = &s->push[st];
    size_t len = 0;
    char *doc = s->stage_text[st][2];
    if (!p) {
        for (int i = 0; i < s->k.n_params; i++) q->param[q->n++] = i;
        for (int j = 0; j < s->n_consts; j++) q->param[q->n++] = KV_MAX_PARAMS + j;
    } else if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) > KV_MAX_PARAMS + KV_SPEC_MAX_CONSTS) {
        BAD(f, "push: a list of parameter and constant names");
    }
    cJSON_ArrayForEach(x, p) {
        int i = cJSON_IsString(x) ? kv_param_index(&s->k, x->valuestring) : -1;
        for (int j = 0; i < 0 && cJSON_IsString(x) && j < s->n_consts; j++)
            if (!strcmp(s->const_name[j], x->valuestring)) i = KV_MAX_PARAMS + j;
        if (i < 0) BAD(f, "push: \"%s\" is neither a parameter nor a constant", cJSON_IsString(x) ? x->valuestring : "?");
        q->param[q->n++] = i;
    }
    doc[0] = '\0';
    for (int i = 0; i < q->n; i++) {
        const int k = q->param[i];
        const struct kv_param_def *d = k < KV_MAX_PARAMS ? &s->params[k] : NULL;
        len += (size_t)snprintf(doc + len, len < 1024 ? 1024 - len : 0, "%s%s %s;", i ? " " : "",
                                !d || d->type == KV_PARAM_FLOAT                ? "float"
                                : d->type == KV_PARAM_INT && d->min < 0 ? "int"
                                                                        : "uint",
                                d ? d->name : s->const_name[k - KV_MAX_PARAMS]);
    }
    s->stages[st].push_size = (uint32_t)(4 * q->n);
    s->stages[st].push_doc = doc;
    return KV_OK;
}

/* Where the stage's shader is: an embedded source, or beside the spec. */
static enum kv_status shader(struct kv_spec *s, const cJSON *o, const char *f, int st)
{
    char file[512];
    enum kv_status e = kv_spec_text(s, o, "shader", f, 1, file, sizeof file);
    if (e) return e;
    char *src = s->stage_text[st][1];
    if (s->builtin || file[0] == '/') snprintf(src, 1024, "%s", file);
    else if ((size_t)snprintf(src, 1024, "%s/%s", s->dir, file) >= 1024) BAD(f, "shader path too long");
    if (!s->builtin) {
        char *text = NULL;
        size_t n = 0;
        if (kv_read_file(src, (size_t)1 << 24, &text, &n)) BAD(f, "shader: cannot read %s", src);
        free(text);
    }
    s->stages[st].source = src;
    s->stages[st].source_disk = !s->builtin;
    return KV_OK;
}

/* groups: one expression per axis over the parameters and local_x/y/z, each
 * capped at the device's limit (the shader grid-strides past it), and x at
 * 2^31 invocations, so that a grid-stride step (gl_NumWorkGroups.x x
 * local_x) fits 32 bits. Default: one invocation per element of the stage's
 * first output. */
static enum kv_status groups(struct kv_spec *s, const cJSON *o, const char *f, int st)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "groups"), *x;
    char *doc = s->stage_text[st][3];
    if (!g) {
        int first = -1;
        for (int t = s->k.n_tensors - 1; t >= 0; t--)
            if (s->tensors[t].role == KV_OUTPUT && s->tensors[t].stage == st) first = t;
        char count[100];
        snprintf(count, sizeof count, "%s", s->tensors[first].dims);
        for (char *p = count; *p; p++)
            if (*p == ',') *p = '*';
        snprintf(s->groups[st][0], sizeof s->groups[st][0], "cdiv(%s, local_x)", count);
        snprintf(s->groups[st][1], 128, "1");
        snprintf(s->groups[st][2], 128, "1");
    } else {
        if (!cJSON_IsArray(g) || cJSON_GetArraySize(g) < 1 || cJSON_GetArraySize(g) > 3)
            BAD(f, "groups: a list of 1 to 3 expressions");
        int i = 0;
        for (int a = 0; a < 3; a++) snprintf(s->groups[st][a], 128, "1");
        cJSON_ArrayForEach(x, g) {
            if (cJSON_IsNumber(x)) snprintf(s->groups[st][i], 128, "%.17g", x->valuedouble);
            else if (!cJSON_IsString(x) || strlen(x->valuestring) >= 128) BAD(f, "groups: an expression per axis");
            else snprintf(s->groups[st][i], 128, "%s", x->valuestring);
            i++;
        }
    }
    char line[sizeof s->stage_text[st][3]]; /* (written apart: doc and the groups share s) */
    snprintf(line, sizeof line, "groups = (min(%s, maxComputeWorkGroupCount.x, 2^31 / local_x), min(%s, .y), min(%s, .z)); "
             "the shader grid-strides over what the capped counts leave", s->groups[st][0], s->groups[st][1],
             s->groups[st][2]);
    memcpy(doc, line, sizeof line);
    s->stages[st].dispatch_doc = doc;
    return kv_spec_text(s, o, "flops", f, 0, s->flops[st], sizeof s->flops[st]);
}

uint32_t kv_spec_max_x(uint32_t max_x, uint32_t local_x)
{
    const uint32_t top = (uint32_t)((1u << 31) / (local_x ? local_x : 1));
    return max_x < top ? max_x : top;
}

static void launch_at(const struct kv_case *c, int st, const uint32_t local[3], const uint32_t max[3], void *push,
                      uint32_t groups_out[3])
{
    const struct kv_spec *s = kv_spec_of(c->k);
    const struct kv_spec_stage_push *q = &s->push[st];
    uint32_t *w = push;
    for (int i = 0; i < q->n; i++) {
        const int p = q->param[i];
        if (p >= KV_MAX_PARAMS) { /* a constant: float64 on the host, then a float */
            double v = NAN;
            (void)kv_spec_const(c, p - KV_MAX_PARAMS, &v); /* checked in validate */
            float f = (float)v;
            memcpy(&w[i], &f, 4);
        } else if (s->params[p].type == KV_PARAM_FLOAT) {
            float f = (float)c->p[p].f;
            memcpy(&w[i], &f, 4);
        } else {
            w[i] = s->params[p].type == KV_PARAM_INT ? (uint32_t)((uint64_t)c->p[p].i & 0xffffffffu) : (uint32_t)c->p[p].c;
        }
    }
    for (int a = 0; a < 3; a++) {
        double v = 1;
        char what[1200];
        snprintf(what, sizeof what, "%s: stages[%d].groups", s->path, st);
        if (kv_spec_groups(c, what, s->groups[st][a], local, &v)) v = 1; /* checked in validate */
        const uint32_t top = a ? max[a] : kv_spec_max_x(max[0], local[0]);
        groups_out[a] = v < 1 ? 1 : v > top ? top : (uint32_t)v;
    }
}

#define TRAMPOLINE(n)                                                                                      \
    static void launch##n(const struct kv_case *c, const uint32_t l[3], const uint32_t m[3], void *p,      \
                          uint32_t g[3])                                                                   \
    {                                                                                                      \
        launch_at(c, n, l, m, p, g);                                                                       \
    }                                                                                                      \
    static double flops##n(const struct kv_case *c)                                                        \
    {                                                                                                      \
        double v = 0;                                                                                      \
        const struct kv_spec *s = kv_spec_of(c->k);                                                        \
        return kv_spec_param_expr(c, s->path, s->flops[n], &v) ? 0 : v;                                   \
    }
TRAMPOLINE(0)
TRAMPOLINE(1)
TRAMPOLINE(2)
TRAMPOLINE(3)
TRAMPOLINE(4)
TRAMPOLINE(5)
TRAMPOLINE(6)
TRAMPOLINE(7)

static void (*const launches[KV_MAX_STAGES])(const struct kv_case *, const uint32_t[3], const uint32_t[3], void *,
                                              uint32_t[3]) = {launch0, launch1, launch2, launch3,
                                                              launch4, launch5, launch6, launch7};
static double (*const flopses[KV_MAX_STAGES])(const struct kv_case *) = {flops0, flops1, flops2, flops3,
                                                                        flops4, flops5, flops6, flops7};

static enum kv_status parse_stage(struct kv_spec *s, const cJSON *o, int st)
{
    char f[64];
    snprintf(f, sizeof f, "stages[%d]", st);
    if (!cJSON_IsObject(o)) BAD(f, "not an object");
    enum kv_status e = kv_spec_text(s, o, "name", f, 1, s->stage_text[st][0], 64);
    if (e) return e;
    for (int i = 0; i < st; i++)
        if (!strcmp(s->stages[i].name, s->stage_text[st][0])) BAD(f, "stage \"%s\" twice", s->stage_text[st][0]);
    s->stages[st].name = s->stage_text[st][0];
    s->stages[st].launch = launches[st];
    return shader(s, o, f, st);
}

enum kv_status kv_spec_parse_stages(struct kv_spec *s, const cJSON *root)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "stages"), *o;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1) BAD("stages", a ? "not a list of stages" : "missing");
    if (cJSON_GetArraySize(a) > KV_MAX_STAGES) BAD("stages", "more than %d stages", KV_MAX_STAGES);
    int st = 0;
    enum kv_status e;
    cJSON_ArrayForEach(o, a) {
        if ((e = parse_stage(s, o, st))) return e;
        s->k.n_stages = ++st;
    }
    if ((e = assign(s, root))) return e;
    st = 0;
    cJSON_ArrayForEach(o, a) {
        char f[64];
        snprintf(f, sizeof f, "stages[%d]", st);
        int outputs = 0;
        for (int t = 0; t < s->k.n_tensors; t++) outputs += s->tensors[t].role == KV_OUTPUT && s->tensors[t].stage == st;
        if (!outputs) BAD(f, "stage \"%s\" makes no output", s->stages[st].name);
        if ((e = bindings(s, o, f, st)) || (e = push(s, o, f, st)) || (e = groups(s, o, f, st))) return e;
        if (s->flops[st][0]) s->stages[st].flops = flopses[st];
        st++;
    }
    return KV_OK;
}

enum kv_status kv_spec_parse_sweep(struct kv_spec *s, const cJSON *root)
{
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "sweep"), *x;
    s->k.sweep_seeds = 3;
    if (!w) {
        s->sweep[0] = "";
        return KV_OK;
    }
    const cJSON *shapes = cJSON_GetObjectItemCaseSensitive(w, "shapes"), *seeds = cJSON_GetObjectItemCaseSensitive(w, "seeds");
    if (!cJSON_IsObject(w) || !cJSON_IsArray(shapes)) BAD("sweep", "an object with a list of shapes");
    if (seeds && (!cJSON_IsNumber(seeds) || seeds->valuedouble < 1 || seeds->valuedouble > 1000))
        BAD("sweep.seeds", "a number from 1 to 1000");
    if (seeds) s->k.sweep_seeds = (int)seeds->valuedouble;
    if (cJSON_GetArraySize(shapes) > 128) BAD("sweep.shapes", "more than 128");
    size_t total = 1;
    cJSON_ArrayForEach(x, shapes) {
        if (!cJSON_IsString(x)) BAD("sweep.shapes", "not a list of \"k=v,k=v\" strings");
        total += strlen(x->valuestring) + 1;
    }
    s->sweep_text = malloc(total);
    if (!s->sweep_text) return kv_error(KV_EDEVICE, "out of host memory");
    size_t off = 0;
    int i = 0;
    cJSON_ArrayForEach(x, shapes) {
        s->sweep[i++] = strcpy(s->sweep_text + off, x->valuestring);
        off += strlen(x->valuestring) + 1;
    }
    if (i == 0) s->sweep[i++] = "";
    s->sweep[i] = NULL;
    return KV_OK;
}
