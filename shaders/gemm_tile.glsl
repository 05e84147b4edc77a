// Register-tiled product OUT[r, c] = sum_l X(r, l) * Y(l, c) for r < ROWS,
// c < COLS, l < RED, accumulated in f32. The including shader defines:
//   KV_X(r, l), KV_Y(l, c)  element loads (transposes happen here, in place)
//   KV_STORE(r, c, v)       the store of one result
//   ROWS, COLS, RED         the extents (uints)
//   X_RED_CONTIG, Y_RED_CONTIG  1 when consecutive l are adjacent in memory
//                           (then a tile is loaded along l, else along r or c,
//                           so that neighbouring invocations read neighbours)
// and optionally, where both are contiguous, KV_X4(r, l) and KV_Y4(l, c): the
// four values at l..l+3 as one vec4 load, used when KV_VEC4_OK (a uniform
// condition: the rows start on 16-byte boundaries) holds.
// A workgroup of 256 invocations owns a BM x BN output tile; each invocation
// holds an 8 x 8 block in registers (two 4-row by two 4-column quads, 64 apart).
// The reduction advances BK at a time through double-buffered shared tiles:
// the next step's values are fetched into registers while this step's
// products run, so one barrier per step suffices. Tails are masked with
// zeros, so every extent >= 1 works. Output tiles are grid-strided.
// The step's product loop is unrolled where the reduction is contiguous
// (measured on an H100 at 4096^3: dA 4.48 -> 3.64 ms; for dB, read along rows,
// unrolling made it slower, 3.55 -> 4.05 ms, so it is left to the compiler).
#extension GL_EXT_control_flow_attributes : require
#if X_RED_CONTIG
#define KV_UNROLL_L [[unroll]]
#else
#define KV_UNROLL_L
#endif
#define BM 128u
#define BN 128u
#define BK 16u
layout(local_size_x = 256) in;

// [buffer][l][quad of rows or columns]: 32 KiB in all, the most lavapipe
// allows (a spare quad per l against bank conflicts would exceed it).
shared vec4 sx[2][BK][BM / 4u];
shared vec4 sy[2][BK][BN / 4u];

// Invocation t's i-th element of a tile: (row or column, l) offsets. With
// vec4 loads, elements 4j..4j+3 are one load at l = 4 (t % 4) + 0..3.
uvec2 kv_slot(uint t, uint i, uint extent, bool red_contig, bool vec)
{
    if (vec) return uvec2(t / 4u + 64u * (i / 4u), 4u * (t % 4u) + i % 4u);
    return red_contig ? uvec2(t / BK + (256u / BK) * i, t % BK) : uvec2(t % extent, t / extent + (256u / extent) * i);
}

void kv_gemm()
{
    const uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
    const uint tiles_c = (COLS + BN - 1u) / BN, tiles_r = (ROWS + BM - 1u) / BM;
    const uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; tile < tiles_r * tiles_c;
         tile += groups) {
        const uint r0 = (tile / tiles_c) * BM, c0 = (tile % tiles_c) * BN;
        vec4 acc[8][2];
        for (uint i = 0u; i < 8u; i++) acc[i][0] = acc[i][1] = vec4(0.0);
        float xv[8], yv[8];
#ifdef KV_X4
        const bool vec = KV_VEC4_OK; // RED is then a multiple of 4
#else
        const bool vec = false;
#endif
        // Fetch the step at l0 into registers (zeros past the edges).
#ifdef KV_X4
#define KV_FETCH4(l0)                                                             \
        for (uint j = 0u; j < 2u; j++) {                                          \
            uvec2 s_ = kv_slot(t, 4u * j, BM, true, true);                        \
            uint l_ = (l0) + s_.y;                                                \
            vec4 x_ = (r0 + s_.x < ROWS && l_ < RED) ? KV_X4(r0 + s_.x, l_) : vec4(0.0); \
            vec4 y_ = (c0 + s_.x < COLS && l_ < RED) ? KV_Y4(l_, c0 + s_.x) : vec4(0.0); \
            for (uint q = 0u; q < 4u; q++) xv[4u * j + q] = x_[q], yv[4u * j + q] = y_[q]; \
        }
#else
#define KV_FETCH4(l0)
#endif
#define KV_FETCH(l0)                                                              \
        if (vec) { KV_FETCH4(l0) } else                                           \
        for (uint i = 0u; i < 8u; i++) {                                          \
            uvec2 sx_ = kv_slot(t, i, BM, X_RED_CONTIG != 0, false);              \
            uvec2 sy_ = kv_slot(t, i, BN, Y_RED_CONTIG != 0, false);              \
            uint xr_ = r0 + sx_.x, xl_ = (l0) + sx_.y;                            \
            uint yc_ = c0 + sy_.x, yl_ = (l0) + sy_.y;                            \
            xv[i] = (xr_ < ROWS && xl_ < RED) ? KV_X(xr_, xl_) : 0.0;             \
            yv[i] = (yc_ < COLS && yl_ < RED) ? KV_Y(yl_, yc_) : 0.0;             \
        }
#define KV_PUT(buf)                                                               \
        for (uint i = 0u; i < 8u; i++) {                                          \
            uvec2 sx_ = kv_slot(t, i, BM, X_RED_CONTIG != 0, vec);                \
            uvec2 sy_ = kv_slot(t, i, BN, Y_RED_CONTIG != 0, vec);                \
            sx[buf][sx_.y][sx_.x / 4u][sx_.x % 4u] = xv[i];                       \
            sy[buf][sy_.y][sy_.x / 4u][sy_.x % 4u] = yv[i];                       \
        }
        KV_FETCH(0u)
        KV_PUT(0u)
        barrier();
        uint cur = 0u;
        for (uint l0 = 0u; l0 < RED; l0 += BK) {
            const bool more = l0 + BK < RED;
            if (more) { KV_FETCH(l0 + BK) }
            KV_UNROLL_L for (uint l = 0u; l < BK; l++) {
                vec4 a0 = sx[cur][l][ty], a1 = sx[cur][l][ty + 16u];
                vec4 b0 = sy[cur][l][tx], b1 = sy[cur][l][tx + 16u];
                for (uint i = 0u; i < 4u; i++) {
                    acc[i][0] += a0[i] * b0;
                    acc[i][1] += a0[i] * b1;
                    acc[i + 4u][0] += a1[i] * b0;
                    acc[i + 4u][1] += a1[i] * b1;
                }
            }
            if (more) { KV_PUT(cur ^ 1u) }
            barrier();
            cur ^= 1u;
        }
        for (uint i = 0u; i < 8u; i++) {
            uint r = r0 + (i < 4u ? 0u : 64u) + ty * 4u + (i % 4u);
            for (uint j = 0u; j < 2u; j++)
                for (uint q = 0u; q < 4u; q++) {
                    uint c = c0 + j * 64u + tx * 4u + q;
                    if (r < ROWS && c < COLS) KV_STORE(r, c, acc[i][j][q]);
                }
        }
    }
}
