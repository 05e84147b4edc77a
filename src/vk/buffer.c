/* Buffers and their memory: live for one case. */
#include <string.h>

#include "vk/vk.h"

static int pick_memory(const struct kv_vk_device *d, uint32_t type_bits,
                       VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid)
{
    for (uint32_t i = 0; i < d->mem.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = d->mem.memoryTypes[i].propertyFlags;
        if ((type_bits & (1u << i)) && (f & want) == want && !(f & avoid)) return (int)i;
    }
    return -1;
}

enum kv_status kv_vk_buffer_create(struct kv_vk_device *d, VkDeviceSize size,
                                   enum kv_vk_mem kind, struct kv_vk_buffer *out)
{
    enum kv_status st = KV_OK;
    memset(out, 0, sizeof *out);
    VkBufferUsageFlags usage = kind == KV_MEM_DEVICE
        ? VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT
        : kind == KV_MEM_UPLOAD ? VK_BUFFER_USAGE_TRANSFER_SRC_BIT : VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    /* a device buffer has an address where the device gives them (a stage
     * bound by address reads its tensors so: pipeline/addr.h) */
    const int addressed = kind == KV_MEM_DEVICE && d->info.addr;
    if (addressed) usage |= VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = size ? size : 4, .usage = usage,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VK_TRY(vkCreateBuffer(d->dev, &bi, NULL, &out->buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->dev, out->buf, &req);
    int type;
    if (kind == KV_MEM_DEVICE) {
        type = pick_memory(d, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
        if (type < 0) type = pick_memory(d, req.memoryTypeBits, 0, 0);
    } else {
        /* Readback prefers cached memory: reading uncached memory is slow. */
        VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
        VkMemoryPropertyFlags extra = kind == KV_MEM_READBACK ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT
                                                              : VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        type = pick_memory(d, req.memoryTypeBits, host | extra, 0);
        if (type < 0) type = pick_memory(d, req.memoryTypeBits, host, 0);
    }
    KV_CHECK(type >= 0, KV_EDEVICE, "no suitable memory type for a %llu-byte buffer",
             (unsigned long long)size);
    out->coherent = (d->mem.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    VkMemoryAllocateFlagsInfo fi = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                     .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = addressed ? &fi : NULL,
                               .allocationSize = req.size, .memoryTypeIndex = (uint32_t)type};
    VkResult ar = vkAllocateMemory(d->dev, &ai, NULL, &out->mem);
    if (ar != VK_SUCCESS && d->info.max_alloc && req.size > d->info.max_alloc) {
        st = kv_error(KV_EDEVICE, "allocating %llu bytes, past this device's maxMemoryAllocationSize (%llu): %s",
                      (unsigned long long)req.size, (unsigned long long)d->info.max_alloc, kv_vk_result_str(ar));
        goto cleanup;
    }
    VK_TRY(ar);
    VK_TRY(vkBindBufferMemory(d->dev, out->buf, out->mem, 0));
    out->size = size;
    /* device memory that the host can read fast and without flushes (a CPU
     * device's) is mapped too: transfers then need no staging */
    const VkMemoryPropertyFlags direct =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if (kind != KV_MEM_DEVICE || (d->mem.memoryTypes[type].propertyFlags & direct) == direct)
        VK_TRY(vkMapMemory(d->dev, out->mem, 0, VK_WHOLE_SIZE, 0, &out->map));
cleanup:
    if (st) kv_vk_buffer_destroy(d, out);
    return st;
}

void kv_vk_buffer_destroy(struct kv_vk_device *d, struct kv_vk_buffer *b)
{
    if (!b || !d) return;
    if (b->map) vkUnmapMemory(d->dev, b->mem);
    if (b->buf) vkDestroyBuffer(d->dev, b->buf, NULL);
    if (b->mem) vkFreeMemory(d->dev, b->mem, NULL);
    memset(b, 0, sizeof *b);
}

uint64_t kv_vk_buffer_address(struct kv_vk_device *d, const struct kv_vk_buffer *b)
{
    VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = b->buf};
    return (uint64_t)vkGetBufferDeviceAddress(d->dev, &ai);
}

enum kv_status kv_vk_buffer_sync(struct kv_vk_device *d, struct kv_vk_buffer *b, VkDeviceSize off,
                                 VkDeviceSize len, int down)
{
    enum kv_status st = KV_OK;
    if (b->coherent || len == 0) return KV_OK;
    const VkDeviceSize A = 256, lo = off / A * A, hi = (off + len + A - 1) / A * A;
    VkMappedMemoryRange r = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, .memory = b->mem, .offset = lo,
                             .size = hi <= b->size ? hi - lo : VK_WHOLE_SIZE};
    if (down) VK_TRY(vkInvalidateMappedMemoryRanges(d->dev, 1, &r));
    else VK_TRY(vkFlushMappedMemoryRanges(d->dev, 1, &r));
cleanup:
    return st;
}

enum kv_status kv_vk_buffer_flush(struct kv_vk_device *d, struct kv_vk_buffer *b)
{
    return kv_vk_buffer_sync(d, b, 0, b->size, 0);
}

enum kv_status kv_vk_buffer_invalidate(struct kv_vk_device *d, struct kv_vk_buffer *b)
{
    return kv_vk_buffer_sync(d, b, 0, b->size, 1);
}
