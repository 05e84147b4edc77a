/* Compute pipelines as data: one function for every kernel stage. */
#include <string.h>

#include "vk/vk.h"

/* The name of the module's first GLCompute entry point (kv_spirv_reflect
 * refuses a module with several, or none): "main" from glslc's GLSL, any name
 * from HLSL, Slang and others. Points into the module's words; "main" where
 * the words hold none that ends inside its instruction. */
static const char *entry_name(const uint32_t *w, size_t n_words)
{
    for (size_t i = 5; i < n_words;) {
        const uint32_t wc = w[i] >> 16, op = w[i] & 0xffffu;
        if (wc == 0 || wc > n_words - i) break;
        if (op == 15 /* OpEntryPoint */ && wc >= 4 && w[i + 1] == 5 /* GLCompute */) {
            const char *name = (const char *)&w[i + 3];
            if (memchr(name, 0, 4 * (size_t)(wc - 3))) return name;
            break;
        }
        i += wc;
    }
    return "main";
}

enum kv_status kv_vk_pipeline_create(struct kv_vk_device *d, const char *name,
                                     const uint32_t *spirv, size_t bytes,
                                     uint32_t n_bindings, uint32_t push_size,
                                     struct kv_vk_pipeline *out)
{
    return kv_vk_pipeline_create_spec(d, name, spirv, bytes, n_bindings, push_size, NULL, out);
}

enum kv_status kv_vk_pipeline_create_spec(struct kv_vk_device *d, const char *name, const uint32_t *spirv,
                                          size_t bytes, uint32_t n_bindings, uint32_t push_size,
                                          const struct kv_vk_spec *spec, struct kv_vk_pipeline *out)
{
    enum kv_status st = KV_OK;
    memset(out, 0, sizeof *out);
    KV_CHECK(n_bindings <= KV_VK_MAX_BINDINGS, KV_EDEVICE, "%s: too many bindings", name);
    VkDescriptorSetLayoutBinding b[KV_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < n_bindings; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                               .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                               .descriptorCount = 1,
                                               .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = n_bindings, .pBindings = b};
    VK_TRY(vkCreateDescriptorSetLayout(d->dev, &li, NULL, &out->set_layout));
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = push_size};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1, .pSetLayouts = &out->set_layout,
                                      .pushConstantRangeCount = push_size ? 1 : 0,
                                      .pPushConstantRanges = &pr};
    VK_TRY(vkCreatePipelineLayout(d->dev, &pli, NULL, &out->layout));
    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = bytes, .pCode = spirv};
    VK_TRY(vkCreateShaderModule(d->dev, &mi, NULL, &out->module));
    VkSpecializationMapEntry me[KV_VK_MAX_SPEC];
    uint32_t n_spec = spec ? (spec->n < KV_VK_MAX_SPEC ? spec->n : KV_VK_MAX_SPEC) : 0;
    for (uint32_t i = 0; i < n_spec; i++)
        me[i] = (VkSpecializationMapEntry){.constantID = spec->id[i], .offset = 4 * i, .size = 4};
    VkSpecializationInfo si = {.mapEntryCount = n_spec, .pMapEntries = me, .dataSize = 4 * n_spec,
                               .pData = spec ? spec->value : NULL};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = out->module, .pName = entry_name(spirv, bytes / 4),
                  .pSpecializationInfo = n_spec ? &si : NULL},
        .layout = out->layout,
        .flags = d->info.exec_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
    };
    VkResult r = vkCreateComputePipelines(d->dev, d->cache, 1, &ci, NULL, &out->pipeline);
    if (r != VK_SUCCESS) {
        st = kv_vk_check(r, "vkCreateComputePipelines");
        kv_error(KV_EDEVICE, "%s: pipeline creation failed: %s", name, kv_vk_result_str(r));
        goto cleanup;
    }
    out->n_bindings = n_bindings;
    out->push_size = push_size;
cleanup:
    if (st) kv_vk_pipeline_destroy(d, out);
    return st;
}

void kv_vk_pipeline_destroy(struct kv_vk_device *d, struct kv_vk_pipeline *p)
{
    if (!d || !p) return;
    if (p->pipeline) vkDestroyPipeline(d->dev, p->pipeline, NULL);
    if (p->module) vkDestroyShaderModule(d->dev, p->module, NULL);
    if (p->layout) vkDestroyPipelineLayout(d->dev, p->layout, NULL);
    if (p->set_layout) vkDestroyDescriptorSetLayout(d->dev, p->set_layout, NULL);
    memset(p, 0, sizeof *p);
}

static double stat_value(const VkPipelineExecutableStatisticKHR *s)
{
    switch (s->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s->value.b32 ? 1.0 : 0.0;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return (double)s->value.i64;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return (double)s->value.u64;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: return s->value.f64;
    default: return 0.0;
    }
}

int kv_vk_pipeline_stats(struct kv_vk_device *d, const struct kv_vk_pipeline *p, struct kv_vk_stat *out, int max)
{
    if (!d || !p || !p->pipeline || !d->info.exec_stats || max <= 0) return 0;
    PFN_vkGetPipelineExecutablePropertiesKHR props =
        (PFN_vkGetPipelineExecutablePropertiesKHR)vkGetDeviceProcAddr(d->dev, "vkGetPipelineExecutablePropertiesKHR");
    PFN_vkGetPipelineExecutableStatisticsKHR stats =
        (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(d->dev, "vkGetPipelineExecutableStatisticsKHR");
    if (!props || !stats) return 0;
    VkPipelineInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = p->pipeline};
    uint32_t n_exec = 0;
    if (props(d->dev, &pi, &n_exec, NULL) != VK_SUCCESS) return 0;
    int n = 0;
    for (uint32_t e = 0; e < n_exec && n < max; e++) {
        VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                          .pipeline = p->pipeline, .executableIndex = e};
        VkPipelineExecutableStatisticKHR buf[32];
        uint32_t k = 32;
        for (uint32_t i = 0; i < k; i++)
            buf[i] = (VkPipelineExecutableStatisticKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
        VkResult r = stats(d->dev, &ei, &k, buf);
        if (r != VK_SUCCESS && r != VK_INCOMPLETE) break;
        for (uint32_t i = 0; i < k && n < max; i++) {
            size_t len = strnlen(buf[i].name, sizeof out[n].name - 1);
            memcpy(out[n].name, buf[i].name, len);
            out[n].name[len] = '\0';
            out[n].value = stat_value(&buf[i]);
            n++;
        }
    }
    return n;
}
