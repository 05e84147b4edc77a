/* Instance, device choice and the logical device: lives for the process. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vk/vk.h"

#include "core/files.h"

static unsigned validation_errors;

unsigned kv_vk_validation_errors(void) { return validation_errors; }

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(
    VkDebugUtilsMessageSeverityFlagBitsEXT sev, VkDebugUtilsMessageTypeFlagsEXT type,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    (void)type, (void)user;
    if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        validation_errors++;
        fprintf(stderr, "kverify: validation error: %s\n", data->pMessage);
    } else if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        fprintf(stderr, "kverify: validation warning: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static int want_validation(void)
{
    const char *v = getenv("KVERIFY_VALIDATE");
    return v && *v && strcmp(v, "0") != 0;
}

static const char no_device_hint[] =
    "no usable Vulkan device (install mesa-vulkan-drivers for the lavapipe CPU device)";

static enum kv_status make_instance(VkInstance *inst, VkDebugUtilsMessengerEXT *msg)
{
    enum kv_status st = KV_OK;
    const char *layers[1] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[1] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    int validate = want_validation();
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "kverify",
        .apiVersion = KV_VK_INSTANCE_API,
    };
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
        .enabledLayerCount = validate ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = validate ? 1 : 0,
        .ppEnabledExtensionNames = exts,
    };
    *msg = VK_NULL_HANDLE;
    VkResult r = vkCreateInstance(&ci, NULL, inst);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED)
        return kv_error(KV_ENODEV, "%s", no_device_hint);
    if (r == VK_ERROR_LAYER_NOT_PRESENT)
        return kv_error(KV_EDEVICE, "KVERIFY_VALIDATE is set but VK_LAYER_KHRONOS_validation "
                                    "is not installed (vulkan-validationlayers)");
    VK_TRY(r);
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(*inst, "vkCreateDebugUtilsMessengerEXT");
        VkDebugUtilsMessengerCreateInfoEXT mi = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT,
            .pfnUserCallback = on_validation,
        };
        if (create) VK_TRY(create(*inst, &mi, NULL, msg));
    }
cleanup:
    return st;
}

static void destroy_instance(VkInstance inst, VkDebugUtilsMessengerEXT msg)
{
    if (!inst) return;
    if (msg) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(inst, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(inst, msg, NULL);
    }
    vkDestroyInstance(inst, NULL);
}

static int has_extension(VkPhysicalDevice p, const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(p, NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    VkExtensionProperties *e = calloc(n, sizeof *e);
    int found = 0;
    if (e && vkEnumerateDeviceExtensionProperties(p, NULL, &n, e) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

static int compute_family(VkPhysicalDevice p, uint32_t *family, uint32_t *ts_bits)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(p, &n, NULL);
    VkQueueFamilyProperties *q = calloc(n ? n : 1, sizeof *q);
    int found = 0;
    if (!q) return 0;
    vkGetPhysicalDeviceQueueFamilyProperties(p, &n, q);
    /* Prefer a compute queue without graphics (often less contended). */
    for (int pass = 0; pass < 2 && !found; pass++)
        for (uint32_t i = 0; i < n && !found; i++) {
            if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
            if (pass == 0 && (q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) continue;
            *family = i;
            *ts_bits = q[i].timestampValidBits;
            found = 1;
        }
    free(q);
    return found;
}

static const char *type_name(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

/* VK_NV_cooperative_matrix with 16x16x16 products of f16 operands into f32
 * at subgroup scope, on 32-wide subgroups (the shape the f16-coopmat stage uses). */
static int coopmat16(VkInstance inst, VkPhysicalDevice p, const struct kv_vk_info *o)
{
    if (!has_extension(p, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) || !o->float16 || !o->storage16 ||
        o->subgroup_size != 32)
        return 0;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &cf};
    vkGetPhysicalDeviceFeatures2(p, &f2);
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get = (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
        vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    uint32_t n = 0;
    if (!cf.cooperativeMatrix || !get || get(p, &n, NULL) != VK_SUCCESS || n == 0 || n > 256) return 0;
    VkCooperativeMatrixPropertiesNV props[256];
    for (uint32_t i = 0; i < n; i++) props[i] = (VkCooperativeMatrixPropertiesNV){
        .sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV};
    if (get(p, &n, props) != VK_SUCCESS) return 0;
    for (uint32_t i = 0; i < n; i++)
        if (props[i].MSize == 16 && props[i].NSize == 16 && props[i].KSize == 16 &&
            props[i].AType == VK_COMPONENT_TYPE_FLOAT16_NV && props[i].BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
            props[i].CType == VK_COMPONENT_TYPE_FLOAT32_NV && props[i].DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
            props[i].scope == VK_SCOPE_SUBGROUP_NV)
            return 1;
    return 0;
}

/* VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16 are newer than
 * Debian 12's Vulkan headers: their structures and values, from the registry. */
#define KV_KHR_COOPMAT_EXT "VK_KHR_cooperative_matrix"
#define KV_KHR_BF16_EXT "VK_KHR_shader_bfloat16"
enum {
    KV_STYPE_COOPMAT_FEATURES_KHR = 1000506000, KV_STYPE_COOPMAT_PROPERTIES_KHR = 1000506001,
    KV_STYPE_BF16_FEATURES_KHR = 1000141000, KV_COMPONENT_BF16_KHR = 1000141000,
    KV_COMPONENT_F32_KHR = 1, KV_SCOPE_SUBGROUP_KHR = 3,
};
struct kv_coopmat_features_khr {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
};
struct kv_coopmat_properties_khr {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    int32_t AType, BType, CType, ResultType;
    VkBool32 saturatingAccumulation;
    int32_t scope;
};
struct kv_bf16_features_khr {
    VkStructureType sType;
    void *pNext;
    VkBool32 shaderBFloat16Type, shaderBFloat16DotProduct, shaderBFloat16CooperativeMatrix;
};
typedef VkResult(VKAPI_PTR *kv_get_coopmat_props_khr)(VkPhysicalDevice, uint32_t *, struct kv_coopmat_properties_khr *);

/* VK_KHR_cooperative_matrix with bfloat16 (VK_KHR_shader_bfloat16): 16x16x16
 * products of bf16 operands into f32 at subgroup scope, on 32-wide subgroups
 * (the shape the bf16-coopmat stages use). */
static int coopmat_bf16(VkInstance inst, VkPhysicalDevice p, const struct kv_vk_info *o)
{
    if (!has_extension(p, KV_KHR_COOPMAT_EXT) || !has_extension(p, KV_KHR_BF16_EXT) || !o->storage16 ||
        o->subgroup_size != 32 || o->api_version < VK_API_VERSION_1_2)
        return 0;
    struct kv_bf16_features_khr bf = {.sType = (VkStructureType)KV_STYPE_BF16_FEATURES_KHR};
    struct kv_coopmat_features_khr cf = {.sType = (VkStructureType)KV_STYPE_COOPMAT_FEATURES_KHR, .pNext = &bf};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &cf};
    vkGetPhysicalDeviceFeatures2(p, &f2);
    kv_get_coopmat_props_khr get = (kv_get_coopmat_props_khr)vkGetInstanceProcAddr(
        inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t n = 0;
    if (!cf.cooperativeMatrix || !bf.shaderBFloat16Type || !bf.shaderBFloat16CooperativeMatrix || !get ||
        get(p, &n, NULL) != VK_SUCCESS || n == 0 || n > 256)
        return 0;
    struct kv_coopmat_properties_khr props[256];
    for (uint32_t i = 0; i < n; i++)
        props[i] = (struct kv_coopmat_properties_khr){.sType = (VkStructureType)KV_STYPE_COOPMAT_PROPERTIES_KHR};
    if (get(p, &n, props) != VK_SUCCESS) return 0;
    for (uint32_t i = 0; i < n; i++)
        if (props[i].MSize == 16 && props[i].NSize == 16 && props[i].KSize == 16 &&
            props[i].AType == KV_COMPONENT_BF16_KHR && props[i].BType == KV_COMPONENT_BF16_KHR &&
            props[i].CType == KV_COMPONENT_F32_KHR && props[i].ResultType == KV_COMPONENT_F32_KHR &&
            !props[i].saturatingAccumulation && props[i].scope == KV_SCOPE_SUBGROUP_KHR)
            return 1;
    return 0;
}

/* Fill info for p; returns 0 when the device cannot run kverify. */
static int describe(VkInstance inst, VkPhysicalDevice p, uint32_t index, struct kv_vk_info *o)
{
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(p, &props);
    uint32_t fam, ts_bits;
    if (props.apiVersion < VK_API_VERSION_1_1 || !compute_family(p, &fam, &ts_bits)) return 0;
    memset(o, 0, sizeof *o);
    o->index = index;
    snprintf(o->name, sizeof o->name, "%s", props.deviceName);
    o->type = type_name(props.deviceType);
    o->api_version = props.apiVersion;
    snprintf(o->api, sizeof o->api, "%u.%u.%u", VK_API_VERSION_MAJOR(props.apiVersion),
             VK_API_VERSION_MINOR(props.apiVersion), VK_API_VERSION_PATCH(props.apiVersion));
    o->max_storage_range = props.limits.maxStorageBufferRange;
    o->min_storage_align = props.limits.minStorageBufferOffsetAlignment;
    /* For the tests: a smaller range in place of the device's, so that the
     * windows of tensors longer than a binding run at small shapes. */
    const char *range = getenv("KVERIFY_TEST_MAX_STORAGE_RANGE");
    if (range && *range && strtoull(range, NULL, 10) && strtoull(range, NULL, 10) < o->max_storage_range)
        o->max_storage_range = strtoull(range, NULL, 10);
    memcpy(o->max_groups, props.limits.maxComputeWorkGroupCount, sizeof o->max_groups);
    o->max_invocations = props.limits.maxComputeWorkGroupInvocations;
    o->max_shared = props.limits.maxComputeSharedMemorySize;
    o->max_stage_buffers = props.limits.maxPerStageDescriptorStorageBuffers;
    o->max_push = props.limits.maxPushConstantsSize;
    o->timestamps = ts_bits > 0 && props.limits.timestampComputeAndGraphics;
    o->timestamp_ns = props.limits.timestampPeriod;

    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    int v12 = props.apiVersion >= VK_API_VERSION_1_2;
    if (v12) sg.pNext = &drv;
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceMaintenance4Properties m4 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
    drv.pNext = &m3;
    if (props.apiVersion >= VK_API_VERSION_1_3) m3.pNext = &m4;
    if (!v12) sg.pNext = &m3;
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    vkGetPhysicalDeviceProperties2(p, &p2);
    o->max_alloc = m3.maxMemoryAllocationSize;
    o->max_buffer = m4.maxBufferSize;
    o->subgroup_size = sg.subgroupSize;
    o->subgroup_arith = (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                        (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
                        (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
    if (v12) snprintf(o->driver, sizeof o->driver, "%s %s", drv.driverName, drv.driverInfo);
    else snprintf(o->driver, sizeof o->driver, "0x%x", props.driverVersion);

    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    if (v12) {
        f2.pNext = &f11;
        f11.pNext = &f12;
    } else {
        f2.pNext = &s16;
    }
    vkGetPhysicalDeviceFeatures2(p, &f2);
    o->storage16 = v12 ? f11.storageBuffer16BitAccess : s16.storageBuffer16BitAccess;
    o->float16 = v12 && f12.shaderFloat16;
    o->int8 = v12 && f12.shaderInt8;
    o->storage8 = v12 && f12.storageBuffer8BitAccess;
    /* For the tests: a device without buffer addresses, KVERIFY_TEST_NO_ADDR=1. */
    const char *no_addr = getenv("KVERIFY_TEST_NO_ADDR");
    /* the address builds widen their indices to 64 bits (spirv/spirv_addr.h) */
    o->addr = v12 && f12.bufferDeviceAddress && f2.features.shaderInt64 && !(no_addr && !strcmp(no_addr, "1"));
    o->bfloat16 = has_extension(p, KV_KHR_BF16_EXT);
    o->coopmat = has_extension(p, KV_KHR_COOPMAT_EXT) || has_extension(p, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    o->coopmat16 = coopmat16(inst, p, o);
    o->coopmat_bf16 = coopmat_bf16(inst, p, o);
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR xf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    VkPhysicalDeviceFeatures2 xf2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &xf};
    if (has_extension(p, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
        vkGetPhysicalDeviceFeatures2(p, &xf2);
        o->exec_stats = xf.pipelineExecutableInfo == VK_TRUE;
    }
    return 1;
}

static enum kv_status physical_devices(VkInstance inst, VkPhysicalDevice **out, uint32_t *n)
{
    enum kv_status st = KV_OK;
    *out = NULL;
    *n = 0;
    VK_TRY(vkEnumeratePhysicalDevices(inst, n, NULL));
    if (*n == 0) return kv_error(KV_ENODEV, "%s", no_device_hint);
    *out = calloc(*n, sizeof **out);
    if (!*out) return kv_error(KV_EDEVICE, "out of host memory");
    VK_TRY(vkEnumeratePhysicalDevices(inst, n, *out));
cleanup:
    return st;
}

enum kv_status kv_vk_list(struct kv_vk_info **out, uint32_t *count)
{
    VkInstance inst = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT msg = VK_NULL_HANDLE;
    VkPhysicalDevice *phys = NULL;
    uint32_t n = 0;
    enum kv_status st;
    *out = NULL;
    *count = 0;
    KV_TRY(make_instance(&inst, &msg));
    KV_TRY(physical_devices(inst, &phys, &n));
    *out = calloc(n, sizeof **out);
    KV_CHECK(*out, KV_EDEVICE, "out of host memory");
    for (uint32_t i = 0; i < n; i++)
        if (describe(inst, phys[i], i, &(*out)[*count])) (*count)++;
    KV_CHECK(*count > 0, KV_ENODEV, "%s", no_device_hint);
cleanup:
    free(phys);
    destroy_instance(inst, msg);
    if (st) {
        free(*out);
        *out = NULL;
    }
    return st;
}

static int type_rank(const char *t)
{
    if (!strcmp(t, "discrete")) return 0;
    if (!strcmp(t, "integrated") || !strcmp(t, "virtual")) return 1;
    if (!strcmp(t, "cpu")) return 2;
    return 3;
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

static enum kv_status choose(const struct kv_vk_info *infos, uint32_t n, const char *sel, uint32_t *pick)
{
    if (sel == NULL) {
        int best = -1;
        for (uint32_t i = 0; i < n; i++)
            if (best < 0 || type_rank(infos[i].type) < type_rank(infos[best].type)) best = (int)i;
        *pick = (uint32_t)best;
        return KV_OK;
    }
    char *end = NULL;
    unsigned long idx = strtoul(sel, &end, 10);
    if (*sel && end && *end == '\0') {
        for (uint32_t i = 0; i < n; i++)
            if (infos[i].index == idx) return *pick = i, KV_OK;
        return kv_error(KV_EUSAGE, "--device: no usable device with index %lu (see 'kverify devices')", idx);
    }
    for (uint32_t i = 0; i < n; i++)
        if (contains_nocase(infos[i].name, sel)) return *pick = i, KV_OK;
    return kv_error(KV_EUSAGE, "--device: no device name contains '%s' (see 'kverify devices')", sel);
}

static void cache_path(struct kv_vk_device *d)
{
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(d->phys, &props);
    char dir[800];
    d->cache_path[0] = '\0';
    if (getenv("KVERIFY_NO_PIPELINE_CACHE") || !kv_cache_dir(dir, sizeof dir)) return;
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", props.pipelineCacheUUID[i]);
    snprintf(d->cache_path, sizeof d->cache_path, "%s/pipelines-%04x-%04x-%s.bin", dir,
             props.vendorID, props.deviceID, uuid);
}

static void *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    void *buf = NULL;
    *size = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && n < (64L << 20) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n))) {
            if (fread(buf, 1, (size_t)n, f) == (size_t)n) *size = (size_t)n;
            else free(buf), buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

static enum kv_status open_cache(struct kv_vk_device *d)
{
    enum kv_status st = KV_OK;
    size_t size = 0;
    cache_path(d);
    void *data = d->cache_path[0] ? read_all(d->cache_path, &size) : NULL;
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO, .initialDataSize = size, .pInitialData = data};
    /* A cache from another driver build is rejected by the driver's header
     * check; retry empty rather than fail. */
    if (vkCreatePipelineCache(d->dev, &ci, NULL, &d->cache) != VK_SUCCESS) {
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        VK_TRY(vkCreatePipelineCache(d->dev, &ci, NULL, &d->cache));
    }
cleanup:
    free(data);
    return st;
}

static void save_cache(struct kv_vk_device *d)
{
    size_t size = 0;
    if (!d->cache || !d->cache_path[0]) return;
    if (vkGetPipelineCacheData(d->dev, d->cache, &size, NULL) != VK_SUCCESS || size == 0) return;
    void *buf = malloc(size);
    if (!buf) return;
    if (vkGetPipelineCacheData(d->dev, d->cache, &size, buf) == VK_SUCCESS) {
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", d->cache_path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        if (f) {
            int ok = fwrite(buf, 1, size, f) == size;
            ok = (fclose(f) == 0) && ok;
            if (!ok || rename(tmp, d->cache_path) != 0) remove(tmp);
        }
    }
    free(buf);
}

/* The logical device with exactly the optional features and extensions
 * the chosen physical device has, so kernels can choose their paths from
 * d->info. */
static enum kv_status create_device(struct kv_vk_device *d)
{
    enum kv_status st = KV_OK;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = d->queue_family, .queueCount = 1,
                                  .pQueuePriorities = &prio};
    /* Vulkan 1.2 and later: every feature a compute shader may declare that the
     * device has (a user's module may need them), those kverify's paths rest on
     * as d->info says; Vulkan 1.1: 16-bit storage alone. */
    struct kv_vk_features sf;
    VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                                                .storageBuffer16BitAccess = (VkBool32)d->info.storage16};
    VkPhysicalDeviceFeatures2 f1 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16};
    VkPhysicalDeviceFeatures2 *f2 = &f1;
    if (d->info.api_version >= VK_API_VERSION_1_2) {
        kv_vk_shader_features(d->phys, d->info.api_version < KV_VK_INSTANCE_API ? d->info.api_version : KV_VK_INSTANCE_API,
                              has_extension(d->phys, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME), &sf);
        sf.f12.bufferDeviceAddress = (VkBool32)d->info.addr; /* off where KVERIFY_TEST_NO_ADDR=1 */
        f2 = &sf.f2;
    }
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .cooperativeMatrix = VK_TRUE};
    struct kv_coopmat_features_khr cmk = {.sType = (VkStructureType)KV_STYPE_COOPMAT_FEATURES_KHR,
                                          .cooperativeMatrix = VK_TRUE};
    struct kv_bf16_features_khr bf = {.sType = (VkStructureType)KV_STYPE_BF16_FEATURES_KHR,
                                      .shaderBFloat16Type = VK_TRUE, .shaderBFloat16CooperativeMatrix = VK_TRUE};
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR xf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pipelineExecutableInfo = VK_TRUE};
    const char *dev_exts[5];
    uint32_t n_exts = 0;
    if (f2 == &sf.f2 && sf.atomic_float) dev_exts[n_exts++] = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
    if (d->info.exec_stats) {
        xf.pNext = f2->pNext;
        f2->pNext = &xf;
        dev_exts[n_exts++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    }
    if (d->info.coopmat16) {
        cm.pNext = f2->pNext;
        f2->pNext = &cm;
        dev_exts[n_exts++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    }
    if (d->info.coopmat_bf16) {
        bf.pNext = f2->pNext;
        cmk.pNext = &bf;
        f2->pNext = &cmk;
        dev_exts[n_exts++] = KV_KHR_COOPMAT_EXT;
        dev_exts[n_exts++] = KV_KHR_BF16_EXT;
    }
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = f2,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi,
                             .enabledExtensionCount = n_exts, .ppEnabledExtensionNames = dev_exts};
    VK_TRY(vkCreateDevice(d->phys, &di, NULL, &d->dev));
cleanup:
    return st;
}

enum kv_status kv_vk_open(const char *selector, struct kv_vk_device **out)
{
    enum kv_status st = KV_OK;
    VkPhysicalDevice *phys = NULL;
    struct kv_vk_info *infos = NULL;
    uint32_t n = 0, usable = 0, pick = 0;
    struct kv_vk_device *d = calloc(1, sizeof *d);
    *out = NULL;
    KV_CHECK(d, KV_EDEVICE, "out of host memory");
    KV_TRY(make_instance(&d->instance, &d->messenger));
    KV_TRY(physical_devices(d->instance, &phys, &n));
    infos = calloc(n, sizeof *infos);
    KV_CHECK(infos, KV_EDEVICE, "out of host memory");
    for (uint32_t i = 0; i < n; i++)
        if (describe(d->instance, phys[i], i, &infos[usable])) usable++;
    KV_CHECK(usable > 0, KV_ENODEV, "%s", no_device_hint);
    KV_TRY(choose(infos, usable, selector, &pick));
    d->info = infos[pick];
    d->phys = phys[d->info.index];
    uint32_t ts_bits = 0;
    compute_family(d->phys, &d->queue_family, &ts_bits);
    d->timestamp_mask = ts_bits >= 64 ? ~0ull : ((1ull << ts_bits) - 1);
    vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem);

    KV_TRY(create_device(d));
    vkGetDeviceQueue(d->dev, d->queue_family, 0, &d->queue);
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = d->queue_family};
    VK_TRY(vkCreateCommandPool(d->dev, &pi, NULL, &d->cmd_pool));
    KV_TRY(open_cache(d));
    if (d->info.coopmat_bf16) KV_TRY(kv_vk_cm_layout(d, &d->info.cm_layout));
    if (kv_vk_is_cpu(&d->info)) KV_TRY(kv_vk_loop_cap(d, &d->info.loop_cap));
    *out = d;
    d = NULL;
cleanup:
    free(phys);
    free(infos);
    kv_vk_close(d);
    return st;
}

void kv_vk_release(struct kv_vk_device *d)
{
    if (!d) return;
    if (d->dev) {
        vkDeviceWaitIdle(d->dev);
        save_cache(d);
        if (d->cache) vkDestroyPipelineCache(d->dev, d->cache, NULL);
        if (d->cmd_pool) vkDestroyCommandPool(d->dev, d->cmd_pool, NULL);
        vkDestroyDevice(d->dev, NULL);
    }
    destroy_instance(d->instance, d->messenger);
    d->dev = VK_NULL_HANDLE, d->cache = VK_NULL_HANDLE, d->cmd_pool = VK_NULL_HANDLE;
    d->instance = VK_NULL_HANDLE, d->messenger = VK_NULL_HANDLE;
}

void kv_vk_close(struct kv_vk_device *d)
{
    kv_vk_release(d);
    free(d);
}
