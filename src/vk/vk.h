/* The Vulkan runtime, split by object lifetime:
 *   device.c   instance, physical-device choice, logical device, queue (process)
 *   buffer.c   buffers and their memory (case)
 *   pipeline.c shader modules, layouts, pipelines, the pipeline cache (process)
 *   dispatch.c command recording, barriers, timestamps, submission (batch)
 *   cm_layout.c the probe of the cooperative-matrix accumulators' layout (device open)
 *   loop_cap.c the probe of a cap on a shader's loop iterations (a CPU device's open)
 *   features.c the optional features a compute shader may declare, enabled where the device has them
 *   result.c   VkResult to kv_status (VK_TRY), which all of them use
 * Only dispatch.c records commands. Every VkResult becomes a kv_status. */
#ifndef KV_VK_H
#define KV_VK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <vulkan/vulkan.h>

#include "core/status.h"

#define KV_VK_MAX_BINDINGS 16
/* The instance's Vulkan version: a device's own, up to this, is the one its
 * objects follow (SPIR-V 1.6 modules and Vulkan 1.3's features need 1.3). */
#define KV_VK_INSTANCE_API VK_API_VERSION_1_3

struct kv_vk_info {
    uint32_t index;
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    const char *type;  /* "discrete", "integrated", "virtual", "cpu", "other" */
    char driver[VK_MAX_DRIVER_NAME_SIZE + VK_MAX_DRIVER_INFO_SIZE + 4];
    char api[32];
    uint32_t api_version;
    uint32_t subgroup_size;
    int subgroup_arith;   /* subgroupAdd etc. in compute shaders */
    int float16, int8, storage16, storage8, bfloat16, coopmat;
    int coopmat16;        /* NV cooperative matrices: 16x16x16, f16 operands, f32 sums, subgroup 32 */
    int coopmat_bf16;     /* KHR cooperative matrices: 16x16x16, bf16 operands, f32 sums, subgroup 32 */
    int cm_layout;        /* an opened device with coopmat_bf16 whose 16x16 f32 accumulators have the
                             element layout that KV_CM_EL builds are written for (kv_vk_cm_layout) */
    uint32_t loop_cap;    /* an opened CPU device that stops a shader invocation's loops after this many
                             iterations in all (kv_vk_loop_cap: llvmpipe's 65535); 0 where none is seen */
    int exec_stats;       /* VK_KHR_pipeline_executable_properties: the compiler's statistics per pipeline */
    int addr;             /* bufferDeviceAddress (Vulkan 1.2) and shaderInt64, enabled: device buffers have
                             addresses that shaders read through (kv_vk_buffer_address) with 64-bit offsets;
                             0 where KVERIFY_TEST_NO_ADDR=1 */
    uint64_t max_storage_range;
    uint64_t min_storage_align;  /* minStorageBufferOffsetAlignment */
    uint64_t max_alloc;          /* maxMemoryAllocationSize: allocations past it may fail (some drivers make them) */
    uint64_t max_buffer;         /* maxBufferSize (Vulkan 1.3), or 0 where the device does not say */
    uint32_t max_groups[3];
    uint32_t max_invocations;
    uint32_t max_shared;
    uint32_t max_stage_buffers; /* maxPerStageDescriptorStorageBuffers */
    uint32_t max_push;          /* maxPushConstantsSize */
    int timestamps;       /* compute queue has valid timestamp bits */
    double timestamp_ns;  /* nanoseconds per tick */
};

/* Whether the device runs on the host's CPU (lavapipe): its memory is the
 * host's, and it ends every shader loop after a cap (info.loop_cap). */
static inline int kv_vk_is_cpu(const struct kv_vk_info *i) { return i && i->type && !strcmp(i->type, "cpu"); }

struct kv_vk_device {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t queue_family;
    VkCommandPool cmd_pool;
    VkPipelineCache cache;
    char cache_path[1024];
    VkPhysicalDeviceMemoryProperties mem;
    uint64_t timestamp_mask;
    struct kv_vk_info info;
};

/* The features a compute shader may declare (doubles, 8/16/64-bit integers,
 * float atomics, the Vulkan memory model, LocalSizeId, ...) that p has,
 * chained from f2 (f11, f12; f13 where api, the device's version as the
 * instance sees it, is 1.3 or later; af where atomic_float is set:
 * VK_EXT_shader_atomic_float is then to be enabled). For a Vulkan 1.2
 * device or later; out must stay where it is while the chain is used. */
struct kv_vk_features {
    VkPhysicalDeviceFeatures2 f2;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceVulkan13Features f13;
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af;
    int atomic_float;
};
void kv_vk_shader_features(VkPhysicalDevice p, uint32_t api, int atomic_float, struct kv_vk_features *out);

/* Map a VkResult to a status with "what: VK_ERROR_..." as the message:
 * out of memory and device lost are device errors (exit 4). */
enum kv_status kv_vk_check(VkResult r, const char *what);
const char *kv_vk_result_str(VkResult r);

#define VK_TRY(call)                                                         \
    do {                                                                     \
        VkResult vk_r_ = (call);                                             \
        if (vk_r_ != VK_SUCCESS) {                                           \
            st = kv_vk_check(vk_r_, #call);                                  \
            goto cleanup;                                                    \
        }                                                                    \
    } while (0)

/* Validation: when KVERIFY_VALIDATE=1 the Khronos layer is enabled and every
 * error it reports is printed to stderr and counted. */
unsigned kv_vk_validation_errors(void);

/* List the usable devices (Vulkan >= 1.1 with a compute queue) into a
 * malloc'd array the caller frees. KV_ENODEV when there are none. */
enum kv_status kv_vk_list(struct kv_vk_info **out, uint32_t *count);
/* Open a device: selector NULL picks discrete GPU > other GPU > CPU; a number
 * picks that index; otherwise a case-insensitive name substring. */
enum kv_status kv_vk_open(const char *selector, struct kv_vk_device **out);
void kv_vk_close(struct kv_vk_device *d); /* NULL-safe; saves the pipeline cache */
/* kv_vk_close's Vulkan part: the device and instance destroyed (the cache
 * saved), d itself and its info kept for kv_vk_close; NULL-safe, and once
 * is enough. No other thread may use the device meanwhile. */
void kv_vk_release(struct kv_vk_device *d);

/* --- buffers --- */
enum kv_vk_mem { KV_MEM_DEVICE, KV_MEM_UPLOAD, KV_MEM_READBACK };
struct kv_vk_buffer {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    void *map;     /* host pointer for UPLOAD/READBACK, and for DEVICE memory that is host-visible,
                      cached and coherent (a CPU device's) */
    int coherent;
};
enum kv_status kv_vk_buffer_create(struct kv_vk_device *d, VkDeviceSize size,
                                   enum kv_vk_mem kind, struct kv_vk_buffer *out);
void kv_vk_buffer_destroy(struct kv_vk_device *d, struct kv_vk_buffer *b);
/* The device address of a device buffer's first byte (d->info.addr only). */
uint64_t kv_vk_buffer_address(struct kv_vk_device *d, const struct kv_vk_buffer *b);
/* Flush (down = 0) or invalidate (down = 1) the mapped bytes [off, off + len)
 * of b, widened to 256-byte bounds (a multiple of any nonCoherentAtomSize);
 * nothing where b is coherent. kv_vk_buffer_flush and _invalidate: the
 * whole buffer. */
enum kv_status kv_vk_buffer_sync(struct kv_vk_device *d, struct kv_vk_buffer *b, VkDeviceSize off,
                                 VkDeviceSize len, int down);
enum kv_status kv_vk_buffer_flush(struct kv_vk_device *d, struct kv_vk_buffer *b);
enum kv_status kv_vk_buffer_invalidate(struct kv_vk_device *d, struct kv_vk_buffer *b);

/* --- pipelines --- */
struct kv_vk_pipeline {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    uint32_t n_bindings, push_size;
};
/* One compute pipeline from SPIR-V: n_bindings storage buffers at set 0,
 * bindings 0..n-1 (none: a shader that reads through addresses in its push
 * constants, dispatched with no descriptor set), and push_size bytes of
 * push constants. */
enum kv_status kv_vk_pipeline_create(struct kv_vk_device *d, const char *name,
                                     const uint32_t *spirv, size_t bytes,
                                     uint32_t n_bindings, uint32_t push_size,
                                     struct kv_vk_pipeline *out);
/* Specialization constants: SpecId and a 32-bit value (a float's bits). */
#define KV_VK_MAX_SPEC 32
struct kv_vk_spec {
    uint32_t n;
    uint32_t id[KV_VK_MAX_SPEC], value[KV_VK_MAX_SPEC];
};
/* The same with specialization constants (spec may be NULL). */
enum kv_status kv_vk_pipeline_create_spec(struct kv_vk_device *d, const char *name, const uint32_t *spirv,
                                          size_t bytes, uint32_t n_bindings, uint32_t push_size,
                                          const struct kv_vk_spec *spec, struct kv_vk_pipeline *out);
void kv_vk_pipeline_destroy(struct kv_vk_device *d, struct kv_vk_pipeline *p);
/* The driver's compile statistics of a pipeline (register count, shared
 * memory, spills: whatever it names), where the device offers
 * VK_KHR_pipeline_executable_properties. Numeric statistics of every
 * executable go into out, up to max; boolean ones as 0/1. Returns how many;
 * 0 when the device gives none. */
#define KV_VK_STAT_NAME 48
struct kv_vk_stat {
    char name[KV_VK_STAT_NAME];
    double value;
};
int kv_vk_pipeline_stats(struct kv_vk_device *d, const struct kv_vk_pipeline *p, struct kv_vk_stat *out, int max);

/* --- the cooperative-matrix accumulators' element layout (cm_layout.c) --- */
/* Runs the probe shader: *known = 1 where lane 4g + q of a 16 x 16 f32
 * accumulator holds elements 2p, 2p + 1 (p = 0..3) at row g + 8 (p >> 1),
 * columns 8 (p & 1) + 2q, + 1 (the layout KV_CM_EL builds are written for);
 * 0 otherwise, or where KVERIFY_CM_LAYOUT=generic. kv_vk_open runs it on a
 * device with coopmat_bf16 (info.cm_layout). A probe that cannot run is
 * noted on stderr and gives 0 (KV_OK). */
enum kv_status kv_vk_cm_layout(struct kv_vk_device *d, int *known);
/* The probe's verdict on its output out[0..n): n = out[0] elements per lane, then each lane's. */
int kv_vk_cm_layout_known(const float *out, size_t n);

/* --- a cap on loop iterations (loop_cap.c) --- */
/* Runs a loop of 2^20 iterations in one invocation: *cap = the iterations it
 * ran where the device cut it short, else 0. kv_vk_open runs it on a CPU
 * device (info.loop_cap). A probe that cannot run is noted on stderr and
 * gives 0 (KV_OK). */
enum kv_status kv_vk_loop_cap(struct kv_vk_device *d, uint32_t *cap);

/* --- command batches --- */
struct kv_vk_range {
    const struct kv_vk_buffer *buf;
    VkDeviceSize offset, size;
};
enum kv_vk_barrier {
    KV_BARRIER_TRANSFER_TO_COMPUTE,
    KV_BARRIER_COMPUTE_TO_COMPUTE,
    KV_BARRIER_COMPUTE_TO_TRANSFER,
    KV_BARRIER_TRANSFER_TO_HOST,
    KV_BARRIER_TRANSFER_TO_TRANSFER, /* back-to-back copies into one buffer */
    KV_BARRIER_COMPUTE_TO_HOST,      /* the host reads what shaders wrote, mapped */
};
struct kv_vk_batch {
    struct kv_vk_device *d;
    VkCommandBuffer cb;
    VkDescriptorPool pool;
    VkQueryPool queries;
    VkFence fence;
    int in_flight; /* sent, not yet waited for (destroy waits) */
    uint32_t max_sets, n_sets, max_stamps, n_stamps;
    uint64_t *stamps;
};
/* Begin recording; room for max_dispatches dispatches and max_stamps stamps. */
enum kv_status kv_vk_batch_begin(struct kv_vk_device *d, uint32_t max_dispatches,
                                 uint32_t max_stamps, struct kv_vk_batch *b);
void kv_vk_batch_copy(struct kv_vk_batch *b, struct kv_vk_range src, struct kv_vk_range dst);
void kv_vk_batch_fill(struct kv_vk_batch *b, struct kv_vk_range dst, uint32_t word);
void kv_vk_batch_barrier(struct kv_vk_batch *b, enum kv_vk_barrier kind);
/* Record a timestamp; returns its index or -1 when timestamps are unavailable. */
int kv_vk_batch_stamp(struct kv_vk_batch *b);
enum kv_status kv_vk_batch_dispatch(struct kv_vk_batch *b, const struct kv_vk_pipeline *p,
                                    const struct kv_vk_range *bindings, const void *push,
                                    const uint32_t groups[3]);
/* End, submit, wait for completion, read the timestamps. */
enum kv_status kv_vk_batch_submit(struct kv_vk_batch *b);
/* kv_vk_batch_submit in two halves: end and submit; wait for completion and
 * read the timestamps. Other work, and other batches, may come between. */
enum kv_status kv_vk_batch_send(struct kv_vk_batch *b);
enum kv_status kv_vk_batch_wait(struct kv_vk_batch *b);
/* The longest a submission may run before the process ends (exit 4, with a
 * line on stderr and no report): Vulkan cannot cancel it, and nothing it
 * uses may be freed while it runs. seconds < 0: the default, KV_VK_TIMEOUT_S
 * on a GPU and none on a CPU device (lavapipe ends every shader loop after
 * 65535 iterations, and a large case may take long there); 0: none. Set
 * before the runs; read at each wait. */
#define KV_VK_TIMEOUT_S 600
void kv_vk_set_timeout(double seconds);
/* Called once where a wait passes the timeout, before the process ends
 * (exit 4): the run's reports written where a case was in flight, and its
 * name returned (NULL: none, nothing written). Nothing the submission uses
 * may be freed. fn NULL: no hook. */
typedef const char *kv_vk_hang_fn(double seconds, void *ctx);
void kv_vk_set_hang_hook(kv_vk_hang_fn *fn, void *ctx);
/* A batch waited for, recorded anew (its dispatches' and stamps' room kept):
 * cheaper than destroy and begin, which cost some drivers a millisecond. */
enum kv_status kv_vk_batch_restart(struct kv_vk_batch *b);
/* Milliseconds between two stamps (0 when unavailable). */
double kv_vk_batch_ms(const struct kv_vk_batch *b, int from, int to);
void kv_vk_batch_destroy(struct kv_vk_batch *b); /* NULL-safe; waits for a batch sent, not waited for */

/* A probe of the device (cm_layout.c, loop_cap.c): one workgroup of the
 * pipeline made from spirv (its binding 0 the input's in_bytes, copied there
 * first, where in_bytes > 0; its last binding the output's out_bytes, filled
 * with the word fill first), with push_size bytes of push constants; the
 * output copied back into out. */
enum kv_status kv_vk_probe(struct kv_vk_device *d, const char *name, const uint32_t *spirv, size_t bytes,
                           const void *in, size_t in_bytes, uint32_t fill, void *out, size_t out_bytes,
                           const void *push, uint32_t push_size);
/* A probe's end: where st is an error, a note on stderr ("WHAT failed (the
 * error)THEN"), the error cleared; KV_OK either way (a probe that cannot run
 * leaves the output it was given as it set it first: none found). */
enum kv_status kv_vk_probe_noted(enum kv_status st, const char *what, const char *then);

#endif
