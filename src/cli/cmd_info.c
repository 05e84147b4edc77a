/* `kverify list [--abi]` and `kverify devices`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "pipeline/ceilings.h"
#include "spirv/glsl.h"
#include "spirv/spirv.h"

/* For a tensor or stage that exists only in some variants, " [variant=f16]":
 * the values of a choice parameter under which its predicate holds. */
static void print_when(const struct kv_kernel *k, int (*active)(const struct kv_case *c))
{
    if (!active) return;
    for (int p = 0; p < k->n_params; p++) {
        if (k->params[p].type != KV_PARAM_CHOICE) continue;
        char on[128] = "";
        int n_on = 0, n_all = 0;
        for (const char *ch = k->params[p].choices; ch && *ch; n_all++) {
            size_t w = strcspn(ch, "|");
            char v[64];
            snprintf(v, sizeof v, "%.*s", (int)w, ch);
            struct kv_case c;
            if (kv_case_init(&c, k, 0) == KV_OK && kv_param_set(&c, p, v) == KV_OK && active(&c))
                snprintf(on + strlen(on), sizeof on - strlen(on), "%s%s", n_on++ ? "|" : "", v);
            ch += w + (ch[w] == '|');
        }
        if (n_on && n_on < n_all) printf(" [%s=%s]", k->params[p].name, on);
    }
}

static void list_abi(const struct kv_kernel *k)
{
    for (int s = 0; s < k->n_stages; s++) {
        const struct kv_stage_def *sd = &k->stages[s];
        struct kv_spirv_iface iface;
        memset(&iface, 0, sizeof iface);
        uint32_t *words = NULL;
        size_t bytes = sd->fallback.bytes;
        if (!sd->fallback.words && sd->source) { /* compiled at run time: compile it to read it */
            struct kv_glsl_env env = {.builtin = !sd->source_disk};
            char name[1024];
            kv_stage_source(k, s, name, sizeof name);
            if (kv_glsl_compile(&env, name, &words, &bytes)) words = NULL, bytes = 0;
        }
        kv_spirv_reflect(sd->name, words ? words : sd->fallback.words, bytes / 4, &iface);
        free(words);
        printf("  stage %s", sd->name);
        print_when(k, sd->active);
        if (sd->fallback.words) printf("  (built-in workgroup %ux%ux%u)\n", iface.local[0], iface.local[1], iface.local[2]);
        else printf("  (%s, workgroup %ux%ux%u)\n", sd->source, iface.local[0], iface.local[1], iface.local[2]);
        for (int b = 0; b < sd->n_bindings; b++) {
            int t = sd->bindings[b];
            const struct kv_tensor_def *td = &k->tensors[t];
            int writes = td->role == KV_OUTPUT && td->stage == s;
            char shape[96];
            kv_dims_doc(td, shape, sizeof shape);
            printf("    set 0 binding %d: %-4s %s %s  storage buffer, %s; range: %s\n", b,
                   kv_dtype_info(td->dtype)->name, td->name, shape, writes ? "written" : "read-only",
                   td->role == KV_OUTPUT
                       ? "its whole words, then 16 guard words (NaN) that must stay unwritten (as far as "
                         "maxStorageBufferRange reaches)"
                       : "its whole words, then a tail as long as the tensor (64 B..64 KiB) of NaN words (as far as "
                         "maxStorageBufferRange reaches)");
        }
        printf("    push constants (%u bytes): %s\n", sd->push_size, sd->push_doc);
        printf("    dispatch: %s\n", sd->dispatch_doc);
        printf("    --max-groups: %s\n", sd->fixed_grid ? "not honoured (a fixed grid): the stage runs uncapped"
                                                       : "honoured (at most N groups along x, 1 along y and z; "
                                                         "grid-stride loops cover the rest)");
        if (!k->window_chunk) /* the address build (pipeline/addr.h); a kernel with windows takes those */
            printf("    by address, where a tensor passes maxStorageBufferRange (the shader rewritten so, or a .comp "
                   "naming KV_ADDR built with it first): no bindings; push constants (%u bytes): %d "
                   "buffer_reference addresses in binding order (where it reads a buffer's length(), then "
                   "each binding's byte range, 8 bytes more each), then the %u bytes above\n",
                   8u * (unsigned)sd->n_bindings + sd->push_size, sd->n_bindings, sd->push_size);
    }
}

int cmd_list(int argc, char **argv)
{
    int abi = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--abi")) abi = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: kverify list [--abi]\nlists kernels, stages, outputs and parameters; "
                   "--abi adds each stage's shader interface for --shader\n");
            return 0;
        } else {
            fprintf(stderr, "kverify: list: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    for (int i = 0; kv_kernel_at(i); i++) {
        const struct kv_kernel *k = kv_kernel_at(i);
        printf("%s: %s\n  stages:", k->name, k->summary);
        for (int s = 0; s < k->n_stages; s++) {
            printf(" %s", k->stages[s].name);
            print_when(k, k->stages[s].active);
        }
        for (int role = KV_INPUT; role <= KV_OUTPUT; role++) {
            printf(role == KV_INPUT ? "\n  inputs:" : "\n  outputs:");
            for (int t = 0; t < k->n_tensors; t++) {
                if ((int)k->tensors[t].role != role) continue;
                char shape[96];
                kv_dims_doc(&k->tensors[t], shape, sizeof shape);
                printf(" %s %s%s", k->tensors[t].name, kv_dtype_info(k->tensors[t].dtype)->name, shape);
                if (role == KV_OUTPUT) printf(" (stage %s)", k->stages[k->tensors[t].stage].name);
                print_when(k, k->tensors[t].active);
            }
        }
        printf("\n  parameters:");
        for (int p = 0; p < k->n_params; p++) printf(" --%s [default: %s]", k->params[p].name, k->params[p].def);
        printf("\n  sweep:");
        for (int s = 0; k->sweep && k->sweep[s]; s++) printf(" {%s}", k->sweep[s]);
        printf(" x %d seeds\n", k->sweep_seeds);
        if (abi) list_abi(k);
    }
    return 0;
}

static void print_ceilings(const struct kv_ceilings *c)
{
    printf("  copy %.1f GB/s (read + written; transfer %.1f, shader %.1f; %.0f MiB)\n", c->copy_gbs, c->transfer_gbs,
           c->shader_gbs, c->copy_mib);
    printf("  f32 matmul %.1f GFLOP/s (%s)\n", c->f32_gflops, c->f32_how[0] ? c->f32_how : "none");
    printf("  f16 matmul %.1f GFLOP/s (%s)\n", c->f16_gflops, c->f16_how[0] ? c->f16_how : "none");
}

/* --measure: the ceilings of one device, printed and cached. */
static int measure(const char *selector)
{
    struct kv_vk_device *d = NULL;
    struct kv_ceilings c;
    char path[1024] = "";
    enum kv_status st = KV_OK;
    if (!kv_ceilings_path(path, sizeof path))
        st = kv_error(KV_EUSAGE, "no cache directory for the ceilings: XDG_CACHE_HOME or HOME must name "
                                 "a directory kverify can create kverify/ in");
    if (!st) st = kv_vk_open(selector, &d);
    if (!st) {
        printf("measuring device %u: %s (%s)\n", d->info.index, d->info.name, d->info.driver);
        fflush(stdout);
        st = kv_ceilings_measure(d, &c, stdout);
    }
    if (!st) st = kv_ceilings_save(&d->info, &c);
    if (!st) {
        print_ceilings(&c);
        printf("cached in %s; --bench reports each stage's share of these\n", path);
    }
    if (!st && kv_vk_validation_errors()) st = kv_error(KV_EDEVICE, "validation layer reported errors");
    kv_vk_close(d);
    if (st) fprintf(stderr, "kverify: devices: %s\n", kv_error_msg());
    return (int)st;
}

int cmd_devices(int argc, char **argv)
{
    int do_measure = 0;
    const char *selector = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: kverify devices [--measure] [--device SEL]\n"
                   "lists the usable Vulkan devices, their capabilities and cached ceilings\n"
                   "  --measure     measure one device's ceilings (a large copy; the f32 and f16\n"
                   "                products of gemm-bwd's fastest built-in stages, verified) and cache them\n"
                   "  --device SEL  the device to measure: index or name substring [default: GPU > CPU]\n");
            return 0;
        }
        if (!strcmp(argv[i], "--measure")) do_measure = 1;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) selector = argv[++i];
        else if (!strncmp(argv[i], "--device=", 9)) selector = argv[i] + 9;
        else {
            fprintf(stderr, "kverify: devices: %s '%s'\n",
                    !strcmp(argv[i], "--device") ? "missing value for" : "unknown option", argv[i]);
            return 2;
        }
    }
    if (selector && !do_measure) {
        fprintf(stderr, "kverify: devices: --device only applies with --measure\n");
        return 2;
    }
    if (do_measure) return measure(selector);
    struct kv_vk_info *d = NULL;
    uint32_t n = 0;
    enum kv_status st = kv_vk_list(&d, &n);
    if (st) {
        fprintf(stderr, "kverify: %s\n", kv_error_msg());
        return (int)st;
    }
    printf("%-5s %-36s %-10s %-8s %-8s %-5s %-5s %-5s %-5s %-7s %-5s %s\n", "index", "name", "type", "vulkan",
           "subgroup", "f16", "int8", "bf16", "coop", "maxbuf", "addr", "driver");
    for (uint32_t i = 0; i < n; i++) {
        char buf[32]; /* maxStorageBufferRange, rounded up to whole MiB */
        snprintf(buf, sizeof buf, "%lluM", (unsigned long long)((d[i].max_storage_range + (1u << 20) - 1) >> 20));
        printf("%-5u %-36s %-10s %-8s %-8u %-5s %-5s %-5s %-5s %-7s %-5s %s\n", d[i].index, d[i].name, d[i].type,
               d[i].api, d[i].subgroup_size, d[i].float16 ? "yes" : "no", d[i].int8 ? "yes" : "no",
               d[i].bfloat16 ? "yes" : "no", d[i].coopmat ? "yes" : "no", buf, d[i].addr ? "yes" : "no", d[i].driver);
    }
    for (uint32_t i = 0; i < n; i++) {
        struct kv_ceilings c;
        if (!kv_ceilings_load(&d[i], &c)) continue;
        printf("device %u ceilings, measured %s:\n", d[i].index, c.measured);
        print_ceilings(&c);
    }
    free(d);
    return 0;
}
