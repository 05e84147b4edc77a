/* `kverify devices --measure`: copy bandwidth (a transfer copy and a compute
 * copy of one large buffer) and the matrix-product rates of gemm-bwd's own
 * stages, verified against the oracle like any case; cached per device in
 * ceilings.json beside the pipeline cache. */
#include "pipeline/ceilings.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/compare.h"
#include "core/files.h"
#include "formats/npy.h"
#include "pipeline/run.h"
#include "reports/report.h"

static const uint32_t copy_spv[] =
#include "ceiling_copy.sg.h"
    ;

enum { WARMUP = 3, RUNS = 10 };

int kv_ceilings_path(char *path, size_t size)
{
    char dir[900];
    if (!kv_cache_dir(dir, sizeof dir)) return 0;
    snprintf(path, size, "%s/ceilings.json", dir);
    return 1;
}

/* Copy `mib` MiB RUNS times each way after WARMUP runs; the fastest of each. */
static enum kv_status measure_copy(struct kv_vk_device *d, double mib, double *transfer_gbs, double *shader_gbs)
{
    enum kv_status st = KV_OK;
    struct kv_vk_buffer src = {0}, dst = {0};
    struct kv_vk_pipeline pipe = {0};
    struct kv_vk_batch b = {0};
    VkDeviceSize size = (VkDeviceSize)(mib * 1048576.0);
    KV_TRY(kv_vk_buffer_create(d, size, KV_MEM_DEVICE, &src));
    KV_TRY(kv_vk_buffer_create(d, size, KV_MEM_DEVICE, &dst));
    KV_TRY(kv_vk_pipeline_create(d, "built-in copy shader", copy_spv, sizeof copy_spv, 2, 4, &pipe));
    KV_TRY(kv_vk_batch_begin(d, WARMUP + RUNS, 2 * (WARMUP + RUNS + 1), &b));
    struct kv_vk_range s = {&src, 0, size}, t = {&dst, 0, size};
    kv_vk_batch_fill(&b, s, 0x3f800000u);
    kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_TRANSFER);
    int stamp[2][WARMUP + RUNS + 1];
    stamp[0][0] = kv_vk_batch_stamp(&b);
    for (int i = 0; i < WARMUP + RUNS; i++) {
        kv_vk_batch_copy(&b, s, t);
        kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_TRANSFER);
        stamp[0][i + 1] = kv_vk_batch_stamp(&b);
    }
    kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_COMPUTE);
    struct kv_vk_range bind[2] = {s, t};
    uint32_t n = (uint32_t)(size / 16), groups[3] = {(n + 255) / 256, 1, 1};
    if (groups[0] > 65535) groups[0] = 65535;
    if (groups[0] > d->info.max_groups[0]) groups[0] = d->info.max_groups[0];
    stamp[1][0] = kv_vk_batch_stamp(&b);
    for (int i = 0; i < WARMUP + RUNS; i++) {
        KV_TRY(kv_vk_batch_dispatch(&b, &pipe, bind, &n, groups));
        kv_vk_batch_barrier(&b, KV_BARRIER_COMPUTE_TO_COMPUTE);
        stamp[1][i + 1] = kv_vk_batch_stamp(&b);
    }
    KV_TRY(kv_vk_batch_submit(&b));
    KV_CHECK(stamp[1][WARMUP + RUNS] >= 0, KV_ENODEV, "%s has no compute-queue timestamps: nothing to measure",
             d->info.name);
    double *rate[2] = {transfer_gbs, shader_gbs};
    for (int w = 0; w < 2; w++) {
        double ms[RUNS];
        for (int i = 0; i < RUNS; i++) ms[i] = kv_vk_batch_ms(&b, stamp[w][WARMUP + i], stamp[w][WARMUP + i + 1]);
        double best = kv_quantile(ms, RUNS, 0.0);
        *rate[w] = best > 0 ? 2.0 * (double)size / best / 1e6 : 0;
    }
cleanup:
    kv_vk_batch_destroy(&b);
    kv_vk_pipeline_destroy(d, &pipe);
    kv_vk_buffer_destroy(d, &src);
    kv_vk_buffer_destroy(d, &dst);
    return st;
}

/* One gemm-bwd case at n^3 of `variant`, verified on a sample, each stage
 * timed RUNS times; the best rate among its stages of the wanted precision.
 * 0 when the variant does not run here (skipped, or not a variant). */
static enum kv_status measure_gemm(struct kv_vk_device *d, const char *variant, int f16, int n, double *gflops,
                                   char *how, size_t how_size, FILE *log)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = kv_kernel_find("gemm-bwd");
    struct kv_case *c = calloc(1, sizeof *c);
    struct kv_case_result *res = calloc(1, sizeof *res);
    struct kv_runner r;
    memset(&r, 0, sizeof r);
    *gflops = 0;
    KV_CHECK(k && c && res, KV_EDEVICE, "out of host memory");
    char params[160];
    snprintf(params, sizeof params, "m=%d,n=%d,k=%d,variant=%s", n, n, n, variant);
    KV_TRY(kv_case_init(c, k, 1));
    if (kv_param_apply(c, params) != KV_OK) { /* a variant this build lacks */
        kv_error_clear();
        goto cleanup;
    }
    kv_case_name(c);
    struct kv_run_opts o;
    memset(&o, 0, sizeof o);
    kv_criteria_default(&o.crit);
    o.repeat = 1, o.sample = 256, o.bench = RUNS;
    KV_TRY(kv_runner_init(&r, d, k, &o));
    kv_run_case(&r, c, &o, NULL, res);
    if (res->status == KV_CASE_SKIP) {
        if (log) fprintf(log, "  gemm-bwd variant %s: skipped (%s)\n", variant, res->error);
        goto cleanup;
    }
    KV_CHECK(res->status != KV_CASE_ERROR, KV_EDEVICE, "%s: %s", res->name, res->error);
    if (res->status != KV_CASE_PASS) {
        if (log) fprintf(log, "  gemm-bwd variant %s: failed verification, not used as a ceiling\n", variant);
        goto cleanup;
    }
    for (int s = 0; s < k->n_stages; s++) {
        if (!res->bench[s].ran || res->bench[s].flops <= 0 || k->stages[s].flops_f16 != f16) continue;
        double g = kv_bench_gflops(&res->bench[s]);
        if (g > *gflops) {
            *gflops = g;
            snprintf(how, how_size, "gemm-bwd %s stage %s, %d^3", variant, k->stages[s].name, n);
        }
    }
cleanup:
    kv_runner_free(&r);
    if (c && c->k) kv_case_free(c);
    free(c);
    if (res) kv_case_result_clear(res);
    free(res);
    return st;
}

enum kv_status kv_ceilings_measure(struct kv_vk_device *d, struct kv_ceilings *out, FILE *log)
{
    enum kv_status st = KV_OK;
    memset(out, 0, sizeof *out);
    /* Large enough to leave every cache behind on a GPU; small on a CPU
     * device (lavapipe), where the copy and products run in host memory. */
    int cpu = kv_vk_is_cpu(&d->info);
    out->copy_mib = cpu ? 64 : 1024;
    if (out->copy_mib * 1048576.0 > (double)d->info.max_storage_range)
        out->copy_mib = (double)(d->info.max_storage_range / 1048576);
    int n = cpu ? 256 : 4096;
    KV_TRY(measure_copy(d, out->copy_mib, &out->transfer_gbs, &out->shader_gbs));
    out->copy_gbs = out->transfer_gbs > out->shader_gbs ? out->transfer_gbs : out->shader_gbs;
    static const char *const f16_variants[] = {"f16-coopmat", "f16"};
    KV_TRY(measure_gemm(d, "f32", 0, n, &out->f32_gflops, out->f32_how, sizeof out->f32_how, log));
    for (int v = 0; v < 2 && out->f16_gflops == 0; v++)
        KV_TRY(measure_gemm(d, f16_variants[v], 1, n, &out->f16_gflops, out->f16_how, sizeof out->f16_how, log));
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out->measured, sizeof out->measured, "%Y-%m-%dT%H:%M:%SZ", &tm);
cleanup:
    return st;
}

static int same_device(const cJSON *e, const struct kv_vk_info *dev)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name"), *v = cJSON_GetObjectItemCaseSensitive(e, "driver");
    return cJSON_IsString(n) && cJSON_IsString(v) && !strcmp(n->valuestring, dev->name) &&
           !strcmp(v->valuestring, dev->driver);
}

/* The cache's JSON, or NULL when it is missing or not a ceilings file. */
static cJSON *read_cache(void)
{
    char path[1024], *text = NULL;
    size_t size;
    if (!kv_ceilings_path(path, sizeof path) || kv_read_file(path, 1 << 20, &text, &size) != KV_OK) {
        kv_error_clear();
        return NULL;
    }
    cJSON *root = cJSON_ParseWithLength(text, size);
    free(text);
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "devices"))) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static double get_num(const cJSON *e, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(e, key);
    return cJSON_IsNumber(x) && x->valuedouble >= 0 ? x->valuedouble : 0;
}

static void get_str(const cJSON *e, const char *key, char *buf, size_t size)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(e, key);
    snprintf(buf, size, "%s", cJSON_IsString(x) ? x->valuestring : "");
}

int kv_ceilings_load(const struct kv_vk_info *dev, struct kv_ceilings *out)
{
    memset(out, 0, sizeof *out);
    cJSON *root = read_cache();
    const cJSON *e, *found = NULL;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "devices")) if (same_device(e, dev)) found = e;
    if (found) {
        out->transfer_gbs = get_num(found, "transfer_copy_gb_per_s");
        out->shader_gbs = get_num(found, "shader_copy_gb_per_s");
        out->copy_gbs = get_num(found, "copy_gb_per_s");
        out->copy_mib = get_num(found, "copy_mib");
        out->f32_gflops = get_num(found, "f32_gflop_per_s");
        out->f16_gflops = get_num(found, "f16_gflop_per_s");
        get_str(found, "f32_kernel", out->f32_how, sizeof out->f32_how);
        get_str(found, "f16_kernel", out->f16_how, sizeof out->f16_how);
        get_str(found, "measured", out->measured, sizeof out->measured);
    }
    cJSON_Delete(root);
    return found && out->copy_gbs > 0;
}

enum kv_status kv_ceilings_save(const struct kv_vk_info *dev, const struct kv_ceilings *c)
{
    enum kv_status st = KV_OK;
    char path[1024];
    char *text = NULL;
    KV_CHECK(kv_ceilings_path(path, sizeof path), KV_EUSAGE,
             "no cache directory for the ceilings: set XDG_CACHE_HOME or HOME");
    cJSON *root = read_cache();
    if (!root) {
        root = cJSON_CreateObject();
        cJSON_AddNumberToObject(root, "schema", 1);
        cJSON_AddArrayToObject(root, "devices");
    }
    cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "devices");
    for (int i = cJSON_GetArraySize(list) - 1; i >= 0; i--)
        if (same_device(cJSON_GetArrayItem(list, i), dev)) cJSON_DeleteItemFromArray(list, i);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", dev->name);
    cJSON_AddStringToObject(e, "driver", dev->driver);
    cJSON_AddStringToObject(e, "measured", c->measured);
    cJSON_AddNumberToObject(e, "copy_mib", c->copy_mib);
    cJSON_AddNumberToObject(e, "transfer_copy_gb_per_s", c->transfer_gbs);
    cJSON_AddNumberToObject(e, "shader_copy_gb_per_s", c->shader_gbs);
    cJSON_AddNumberToObject(e, "copy_gb_per_s", c->copy_gbs);
    cJSON_AddNumberToObject(e, "f32_gflop_per_s", c->f32_gflops);
    cJSON_AddStringToObject(e, "f32_kernel", c->f32_how);
    cJSON_AddNumberToObject(e, "f16_gflop_per_s", c->f16_gflops);
    cJSON_AddStringToObject(e, "f16_kernel", c->f16_how);
    cJSON_AddItemToArray(list, e);
    text = cJSON_Print(root);
    cJSON_Delete(root);
    KV_CHECK(text, KV_EDEVICE, "out of host memory");
    st = kv_write_atomic(path, text, strlen(text));
cleanup:
    free(text);
    return st;
}
