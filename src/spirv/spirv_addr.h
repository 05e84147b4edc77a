/* A compute module's address build, made from its SPIR-V: the module that
 * reads every tensor through a 64-bit device address instead of a binding
 * (pipeline/addr.h says when a stage runs so).
 *
 * Each storage buffer at set 0, binding b < n_bind, becomes a pointer to its
 * block in the PhysicalStorageBuffer class, read from the push constants at
 * byte 8 b; the module's own push constants follow at 8 n_bind. Each
 * function that names a buffer loads its pointer first, and every access
 * through it carries the alignment its offsets prove (16 at the tensor's
 * start). Every index into an array reached through an address (those of a
 * KV_ADDR build too, with n_bind 0) is widened to 64 bits first, so that the
 * byte offset is made in 64 bits: a driver makes it in 32 bits from a 32-bit
 * index, which wraps past 2^32 bytes.
 *
 * A buffer's length() is its binding's byte range (from the push
 * constants, as below) less the array's Offset, over its ArrayStride, as a
 * bound binding's is. What the rewrite cannot follow is refused with a
 * reason: a buffer passed to a function, a pointer chosen by a phi or a
 * select, a uniform buffer, a binding past the stage's. */
#ifndef KV_SPIRV_ADDR_H
#define KV_SPIRV_ADDR_H

#include <stddef.h>
#include <stdint.h>

/* Returns 0 and a malloc'd module in *out (n_out words), with *lengths (if
 * given) set where it reads a buffer's length() or guards: then the push
 * constants hold each binding's byte range as a 64-bit word after the
 * addresses (at 8 (n_bind + b)), and the module's own follow at 16 n_bind.
 * Or -1 with the reason in err. guard (for a CPU device, where nothing else
 * stops an access past a buffer): each access through a binding's address
 * is kept within the binding's byte range, an offset past it (or below its
 * start) taken as the range's last aligned place; a KV_ADDR build's own
 * pointers (n_bind 0) are not guarded. */
int kv_spirv_addr(const uint32_t *in, size_t n_in, uint32_t n_bind, int guard, uint32_t **out, size_t *n_out,
                  int *lengths, char *err, size_t err_size);

#endif
