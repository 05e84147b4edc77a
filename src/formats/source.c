#include "formats/source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/fixture.h"
#include "formats/npy.h"
#include "formats/npz.h"
#include "formats/safetensors.h"

static enum kv_status add(struct kv_given *g, int tensor, enum kv_given_kind kind, const char *from,
                          struct kv_tensor *t)
{
    if (g->n == (int)(sizeof g->e / sizeof g->e[0])) {
        kv_tensor_free(t);
        return kv_error(KV_EDATA, "%s: too many tensors", from);
    }
    g->e[g->n].tensor = tensor;
    g->e[g->n].kind = kind;
    snprintf(g->e[g->n].from, sizeof g->e[0].from, "%.*s", (int)sizeof g->e[0].from - 1, from); /* a long path is cut */
    g->e[g->n].t = *t;
    memset(t, 0, sizeof *t);
    g->n++;
    return KV_OK;
}

/* The case label: the path's last component, or for a --save folder
 * (.../<case>/inputs or .../<case>/inputs.safetensors) the case folder's name. */
static void set_label(struct kv_given *g, const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/') buf[--len] = '\0';
    char *base = strrchr(buf, '/');
    if (base && (!strcmp(base + 1, "inputs") || !strcmp(base + 1, "inputs.safetensors")) && base != buf) {
        while (base > buf && base[-1] == '/') base--; /* "case//inputs" */
        *base = '\0';
        char *parent = strrchr(buf, '/');
        base = parent ? parent : buf - 1;
    }
    snprintf(g->label, sizeof g->label, "%.95s", base ? base + 1 : buf);
}

static enum kv_status from_fixture(const struct kv_kernel *k, const char *path, struct kv_fixture *fx,
                                   struct kv_given *g, int tensors_allowed)
{
    if (strcmp(fx->kernel, k->name) != 0)
        return kv_error(KV_EDATA, "%s: fixture is for kernel '%s', not %s", path, fx->kernel, k->name);
    for (int i = 0; i < fx->n_params; i++) {
        if (kv_param_index(k, fx->pname[i]) < 0)
            return kv_error(KV_EDATA, "%s: params.%s: %s has no such parameter", path, fx->pname[i], k->name);
        snprintf(g->pname[g->n_params], sizeof g->pname[0], "%s", fx->pname[i]);
        snprintf(g->pval[g->n_params], sizeof g->pval[0], "%s", fx->pval[i]);
        g->n_params++;
    }
    g->has_seed = fx->has_seed;
    g->seed = fx->seed;
    if (!tensors_allowed && fx->n_tensors)
        return kv_error(KV_EDATA, "%s: holds tensors; give them as .npy files beside it", path);
    for (int i = 0; i < fx->n_tensors; i++) {
        int expected = i >= fx->n_inputs;
        int t = kv_tensor_index(k, fx->tname[i]);
        enum kv_role want = expected ? KV_OUTPUT : KV_INPUT;
        if (t < 0 || k->tensors[t].role != want)
            return kv_error(KV_EDATA, "%s: %s.%s: %s has no %s '%s'", path, expected ? "expected" : "inputs",
                            fx->tname[i], k->name, expected ? "output" : "input", fx->tname[i]);
        char from[1100];
        snprintf(from, sizeof from, "%s (%s.%s)", path, expected ? "expected" : "inputs", fx->tname[i]);
        enum kv_dtype want_t = k->tensors[t].dtype;
        if (expected && fx->t[i].dtype == KV_F64 && want_t != KV_F64) {
            /* Expected outputs may be exact (f64): round them to the output's
             * dtype, as a backend would have stored them. */
            struct kv_tensor r;
            memset(&r, 0, sizeof r);
            enum kv_status st = kv_tensor_alloc(&r, fx->tname[i], want_t, fx->t[i].ndim, fx->t[i].shape);
            if (st) return kv_error(KV_EDATA, "%s: out of memory", from);
            for (size_t j = 0; j < r.count; j++) kv_store_f64(want_t, r.data, j, ((double *)fx->t[i].data)[j]);
            kv_tensor_free(&fx->t[i]);
            fx->t[i] = r;
        }
        enum kv_status st = add(g, t, expected ? KV_GIVEN_EXPECTED : KV_GIVEN_INPUT, from, &fx->t[i]);
        if (st) return st;
    }
    return KV_OK;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Whether t is an input and the first input definition with its name:
 * variants may define one name twice (gemm-bwd's f32 and f16 B), and a
 * file is read once and matched to the case's variant later. */
static int first_input(const struct kv_kernel *k, int t)
{
    if (k->tensors[t].role != KV_INPUT) return 0;
    for (int u = 0; u < t; u++)
        if (k->tensors[u].role == KV_INPUT && !strcmp(k->tensors[u].name, k->tensors[t].name)) return 0;
    return 1;
}

/* A safetensors file's __metadata__: "kernel" (checked), "seed", and the
 * kernel's parameters by name; other keys ("format") are left alone. */
static enum kv_status st_metadata(const struct kv_kernel *k, const struct kv_st *f, struct kv_given *g)
{
    const char *path = kv_st_path(f);
    for (long i = 0; i < kv_st_meta_count(f); i++) {
        const char *key = kv_st_meta_key(f, i), *v = kv_st_meta_value(f, i);
        if (!strcmp(key, "kernel")) {
            if (strcmp(v, k->name))
                return kv_error(KV_EDATA, "%s: __metadata__.kernel: the file is for '%.64s', not %s", path, v, k->name);
            continue;
        }
        if (!strcmp(key, "seed")) {
            char *end;
            errno = 0;
            unsigned long long x = strtoull(v, &end, 10);
            if (!*v || *end || errno || *v == '-')
                return kv_error(KV_EDATA, "%s: __metadata__.seed: '%.64s' is not a seed", path, v);
            g->has_seed = 1, g->seed = x;
            continue;
        }
        if (kv_param_index(k, key) < 0) continue;
        if (strlen(v) >= sizeof g->pval[0])
            return kv_error(KV_EDATA, "%s: __metadata__.%s: value too long", path, key);
        snprintf(g->pname[g->n_params], sizeof g->pname[0], "%s", key);
        snprintf(g->pval[g->n_params], sizeof g->pval[0], "%s", v);
        g->n_params++;
    }
    return KV_OK;
}

/* Tensor i of f into g as a tensor of kind. */
static enum kv_status st_add(struct kv_st *f, long i, int t, enum kv_given_kind kind, struct kv_given *g)
{
    struct kv_tensor x;
    KV_TRY_RET(kv_st_read(f, i, &x));
    char from[1100];
    snprintf(from, sizeof from, "%s (%s)", kv_st_path(f), kv_st_name(f, i));
    return add(g, t, kind, from, &x);
}

static enum kv_status st_inputs(const struct kv_kernel *k, const char *path, struct kv_given *g, int *found)
{
    struct kv_st *f;
    enum kv_status st = KV_OK;
    KV_TRY_RET(kv_st_open(path, &f));
    KV_TRY(st_metadata(k, f, g));
    for (int t = 0; t < k->n_tensors; t++) {
        long i = first_input(k, t) ? kv_st_find(f, k->tensors[t].name) : -1;
        if (i < 0) continue;
        KV_TRY(st_add(f, i, t, KV_GIVEN_INPUT, g));
        ++*found;
    }
cleanup:
    kv_st_close(f);
    return st;
}

enum kv_status kv_given_inputs(const struct kv_kernel *k, const char *path, struct kv_given *g)
{
    enum kv_status st = KV_OK;
    struct kv_fixture fx;
    struct kv_npz *z = NULL;
    memset(&fx, 0, sizeof fx);
    g->inputs = path;
    set_label(g, path);
    struct stat sb;
    KV_CHECK(stat(path, &sb) == 0, KV_EDATA, "%s: no such file or directory", path);
    int found = 0, is_dir = S_ISDIR(sb.st_mode);
    g->inputs_kind = is_dir                            ? "file "
                     : ends_with(path, ".json")        ? "input inputs."
                     : ends_with(path, ".safetensors") ? "tensor "
                                                       : "member ";
    if (is_dir) {
        char file[1100];
        snprintf(file, sizeof file, "%s/params.json", path);
        if (stat(file, &sb) == 0) {
            KV_TRY(kv_fixture_read(file, &fx));
            KV_TRY(from_fixture(k, file, &fx, g, 0));
        }
        for (int t = 0; t < k->n_tensors; t++) {
            if (!first_input(k, t)) continue;
            snprintf(file, sizeof file, "%s/%s.npy", path, k->tensors[t].name);
            if (stat(file, &sb) != 0) continue;
            struct kv_tensor x;
            KV_TRY(kv_npy_read(file, &x));
            KV_TRY(add(g, t, KV_GIVEN_INPUT, file, &x));
            found++;
        }
    } else if (ends_with(path, ".npz")) {
        KV_TRY(kv_npz_open(path, &z));
        for (int t = 0; t < k->n_tensors; t++) {
            if (!first_input(k, t)) continue;
            struct kv_tensor x;
            int present;
            KV_TRY(kv_npz_read(z, k->tensors[t].name, &x, &present));
            if (!present) continue;
            char from[1100];
            snprintf(from, sizeof from, "%s (%s.npy)", path, k->tensors[t].name);
            KV_TRY(add(g, t, KV_GIVEN_INPUT, from, &x));
            found++;
        }
    } else if (ends_with(path, ".safetensors")) {
        KV_TRY(st_inputs(k, path, g, &found));
    } else if (ends_with(path, ".json")) {
        KV_TRY(kv_fixture_read(path, &fx));
        KV_TRY(from_fixture(k, path, &fx, g, 1));
        for (int i = 0; i < g->n; i++) found += g->e[i].kind == KV_GIVEN_INPUT;
    } else {
        KV_CHECK(0, KV_EDATA, "%s: --inputs takes a directory of .npy files, an .npz, a .safetensors or a .json fixture",
                 path);
    }
    if (!found) {
        char names[256] = "";
        for (int t = 0; t < k->n_tensors; t++)
            if (first_input(k, t))
                snprintf(names + strlen(names), sizeof names - strlen(names), " %s", k->tensors[t].name);
        KV_CHECK(0, KV_EDATA, "%s: holds none of %s's inputs (%s )", path, k->name, names);
    }
cleanup:
    kv_fixture_free(&fx);
    kv_npz_close(z);
    return st;
}

static enum kv_status candidate_twice(const struct kv_given *g, int t, const char *name)
{
    for (int i = 0; i < g->n; i++)
        if (g->e[i].tensor == t && g->e[i].kind == KV_GIVEN_CANDIDATE)
            return kv_error(KV_EUSAGE, "--candidate: output '%s' given twice (also %s)", name, g->e[i].from);
    return KV_OK;
}

/* --candidate FILE.safetensors: every tensor names an output (kverify's
 * own device.safetensors also holds OUTPUT.chained, which is left out). */
static enum kv_status st_candidates(const struct kv_kernel *k, const char *path, struct kv_given *g)
{
    struct kv_st *f;
    enum kv_status st = KV_OK;
    int n = 0;
    KV_TRY_RET(kv_st_open(path, &f));
    for (long i = 0; i < kv_st_count(f); i++) {
        const char *name = kv_st_name(f, i), *dot = strrchr(name, '.');
        int t = kv_tensor_index(k, name);
        if (t < 0 && dot && !strcmp(dot, ".chained")) {
            char base[64];
            snprintf(base, sizeof base, "%.*s", (int)(dot - name) < 63 ? (int)(dot - name) : 63, name);
            int b = kv_tensor_index(k, base);
            if (b >= 0 && k->tensors[b].role == KV_OUTPUT) continue;
        }
        if (t < 0 || k->tensors[t].role != KV_OUTPUT) {
            char outs[256] = "";
            for (int u = 0; u < k->n_tensors; u++)
                if (k->tensors[u].role == KV_OUTPUT && kv_tensor_index(k, k->tensors[u].name) == u)
                    snprintf(outs + strlen(outs), sizeof outs - strlen(outs), " %s", k->tensors[u].name);
            KV_CHECK(0, KV_EDATA, "%s: tensor '%.80s' is not an output of %s (outputs:%s)", path, name, k->name, outs);
        }
        KV_TRY(candidate_twice(g, t, name));
        KV_TRY(st_add(f, i, t, KV_GIVEN_CANDIDATE, g));
        n++;
    }
    KV_CHECK(n, KV_EDATA, "%s: holds no output of %s", path, k->name);
cleanup:
    kv_st_close(f);
    return st;
}

enum kv_status kv_given_candidate(const struct kv_kernel *k, const char *spec, struct kv_given *g)
{
    const char *eq = strchr(spec, '=');
    /* FILE.safetensors alone, where its path may hold '=' (a --save folder) */
    int pair = 0;
    if (eq && eq > spec && eq - spec < 64) {
        char out[64];
        snprintf(out, sizeof out, "%.*s", (int)(eq - spec), spec);
        int t = kv_tensor_index(k, out);
        pair = t >= 0 && k->tensors[t].role == KV_OUTPUT;
    }
    if (!pair && ends_with(spec, ".safetensors")) return st_candidates(k, spec, g);
    if (!eq || eq == spec || !eq[1])
        return kv_error(KV_EUSAGE, "--candidate: '%s' is not OUTPUT=FILE.npy, OUTPUT=FILE.safetensors or FILE.safetensors",
                        spec);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(eq - spec), spec);
    int t = kv_tensor_index(k, name);
    if (t < 0 || k->tensors[t].role != KV_OUTPUT)
        return kv_error(KV_EUSAGE, "--candidate: %s has no output '%s' (see kverify list)", k->name, name);
    KV_TRY_RET(candidate_twice(g, t, name));
    if (ends_with(eq + 1, ".safetensors")) {
        struct kv_st *f;
        KV_TRY_RET(kv_st_open(eq + 1, &f));
        long i = kv_st_find(f, name);
        enum kv_status st = i < 0 ? kv_error(KV_EDATA, "%s: no tensor '%s'", eq + 1, name)
                                  : st_add(f, i, t, KV_GIVEN_CANDIDATE, g);
        kv_st_close(f);
        return st;
    }
    struct kv_tensor x;
    enum kv_status st = kv_npy_read(eq + 1, &x);
    if (st) return st;
    return add(g, t, KV_GIVEN_CANDIDATE, eq + 1, &x);
}

int kv_given_has(const struct kv_given *g, int t)
{
    for (int i = 0; i < g->n; i++)
        if (g->e[i].tensor == t && g->e[i].kind == KV_GIVEN_CANDIDATE) return 1;
    return 0;
}

/* The text of dims entry d into tok; 0 if there is none or it is too long. */
static int dims_entry(const char *dims, int d, char *tok, size_t size)
{
    for (int i = 0; i < d && dims; i++) {
        dims = strchr(dims, ',');
        if (dims) dims++;
    }
    if (!dims) return 0;
    size_t len = strcspn(dims, ",");
    if (len == 0 || len >= size) return 0;
    memcpy(tok, dims, len);
    tok[len] = '\0';
    return 1;
}

/* Whether dims entry d is a product "a*b" of two parameters (their indices). */
static int product_params(const struct kv_kernel *k, const char *dims, int d, int *a, int *b)
{
    char tok[64];
    if (!dims_entry(dims, d, tok, sizeof tok)) return 0;
    char *star = strchr(tok, '*');
    if (!star || strchr(star + 1, '*')) return 0;
    *star = '\0';
    *a = kv_param_index(k, tok);
    *b = kv_param_index(k, star + 1);
    return *a >= 0 && *b >= 0;
}

/* The parameter a dims entry names alone, or -1 (constants, products). */
static int lone_param(const struct kv_kernel *k, const char *dims, int d)
{
    for (int i = 0; i < d && dims; i++) {
        dims = strchr(dims, ',');
        if (dims) dims++;
    }
    if (!dims) return -1;
    char tok[64];
    size_t len = strcspn(dims, ",");
    if (len == 0 || len >= sizeof tok) return -1;
    memcpy(tok, dims, len);
    tok[len] = '\0';
    return strchr(tok, '*') ? -1 : kv_param_index(k, tok);
}

static int count_dims(const char *dims)
{
    int n = *dims ? 1 : 0;
    for (; *dims; dims++) n += *dims == ',';
    return n;
}

/* Parameters that name a dimension alone (or a product of two), from the
 * first file that has them; set[] marks those already given. */
static enum kv_status infer_params(const struct kv_given *g, struct kv_case *c, int *set)
{
    const struct kv_kernel *k = c->k;
    enum kv_status st;
    for (int i = 0; i < g->n; i++) {
        const struct kv_tensor_def *td = &k->tensors[g->e[i].tensor];
        if (g->e[i].t.ndim != count_dims(td->dims)) continue;
        for (int d = 0; d < g->e[i].t.ndim; d++) {
            int p = lone_param(k, td->dims, d), a, b;
            if (p < 0 && product_params(k, td->dims, d, &a, &b) && !(set[a] && set[b])) {
                /* "a*b": infer the factor not given from the other (given or default). */
                int known = set[a] ? a : b, infer = set[a] ? b : a;
                long long ext = (long long)g->e[i].t.shape[d], f = (long long)c->p[known].i;
                if (f < 1 || ext % f)
                    return kv_error(KV_EUSAGE, "%s: %s has %lld elements, not a multiple of --%s %lld",
                                    g->e[i].from, td->name, ext, k->params[known].name, f);
                char v[32];
                snprintf(v, sizeof v, "%lld", ext / f);
                if ((st = kv_param_set(c, infer, v)))
                    return kv_error(KV_EDATA, "%s: %s: %s", g->e[i].from, td->name, kv_error_msg());
                set[infer] = 1;
                continue;
            }
            if (p < 0 || set[p]) continue;
            char v[32];
            snprintf(v, sizeof v, "%lld", (long long)g->e[i].t.shape[d]);
            if ((st = kv_param_set(c, p, v)))
                return kv_error(KV_EDATA, "%s: %s: %s", g->e[i].from, td->name, kv_error_msg());
            set[p] = 1;
        }
    }
    return KV_OK;
}

/* An --inputs folder or archive holds every input of the case. */
static enum kv_status inputs_present(const struct kv_given *g, const struct kv_case *c)
{
    const struct kv_kernel *k = c->k;
    for (int t = 0; g->inputs && t < k->n_tensors; t++) {
        if (k->tensors[t].role != KV_INPUT || !kv_tensor_on(c, t)) continue;
        int have = 0;
        for (int i = 0; i < g->n; i++)
            have |= g->e[i].kind == KV_GIVEN_INPUT && !strcmp(k->tensors[g->e[i].tensor].name, k->tensors[t].name);
        if (!have)
            return kv_error(KV_EDATA, "%s: %s%s%s is missing", g->inputs, g->inputs_kind, k->tensors[t].name,
                            !strcmp(g->inputs_kind, "file ") || !strcmp(g->inputs_kind, "member ") ? ".npy" : "");
    }
    return KV_OK;
}

/* Each file onto its tensor, checked for dtype and shape. */
static enum kv_status attach_files(const struct kv_given *g, struct kv_case *c)
{
    const struct kv_kernel *k = c->k;
    for (int i = 0; i < g->n; i++) {
        /* Files name tensors; the case's variant picks which definition. */
        int t = kv_case_tensor(c, k->tensors[g->e[i].tensor].name);
        if (t < 0) {
            if (g->e[i].kind == KV_GIVEN_INPUT) continue; /* an input this variant does not use */
            return kv_error(KV_EDATA, "%s: output %s does not exist in this variant", g->e[i].from,
                            k->tensors[g->e[i].tensor].name);
        }
        const struct kv_tensor *x = &g->e[i].t, *want = &c->t[t];
        const char *name = k->tensors[t].name;
        int same_type = x->dtype == want->dtype || (want->dtype == KV_BF16 && x->dtype == KV_U16);
        if (!same_type)
            return kv_error(KV_EDATA, "%s: %s is %s, expected %s%s", g->e[i].from, name,
                            kv_dtype_info(x->dtype)->name, kv_dtype_info(want->dtype)->name,
                            want->dtype == KV_BF16 ? " (bf16 as u2 bit patterns)" : "");
        int same_shape = x->ndim == want->ndim;
        for (int d = 0; same_shape && d < x->ndim; d++) same_shape = x->shape[d] == want->shape[d];
        if (!same_shape) {
            char a[96], b[96], dims[96];
            kv_shape_str(x->ndim, x->shape, a, sizeof a);
            kv_shape_str(want->ndim, want->shape, b, sizeof b);
            kv_dims_doc(&k->tensors[t], dims, sizeof dims);
            return kv_error(KV_EDATA, "%s: %s has shape %s, expected %s (%s)", g->e[i].from, name, a, b, dims);
        }
        if (g->e[i].kind == KV_GIVEN_EXPECTED) {
            c->expected[t] = x;
            continue;
        }
        c->given[t] = x;
        c->given_from[t] = g->e[i].from;
        c->given_kind[t] = (int)g->e[i].kind;
    }
    return KV_OK;
}

enum kv_status kv_given_apply(const struct kv_given *g, struct kv_case *c, const int *explicit_param,
                              int explicit_seed)
{
    const struct kv_kernel *k = c->k;
    enum kv_status st;
    int set[KV_MAX_PARAMS];
    for (int i = 0; i < k->n_params; i++) set[i] = explicit_param[i];
    const char *origin = g->inputs ? g->inputs : "--candidate";
    for (int i = 0; i < g->n_params; i++) {
        int p = kv_param_index(k, g->pname[i]);
        if (p < 0 || set[p]) continue;
        if ((st = kv_param_set(c, p, g->pval[i])))
            return kv_error(KV_EDATA, "%s: params: %s", origin, kv_error_msg());
        set[p] = 1;
    }
    if (g->has_seed && !explicit_seed) c->seed = g->seed;
    /* The shape check below catches disagreements between files. */
    KV_TRY_RET(infer_params(g, c, set));
    if ((st = kv_case_shapes(c))) return kv_error(KV_EDATA, "%s: %s", origin, kv_error_msg());
    KV_TRY_RET(inputs_present(g, c));
    KV_TRY_RET(attach_files(g, c));
    if (g->inputs) c->label = g->label, c->inputs = g->inputs;
    return KV_OK;
}

void kv_given_free(struct kv_given *g)
{
    for (int i = 0; i < g->n; i++) kv_tensor_free(&g->e[i].t);
    g->n = 0;
}
