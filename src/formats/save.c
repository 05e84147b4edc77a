#include "formats/save.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "formats/npy.h"
#include "formats/safetensors.h"
#include "core/version.h"

void kv_safe_name(const char *name, char *out, size_t size)
{
    size_t i = 0;
    for (; name[i] && i + 1 < size; i++) {
        char ch = name[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 strchr("._=,+-", ch) != NULL;
        out[i] = ok ? ch : '_';
    }
    out[i] = '\0';
}

enum kv_status kv_mkdir_p(const char *dir)
{
    char buf[4096];
    if ((size_t)snprintf(buf, sizeof buf, "%s", dir) >= sizeof buf) return kv_error(KV_EUSAGE, "%s: path too long", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return kv_error(KV_EUSAGE, "%s: cannot create: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return kv_error(KV_EUSAGE, "%s: cannot create: %s", buf, strerror(errno));
    struct stat sb;
    if (stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode)) return kv_error(KV_EUSAGE, "%s: not a directory", buf);
    return KV_OK;
}

enum kv_status kv_dir_makeable(const char *dir)
{
    char buf[4096];
    if ((size_t)snprintf(buf, sizeof buf, "%s", dir) >= sizeof buf) return kv_error(KV_EUSAGE, "%s: path too long", dir);
    for (;;) { /* the deepest part of the path that exists */
        struct stat sb;
        if (stat(buf, &sb) == 0) {
            if (!S_ISDIR(sb.st_mode)) return kv_error(KV_EUSAGE, "%s: not a directory", buf);
            if (access(buf, W_OK | X_OK) != 0)
                return kv_error(KV_EUSAGE, "%s: cannot create %s in it: %s", buf, dir, strerror(errno));
            return KV_OK;
        }
        if (errno != ENOENT) return kv_error(KV_EUSAGE, "%s: cannot create: %s", buf, strerror(errno));
        char *slash = strrchr(buf, '/');
        while (slash && slash > buf && slash[1] == '\0') *slash = '\0', slash = strrchr(buf, '/'); /* "a/b/" */
        if (!slash) snprintf(buf, sizeof buf, "."); /* a relative name: the working folder */
        else if (slash == buf) buf[1] = '\0';      /* "/x": the root */
        else *slash = '\0';
    }
}

static enum kv_status write_tensor(const char *dir, const char *name, const char *suffix, enum kv_dtype t,
                                   int ndim, const int64_t *shape, const void *data)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s%s.npy", dir, name, suffix);
    struct kv_tensor x = {.dtype = t, .ndim = ndim, .data = (void *)data};
    memcpy(x.shape, shape, sizeof(int64_t) * (size_t)ndim);
    kv_shape_count(name, t, ndim, shape, &x.count);
    return kv_npy_write(path, &x);
}

static enum kv_status write_params(const char *dir, const struct kv_case *c)
{
    enum kv_status st = KV_OK;
    cJSON *root = cJSON_CreateObject(), *params = NULL;
    char *text = NULL;
    KV_CHECK(root, KV_EDATA, "out of memory");
    cJSON_AddStringToObject(root, "kernel", c->k->name);
    params = cJSON_AddObjectToObject(root, "params");
    for (int i = 0; i < c->k->n_params; i++) {
        char v[64];
        kv_param_str(c, i, v, sizeof v);
        if (c->k->params[i].type == KV_PARAM_CHOICE) cJSON_AddStringToObject(params, c->k->params[i].name, v);
        else cJSON_AddRawToObject(params, c->k->params[i].name, v);
    }
    cJSON_AddNumberToObject(root, "seed", (double)c->seed);
    cJSON_AddObjectToObject(root, "inputs"); /* the tensors are the .npy files beside it */
    text = cJSON_Print(root);
    KV_CHECK(text, KV_EDATA, "out of memory");
    char path[4400];
    snprintf(path, sizeof path, "%s/params.json", dir);
    KV_TRY(kv_write_atomic(path, text, strlen(text)));
cleanup:
    free(text);
    cJSON_Delete(root);
    return st;
}

/* The oracle of output t as saved: --sample's oracle holds only the sampled
 * elements, NaN elsewhere (*owned is then a buffer the caller frees). */
static enum kv_status oracle_values(const struct kv_case *c, int t, double **y, double **owned)
{
    *owned = NULL;
    *y = c->y[t];
    if (!c->sample[t]) return KV_OK;
    const struct kv_tensor *x = &c->t[t];
    double *v = malloc(x->count * sizeof *v);
    if (!v) return kv_error(KV_EDATA, "out of memory saving %s", c->k->tensors[t].name);
    for (size_t i = 0; i < x->count; i++) v[i] = NAN;
    for (size_t i = 0; i < c->n_sample[t]; i++) v[c->sample[t][i]] = c->y[t][c->sample[t][i]];
    *y = *owned = v;
    return KV_OK;
}

/* --save-format safetensors: inputs, device and oracle files beside the report. */
static enum kv_status save_safetensors(const char *base, const struct kv_case *c, void *const *chained, const int *ran)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = c->k;
    struct kv_st_entry in[KV_MAX_TENSORS], dev[2 * KV_MAX_TENSORS], orc[2 * KV_MAX_TENSORS];
    char names[KV_MAX_TENSORS][2][80], vals[KV_MAX_PARAMS][64], seed[32], path[4400];
    double *owned[KV_MAX_TENSORS] = {0};
    const char *meta[2 * (KV_MAX_PARAMS + 4)];
    int n_in = 0, n_dev = 0, n_orc = 0, m = 0;
    meta[m++] = "format", meta[m++] = "pt";
    meta[m++] = "kverify", meta[m++] = KV_VERSION;
    meta[m++] = "kernel", meta[m++] = k->name;
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
    meta[m++] = "seed", meta[m++] = seed;
    for (int i = 0; i < k->n_params; i++) {
        const char *p = k->params[i].name;
        if (!strcmp(p, "format") || !strcmp(p, "kverify") || !strcmp(p, "kernel") || !strcmp(p, "seed")) continue;
        kv_param_str(c, i, vals[i], sizeof vals[i]);
        meta[m++] = p, meta[m++] = vals[i];
    }
    for (int t = 0; t < k->n_tensors; t++) {
        const struct kv_tensor *x = &c->t[t];
        if (!kv_tensor_on(c, t)) continue;
        struct kv_st_entry e = {k->tensors[t].name, x->dtype, x->ndim, x->shape, x->data};
        if (k->tensors[t].role == KV_INPUT) {
            in[n_in++] = e;
            continue;
        }
        if (ran[t]) dev[n_dev++] = e;
        if (chained[t]) {
            snprintf(names[t][0], sizeof names[t][0], "%s.chained", e.name);
            dev[n_dev++] = (struct kv_st_entry){names[t][0], x->dtype, x->ndim, x->shape, chained[t]};
        }
        double *y;
        KV_TRY(oracle_values(c, t, &y, &owned[t]));
        orc[n_orc++] = (struct kv_st_entry){e.name, KV_F64, x->ndim, x->shape, y};
        if (c->y_exact[t]) {
            snprintf(names[t][1], sizeof names[t][1], "%s.exact", e.name);
            orc[n_orc++] = (struct kv_st_entry){names[t][1], KV_F64, x->ndim, x->shape, c->y_exact[t]};
        }
    }
    snprintf(path, sizeof path, "%s/inputs.safetensors", base);
    KV_TRY(kv_st_write(path, in, n_in, meta, m / 2));
    snprintf(path, sizeof path, "%s/device.safetensors", base);
    KV_TRY(kv_st_write(path, dev, n_dev, meta, m / 2));
    snprintf(path, sizeof path, "%s/oracle.safetensors", base);
    KV_TRY(kv_st_write(path, orc, n_orc, meta, m / 2));
cleanup:
    for (int t = 0; t < KV_MAX_TENSORS; t++) free(owned[t]);
    return st;
}

enum kv_status kv_save_case(const char *dir, int format, const struct kv_case *c, void *const *chained, const int *ran,
                            const struct kv_vk_info *dev, struct kv_case_result *res)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = c->k;
    char safe[256], base[4200], sub[4300];
    kv_safe_name(c->name, safe, sizeof safe);
    snprintf(base, sizeof base, "%s/%s", dir, safe);
    snprintf(res->saved, sizeof res->saved, "%s", base);
    if (format == KV_SAVE_SAFETENSORS) {
        KV_TRY(kv_mkdir_p(base));
        KV_TRY(save_safetensors(base, c, chained, ran));
        goto report;
    }
    const char *parts[] = {"inputs", "device", "oracle"};
    for (int i = 0; i < 3; i++) {
        snprintf(sub, sizeof sub, "%s/%s", base, parts[i]);
        KV_TRY(kv_mkdir_p(sub));
    }
    for (int t = 0; t < k->n_tensors; t++) {
        const struct kv_tensor *x = &c->t[t];
        if (!kv_tensor_on(c, t)) continue;
        if (k->tensors[t].role == KV_INPUT) {
            snprintf(sub, sizeof sub, "%s/inputs", base);
            KV_TRY(write_tensor(sub, k->tensors[t].name, "", x->dtype, x->ndim, x->shape, x->data));
            continue;
        }
        snprintf(sub, sizeof sub, "%s/oracle", base);
        double *y, *owned;
        KV_TRY(oracle_values(c, t, &y, &owned));
        st = write_tensor(sub, k->tensors[t].name, "", KV_F64, x->ndim, x->shape, y);
        free(owned);
        KV_TRY(st);
        if (c->y_exact[t]) {
            snprintf(sub, sizeof sub, "%s/oracle-exact", base);
            KV_TRY(kv_mkdir_p(sub));
            KV_TRY(write_tensor(sub, k->tensors[t].name, "", KV_F64, x->ndim, x->shape, c->y_exact[t]));
        }
        snprintf(sub, sizeof sub, "%s/device", base);
        if (ran[t]) KV_TRY(write_tensor(sub, k->tensors[t].name, "", x->dtype, x->ndim, x->shape, x->data));
        if (chained[t])
            KV_TRY(write_tensor(sub, k->tensors[t].name, ".chained", x->dtype, x->ndim, x->shape, chained[t]));
    }
    snprintf(sub, sizeof sub, "%s/inputs", base);
    KV_TRY(write_params(sub, c));
report:;
    struct kv_report one = {.has_device = dev != NULL, .cases = res, .n = 1, .cap = 1};
    if (dev) one.device = *dev;
    snprintf(sub, sizeof sub, "%s/report.json", base);
    KV_TRY(kv_report_write_json(&one, sub));
cleanup:
    return st;
}
