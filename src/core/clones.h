/* KV_CLONES: a function compiled for x86-64-v4 (AVX-512), AVX2 and the
 * baseline, the best picked at load time, for loops that vectorize (GCC on
 * x86-64; nothing elsewhere, or under AddressSanitizer). Only IEEE
 * operations in a fixed order, with -ffp-contract=off: the same bits on any
 * vector width. */
#ifndef KV_CORE_CLONES_H
#define KV_CORE_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define KV_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define KV_CLONES
#endif

#endif
