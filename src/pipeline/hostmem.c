#include "pipeline/hostmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/abi_stage.h"
#include "pipeline/addr.h"
#include "pipeline/binding.h"
#include "pipeline/chains.h"
#include "pipeline/plan.h"
#include "pipeline/row.h"
#include "pipeline/runner.h"
#include "pipeline/stream.h"
#include "spirv/shader.h"
#include "spirv/spirv_addr.h"

uint64_t kv_case_host_floor(const struct kv_case *c, const struct kv_vk_info *dev, const struct kv_run_opts *o)
{
    const struct kv_kernel *k = c->k;
    const int cpu = kv_vk_is_cpu(dev);
    uint64_t in = 0, out = 0, oracle = 0, iso = 0, iso_dev = 0, len[KV_MAX_TENSORS] = {0};
    uint32_t whole = 0, sampled = 0;
    /* the stages rerun chained, as the run decides (an output of one comes
     * back twice, into a buffer of its own) */
    const struct kv_abi *abi[KV_MAX_STAGES] = {0};
    int run_stage[KV_MAX_STAGES] = {0}, chain_stage[KV_MAX_STAGES] = {0};
    for (int s = 0; o && s < k->n_stages; s++) abi[s] = o->shader[s] ? o->abi[s] : NULL; /* as the runner has them */
    kv_case_chains(c, abi, run_stage, chain_stage);
    for (int t = 0; t < k->n_tensors; t++) {
        if (!kv_tensor_on(c, t)) continue;
        uint64_t n = 1;
        for (int d = 0; d < c->t[t].ndim; d++) n *= (uint64_t)c->t[t].shape[d];
        uint64_t bytes = n * kv_dtype_info(c->t[t].dtype)->size;
        if (k->tensors[t].role == KV_INPUT) in += bytes;
        else out += (dev && chain_stage[k->tensors[t].stage] ? 2 : 1) * bytes;
        /* an intermediate's rounded oracle, which the isolated stage reads:
         * in the device's buffer on a CPU device, and in host memory, made
         * whole unless the oracle holds its sample alone (then it writes
         * what the sample needs: gdn-wy-bwd's dk_head, the sampled chunks) */
        if (k->tensors[t].role == KV_OUTPUT && kv_is_intermediate(c, t)) {
            iso_dev += bytes;
            if (!(o && kv_output_compact(c, t, o))) iso += bytes;
        }
        /* an output's oracle not made block by block: its float64 values and
         * scales held whole, or its sample's (kv_case_alloc) */
        if (!o || k->tensors[t].role != KV_OUTPUT) continue;
        len[t] = kv_output_compact(c, t, o) ? (uint64_t)o->sample : n;
        if (kv_output_sampled(c, t, o)) sampled |= 1u << t;
        if (kv_output_blocked(c, t, o)) continue;
        whole |= 1u << t;
        oracle += 2 * sizeof(double) * len[t];
    }
    if (o && k->oracle_host) oracle += k->oracle_host(c, whole, sampled, len);
    if (!dev) return in;
    /* on a CPU device: generated, then in the device's buffers (host memory
     * too), where the outputs are judged in place (plan.h, direct);
     * elsewhere generated and downloaded, and staged whole too where the plan
     * is not streamed (stream.h) */
    if (cpu) return 2 * in + iso + iso_dev + out + oracle;
    return in + iso + out + oracle + (in + out > kv_stream_threshold() ? 0 : in);
}

uint64_t kv_host_available(void)
{
    const char *test = getenv("KVERIFY_TEST_MEM_AVAILABLE");
    if (test && *test) return strtoull(test, NULL, 10);
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

/* Why stage s cannot be bound by address on dev, as text, or NULL where it
 * can: the device's reason (kv_addr_lacks), or, for a
 * shader not built into kverify (a --shader, a spec kernel's from a folder)
 * without a KV_ADDR build, the rewrite's (spirv/spirv_addr.h), the shader
 * compiled and rewritten here as the runner will (a shader that does not
 * compile gets its error from the runner). */
static const char *addr_lacks(const struct kv_vk_info *dev, const struct kv_kernel *k, int s,
                              const struct kv_run_opts *o)
{
    static _Thread_local char why[300];
    const struct kv_stage_def *sd = &k->stages[s];
    const char *shader = o ? o->shader[s] : NULL, *lacks = kv_addr_lacks(dev);
    const struct kv_abi *abi = o ? o->abi[s] : NULL;
    const int guard = kv_addr_guarded(dev);
    if (lacks || !o || !(shader || sd->source_disk || guard) || (!abi && !guard && kv_addr_source(k, s, shader)))
        return lacks;
    uint32_t *words = NULL, *out = NULL;
    size_t bytes = 0, n_out = 0;
    const unsigned defines = kv_stage_defines(dev, sd, o);
    char path[1024];
    enum kv_status st;
    struct kv_glsl_extra extra;
    if (shader) {
        st = kv_shader_load(shader, defines, kv_abi_glsl_extra(abi, &extra), &words, &bytes);
    } else {
        kv_stage_source(k, s, path, sizeof path);
        st = kv_glsl_compile(&(struct kv_glsl_env){.builtin = !sd->source_disk, .defines = defines}, path, &words,
                             &bytes);
    }
    const uint32_t n_bind = abi ? kv_abi_slots(abi) : (uint32_t)sd->n_bindings;
    int lengths = 0;
    int bad = st == KV_OK && kv_spirv_addr(words, bytes / 4, n_bind, guard, &out, &n_out, &lengths, why, sizeof why);
    const uint32_t push = 8u * n_bind * (lengths ? 2 : 1) + (abi ? kv_abi_push_size(abi) : sd->push_size);
    if (st == KV_OK && !bad && push > dev->max_push)
        bad = snprintf(why, sizeof why, "its %u bytes of addresses%s and push constants pass this device's "
                       "maxPushConstantsSize (%u)", push, lengths ? ", ranges" : "", dev->max_push) > 0;
    kv_error_clear();
    free(words), free(out);
    return bad ? why : NULL;
}

enum kv_status kv_case_check(struct kv_case *c, const struct kv_vk_info *dev, const struct kv_run_opts *o, int host)
{
    const struct kv_kernel *k = c->k;
    KV_TRY_RET(kv_case_shapes(c));
    for (int t = 0; t < k->n_tensors; t++) {
        size_t n;
        if (kv_tensor_on(c, t)) KV_TRY_RET(kv_shape_count(k->tensors[t].name, c->t[t].dtype, c->t[t].ndim,
                                                          c->t[t].shape, &n));
    }
    /* every binding within maxStorageBufferRange, or bound in windows where
     * the kernel has them, or by address where its stages and the device
     * can (binding.h) */
    for (int s = 0; dev && s < k->n_stages; s++) {
        struct kv_windows w;
        if (!kv_stage_on(c, s)) continue;
        KV_TRY_RET(kv_windows_plan(c, s, dev->max_storage_range, dev->min_storage_align, &w));
        if (w.addr)
            KV_TRY_RET(kv_addr_plan(c, s, dev->max_storage_range, addr_lacks(dev, k, s, o)));
    }
    /* a buffer past maxMemoryAllocationSize is tried (drivers that report
     * 4 GiB there make larger ones): one that fails is a device error */
    const uint64_t most = dev ? (dev->max_buffer ? dev->max_buffer : dev->max_alloc) : 0;
    for (int t = 0; most && t < k->n_tensors; t++) {
        size_t bytes = kv_tensor_on(c, t) ? kv_tensor_bytes(&c->t[t]) : 0;
        if (bytes + 2 * KV_POISON_MAX + 4 > most)
            return kv_error(KV_EUSAGE, "%s: tensor %s needs a buffer of %zu bytes or more, more than this "
                            "device's largest buffer (%s %llu bytes)", c->name, k->tensors[t].name, bytes,
                            dev->max_buffer ? "maxBufferSize" : "maxMemoryAllocationSize", (unsigned long long)most);
    }
    /* refused in one line rather than killed for memory half-way; in GB, or
     * in MB where the case needs less than 1 GB */
    uint64_t need = dev && host ? kv_case_host_floor(c, dev, o) : 0, avail = need ? kv_host_available() : 0;
    const double unit = need < 1000000000 ? 1e6 : 1e9;
    if (avail && need > avail)
        return kv_error(KV_EUSAGE, "%s: needs at least %.2f %s of host memory (its inputs, outputs and whole oracles), "
                        "more than the %.2f %s available", c->name, (double)need / unit, unit < 1e9 ? "MB" : "GB",
                        (double)avail / unit, unit < 1e9 ? "MB" : "GB");
    return KV_OK;
}
