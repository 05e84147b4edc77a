// gdn-wy-bwd stage wy on bf16 cooperative matrices (tensor cores), included
// by gdn_wy_bwd_wy.comp when built with KV_BF16CM. It computes the a-bf16
// spec (A in bf16; dA and dA A^T cast to bf16), where every product has bf16
// operands: exact on the tensor cores, accumulated in f32. It is written
// against NV cooperative matrices of float16_t, which Debian 12's glslang
// compiles; the build rewrites the module to KHR cooperative matrices of
// bfloat16 (src/spirv/spirv_khr.h), so every float16_t below is a bfloat16.
// A workgroup of NSG subgroups takes (batch, head, chunk) items, grid-strided.
// Shared memory holds the chunk's A (bf16 rows), a 64-column block of the
// pass's X (dw, du or k) and of its staged partner Y (bf16(k bg), bf16(v
// beta), bf16(k beta)), and a work matrix as bf16 rows: in passes K and V
// Y's source (k or v, for the epilogues), then dA, then U; T (dA A^T) takes
// X's place. The loads of each block are issued before the products of the
// one before and staged after them. Of every 64 x 64 product, subgroup sg
// computes the 16 x 16 blocks of row block rt = sg % 4 and column blocks
// cb0 .. cb0 + CT - 1, and only those of them that can be non-zero: dA, U
// and M (k k^T) are kept strictly lower (column block <= row block), and the
// products with the triangular dA and U skip their zero blocks. Each block
// goes through the subgroup's 16 x 16 f32 block in shared memory, where lane
// l takes row l / 2, columns 8 (l % 2) .. +8: so the lane holds one row's
// dbeta and dg partials throughout, and writes (and in pass 2 reads back)
// the same outputs in both passes. The KV_CM_EL build (gdn_wy_bwd_cmel.glsl)
// takes every block from the lane's own accumulator elements instead. H100, B8
// T4096 H16/4 K=V=128 (KV_ALIGNED8): 0.79 ms at 123 registers and 46.6 KB of shared
// memory (2 workgroups per SM); KV_CM_EL 0.69 ms, 124 registers. How, and what did
// not help: scripts/gdn-wy-bwd-perf.md. What holds it: 2 workgroups per SM need at most
// 128 registers and about 49 KB of shared memory (one more of either: 1.1-1.2
// ms); every global read of an epilogue comes from shared memory or is issued
// before the prefetch (a load that hits L1 waits for an earlier miss); the
// float16_t conversions (bfloat16 here) truncate on the H100, also under
// RoundingModeRTE or FPRoundingMode RTE, so the roundings are integer adds.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef NSG
#define NSG 8u         // subgroups per workgroup
#endif
#define NI (32u * NSG) // invocations
#define CT (16u / NSG) // column blocks per subgroup
#define ROUNDS (512u / NI) // 16-byte words of a 64 x 64 bf16 block per invocation
layout(local_size_x = NI) in;

// 16-byte views of the bf16 tensors, used where the row width is a multiple of 8.
layout(std430, binding = 0) readonly buffer K8 { uvec4 k8[]; };
layout(std430, binding = 1) readonly buffer V8 { uvec4 v8[]; };
layout(std430, binding = 4) readonly buffer A8 { uvec4 a8[]; };
layout(std430, binding = 5) readonly buffer DW8 { uvec4 dw8[]; };
layout(std430, binding = 6) readonly buffer DU8 { uvec4 du8[]; };
layout(std430, binding = 7) buffer DKH8 { uvec4 dkh8[]; };
layout(std430, binding = 8) writeonly buffer DV8 { uvec4 dv8[]; };
#ifdef KV_CM_EL // and their 4- and 8-byte views
layout(std430, binding = 7) buffer DKH4 { uint dkh4[]; };
layout(std430, binding = 8) writeonly buffer DV4 { uint dv4[]; };
layout(std430, binding = 7) buffer DKH2 { uvec2 dkh2[]; };
layout(std430, binding = 8) writeonly buffer DV2 { uvec2 dv2[]; };
#endif

#define ROWQ 9u // uvec4 per shared row: 8 of data (64 bf16) and one of padding
shared uvec4 a_s[BT * ROWQ]; // A[m][i]
shared uvec4 x_s[BT * ROWQ]; // X block; then T
shared uvec4 y_s[BT * ROWQ]; // Y block
shared uvec4 w_s[BT * ROWQ]; // Y's source (k in pass K, v in pass V) for the epilogues; then dA; then U
shared float o_s[NSG * 256u]; // per subgroup one 16 x 16 block; at the end the row partials
shared float cs_s[4u * BT];  // dg's column sums of U * M, per row block
shared vec2 bg_s[BT];        // the rows' (beta, g)
#ifdef KV_CM_EL
shared float f_s[BT];        // the rows' beta exp(g)
#endif

#define OPM fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define ACCM fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>


float lo16(uint w) { return uintBitsToFloat(w << 16); }
float hi16(uint w) { return uintBitsToFloat(w & 0xffff0000u); }
float half8(uvec4 w, uint k) { return k % 2u == 0u ? lo16(w[k / 2u]) : hi16(w[k / 2u]); }

// Two floats to bf16 (rne_hi), packed low half first: from the high halves, with no
// shift back and forth (0.81 -> 0.79 ms against bf16_bits' former form), and not through
// float16_t (the H100's conversion truncates, also under RoundingModeRTE or FPRoundingMode).
uint pack2(float a, float b) { return (rne_hi(a) >> 16) | (rne_hi(b) & 0xffff0000u); }

// Eight floats to four bf16 pairs, as pack2 would give them: rounded to nearest even
// by the integer add alone, and again through pack2 only where one of them is a NaN.
void pack8v(float v[8], out uint w[4])
{
    bool nan_ = false;
    [[unroll]] for (uint c = 0u; c < 4u; c++) {
        const uint ua = floatBitsToUint(v[2u * c]), ub = floatBitsToUint(v[2u * c + 1u]);
        w[c] = ((ua + 0x7fffu + bitfieldExtract(ua, 16, 1)) >> 16) | ((ub + 0x7fffu + bitfieldExtract(ub, 16, 1)) & 0xffff0000u);
        nan_ = nan_ || isnan(v[2u * c]) || isnan(v[2u * c + 1u]);
    }
    if (nan_)
        [[unroll]] for (uint c = 0u; c < 4u; c++) w[c] = pack2(v[2u * c], v[2u * c + 1u]);
}

// Element (row r, column c) of the pass's X: dw, du or k.
uint x_at(uint which, uint r, uint c)
{
    return which == 0u ? uint(dw[vrow(r) * p.dk + c]) : which == 1u ? uint(du[vrow(r) * p.dv + c]) : uint(k[krow(r) + c]);
}

// The X and Y blocks of rows 0..63, columns col0 .. col0 + 63 (zeros past nv
// and D). Where D % 8 == 0, fetch_xy issues the loads of the invocation's
// 16-byte words (X, Y's source k or v, and the row's factor) and put_xy
// stages them; otherwise put_xy loads one value at a time.
struct xy_words {
    uvec4 x[ROUNDS], src[ROUNDS];
};

uint xy_width(uint which) { return which == 1u ? p.dv : p.dk; }

// The item's blocks in order: pass K's nk, pass V's, pass 2's nk again.
uint nk, nb;
uint blk_which(uint blk) { return blk < nk ? 0u : blk < nb ? 1u : 2u; }
uint blk_col0(uint blk) { return 64u * (blk < nk ? blk : blk < nb ? blk - nk : blk - nb); }

void fetch_xy(uint blk, out xy_words w, bool al)
{
    const uint which = blk_which(blk), col0 = blk_col0(blk), D = xy_width(which);
    [[unroll]] for (uint r = 0u; r < ROUNDS; r++) {
        uint e = gl_LocalInvocationID.x + NI * r, j = e / 8u, col = col0 + 8u * (e % 8u);
        w.x[r] = w.src[r] = uvec4(0u);
        if (!al || j >= nv || col >= D) continue;
        uint R = vrow(j), xo = (which == 2u ? krow(j) : R * D) + col;
        w.x[r] = which == 0u ? dw8[xo / 8u] : which == 1u ? du8[xo / 8u] : k8[xo / 8u];
        if (which != 2u) w.src[r] = which == 0u ? k8[(krow(j) + col) / 8u] : v8[xo / 8u];
    }
}

void put_xy(uint blk, xy_words w, bool al)
{
    const uint which = blk_which(blk), col0 = blk_col0(blk), D = xy_width(which);
    [[unroll]] for (uint r = 0u; r < ROUNDS; r++) {
        uint e = gl_LocalInvocationID.x + NI * r, j = e / 8u, q = e % 8u, col = col0 + 8u * q;
        uvec4 xw = w.x[r], src = which == 2u ? w.x[r] : w.src[r], yw = uvec4(0u);
        float f = which == 0u ? bg_s[j].x * exp(bg_s[j].y) : bg_s[j].x;
        if (!al && j < nv && col < D) {
            uint R = vrow(j);
            for (uint c = 0u; c < 8u && col + c < D; c++) {
                uint sv = which == 1u ? uint(v[R * D + col + c]) : uint(k[krow(j) + col + c]);
                xw[c / 2u] |= x_at(which, j, col + c) << (16u * (c % 2u));
                src[c / 2u] |= sv << (16u * (c % 2u));
            }
        }
        float yv[8];
        uint yp[4];
        [[unroll]] for (uint c = 0u; c < 8u; c++) yv[c] = half8(src, c) * f;
        pack8v(yv, yp);
        [[unroll]] for (uint c = 0u; c < 4u; c++) // (zeros past D, also where f is not finite)
            yw[c] = yp[c] & (col + 2u * c < D ? (col + 2u * c + 1u < D ? 0xffffffffu : 0xffffu) : 0u);
        x_s[j * ROWQ + q] = xw;
        y_s[j * ROWQ + q] = yw;
        if (which != 2u) w_s[j * ROWQ + q] = src;
    }
}

// The 8 bf16 of dk_head (pass 1's) in row i from column col; zeros past K.
uvec4 dkh_words(uint i, uint col, bool al)
{
    uvec4 w = uvec4(0u);
    if (i >= nv || col >= p.dk) return w;
    const uint o = vrow(i) * p.dk + col;
    if (al) return dkh8[o / 8u];
    for (uint c = 0u; c < 8u && col + c < p.dk; c++) w[c / 2u] |= uint(dkh[o + c]) << (16u * (c % 2u));
    return w;
}

#ifdef KV_CM_EL
#include "gdn_wy_bwd_cmel.glsl"
#else
#define P2_LOOP [[unroll]]
#endif

// The lane's 8 values of the subgroup's last stored block.
void read8(uint sg, uint lane, out float x[8])
{
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    uint e = sg * 256u + 16u * (lane / 2u) + 8u * (lane % 2u);
    [[unroll]] for (uint c = 0u; c < 8u; c++) x[c] = o_s[e + c];
    subgroupBarrier();
}

// 8 bf16 bits, packed low half first.
uvec4 pack8(float x[8])
{
    uint w[4];
    pack8v(x, w);
    return uvec4(w[0], w[1], w[2], w[3]);
}

// The workgroup's (batch, head, chunk) items. al: K and V are multiples of
// 8, so that every row is read and written in 16-byte words; main() calls
// this twice, once with each constant, so that each copy holds only its own
// paths (the aligned one runs faster for it: 0.98 -> 0.86 ms).
void run_items(bool al)
{
    const uint lid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint rt = sg % 4u, cb0 = (sg / 4u) * CT, i = 16u * rt + lane / 2u, half_ = lane % 2u;
#ifdef KV_CM_EL
    const uint gq = lane / 4u, q = lane % 4u, ra = 16u * rt + gq; // the accumulators' rows ra, ra + 8
#endif
    const uint nt = (p.seq + BT - 1u) / BT, items = p.batch * p.heads * nt;
    for (uint id = gl_WorkGroupID.x; id < items; id += gl_NumWorkGroups.x) {
        h = id % p.heads, b = id / (nt * p.heads), kh = h / (p.heads / p.kv_heads);
        t0 = ((id / p.heads) % nt) * BT, nv = min(BT, p.seq - t0);
        for (uint e = lid; e < BT * 8u; e += NI) { // A, zero past nv in rows and columns
            uint m = e / 8u, q = e % 8u;
            uvec4 a = m < nv ? a8[vrow(m) * 8u + q] : uvec4(0u);
            for (uint c = 0u; c < 8u; c++)
                if (8u * q + c >= nv) a[c / 2u] &= c % 2u == 0u ? 0xffff0000u : 0xffffu;
            a_s[m * ROWQ + q] = a;
        }
#ifdef KV_CM_EL
        if (lid < BT) {
            const vec2 bgl = lid < nv ? vec2(beta[vrow(lid)], g[vrow(lid)]) : vec2(0.0);
            bg_s[lid] = bgl;
            f_s[lid] = lid < nv ? bgl.x * exp(bgl.y) : 0.0;
        }
        const float be = i < nv ? beta[vrow(i)] : 0.0;
        float s_e[2] = float[2](0.0, 0.0); // rows ra, ra + 8: the pass's sums of P * (k or v)
#else
        if (lid < BT) bg_s[lid] = lid < nv ? vec2(beta[vrow(lid)], g[vrow(lid)]) : vec2(0.0);
        const float be = i < nv ? beta[vrow(i)] : 0.0, ge = i < nv ? exp(g[vrow(i)]) : 0.0, bg = be * ge;
#endif
        float db = 0.0, dgp = 0.0, rs = 0.0;
        ACCM dA[CT];
        [[unroll]] for (uint ct = 0u; ct < CT; ct++) dA[ct] = ACCM(0.0);
        // Passes K and V, block by block; each block's loads are issued
        // before the previous block's products, and staged after them.
        nk = (p.dk + 63u) / 64u, nb = nk + (p.dv + 63u) / 64u;
        xy_words xw;
        fetch_xy(0u, xw, al);
        barrier(); // bg_s
        put_xy(0u, xw, al);
        for (uint blk = 0u; blk < nb; blk++) {
            const uint pass = blk < nk ? 0u : 1u, col0 = blk_col0(blk), D = xy_width(pass);
            barrier();
            fetch_xy(blk + 1u, xw, al); // (nb + 1 blocks at least: pass 2's first is next to the last)
            [[unroll]] for (uint ct = 0u; ct < CT; ct++) {
                // dA += X Y^T; P = A^T X.
                const uint cb = cb0 + ct, col = col0 + 16u * cb + 8u * half_;
                ACCM P = ACCM(0.0);
                [[unroll]] for (uint kk = 0u; kk < 4u; kk++) {
                    OPM at, xb;
                    coopMatLoadNV(at, a_s, 16u * kk * ROWQ + 2u * rt, ROWQ, true);
                    coopMatLoadNV(xb, x_s, 16u * kk * ROWQ + 2u * cb, ROWQ, false);
                    P = coopMatMulAddNV(at, xb, P);
                }
                if (cb <= rt) {
                    [[unroll]] for (uint kk = 0u; kk < 4u; kk++) {
                        OPM xa, yb;
                        coopMatLoadNV(xa, x_s, 16u * rt * ROWQ + 2u * kk, ROWQ, false);
                        coopMatLoadNV(yb, y_s, 16u * cb * ROWQ + 2u * kk, ROWQ, true);
                        dA[ct] = coopMatMulAddNV(xa, yb, dA[ct]);
                    }
                }
#ifdef KV_CM_EL
                // P's epilogue on the lane's elements: dk_head = bf16(P bg) or dv = bf16(P beta);
                // sum P k (pass K: dbeta's e^g and dg's bg are applied to the sum) or P v.
                uint w[4];
                float pv[8];
                [[unroll]] for (uint pp = 0u; pp < 4u; pp++) {
                    const uint h2 = pp >> 1u, r = ra + ER(pp), c = 16u * cb + EC(pp) + 2u * q;
                    const uint sw = w_s[r * ROWQ + c / 8u][q]; // k (pass K) or v
                    const float x0 = P[2u * pp], x1 = P[2u * pp + 1u], f = pass == 0u ? f_s[r] : bg_s[r].x;
                    s_e[h2] += x0 * lo16(sw);
                    s_e[h2] += x1 * hi16(sw);
                    pv[2u * pp] = x0 * f;
                    pv[2u * pp + 1u] = x1 * f;
                }
                pack8v(pv, w);
                put_pairs(pass, ra, q, col0 + 16u * cb, D, w, al);
#else
                const uvec4 es = w_s[i * ROWQ + 2u * cb + half_]; // k (pass K) or v of the lane's outputs
                float x[8];
                coopMatStoreNV(P, o_s, sg * 256u, 16u, false);
                read8(sg, lane, x);
                if (i >= nv || col >= D) continue;
                const uint o = vrow(i) * D + col;
                float y[8];
                [[unroll]] for (uint c = 0u; c < 8u; c++) {
                    float s = half8(es, c);
                    if (pass == 0u) {
                        y[c] = x[c] * bg;
                        db += x[c] * s * ge;
                        dgp += x[c] * (s * bg);
                    } else {
                        y[c] = x[c] * be;
                        db += x[c] * s;
                    }
                }
                const uvec4 yw = pack8(y);
                if (al) {
                    if (pass == 0u) dkh8[o / 8u] = yw; else dv8[o / 8u] = yw;
                } else {
                    for (uint c = 0u; c < 8u && col + c < D; c++)
                        if (pass == 0u) dkh[o + c] = uint16_t(yw[c / 2u] >> (16u * (c % 2u)));
                        else dvo[o + c] = uint16_t(yw[c / 2u] >> (16u * (c % 2u)));
                }
#endif
            }
#ifdef KV_CM_EL
            if (blk + 1u == nk || blk + 1u == nb) { // the pass's sums to the rows' lanes
                const float S = row_share(s_e, lane);
                s_e[0] = s_e[1] = 0.0;
                if (pass == 0u) {
                    const float ge = i < nv ? exp(bg_s[i].y) : 0.0;
                    db += S * ge;
                    dgp += S * (be * ge);
                } else {
                    db += S;
                }
            }
#endif
            if (blk + 1u < nb) {
                barrier();
                put_xy(blk + 1u, xw, al);
            }
        } // (pass 2's first block is staged after U)
#ifdef KV_CM_EL // (and pass 1's dk_head to the lanes that read it back in pass 2)
        controlBarrier(gl_ScopeWorkgroup, gl_ScopeWorkgroup, gl_StorageSemanticsShared | gl_StorageSemanticsBuffer, gl_SemanticsAcquireRelease);
#else
        barrier();
#endif
        // dA strictly lower, to bf16, into w_s; rows past nv masked (0 times a staged NaN is NaN).
        [[unroll]] for (uint ct = 0u; ct < CT; ct++) {
            const uint cb = cb0 + ct;
#ifdef KV_CM_EL
            float dv[8];
            [[unroll]] for (uint pp = 0u; pp < 4u; pp++) {
                const uint r = ra + ER(pp), c = 16u * cb + EC(pp) + 2u * q;
                dv[2u * pp] = cb <= rt && c < r && r < nv ? dA[ct][2u * pp] : 0.0;
                dv[2u * pp + 1u] = cb <= rt && c + 1u < r && r < nv ? dA[ct][2u * pp + 1u] : 0.0;
            }
            put_el8(dv, ra, q, cb, false);
#else
            float x[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            if (cb <= rt) {
                coopMatStoreNV(dA[ct], o_s, sg * 256u, 16u, false);
                read8(sg, lane, x);
            }
            [[unroll]] for (uint c = 0u; c < 8u; c++) x[c] = cb <= rt && 16u * cb + 8u * half_ + c < i && i < nv ? x[c] : 0.0;
            w_s[i * ROWQ + 2u * cb + half_] = pack8(x);
#endif
        }
        barrier();
        // T = bf16(dA A^T), into x_s: dA's row block rt is zero past column block rt.
        [[unroll]] for (uint ct = 0u; ct < CT; ct++) {
            const uint cb = cb0 + ct;
            ACCM T = ACCM(0.0);
            [[unroll]] for (uint kk = 0u; kk < 4u; kk++) {
                if (kk > rt) continue;
                OPM da, a;
                coopMatLoadNV(da, w_s, 16u * rt * ROWQ + 2u * kk, ROWQ, false);
                coopMatLoadNV(a, a_s, 16u * cb * ROWQ + 2u * kk, ROWQ, true);
                T = coopMatMulAddNV(da, a, T);
            }
#ifdef KV_CM_EL
            float dv[8];
            [[unroll]] for (uint e = 0u; e < 8u; e++) dv[e] = T[e];
            put_el8(dv, ra, q, cb, true);
#else
            float x[8];
            coopMatStoreNV(T, o_s, sg * 256u, 16u, false);
            read8(sg, lane, x);
            x_s[i * ROWQ + 2u * cb + half_] = pack8(x);
#endif
        }
        barrier();
        // U = bf16(-(A^T T) exp(g_i - g_j)), strictly lower, into w_s.
        [[unroll]] for (uint ct = 0u; ct < CT; ct++) {
            const uint cb = cb0 + ct;
#ifdef KV_CM_EL
            ACCM U = ACCM(0.0);
            if (cb <= rt) {
                [[unroll]] for (uint kk = 0u; kk < 4u; kk++) {
                    OPM at, t;
                    coopMatLoadNV(at, a_s, 16u * kk * ROWQ + 2u * rt, ROWQ, true);
                    coopMatLoadNV(t, x_s, 16u * kk * ROWQ + 2u * cb, ROWQ, false);
                    U = coopMatMulAddNV(at, t, U);
                }
            }
            float dv[8];
            [[unroll]] for (uint pp = 0u; pp < 4u; pp++) {
                const uint r = ra + ER(pp), c = 16u * cb + EC(pp) + 2u * q;
                [[unroll]] for (uint e = 0u; e < 2u; e++) {
                    // (the gate's guard keeps g's reads within the chunk)
                    const float gate = r < nv && c + e < nv ? exp(bg_s[r].y - bg_s[c + e].y) : 0.0;
                    dv[2u * pp + e] = cb <= rt && c + e < r && r < nv ? -(U[2u * pp + e] * gate) : 0.0;
                }
            }
            put_el8(dv, ra, q, cb, false);
#else
            float x[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
            if (cb <= rt) {
                ACCM U = ACCM(0.0);
                [[unroll]] for (uint kk = 0u; kk < 4u; kk++) {
                    OPM at, t;
                    coopMatLoadNV(at, a_s, 16u * kk * ROWQ + 2u * rt, ROWQ, true);
                    coopMatLoadNV(t, x_s, 16u * kk * ROWQ + 2u * cb, ROWQ, false);
                    U = coopMatMulAddNV(at, t, U);
                }
                coopMatStoreNV(U, o_s, sg * 256u, 16u, false);
                read8(sg, lane, x);
            }
            [[unroll]] for (uint c = 0u; c < 8u; c++) {
                uint j = 16u * cb + 8u * half_ + c;
                // (the gate's guard keeps g's reads within the chunk)
                float gate = i < nv && j < nv ? exp(bg_s[i].y - bg_s[j].y) : 0.0;
                x[c] = cb <= rt && j < i && i < nv ? -(x[c] * gate) : 0.0; // (to bf16 in pack8)
            }
            w_s[i * ROWQ + 2u * cb + half_] = pack8(x);
#endif
        }
        // Pass 2 over K: M = k k^T (lower blocks, kept), dkb = U k, t = U^T bf16(k beta).
        ACCM M[CT];
        [[unroll]] for (uint ct = 0u; ct < CT; ct++) M[ct] = ACCM(0.0);
        barrier();
        put_xy(nb, xw, al);
        for (uint blk = nb; blk < nb + nk; blk++) {
            const uint col0 = blk_col0(blk);
            barrier();
#ifdef KV_CM_EL
            uint old[CT][4]; // pass 1's dk_head pairs at the lane's elements (before the prefetch, too)
            [[unroll]] for (uint ct = 0u; ct < CT; ct++)
                [[unroll]] for (uint pp = 0u; pp < 4u; pp++) old[ct][pp] = dkh_pair(ra + ER(pp), col0 + 16u * (cb0 + ct) + EC(pp) + 2u * q, al);
#else
            uvec4 old[CT]; // the lane's dk_head words of pass 1 (loaded before the prefetch, which they would wait for)
            [[unroll]] for (uint ct = 0u; ct < CT; ct++) old[ct] = dkh_words(i, col0 + 16u * (cb0 + ct) + 8u * half_, al);
#endif
            if (blk + 1u < nb + nk) fetch_xy(blk + 1u, xw, al);
            [[unroll]] for (uint kk = 0u; kk < 4u; kk++) {
                OPM xa;
                coopMatLoadNV(xa, x_s, 16u * rt * ROWQ + 2u * kk, ROWQ, false);
                [[unroll]] for (uint ct = 0u; ct < CT; ct++) {
                    const uint cb = cb0 + ct;
                    if (cb > rt) continue;
                    OPM xb;
                    coopMatLoadNV(xb, x_s, 16u * cb * ROWQ + 2u * kk, ROWQ, true);
                    M[ct] = coopMatMulAddNV(xa, xb, M[ct]);
                }
            }
            [[unroll]] for (uint ct = 0u; ct < CT; ct++) {
                const uint cb = cb0 + ct, col = col0 + 16u * cb + 8u * half_;
                ACCM dkb = ACCM(0.0), t = ACCM(0.0);
                P2_LOOP for (uint kk = 0u; kk < 4u; kk++) {
                    OPM u, kx, ut, kb;
                    if (kk <= rt) { // U's row block rt is zero past column block rt
                        coopMatLoadNV(u, w_s, 16u * rt * ROWQ + 2u * kk, ROWQ, false);
                        coopMatLoadNV(kx, x_s, 16u * kk * ROWQ + 2u * cb, ROWQ, false);
                        dkb = coopMatMulAddNV(u, kx, dkb);
                    }
                    if (kk >= rt) { // U^T's, before column block rt
                        coopMatLoadNV(ut, w_s, 16u * kk * ROWQ + 2u * rt, ROWQ, true);
                        coopMatLoadNV(kb, y_s, 16u * kk * ROWQ + 2u * cb, ROWQ, false);
                        t = coopMatMulAddNV(ut, kb, t);
                    }
                }
#ifdef KV_CM_EL
                // dk_head = bf16(dkb beta + t + pass 1's); dbeta's sum dkb k per row, as in pass K.
                uint w[4];
                float pv[8];
                [[unroll]] for (uint pp = 0u; pp < 4u; pp++) {
                    const uint h2 = pp >> 1u, r = ra + ER(pp), c = 16u * cb + EC(pp) + 2u * q;
                    const uint kw = x_s[r * ROWQ + c / 8u][q]; // k
                    const float be_r = bg_s[r].x, x0 = dkb[2u * pp], x1 = dkb[2u * pp + 1u];
                    s_e[h2] += x0 * lo16(kw);
                    s_e[h2] += x1 * hi16(kw);
                    pv[2u * pp] = x0 * be_r + t[2u * pp] + lo16(old[ct][pp]);
                    pv[2u * pp + 1u] = x1 * be_r + t[2u * pp + 1u] + hi16(old[ct][pp]);
                }
                pack8v(pv, w);
                put_pairs(0u, ra, q, col0 + 16u * cb, p.dk, w, al);
            }
#else
                float xd[8], xt[8];
                coopMatStoreNV(dkb, o_s, sg * 256u, 16u, false);
                read8(sg, lane, xd);
                coopMatStoreNV(t, o_s, sg * 256u, 16u, false);
                read8(sg, lane, xt);
                if (i >= nv || col >= p.dk) continue;
                const uint o = vrow(i) * p.dk + col;
                const uvec4 kw = x_s[i * ROWQ + 2u * cb + half_];
                float y[8];
                [[unroll]] for (uint c = 0u; c < 8u; c++) {
                    db += xd[c] * half8(kw, c);
                    y[c] = xd[c] * be + xt[c] + half8(old[ct], c);
                }
                const uvec4 yw = pack8(y);
                if (al) {
                    dkh8[o / 8u] = yw;
                } else {
                    for (uint c = 0u; c < 8u && col + c < p.dk; c++) dkh[o + c] = uint16_t(yw[c / 2u] >> (16u * (c % 2u)));
                }
            }
#endif
            if (blk + 1u < nb + nk) {
                barrier();
                put_xy(blk + 1u, xw, al);
            }
        }
#ifdef KV_CM_EL
        db += row_share(s_e, lane);
        s_e[0] = s_e[1] = 0.0;
        // dg's U * M (beta_i) from the lane's elements: row sums (to the rows' lanes), and
        // each block's column sums over the lanes of a column (lanes q + 4 gq).
        [[unroll]] for (uint ct = 0u; ct < CT; ct++) {
            const uint cb = cb0 + ct;
            float cs[4] = float[4](0.0, 0.0, 0.0, 0.0); // columns 2q, 2q + 1, 8 + 2q, 9 + 2q
            if (cb <= rt) {
                [[unroll]] for (uint pp = 0u; pp < 4u; pp++) {
                    const uint h2 = pp >> 1u, r = ra + ER(pp), c = 16u * cb + EC(pp) + 2u * q;
                    const uint uw = w_s[r * ROWQ + c / 8u][q];
                    const float be_r = bg_s[r].x;
                    const float x0 = lo16(uw) * (M[ct][2u * pp] * be_r), x1 = hi16(uw) * (M[ct][2u * pp + 1u] * be_r);
                    s_e[h2] += x0 + x1;
                    cs[2u * (pp & 1u)] += x0;
                    cs[2u * (pp & 1u) + 1u] += x1;
                }
                [[unroll]] for (uint m = 4u; m < 32u; m *= 2u)
                    [[unroll]] for (uint x = 0u; x < 4u; x++) cs[x] += subgroupShuffleXor(cs[x], m);
            }
            if (gq == 0u)
                [[unroll]] for (uint x = 0u; x < 4u; x++) cs_s[rt * BT + 16u * cb + 8u * (x >> 1u) + 2u * q + (x & 1u)] = cs[x];
        }
        rs += row_share(s_e, lane);
#else
        // dg's U * M (beta_i): the lane's row sum, and each block's column sums by lanes 0..15.
        [[unroll]] for (uint ct = 0u; ct < CT; ct++) {
            const uint cb = cb0 + ct;
            float cs = 0.0;
            if (cb <= rt) {
                float x[8];
                coopMatStoreNV(M[ct], o_s, sg * 256u, 16u, false);
                read8(sg, lane, x);
                const uvec4 uw = w_s[i * ROWQ + 2u * cb + half_];
                [[unroll]] for (uint c = 0u; c < 8u; c++) {
                    x[c] = half8(uw, c) * (x[c] * be);
                    rs += x[c];
                }
                const uint e = sg * 256u + 16u * (lane / 2u) + 8u * half_;
                [[unroll]] for (uint c = 0u; c < 8u; c++) o_s[e + c] = x[c];
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                if (lane < 16u)
                    for (uint r = 0u; r < 16u; r++) cs += o_s[sg * 256u + 16u * r + lane];
                subgroupBarrier();
            }
            if (lane < 16u) cs_s[rt * BT + 16u * cb + lane] = cs;
        }
#endif
        barrier();
        // The row partials: 2 lanes in each of NSG / 4 subgroups per row.
        const uint np = NSG / 2u, slot = (sg / 4u) * 2u + half_;
        o_s[slot * BT + i] = db;
        o_s[(np + slot) * BT + i] = dgp;
        o_s[(2u * np + slot) * BT + i] = rs;
        barrier();
        if (lid < nv) {
            float sb = 0.0, sg_ = 0.0, sr = 0.0, sc = 0.0;
            for (uint x = 0u; x < np; x++)
                sb += o_s[x * BT + lid], sg_ += o_s[(np + x) * BT + lid], sr += o_s[(2u * np + x) * BT + lid];
            for (uint x = 0u; x < 4u; x++) sc += cs_s[x * BT + lid];
            dbeta[vrow(lid)] = sb;
            dg[vrow(lid)] = sg_ + (sr - sc);
        }
    }
}

void main()
{
#ifdef KV_ALIGNED8
    // The build for K and V multiples of 8 (the runner's, for those cases);
    // anything else leaves the outputs unwritten rather than wrong.
    if (p.dk % 8u == 0u && p.dv % 8u == 0u) run_items(true);
#else
    if (p.dk % 8u == 0u && p.dv % 8u == 0u) run_items(true); else run_items(false);
#endif
}
