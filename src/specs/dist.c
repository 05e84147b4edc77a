/* Input distributions of a spec kernel: parsed from a tensor's "dist" and
 * drawn per element from the counter-based generator (core/rng.h), so an
 * input depends only on (seed, tensor, index). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "specs/load.h"

#define BAD(field, ...) KV_SPEC_BAD(s, field, __VA_ARGS__)

static const char *const gen_names[] = {"normal", "uniform", "randint", "const"};

static enum kv_status parse_special(struct kv_spec *s, const cJSON *sp, const char *f, struct kv_spec_dist *d)
{
    const cJSON *nan = cJSON_GetObjectItemCaseSensitive(sp, "nan"), *inf = cJSON_GetObjectItemCaseSensitive(sp, "inf");
    char when[128] = "";
    enum kv_status st = kv_spec_text(s, sp, "when", f, 0, when, sizeof when);
    if (st) return st;
    if ((nan && !cJSON_IsNumber(nan)) || (inf && !cJSON_IsNumber(inf))) BAD(f, "special: nan and inf are fractions");
    d->nan_frac = nan ? nan->valuedouble : 0;
    d->inf_frac = inf ? inf->valuedouble : 0;
    if (!(d->nan_frac >= 0 && d->inf_frac >= 0 && d->nan_frac + d->inf_frac <= 1))
        BAD(f, "special: nan and inf are fractions that add up to at most 1");
    d->when_param = d->when_choice = -1;
    if (!when[0]) return KV_OK;
    char *eq = strchr(when, '=');
    if (!eq) BAD(f, "special.when is \"PARAM=CHOICE\"");
    *eq = '\0';
    int p = kv_param_index(&s->k, when);
    if (p < 0 || s->params[p].type != KV_PARAM_CHOICE) BAD(f, "special.when: \"%s\" is not a choice parameter", when);
    const char *c = s->params[p].choices;
    for (int n = 0; *c; n++) {
        size_t w = strcspn(c, "|");
        if (strlen(eq + 1) == w && !strncmp(c, eq + 1, w)) d->when_choice = n;
        c += w + (c[w] == '|');
    }
    if (d->when_choice < 0) BAD(f, "special.when: \"%s\" is not a choice of %s", eq + 1, when);
    d->when_param = p;
    return KV_OK;
}

enum kv_status kv_spec_parse_dist(struct kv_spec *s, const cJSON *o, const char *field, int t)
{
    struct kv_spec_dist *d = &s->dist[t];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "dist");
    char f[96], gen[32] = "normal";
    snprintf(f, sizeof f, "%s.dist", field);
    d->gen = KV_GEN_MATH; /* no dist: a prepare statement defines it (math.c checks) */
    d->when_param = d->when_choice = -1;
    snprintf(d->scale, sizeof d->scale, "1");
    snprintf(d->offset, sizeof d->offset, "0");
    if (!v) return KV_OK;
    enum kv_status st;
    if (cJSON_IsString(v)) snprintf(gen, sizeof gen, "%s", v->valuestring);
    else if (!cJSON_IsObject(v)) BAD(f, "neither a generator's name nor an object");
    else if ((st = kv_spec_text(s, v, "gen", f, 1, gen, sizeof gen)) ||
             (st = kv_spec_text(s, v, "scale", f, 0, d->scale, sizeof d->scale)) ||
             (st = kv_spec_text(s, v, "offset", f, 0, d->offset, sizeof d->offset)) ||
             (st = kv_spec_text(s, v, "lo", f, 0, d->lo, sizeof d->lo)) ||
             (st = kv_spec_text(s, v, "hi", f, 0, d->hi, sizeof d->hi)))
        return st;
    int g = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(gen, gen_names[i])) g = i;
    if (g < 0) BAD(f, "unknown generator \"%s\" (normal, uniform, randint or const)", gen);
    d->gen = (enum kv_gen)g;
    if (d->gen == KV_GEN_RANDINT && (!d->lo[0] || !d->hi[0])) BAD(f, "randint needs lo and hi");
    const cJSON *sp = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "special") : NULL;
    if (sp && !cJSON_IsObject(sp)) BAD(f, "special is not an object");
    return sp ? parse_special(s, sp, f, d) : KV_OK;
}

/* Tensor t's generated values. */
static enum kv_status draw(struct kv_case *c, int t)
{
    const struct kv_spec *s = kv_spec_of(c->k);
    const struct kv_spec_dist *d = &s->dist[t];
    double scale = 1, offset = 0, lo = 0, hi = 1;
    char what[1200];
    snprintf(what, sizeof what, "%s: tensors[%d].dist", s->path, t);
    enum kv_status st;
    if ((st = kv_spec_param_expr(c, what, d->scale, &scale)) || (st = kv_spec_param_expr(c, what, d->offset, &offset)))
        return st;
    if (d->gen == KV_GEN_RANDINT &&
        ((st = kv_spec_param_expr(c, what, d->lo, &lo)) || (st = kv_spec_param_expr(c, what, d->hi, &hi))))
        return st;
    if (d->gen == KV_GEN_RANDINT && !(hi > lo))
        return kv_error(KV_EUSAGE, "%s: randint's range [%g, %g) is empty for this case", what, lo, hi);
    struct kv_tensor *x = &c->t[t];
    const int64_t n = (int64_t)x->count;
    const uint64_t seed = c->seed;
    const enum kv_gen gen = d->gen;
    enum { B = 1024 };
#pragma omp parallel for schedule(static)
    for (int64_t i0 = 0; i0 < n; i0 += B) {
        double nv[B];
        const int64_t m = n - i0 < B ? n - i0 : B;
        if (gen == KV_GEN_NORMAL) {
            kv_rng_normal_block(seed, (uint32_t)t, (uint64_t)i0, (size_t)m, nv);
            for (int64_t j = 0; j < m; j++) nv[j] = scale * nv[j] + offset;
        }
        for (int64_t i = i0; gen != KV_GEN_NORMAL && i < i0 + m; i++) {
            double v;
            if (gen == KV_GEN_UNIFORM) v = scale * (2 * kv_rng_uniform(seed, (uint32_t)t, (uint64_t)i) - 1) + offset;
            else if (gen == KV_GEN_RANDINT) v = lo + floor(kv_rng_uniform(seed, (uint32_t)t, (uint64_t)i) * (hi - lo));
            else v = offset;
            nv[i - i0] = v;
        }
        kv_store_f64_n(x->dtype, x->data, (size_t)i0, nv, (size_t)m); /* as kv_store_f64 stores each */
    }
    return KV_OK;
}

/* NaN and +-Inf at a seeded fraction of t's elements. */
static void special(struct kv_case *c, int t)
{
    const struct kv_spec_dist *d = &kv_spec_of(c->k)->dist[t];
    if (d->nan_frac + d->inf_frac <= 0 || !kv_dtype_info(c->t[t].dtype)->is_float) return;
    if (d->when_param >= 0 && c->p[d->when_param].c != d->when_choice) return;
    struct kv_tensor *x = &c->t[t];
    for (size_t i = 0; i < x->count; i++) {
        double u = kv_rng_uniform(c->seed, 100u + (uint32_t)t, i);
        if (u < d->nan_frac) kv_store_f64(x->dtype, x->data, i, NAN);
        else if (u < d->nan_frac + d->inf_frac)
            kv_store_f64(x->dtype, x->data, i, kv_rng_uniform(c->seed, 200u + (uint32_t)t, i) < 0.5 ? -INFINITY : INFINITY);
    }
}

enum kv_status kv_spec_inputs(struct kv_case *c)
{
    const struct kv_spec *s = kv_spec_of(c->k);
    enum kv_status st;
    for (int t = 0; t < s->k.n_tensors; t++)
        if (s->tensors[t].role == KV_INPUT && s->dist[t].gen != KV_GEN_MATH && (st = draw(c, t))) return st;
    if ((st = kv_spec_prepare(c))) return st;
    for (int t = 0; t < s->k.n_tensors; t++)
        if (s->tensors[t].role == KV_INPUT) special(c, t);
    return KV_OK;
}
