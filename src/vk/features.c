/* The optional device features a compute shader may declare. A user's module
 * (--shader) may use doubles, 16- and 64-bit integers, float atomics, the
 * Vulkan memory model and the like: a capability whose feature is not
 * enabled makes the module invalid (undefined on the device; an error of the
 * validation layer). Each is enabled where the device has it; none costs a
 * shader that does not use it. Robustness features stay as they are: the
 * outputs' guard words and the inputs' NaN tails are how kverify sees
 * accesses past a tensor. */
#include <string.h>

#include "vk/vk.h"

#define TAKE(dst, src, field) (dst).field = (src).field

void kv_vk_shader_features(VkPhysicalDevice p, uint32_t api, int atomic_float, struct kv_vk_features *out)
{
    struct kv_vk_features q;
    memset(&q, 0, sizeof q);
    memset(out, 0, sizeof *out);
    q.f2.sType = out->f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    q.f11.sType = out->f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    q.f12.sType = out->f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    q.f13.sType = out->f13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES;
    q.af.sType = out->af.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
    q.f2.pNext = &q.f11, q.f11.pNext = &q.f12;
    void **tail = &q.f12.pNext;
    if (api >= VK_API_VERSION_1_3) *tail = &q.f13, tail = &q.f13.pNext;
    if (atomic_float) *tail = &q.af;
    vkGetPhysicalDeviceFeatures2(p, &q.f2);

    TAKE(out->f2.features, q.f2.features, shaderFloat64);
    TAKE(out->f2.features, q.f2.features, shaderInt64);
    TAKE(out->f2.features, q.f2.features, shaderInt16);
    TAKE(out->f11, q.f11, storageBuffer16BitAccess);
    TAKE(out->f11, q.f11, uniformAndStorageBuffer16BitAccess);
    TAKE(out->f11, q.f11, storagePushConstant16);
    TAKE(out->f11, q.f11, variablePointersStorageBuffer);
    TAKE(out->f11, q.f11, variablePointers);
    TAKE(out->f12, q.f12, storageBuffer8BitAccess);
    TAKE(out->f12, q.f12, uniformAndStorageBuffer8BitAccess);
    TAKE(out->f12, q.f12, storagePushConstant8);
    TAKE(out->f12, q.f12, shaderBufferInt64Atomics);
    TAKE(out->f12, q.f12, shaderSharedInt64Atomics);
    TAKE(out->f12, q.f12, shaderFloat16);
    TAKE(out->f12, q.f12, shaderInt8);
    TAKE(out->f12, q.f12, scalarBlockLayout);
    TAKE(out->f12, q.f12, uniformBufferStandardLayout);
    TAKE(out->f12, q.f12, shaderSubgroupExtendedTypes);
    TAKE(out->f12, q.f12, bufferDeviceAddress);
    TAKE(out->f12, q.f12, vulkanMemoryModel);
    TAKE(out->f12, q.f12, vulkanMemoryModelDeviceScope);
    TAKE(out->f12, q.f12, vulkanMemoryModelAvailabilityVisibilityChains);
    TAKE(out->f13, q.f13, maintenance4); /* LocalSizeId, as SPIR-V 1.6 from glslc declares workgroup sizes */
    TAKE(out->f13, q.f13, subgroupSizeControl);
    TAKE(out->f13, q.f13, computeFullSubgroups);
    TAKE(out->f13, q.f13, shaderZeroInitializeWorkgroupMemory);
    TAKE(out->f13, q.f13, shaderIntegerDotProduct);
    TAKE(out->af, q.af, shaderBufferFloat32Atomics);
    TAKE(out->af, q.af, shaderBufferFloat32AtomicAdd);
    TAKE(out->af, q.af, shaderBufferFloat64Atomics);
    TAKE(out->af, q.af, shaderBufferFloat64AtomicAdd);
    TAKE(out->af, q.af, shaderSharedFloat32Atomics);
    TAKE(out->af, q.af, shaderSharedFloat32AtomicAdd);
    TAKE(out->af, q.af, shaderSharedFloat64Atomics);
    TAKE(out->af, q.af, shaderSharedFloat64AtomicAdd);
    out->atomic_float = atomic_float && (q.af.shaderBufferFloat32Atomics || q.af.shaderSharedFloat32Atomics);

    out->f2.pNext = &out->f11, out->f11.pNext = &out->f12;
    tail = &out->f12.pNext;
    if (api >= VK_API_VERSION_1_3) *tail = &out->f13, tail = &out->f13.pNext;
    if (out->atomic_float) *tail = &out->af;
}
