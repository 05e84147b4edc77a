/* A spec's statements: "prepare" (inputs made from other inputs and random
 * draws) and "math" (the kernel), their symbols, and an order in which each
 * statement comes after those it reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "specs/load.h"

#define BAD(field, ...) KV_SPEC_BAD(s, field, __VA_ARGS__)

int kv_spec_sym(const struct kv_spec *s, const char *name)
{
    for (int i = 0; i < s->n_syms; i++)
        if (!strcmp(s->sym[i].name, name)) return i;
    return -1;
}

static int names_param(void *ctx, const char *name)
{
    const struct kv_spec *s = ctx;
    int p = kv_spec_param(&s->k, name);
    for (int j = 0; p < 0 && j < s->n_consts; j++)
        if (!strcmp(s->const_name[j], name)) p = KV_MAX_PARAMS + j;
    return p;
}

static int names_array(void *ctx, const char *name, int *ndim)
{
    const struct kv_spec *s = ctx;
    int i = kv_spec_sym(s, name);
    if (i >= 0) *ndim = s->sym[i].ndim;
    return i;
}

/* The statement's target: a declared tensor (inputs in prepare, outputs in
 * math) or a new temp. */
static enum kv_status add_target(struct kv_spec *s, const char *field, struct kv_spec_stmt *st, const struct kv_sx_stmt *h)
{
    int t = kv_tensor_index(&s->k, h->target);
    if (kv_param_index(&s->k, h->target) >= 0) BAD(field, "\"%s\" is a parameter, not an array", h->target);
    if (t >= 0) {
        const struct kv_tensor_def *d = &s->tensors[t];
        int sym = kv_spec_sym(s, h->target);
        if (s->sym[sym].stmt >= 0) BAD(field, "\"%s\" is defined twice", h->target);
        if (st->prepare && d->role == KV_OUTPUT) BAD(field, "output \"%s\" is made in math, not prepare", d->name);
        if (!st->prepare && d->role == KV_INPUT) BAD(field, "input \"%s\" is made in prepare, not math", d->name);
        if (st->prepare && s->dist[t].gen != KV_GEN_MATH) BAD(field, "input \"%s\" has a dist already", d->name);
        if (h->n_target != s->sym[sym].ndim)
            BAD(field, "\"%s\" has %d indices, the statement gives %d", d->name, s->sym[sym].ndim, h->n_target);
        s->sym[sym].stmt = (int)(st - s->stmt);
        st->sym = sym;
        return KV_OK;
    }
    if (kv_spec_sym(s, h->target) >= 0) BAD(field, "\"%s\" is defined twice", h->target);
    if (s->n_syms == KV_SPEC_MAX_SYMS) BAD(field, "too many arrays");
    struct kv_spec_sym *y = &s->sym[s->n_syms];
    snprintf(y->name, sizeof y->name, "%s", h->target);
    y->tensor = -1;
    y->stmt = (int)(st - s->stmt);
    y->ndim = h->n_target;
    st->sym = s->n_syms++;
    return KV_OK;
}

/* Pass 1: targets (so that a statement may read one defined after it). */
static enum kv_status heads(struct kv_spec *s, const cJSON *root, const char *key, int prepare)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key), *o;
    if (!a) return prepare ? KV_OK : kv_spec_field_error(s, key, "missing");
    if (!cJSON_IsArray(a)) BAD(key, "not a list of statements");
    int i = 0;
    cJSON_ArrayForEach(o, a) {
        char field[64];
        snprintf(field, sizeof field, "%s[%d]", key, i);
        if (!cJSON_IsString(o)) BAD(field, "not a string");
        if (s->n_stmts == KV_SPEC_MAX_STMTS) BAD(field, "more than %d statements", KV_SPEC_MAX_STMTS);
        struct kv_spec_stmt *st = &s->stmt[s->n_stmts++];
        if (strlen(o->valuestring) >= sizeof st->text) BAD(field, "longer than %zu characters", sizeof st->text - 1);
        snprintf(st->text, sizeof st->text, "%s", o->valuestring);
        st->prepare = prepare;
        st->pos = i++;
        struct kv_sx_stmt h;
        char what[1200];
        snprintf(what, sizeof what, "%s: %s", s->path, field);
        enum kv_status e = kv_sx_parse(what, st->text, NULL, &h);
        if (e) return e;
        if ((e = add_target(s, field, st, &h))) return e;
    }
    if (!prepare && i == 0) BAD(key, "empty");
    return KV_OK;
}

/* Pass 2: the expressions, with every name known. */
static enum kv_status bodies(struct kv_spec *s)
{
    struct kv_sx_names names = {s, names_param, names_array};
    for (int i = 0; i < s->n_stmts; i++) {
        struct kv_spec_stmt *st = &s->stmt[i];
        struct kv_sx_stmt p;
        char what[1200], field[64];
        snprintf(field, sizeof field, "%s[%d]", st->prepare ? "prepare" : "math", st->pos);
        snprintf(what, sizeof what, "%s: %s", s->path, field);
        enum kv_status e = kv_sx_parse(what, st->text, &names, &p);
        if (e) return e;
        st->rhs = p.rhs;
        st->n_target = p.n_target;
        st->n_vars = p.n_vars;
        memcpy(st->var, p.var, sizeof st->var);
        memcpy(st->ext, p.ext, sizeof st->ext);
        for (int v = 0; v < st->n_target; v++) {
            char tok[64];
            snprintf(tok, sizeof tok, "%s", st->ext[v]);
            for (char *q = strtok(tok, "*"); q; q = strtok(NULL, "*")) {
                int pi = kv_param_index(&s->k, q);
                if (pi >= 0 ? s->params[pi].type != KV_PARAM_INT : (q[0] < '1' || q[0] > '9' || strspn(q, "0123456789") != strlen(q)))
                    BAD(field, "the extent of %s, \"%s\", is neither an integer parameter nor a positive integer", st->var[v], q);
            }
        }
        int draw = kv_sx_draws(st->rhs, !st->prepare);
        if (draw) BAD(field, "column %d: a random draw is for input preparation, outside reductions", draw);
        for (int y = 0; y < s->n_syms && st->prepare; y++)
            if (kv_sx_reads(st->rhs, y) && s->sym[y].stmt >= 0 && !s->stmt[s->sym[y].stmt].prepare)
                BAD(field, "prepare reads \"%s\", which the math makes", s->sym[y].name);
        if (st->n_target > KV_MAX_DIMS) BAD(field, "more than %d indices", KV_MAX_DIMS);
        (void)p.n_nodes;
        st->n_nodes = p.n_nodes;
    }
    return KV_OK;
}

/* Depth-first: a statement after every statement it reads; a cycle named. */
static enum kv_status visit(struct kv_spec *s, int i, int *mark, int *n, int *path, int depth)
{
    if (mark[i] == 2) return KV_OK;
    path[depth] = i;
    if (mark[i] == 1) {
        char chain[400];
        size_t o = 0;
        int from = depth - 1;
        while (from > 0 && path[from] != i) from--;
        for (int k = from; k <= depth && o < sizeof chain; k++)
            o += (size_t)snprintf(chain + o, sizeof chain - o, "%s%s", k > from ? " -> " : "",
                                  s->sym[s->stmt[path[k]].sym].name);
        BAD(s->stmt[i].prepare ? "prepare" : "math", "a cycle between arrays: %s", chain);
    }
    mark[i] = 1;
    for (int y = 0; y < s->n_syms; y++) {
        int d = s->sym[y].stmt;
        if (d < 0 || d == i || !kv_sx_reads(s->stmt[i].rhs, y)) continue;
        enum kv_status e = visit(s, d, mark, n, path, depth + 1);
        if (e) return e;
    }
    if (kv_sx_reads(s->stmt[i].rhs, s->stmt[i].sym))
        BAD(s->stmt[i].prepare ? "prepare" : "math", "\"%s\" reads itself", s->sym[s->stmt[i].sym].name);
    mark[i] = 2;
    s->order[(*n)++] = i;
    return KV_OK;
}

static enum kv_status complete(struct kv_spec *s)
{
    for (int t = 0; t < s->k.n_tensors; t++) {
        const struct kv_tensor_def *d = &s->tensors[t];
        if (d->role == KV_OUTPUT && s->sym[t].stmt < 0) BAD("math", "no statement makes output \"%s\"", d->name);
        if (d->role == KV_INPUT && s->dist[t].gen == KV_GEN_MATH && s->sym[t].stmt < 0)
            BAD("tensors", "input \"%s\" has neither a dist nor a prepare statement", d->name);
    }
    int mark[KV_SPEC_MAX_STMTS] = {0}, path[KV_SPEC_MAX_STMTS + 1], n = 0;
    for (int i = 0; i < s->n_stmts; i++) {
        enum kv_status e = visit(s, i, mark, &n, path, 0);
        if (e) return e;
    }
    for (int i = 0; i < s->n_stmts; i++) s->k.has_exact |= !s->stmt[i].prepare && kv_sx_rounds(s->stmt[i].rhs);
    return KV_OK;
}

enum kv_status kv_spec_parse_math(struct kv_spec *s, const cJSON *root)
{
    for (int t = 0; t < s->k.n_tensors; t++) {
        struct kv_spec_sym *y = &s->sym[s->n_syms++];
        snprintf(y->name, sizeof y->name, "%s", s->tensors[t].name);
        y->tensor = t;
        y->stmt = -1;
        y->ndim = 1;
        for (const char *p = s->tensors[t].dims; *p; p++) y->ndim += *p == ',';
    }
    enum kv_status e;
    if ((e = heads(s, root, "prepare", 1)) || (e = heads(s, root, "math", 0)) || (e = bodies(s))) return e;
    return complete(s);
}
