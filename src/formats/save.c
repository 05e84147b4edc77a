#include "formats/save.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/files.h"
#include "formats/npy.h"

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

enum kv_status kv_save_case(const char *dir, const struct kv_case *c, void *const *chained, const int *ran,
                            const struct kv_vk_info *dev, struct kv_case_result *res)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = c->k;
    char safe[256], base[4200], sub[4300];
    kv_safe_name(c->name, safe, sizeof safe);
    snprintf(base, sizeof base, "%s/%s", dir, safe);
    snprintf(res->saved, sizeof res->saved, "%s", base);
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
        if (c->sample[t]) {
            /* --sample: the oracle holds only the sampled elements; NaN elsewhere. */
            double *y = malloc(x->count * sizeof *y);
            KV_CHECK(y, KV_EDATA, "out of memory saving %s", k->tensors[t].name);
            for (size_t i = 0; i < x->count; i++) y[i] = NAN;
            for (size_t i = 0; i < c->n_sample[t]; i++) y[c->sample[t][i]] = c->y[t][c->sample[t][i]];
            st = write_tensor(sub, k->tensors[t].name, "", KV_F64, x->ndim, x->shape, y);
            free(y);
            KV_TRY(st);
        } else {
            KV_TRY(write_tensor(sub, k->tensors[t].name, "", KV_F64, x->ndim, x->shape, c->y[t]));
        }
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
    struct kv_report one = {.has_device = dev != NULL, .cases = res, .n = 1, .cap = 1};
    if (dev) one.device = *dev;
    snprintf(sub, sizeof sub, "%s/report.json", base);
    KV_TRY(kv_report_write_json(&one, sub));
cleanup:
    return st;
}
