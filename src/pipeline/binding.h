/* What a stage's binding of a tensor covers: the tensor's whole words, then
 * the guard words of an output or the poisoned tail of an input; and, for
 * tensors longer than a binding can reach (maxStorageBufferRange), windows
 * of the sequence: each window a dispatch of the stage's own launch rule on
 * a smaller case (kernel.h, window_chunk), with every tensor bound from the
 * window's first row. The shader is unchanged. */
#ifndef KV_BINDING_H
#define KV_BINDING_H

#include "kernels/kernel.h"

#define KV_GUARD_BYTES 64
/* Inputs (and the oracle's intermediates fed to later stages) are followed by
 * a poisoned tail of NaN words as long as the tensor, between 64 bytes and
 * 64 KiB: a read past the end of one reaches an output as NaN. */
#define KV_POISON_MAX ((size_t)64 << 10)

/* The poisoned tail of an input of `bytes`. */
size_t kv_poison_bytes(size_t bytes);
/* The range a stage's binding of tensor td sees: its whole words, then the
 * guard words of an output or the poisoned tail of an input (list --abi).
 * Where the words fit max_range and the tail would not, the tail is cut to
 * what the range leaves (none where the words fill it): a tensor of exactly
 * maxStorageBufferRange bytes is bound, its accesses past the end then
 * checked by the sanitizer's memcheck alone (SIZE_MAX: no cut). */
size_t kv_bound_bytes(const struct kv_tensor_def *td, size_t bytes, uint64_t max_range);
/* A binding of `words` bytes and a tail, `want` bytes in all, cut so (as
 * kv_bound_bytes). */
size_t kv_range_cut(size_t want, size_t words, uint64_t max_range);

struct kv_windows {
    int64_t n;       /* dispatches; 1: the whole tensors are bound (no windows), or addressed */
    int addr;        /* 1: no bindings, the stage's build that reads through device addresses (pipeline/addr.h) */
    int64_t batches; /* > 0: windows of this many whole sequences */
    int64_t rows;    /* else: windows of this many sequence rows (a multiple of the chunk) within one sequence */
};

/* The windows of stage s of case c where a binding reaches max_range bytes
 * from an offset that is a multiple of align, or for a stage without a
 * window rule w->addr (its tensors to be read through device addresses,
 * where kv_addr_plan allows it). KV_EUSAGE in one line where the stage
 * cannot run in windows (a row too long, an offset the device cannot bind
 * at). */
enum kv_status kv_windows_plan(const struct kv_case *c, int s, uint64_t max_range, uint64_t align,
                               struct kv_windows *w);
/* Whether stage s, longer than max_range and without windows, is bound by
 * address: KV_EUSAGE in one line where it cannot be (why: the reason, as
 * kv_addr_lacks gives it, pipeline/addr.h, or NULL where it can). */
enum kv_status kv_addr_plan(const struct kv_case *c, int s, uint64_t max_range, const char *why);
/* Window i: the batch and sequence length it launches as, and (returned)
 * the row of the case's batch x seq its tensors start at. */
int64_t kv_window_at(const struct kv_case *c, const struct kv_windows *w, int64_t i, int64_t *batch, int64_t *seq);
/* The bytes of tensor t that one row (one batch and sequence position) holds. */
uint64_t kv_window_row_bytes(const struct kv_case *c, int t);

/* Unwritten outputs read as NaN in f32, f16 and bf16 alike; the guard words
 * after each output keep the same pattern unless something writes past the end. */
#define KV_SENTINEL 0x7FC17FC1u
/* The poison of input tails: another NaN, so that a value computed from a
 * read past an input's end and written past an output's end (a loop bound
 * off by one on both) does not write the guard's own pattern back. NaN in
 * f32, f16 and bf16; as u8 codes 0xD3 and 0x7F, which no quantization below
 * 7 bits makes. */
#define KV_POISON 0x7FD37FD3u

/* Guard words changed after an output of `bytes` in a buffer of `padded`;
 * *furthest: how far past the end the furthest changed word lies, in words. */
size_t kv_guard_check(const void *base, size_t bytes, size_t padded, size_t *furthest);

#endif
