/* The gated delta net's inputs as FLA's tests make them (kernels.md, gdn-wu),
 * shared by gdn-wu and gdn-wy-bwd so that one seed gives both kernels the
 * same k, v, beta, g and A. */
#ifndef KV_GDN_INPUTS_H
#define KV_GDN_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"

enum kv_gdn_dist { KV_GDN_REALISTIC, KV_GDN_RANDOM, KV_GDN_NONFINITE, KV_GDN_DENSE, KV_GDN_GRID };

struct kv_gdn_inputs {
    int64_t B, T, H, Hg, K, V; /* batch, sequence, value heads, key heads, key and value dims */
    uint64_t seed;
    enum kv_gdn_dist dist;
    int nan_only;              /* nonfinite: NaNs in place of infinities (bf16-coopmat) */
    uint16_t *k, *v;           /* bf16 [B,T,Hg,K], [B,T,H,V] */
    float *beta, *g;           /* [B,T,H]; g in natural log, cumulative within each 64-chunk */
    struct kv_tensor *A;       /* f32 or bf16 [B,T,H,64] */
};

/* The shape rules both gdn kernels share (their first six parameters are
 * batch, seq, heads, kv-heads, dk, dv): heads a multiple of kv-heads, and
 * every tensor at most 2^40 elements. The shaders index with 32 bits: a
 * tensor longer than a binding reaches is bound a window of the sequence at
 * a time (kernel.h, window_chunk).
 * KV_EUSAGE with the message naming the flags. */
enum kv_status kv_gdn_check_shape(int64_t B, int64_t T, int64_t H, int64_t Hg, int64_t K, int64_t V);

/* Fill k, v, beta, g and A = (I + L)^-1 per chunk (float64, rounded to A's
 * dtype), or (grid) gdn_inputs.c's exact-sum inputs. A remark for the
 * report goes to note when A is ill-conditioned.
 * KV_EDEVICE out of host memory. */
enum kv_status kv_gdn_make_inputs(const struct kv_gdn_inputs *in, char *note, size_t note_size);

#endif
