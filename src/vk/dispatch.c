/* Command recording: the only file that records commands. A batch is one
 * command buffer, submitted once and waited on with a fence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vk/vk.h"

enum kv_status kv_vk_batch_begin(struct kv_vk_device *d, uint32_t max_dispatches,
                                 uint32_t max_stamps, struct kv_vk_batch *b)
{
    enum kv_status st = KV_OK;
    memset(b, 0, sizeof *b);
    b->d = d;
    b->max_sets = max_dispatches;
    if (max_dispatches) { /* none for transfers alone: a pool may cost a driver a millisecond to make */
        VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, b->max_sets * KV_VK_MAX_BINDINGS};
        VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                         .maxSets = b->max_sets, .poolSizeCount = 1, .pPoolSizes = &ps};
        VK_TRY(vkCreateDescriptorPool(d->dev, &pi, NULL, &b->pool));
    }
    if (d->info.timestamps && max_stamps) {
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = max_stamps};
        VK_TRY(vkCreateQueryPool(d->dev, &qi, NULL, &b->queries));
        b->max_stamps = max_stamps;
        b->stamps = calloc(max_stamps, sizeof *b->stamps);
        KV_CHECK(b->stamps, KV_EDEVICE, "out of host memory");
    }
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = d->cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
    VK_TRY(vkAllocateCommandBuffers(d->dev, &ai, &b->cb));
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK_TRY(vkCreateFence(d->dev, &fi, NULL, &b->fence));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VK_TRY(vkBeginCommandBuffer(b->cb, &bi));
    if (b->queries) vkCmdResetQueryPool(b->cb, b->queries, 0, b->max_stamps);
cleanup:
    if (st) kv_vk_batch_destroy(b);
    return st;
}

enum kv_status kv_vk_batch_restart(struct kv_vk_batch *b)
{
    enum kv_status st = KV_OK;
    KV_CHECK(!b->in_flight, KV_EDEVICE, "internal: a batch restarted before it was waited for");
    VK_TRY(vkResetFences(b->d->dev, 1, &b->fence));
    VK_TRY(vkResetCommandBuffer(b->cb, 0));
    if (b->pool) VK_TRY(vkResetDescriptorPool(b->d->dev, b->pool, 0));
    b->n_sets = b->n_stamps = 0;
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VK_TRY(vkBeginCommandBuffer(b->cb, &bi));
    if (b->queries) vkCmdResetQueryPool(b->cb, b->queries, 0, b->max_stamps);
cleanup:
    return st;
}

void kv_vk_batch_copy(struct kv_vk_batch *b, struct kv_vk_range src, struct kv_vk_range dst)
{
    VkBufferCopy c = {.srcOffset = src.offset, .dstOffset = dst.offset, .size = src.size};
    if (c.size) vkCmdCopyBuffer(b->cb, src.buf->buf, dst.buf->buf, 1, &c);
}

void kv_vk_batch_fill(struct kv_vk_batch *b, struct kv_vk_range dst, uint32_t word)
{
    if (dst.size) vkCmdFillBuffer(b->cb, dst.buf->buf, dst.offset, dst.size, word);
}

void kv_vk_batch_barrier(struct kv_vk_batch *b, enum kv_vk_barrier kind)
{
    /* The three barriers of a staged compute job (host->shader via transfer,
     * shader->transfer, transfer->host) plus shader->shader between stages. */
    static const struct {
        VkPipelineStageFlags src_stage, dst_stage;
        VkAccessFlags src, dst;
    } k[] = {
        [KV_BARRIER_TRANSFER_TO_COMPUTE] = {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                            VK_ACCESS_TRANSFER_WRITE_BIT,
                                            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT},
        [KV_BARRIER_COMPUTE_TO_COMPUTE] = {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                           VK_ACCESS_SHADER_WRITE_BIT,
                                           VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT},
        [KV_BARRIER_COMPUTE_TO_TRANSFER] = {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                            VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT},
        [KV_BARRIER_TRANSFER_TO_HOST] = {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                                         VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT},
        [KV_BARRIER_TRANSFER_TO_TRANSFER] = {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                             VK_ACCESS_TRANSFER_WRITE_BIT,
                                             VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT},
        [KV_BARRIER_COMPUTE_TO_HOST] = {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                                        VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT},
    };
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = k[kind].src,
                          .dstAccessMask = k[kind].dst};
    vkCmdPipelineBarrier(b->cb, k[kind].src_stage, k[kind].dst_stage, 0, 1, &mb, 0, NULL, 0, NULL);
}

int kv_vk_batch_stamp(struct kv_vk_batch *b)
{
    if (!b->queries || b->n_stamps >= b->max_stamps) return -1;
    vkCmdWriteTimestamp(b->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b->queries, b->n_stamps);
    return (int)b->n_stamps++;
}

/* A descriptor set of p's storage buffers, written and bound. */
static enum kv_status bind_set(struct kv_vk_batch *b, const struct kv_vk_pipeline *p,
                               const struct kv_vk_range *bindings)
{
    enum kv_status st = KV_OK;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = b->pool, .descriptorSetCount = 1,
                                      .pSetLayouts = &p->set_layout};
    VkDescriptorSet set;
    VK_TRY(vkAllocateDescriptorSets(b->d->dev, &ai, &set));
    VkDescriptorBufferInfo info[KV_VK_MAX_BINDINGS];
    VkWriteDescriptorSet w[KV_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < p->n_bindings; i++) {
        info[i] = (VkDescriptorBufferInfo){bindings[i].buf->buf, bindings[i].offset, bindings[i].size};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set,
                                      .dstBinding = i, .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &info[i]};
    }
    vkUpdateDescriptorSets(b->d->dev, p->n_bindings, w, 0, NULL);
    vkCmdBindDescriptorSets(b->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, NULL);
cleanup:
    return st;
}

enum kv_status kv_vk_batch_dispatch(struct kv_vk_batch *b, const struct kv_vk_pipeline *p,
                                    const struct kv_vk_range *bindings, const void *push,
                                    const uint32_t groups[3])
{
    enum kv_status st = KV_OK;
    KV_CHECK(b->n_sets < b->max_sets, KV_EDEVICE, "internal: batch has no room for another dispatch");
    b->n_sets++;
    vkCmdBindPipeline(b->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
    if (p->n_bindings) KV_TRY(bind_set(b, p, bindings));
    if (p->push_size)
        vkCmdPushConstants(b->cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p->push_size, push);
    vkCmdDispatch(b->cb, groups[0], groups[1], groups[2]);
cleanup:
    return st;
}

enum kv_status kv_vk_batch_send(struct kv_vk_batch *b)
{
    enum kv_status st = KV_OK;
    VK_TRY(vkEndCommandBuffer(b->cb));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                       .pCommandBuffers = &b->cb};
    VK_TRY(vkQueueSubmit(b->d->queue, 1, &si, b->fence));
    b->in_flight = 1;
cleanup:
    return st;
}

static double timeout_s = -1;
static kv_vk_hang_fn *hang_hook;
static void *hang_ctx;

void kv_vk_set_timeout(double seconds) { timeout_s = seconds; }

void kv_vk_set_hang_hook(kv_vk_hang_fn *fn, void *ctx) { hang_hook = fn, hang_ctx = ctx; }

/* A submission the device has not finished in time (kv_vk_set_timeout): the
 * hook's reports where a case was in flight, one line, and the process ends. */
static void hung(double s)
{
    const char *name = hang_hook ? hang_hook(s, hang_ctx) : NULL;
    fflush(stdout);
    fprintf(stderr, "kverify: %s%sthe device has not finished a submission after %g s (--timeout): a shader that never "
            "ends (a loop whose step is 0, a wait on what no invocation writes) or a device fault the driver has not "
            "reported; the run ends here, %s\n", name ? name : "", name ? ": " : "", s,
            name ? "the reports holding the cases before it and this one as an error" : "with no report written");
    _exit((int)KV_EDEVICE);
}

/* vkWaitForFences on b's fence, for at most the timeout. */
static VkResult fence_wait(struct kv_vk_batch *b)
{
    const double s = timeout_s >= 0 ? timeout_s : !kv_vk_is_cpu(&b->d->info) ? KV_VK_TIMEOUT_S : 0;
    VkResult r = vkWaitForFences(b->d->dev, 1, &b->fence, VK_TRUE, s > 0 ? (uint64_t)(s * 1e9) : UINT64_MAX);
    if (r == VK_TIMEOUT) hung(s);
    return r;
}

enum kv_status kv_vk_batch_wait(struct kv_vk_batch *b)
{
    enum kv_status st = KV_OK;
    VK_TRY(fence_wait(b));
    b->in_flight = 0;
    if (b->queries && b->n_stamps)
        VK_TRY(vkGetQueryPoolResults(b->d->dev, b->queries, 0, b->n_stamps,
                                     sizeof(uint64_t) * b->n_stamps, b->stamps, sizeof(uint64_t),
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
cleanup:
    return st;
}

enum kv_status kv_vk_batch_submit(struct kv_vk_batch *b)
{
    enum kv_status st = kv_vk_batch_send(b);
    return st ? st : kv_vk_batch_wait(b);
}

double kv_vk_batch_ms(const struct kv_vk_batch *b, int from, int to)
{
    if (from < 0 || to < 0 || !b->stamps) return 0.0;
    uint64_t m = b->d->timestamp_mask;
    uint64_t ticks = ((b->stamps[to] & m) - (b->stamps[from] & m)) & m;
    return (double)ticks * b->d->info.timestamp_ns * 1e-6;
}

void kv_vk_batch_destroy(struct kv_vk_batch *b)
{
    if (!b || !b->d) return;
    VkDevice dev = b->d->dev;
    if (b->in_flight) vkWaitForFences(dev, 1, &b->fence, VK_TRUE, UINT64_MAX); /* an error came between */
    if (b->fence) vkDestroyFence(dev, b->fence, NULL);
    if (b->cb) vkFreeCommandBuffers(dev, b->d->cmd_pool, 1, &b->cb);
    if (b->queries) vkDestroyQueryPool(dev, b->queries, NULL);
    if (b->pool) vkDestroyDescriptorPool(dev, b->pool, NULL);
    free(b->stamps);
    memset(b, 0, sizeof *b);
}

enum kv_status kv_vk_probe(struct kv_vk_device *d, const char *name, const uint32_t *spirv, size_t bytes,
                           const void *in, size_t in_bytes, uint32_t fill, void *out, size_t out_bytes,
                           const void *push, uint32_t push_size)
{
    enum kv_status st = KV_OK;
    struct kv_vk_buffer up = {0}, src = {0}, dst = {0}, down = {0};
    struct kv_vk_pipeline pipe = {0};
    struct kv_vk_batch b = {0};
    const int has_in = in_bytes > 0;
    if (has_in) {
        KV_TRY(kv_vk_buffer_create(d, in_bytes, KV_MEM_UPLOAD, &up));
        KV_TRY(kv_vk_buffer_create(d, in_bytes, KV_MEM_DEVICE, &src));
        memcpy(up.map, in, in_bytes);
        KV_TRY(kv_vk_buffer_flush(d, &up));
    }
    KV_TRY(kv_vk_buffer_create(d, out_bytes, KV_MEM_DEVICE, &dst));
    KV_TRY(kv_vk_buffer_create(d, out_bytes, KV_MEM_READBACK, &down));
    KV_TRY(kv_vk_pipeline_create(d, name, spirv, bytes, has_in ? 2 : 1, push_size, &pipe));
    KV_TRY(kv_vk_batch_begin(d, 1, 0, &b));
    struct kv_vk_range r_up = {&up, 0, in_bytes}, r_src = {&src, 0, in_bytes}, r_dst = {&dst, 0, out_bytes},
                       r_down = {&down, 0, out_bytes};
    if (has_in) kv_vk_batch_copy(&b, r_up, r_src);
    kv_vk_batch_fill(&b, r_dst, fill);
    kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_COMPUTE);
    const struct kv_vk_range bind[2] = {has_in ? r_src : r_dst, r_dst};
    const uint32_t groups[3] = {1, 1, 1};
    KV_TRY(kv_vk_batch_dispatch(&b, &pipe, bind, push, groups));
    kv_vk_batch_barrier(&b, KV_BARRIER_COMPUTE_TO_TRANSFER);
    kv_vk_batch_copy(&b, r_dst, r_down);
    kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_HOST);
    KV_TRY(kv_vk_batch_submit(&b));
    KV_TRY(kv_vk_buffer_invalidate(d, &down));
    memcpy(out, down.map, out_bytes);
cleanup:
    kv_vk_batch_destroy(&b);
    kv_vk_pipeline_destroy(d, &pipe);
    kv_vk_buffer_destroy(d, &up);
    kv_vk_buffer_destroy(d, &src);
    kv_vk_buffer_destroy(d, &dst);
    kv_vk_buffer_destroy(d, &down);
    return st;
}

enum kv_status kv_vk_probe_noted(enum kv_status st, const char *what, const char *then)
{
    if (st) {
        fprintf(stderr, "kverify: note: %s failed (%s)%s\n", what, kv_error_msg(), then);
        kv_error_clear();
    }
    return KV_OK;
}
