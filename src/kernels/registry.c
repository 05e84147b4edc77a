/* The kernel registry and the parameter plumbing every kernel shares. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parse.h"
#include "kernels/kernel.h"

extern const struct kv_kernel kv_kernel_rmsnorm_bwd;
extern const struct kv_kernel kv_kernel_gemm_bwd;
extern const struct kv_kernel kv_kernel_qdq_affine;
extern const struct kv_kernel kv_kernel_gdn_wu;
extern const struct kv_kernel kv_kernel_gdn_wy_bwd;

const struct kv_kernel *const kv_kernels[] = {
    &kv_kernel_rmsnorm_bwd,
    &kv_kernel_gemm_bwd,
    &kv_kernel_qdq_affine,
    &kv_kernel_gdn_wu,
    &kv_kernel_gdn_wy_bwd,
    NULL,
};

/* Kernels registered at run time (spec kernels), after the built-ins. */
enum { KV_MAX_REGISTERED = 256 };
static const struct kv_kernel *registered[KV_MAX_REGISTERED];
static int n_registered;

enum kv_status kv_kernel_register(const struct kv_kernel *k, const char *from)
{
    const struct kv_kernel *old = kv_kernel_find(k->name);
    if (old) return kv_error(KV_EDATA, "%s: kernel \"%s\" is already defined", from, k->name);
    if (n_registered == KV_MAX_REGISTERED)
        return kv_error(KV_EDATA, "%s: more than %d spec kernels", from, KV_MAX_REGISTERED);
    registered[n_registered++] = k;
    return KV_OK;
}

const struct kv_kernel *kv_kernel_at(int i)
{
    int n_builtin = KV_COUNT(kv_kernels) - 1;
    if (i < 0) return NULL;
    if (i < n_builtin) return kv_kernels[i];
    return i - n_builtin < n_registered ? registered[i - n_builtin] : NULL;
}

const struct kv_kernel *kv_kernel_find(const char *name)
{
    for (int i = 0; kv_kernel_at(i); i++)
        if (strcmp(kv_kernel_at(i)->name, name) == 0) return kv_kernel_at(i);
    return NULL;
}

int kv_param_index(const struct kv_kernel *k, const char *name)
{
    for (int i = 0; i < k->n_params; i++)
        if (strcmp(k->params[i].name, name) == 0) return i;
    return -1;
}

int kv_tensor_index(const struct kv_kernel *k, const char *name)
{
    for (int i = 0; i < k->n_tensors; i++)
        if (strcmp(k->tensors[i].name, name) == 0) return i;
    return -1;
}

int kv_tensor_on(const struct kv_case *c, int t)
{
    return !c->k->tensors[t].active || c->k->tensors[t].active(c);
}

int kv_check_blocked(const struct kv_case *c, int j)
{
    return c->k->check_block && (c->k->block_checks >> j & 1) && c->blocked[c->k->checks[j].output];
}

int kv_stage_on(const struct kv_case *c, int s)
{
    return !c->k->stages[s].active || c->k->stages[s].active(c);
}

int kv_case_tensor(const struct kv_case *c, const char *name)
{
    for (int t = 0; t < c->k->n_tensors; t++)
        if (strcmp(c->k->tensors[t].name, name) == 0 && kv_tensor_on(c, t)) return t;
    return -1;
}

enum kv_status kv_param_set(struct kv_case *c, int i, const char *text)
{
    const struct kv_param_def *d = &c->k->params[i];
    char what[64];
    snprintf(what, sizeof what, "--%s", d->name);
    switch (d->type) {
    case KV_PARAM_INT:
        return kv_parse_i64(what, text, (int64_t)d->min, (int64_t)d->max, &c->p[i].i);
    case KV_PARAM_FLOAT:
        return kv_parse_f64(what, text, d->min, d->max, &c->p[i].f);
    case KV_PARAM_CHOICE: {
        const char *s = d->choices;
        size_t len = strlen(text);
        for (int n = 0; s && *s; n++) {
            size_t w = strcspn(s, "|");
            if (w == len && strncmp(s, text, len) == 0) {
                c->p[i].c = n;
                return KV_OK;
            }
            s += w + (s[w] == '|');
        }
        return kv_error(KV_EUSAGE, "%s: '%s' is not one of %s", what, text, d->choices);
    }
    }
    return KV_EUSAGE;
}

enum kv_status kv_param_apply(struct kv_case *c, const char *list)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) return kv_error(KV_EUSAGE, "parameter list '%s': '%s' is not name=value", list, tok);
        *eq = '\0';
        int i = kv_param_index(c->k, tok);
        if (i < 0) return kv_error(KV_EUSAGE, "parameter list '%s': %s has no parameter '%s'",
                                   list, c->k->name, tok);
        enum kv_status st = kv_param_set(c, i, eq + 1);
        if (st) return st;
    }
    return KV_OK;
}

enum kv_status kv_case_init(struct kv_case *c, const struct kv_kernel *k, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->k = k;
    c->seed = seed;
    for (int i = 0; i < k->n_params; i++) {
        enum kv_status st = kv_param_set(c, i, k->params[i].def);
        if (st) return st;
    }
    return KV_OK;
}

void kv_param_str(const struct kv_case *c, int i, char *buf, size_t size)
{
    const struct kv_param_def *d = &c->k->params[i];
    switch (d->type) {
    case KV_PARAM_INT: snprintf(buf, size, "%lld", (long long)c->p[i].i); break;
    case KV_PARAM_FLOAT: /* the shortest that reads back the same: a case's command must reproduce it */
        for (int p = 6; p <= 17; p++) {
            snprintf(buf, size, "%.*g", p, c->p[i].f);
            if (strtod(buf, NULL) == c->p[i].f) break;
        }
        break;
    case KV_PARAM_CHOICE: {
        const char *s = d->choices;
        for (int n = 0; n < c->p[i].c && s; n++) {
            s = strchr(s, '|');
            if (s) s++;
        }
        snprintf(buf, size, "%.*s", s ? (int)strcspn(s, "|") : 0, s ? s : "");
        break;
    }
    }
}

void kv_stage_source(const struct kv_kernel *k, int s, char *buf, size_t size)
{
    const struct kv_stage_def *sd = &k->stages[s];
    if (sd->source) {
        snprintf(buf, size, "%s", sd->source);
        return;
    }
    snprintf(buf, size, "%s_%s.comp", k->name, sd->name);
    for (char *p = buf; *p; p++)
        if (*p == '-') *p = '_';
}

void kv_case_name(struct kv_case *c)
{
    size_t o = (size_t)snprintf(c->name, sizeof c->name, "%s[", c->k->name);
    struct kv_case def;
    kv_case_init(&def, c->k, 0);
    for (int i = 0; i < c->k->n_params && o < sizeof c->name; i++) {
        char v[64], dv[64];
        kv_param_str(c, i, v, sizeof v);
        kv_param_str(&def, i, dv, sizeof dv);
        if (!c->k->params[i].in_name && strcmp(v, dv) == 0) continue;
        o += (size_t)snprintf(c->name + o, sizeof c->name - o, "%s=%s,", c->k->params[i].name, v);
    }
    if (c->label && o < sizeof c->name)
        o += (size_t)snprintf(c->name + o, sizeof c->name - o, "inputs=%s,", c->label);
    if (o < sizeof c->name)
        snprintf(c->name + o, sizeof c->name - o, "seed=%llu]", (unsigned long long)c->seed);
}

/* Evaluate one extent: "name", "64" or a product "a*b". */
static enum kv_status eval_extent(const struct kv_case *c, const char *spec, size_t len, int64_t *out)
{
    int64_t v = 1;
    char tok[64];
    for (size_t i = 0; i < len;) {
        size_t w = 0;
        while (i + w < len && spec[i + w] != '*') w++;
        if (w == 0 || w >= sizeof tok) return kv_error(KV_EUSAGE, "internal: bad extent '%.*s'", (int)len, spec);
        memcpy(tok, spec + i, w);
        tok[w] = '\0';
        int64_t f;
        int p = kv_param_index(c->k, tok);
        if (p >= 0) f = c->p[p].i;
        else f = strtoll(tok, NULL, 10);
        if (f < 1 || v > INT64_MAX / f)
            return kv_error(KV_EUSAGE, "%s: extent %s overflows", c->k->name, spec);
        v *= f;
        i += w + (i + w < len);
    }
    *out = v;
    return KV_OK;
}

enum kv_status kv_case_shapes(struct kv_case *c)
{
    const struct kv_kernel *k = c->k;
    for (int t = 0; t < k->n_tensors; t++) {
        const char *d = k->tensors[t].dims;
        struct kv_tensor *x = &c->t[t];
        x->dtype = k->tensors[t].dtype;
        x->ndim = 0;
        if (!kv_tensor_on(c, t)) continue;
        while (*d) {
            size_t len = strcspn(d, ",");
            if (x->ndim == KV_MAX_DIMS) return kv_error(KV_EUSAGE, "internal: %s has too many dims", k->tensors[t].name);
            enum kv_status st = eval_extent(c, d, len, &x->shape[x->ndim++]);
            if (st) return st;
            d += len + (d[len] == ',');
        }
        enum kv_status st = kv_shape_count(k->tensors[t].name, x->dtype, x->ndim, x->shape, &x->count);
        if (st) return st;
    }
    return k->validate ? k->validate(c) : KV_OK;
}

enum kv_status kv_case_alloc(struct kv_case *c)
{
    const struct kv_kernel *k = c->k;
    for (int t = 0; t < k->n_tensors; t++) {
        if (!kv_tensor_on(c, t)) continue;
        struct kv_tensor shape = c->t[t];
        enum kv_status st = kv_tensor_alloc(&c->t[t], k->tensors[t].name, shape.dtype, shape.ndim, shape.shape);
        if (st) return st;
        /* an input is written whole next: generated in pieces on every thread, or copied from a file's */
        if (k->tensors[t].role != KV_OUTPUT) kv_touch_pages(c->t[t].data, kv_tensor_bytes(&c->t[t]));
        if (k->tensors[t].role != KV_OUTPUT || c->blocked[t]) continue;
        c->y[t] = kv_calloc_big(kv_oracle_len(c, t), sizeof(double));
        c->S[t] = kv_calloc_big(kv_oracle_len(c, t), sizeof(double));
        if (!c->y[t] || !c->S[t])
            return kv_error(KV_EDEVICE, "out of host memory for the oracle of %s", k->tensors[t].name);
    }
    return KV_OK;
}

size_t kv_oracle_len(const struct kv_case *c, int t)
{
    size_t n = c->compact[t] ? c->n_sample[t] : c->t[t].count;
    return n ? n : 1;
}

void kv_oracle_put_row(struct kv_case *c, int t, size_t e, size_t n, const double *y, const double *S,
                       const double *sl, unsigned char ovf)
{
    if (!c->compact[t]) {
        if (ovf) memset(c->ovf[t] + e, ovf, n);
        memcpy(c->y[t] + e, y, sizeof(double) * n), memcpy(c->S[t] + e, S, sizeof(double) * n);
        if (sl) memcpy(c->slack[t] + e, sl, sizeof(double) * n);
        return;
    }
    for (size_t q = kv_oracle_pos(c, t, e), end = kv_oracle_pos(c, t, e + n); q < end; q++) {
        const size_t s = kv_oracle_elem(c, t, q) - e;
        if (ovf) c->ovf[t][q] = ovf;
        c->y[t][q] = y[s], c->S[t][q] = S[s];
        if (sl) c->slack[t][q] = sl[s];
    }
}

size_t kv_oracle_pos(const struct kv_case *c, int t, size_t e)
{
    if (!c->compact[t]) return e;
    const size_t *idx = c->sample[t];
    size_t lo = 0, hi = c->n_sample[t];
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (idx[m] < e) lo = m + 1;
        else hi = m;
    }
    return lo;
}

struct kv_oracle_walk kv_oracle_walk(const struct kv_case *c, int t, size_t e0)
{
    return (struct kv_oracle_walk){c->sample[t], c->n_sample[t], kv_oracle_pos(c, t, e0), c->compact[t]};
}

void kv_dims_doc(const struct kv_tensor_def *t, char *buf, size_t size)
{
    size_t o = (size_t)snprintf(buf, size, "[");
    for (const char *d = t->dims; *d && o < size; d++)
        o += (size_t)snprintf(buf + o, size - o, *d == ',' ? ", " : "%c", *d);
    if (o < size) snprintf(buf + o, size - o, "]");
}

void kv_case_free(struct kv_case *c)
{
    if (c->state && c->state_free) c->state_free(c->state);
    c->state = NULL;
    for (int i = 0; i < KV_MAX_TENSORS; i++) {
        kv_tensor_free(&c->t[i]);
        free(c->y[i]);
        free(c->S[i]);
        free(c->aux[i]);
        free(c->y_exact[i]);
        free(c->S_exact[i]);
        free(c->sample[i]);
        c->sample[i] = NULL;
        c->n_sample[i] = 0;
        c->y[i] = c->S[i] = c->y_exact[i] = c->S_exact[i] = c->aux[i] = NULL;
        c->blocked[i] = c->compact[i] = 0;
        kv_tensor_free(&c->iso[i]);
        free(c->slack[i]);
        free(c->slack_chain[i]);
        free(c->tie[i]);
        free(c->flush[i]);
        free(c->alt[i]);
        free(c->ovf[i]);
        free(c->lam[i]);
        free(c->fix[i]);
        c->lam[i] = c->fix[i] = NULL;
        c->slack[i] = c->slack_chain[i] = c->alt[i] = NULL;
        c->ovf[i] = NULL;
        c->tie[i] = c->flush[i] = NULL;
        c->ambiguous[i] = 0;
    }
    c->note[0] = '\0';
    for (int i = 0; i < KV_MAX_CHECKS; i++) {
        free(c->chk[i].y);
        free(c->chk[i].S);
        free(c->chk[i].slack);
        c->chk[i].y = c->chk[i].S = c->chk[i].slack = NULL;
    }
}
