// gdn-wu: one chunk of BT = 64 rows of one head: out[t0+i, h, :] =
// sum_j A[t0+i, h, j] * staged[t0+j, :], f32 accumulation, rounded once to
// bf16. The including shader declares the buffers (A among them) and defines
// D (the output width), staged(b, t, h, col) (the bf16-rounded scaled input
// of a row t < seq), store_out(index, value) and store_out4(index, values)
// (four outputs from an index that is a multiple of 4; used when D % 4 == 0).
// Built with KV_BF16CM, the products run on bf16 cooperative matrices
// (gdn_wu_cm.glsl); otherwise on f32 FMAs, as follows.
// A workgroup takes (batch, head, chunk) items, grid-strided: it holds the
// chunk's A in shared memory (transposed, four rows to a vec4) and walks the
// output columns 64 at a time; each invocation computes a 4 x 4 block from
// two vec4 loads per step. Rows past seq (a partial last chunk) stage as
// zero and are not written.
#extension GL_EXT_shader_16bit_storage : require
layout(push_constant) uniform Push { uint batch; uint seq; uint heads; uint kv_heads; uint dk; uint dv; } p;

#define BT 64u

// bf16 by bit operations: round to nearest even, NaN kept (quiet).
uint bf16_bits(float f)
{
    uint u = floatBitsToUint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x40u;
    return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}
float bf16_float(uint h) { return uintBitsToFloat(h << 16); }
// The staging cast of the spec: f32 -> bf16 (round to nearest even) -> f32.
float bf16_round(float f) { return bf16_float(bf16_bits(f)); }
// Four values as bf16, packed low half first: one 8-byte word of the output.
uvec2 bf16x4_words(vec4 x)
{
    return uvec2(bf16_bits(x.x) | (bf16_bits(x.y) << 16), bf16_bits(x.z) | (bf16_bits(x.w) << 16));
}
// The staged bits of 8 bf16 inputs (one 16-byte word, low half first) with
// the row's factors f: each scaled (the including shader's scaled(x, f), in
// f32) and rounded to bf16, packed the same way.
uvec4 stage8(uvec4 x, vec2 f)
{
    uvec4 o;
    for (uint q = 0u; q < 4u; q++)
        o[q] = bf16_bits(scaled(bf16_float(x[q] & 0xffffu), f)) | (bf16_bits(scaled(bf16_float(x[q] >> 16), f)) << 16);
    return o;
}

#ifdef KV_BF16CM
#include "gdn_wu_cm.glsl"
#else
layout(local_size_x = 256) in;
shared vec4 a_t[BT * 16u]; // a_t[j*16 + i/4][i%4] = A[i][j]
shared vec4 st[BT * 16u];  // st[kk*16 + c/4][c%4]: staged row kk, column col0 + c

void main()
{
    uint nt = (p.seq + BT - 1u) / BT, lid = gl_LocalInvocationID.x, ti = lid / 16u, tj = lid % 16u;
    uint items = p.batch * p.heads * nt;
    for (uint id = gl_WorkGroupID.x; id < items; id += gl_NumWorkGroups.x) {
        // Heads vary fastest: workgroups running together read whole rows.
        uint h = id % p.heads, c = (id / p.heads) % nt, b = id / (nt * p.heads);
        uint t0 = c * BT, nv = min(BT, p.seq - t0);
        for (uint e = lid; e < BT * BT; e += 256u) {
            // A warp loads 4 rows x 8 columns of A; its 32 transposed stores
            // hit 32 banks, as quad i / 4 of row j sits at quad (i / 4) ^ (j % 8).
            uint iq = (e / 32u) % 16u, i = 4u * iq + e % 4u, j = 8u * (e / 512u) + (e / 4u) % 8u;
            a_t[j * 16u + (iq ^ (j % 8u))][i % 4u] = i < nv ? A_AT(((b * p.seq + t0 + i) * p.heads + h) * BT + j) : 0.0;
        }
        for (uint col0 = 0u; col0 < D; col0 += 64u) {
            for (uint e = lid; e < BT * 64u; e += 256u) {
                uint kk = e / 64u, j = e % 64u;
                st[e / 4u][e % 4u] = kk < nv && col0 + j < D ? staged(b, t0 + kk, h, col0 + j) : 0.0;
            }
            barrier();
            vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
            for (uint kk = 0u; kk < BT; kk++) {
                vec4 a = a_t[kk * 16u + (ti ^ (kk % 8u))], s = st[kk * 16u + tj];
                for (uint r = 0u; r < 4u; r++) acc[r] += a[r] * s;
            }
            if (D % 4u == 0u) { // four bf16 outputs as one 8-byte store
                for (uint r = 0u; r < 4u; r++) {
                    uint i = 4u * ti + r;
                    if (i < nv && col0 + 4u * tj < D)
                        store_out4(((b * p.seq + t0 + i) * p.heads + h) * D + col0 + 4u * tj, acc[r]);
                }
            } else
            for (uint r = 0u; r < 4u; r++) {
                uint i = 4u * ti + r;
                if (i >= nv) break;
                for (uint q = 0u; q < 4u; q++) {
                    uint col = col0 + 4u * tj + q;
                    if (col < D) store_out(((b * p.seq + t0 + i) * p.heads + h) * D + col, acc[r][q]);
                }
            }
            barrier();
        }
    }
}
#endif
