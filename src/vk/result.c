/* VkResult to kv_status: what every file of the layer reports through
 * VK_TRY, in a file of its own so that the device (device.c), which probes
 * through pipelines (cm_layout.c), is not also what pipelines report through. */
#include "vk/vk.h"

const char *kv_vk_result_str(VkResult r)
{
    switch (r) {
#define C(x) case x: return #x;
    C(VK_SUCCESS) C(VK_NOT_READY) C(VK_TIMEOUT) C(VK_INCOMPLETE)
    C(VK_ERROR_OUT_OF_HOST_MEMORY) C(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    C(VK_ERROR_INITIALIZATION_FAILED) C(VK_ERROR_DEVICE_LOST)
    C(VK_ERROR_MEMORY_MAP_FAILED) C(VK_ERROR_LAYER_NOT_PRESENT)
    C(VK_ERROR_EXTENSION_NOT_PRESENT) C(VK_ERROR_FEATURE_NOT_PRESENT)
    C(VK_ERROR_INCOMPATIBLE_DRIVER) C(VK_ERROR_TOO_MANY_OBJECTS)
    C(VK_ERROR_FORMAT_NOT_SUPPORTED) C(VK_ERROR_FRAGMENTED_POOL)
    C(VK_ERROR_OUT_OF_POOL_MEMORY) C(VK_ERROR_INVALID_SHADER_NV)
    C(VK_ERROR_UNKNOWN)
#undef C
    default: return "VK_ERROR_(unlisted)";
    }
}

enum kv_status kv_vk_check(VkResult r, const char *what)
{
    if (r == VK_SUCCESS) return KV_OK;
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        return kv_error(KV_EDEVICE, "out of memory (%s in %s)", kv_vk_result_str(r), what);
    if (r == VK_ERROR_DEVICE_LOST)
        return kv_error(KV_EDEVICE, "device lost (%s in %s)", kv_vk_result_str(r), what);
    return kv_error(KV_EDEVICE, "%s failed: %s (%d)", what, kv_vk_result_str(r), (int)r);
}
