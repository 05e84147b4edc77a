#version 450
// dA[M,K] = f16(dC)[M,N] . B16[K,N]^T with f32 sums, on cooperative matrices
// (VK_NV_cooperative_matrix, 16x16x16 f16 products into f32). The same math
// as gemm_bwd_dA16.comp: each product of two f16 values is exact in f32.
// A workgroup of 16 subgroups of 32 owns a 128x256 tile of dA; subgroup s
// holds rows 32 (s / 4) .. +32 and columns 64 (s % 4) .. +64 as 2 x 4
// accumulators. The reduction advances 32 at a time through shared tiles of
// 128 dC rows and 256 B rows x 32 f16 (the reduction contiguous in both);
// the next step is fetched into registers while this one is multiplied.
// Rows 16-byte aligned (n % 8 == 0) fetch 8 f16 per load; otherwise one
// value at a time. Blocks inside dA are stored directly, blocks on its edges
// through shared memory with a mask.
// Every fixed-count loop is unrolled: without that the products ran at 29
// TFLOP/s on an H100 at 4096^3, with it at 95 (128x128 tiles, 8 subgroups of
// 32x64), 106 (128x128, 4 subgroups of 64x64), 137 (128x256, 8 subgroups of
// 64x64: 235 registers, 8 warps per SM) and 146 (this layout: 128
// registers, 16 warps per SM). The products alone, with no loads, take 0.39
// to 0.42 ms at 4096^3 (325 to 353 TFLOP/s): the rate of these matrices on
// that device, whatever the memory path.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 512) in;
layout(std430, set = 0, binding = 0) readonly buffer DC16 { uint dc16[]; };
layout(std430, set = 0, binding = 1) readonly buffer B16 { uint b16[]; };
layout(std430, set = 0, binding = 0) readonly buffer DC16v { uvec4 dc16v[]; };
layout(std430, set = 0, binding = 1) readonly buffer B16v { uvec4 b16v[]; };
layout(std430, set = 0, binding = 2) writeonly buffer DA { float da[]; };
layout(push_constant) uniform Push { uint m; uint n; uint k; } p;

#define BM 128u
#define BN 256u
#define BK 32u
#define ROWQ 5u  // uvec4 per shared row: 4 of data (32 f16) and 1 of padding
shared uvec4 sa[BM * ROWQ];
shared uvec4 sb[BN * ROWQ];
shared float stage_out[16][16 * 16];

#define F16M fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define F32M fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

// The f16 at flat index e of a packed buffer, as its 16 bits.
uint half_bits(uint word, uint e) { return (e & 1u) == 0u ? (word & 0xffffu) : (word >> 16); }

// 8 f16 of row `row` (of `rows`) from reduction index l (a multiple of 8): the
// fetch of one uvec4 of a shared row; zeros past the edges.
uvec4 fetch_dc(uint row, uint l, bool vec)
{
    if (row >= p.m || l >= p.n) return uvec4(0u);
    if (vec) return dc16v[(row * p.n + l) / 8u];
    uvec4 v = uvec4(0u);
    for (uint j = 0u; j < 8u && l + j < p.n; j++) {
        uint e = row * p.n + l + j;
        v[j / 2u] |= half_bits(dc16[e / 2u], e) << (16u * (j % 2u));
    }
    return v;
}

uvec4 fetch_b(uint row, uint l, bool vec)
{
    if (row >= p.k || l >= p.n) return uvec4(0u);
    if (vec) return b16v[(row * p.n + l) / 8u];
    uvec4 v = uvec4(0u);
    for (uint j = 0u; j < 8u && l + j < p.n; j++) {
        uint e = row * p.n + l + j;
        v[j / 2u] |= half_bits(b16[e / 2u], e) << (16u * (j % 2u));
    }
    return v;
}

void main()
{
    const uint t = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint wr = (sg / 4u) * 32u, wc = (sg % 4u) * 64u;
    const bool vec = p.n % 8u == 0u;
    const uint tiles_c = (p.k + BN - 1u) / BN, tiles_r = (p.m + BM - 1u) / BM;
    const uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; tile < tiles_r * tiles_c;
         tile += groups) {
        const uint r0 = (tile / tiles_c) * BM, c0 = (tile % tiles_c) * BN;
        F32M acc[2][4];
        [[unroll]] for (uint i = 0u; i < 2u; i++)
            [[unroll]] for (uint j = 0u; j < 4u; j++) acc[i][j] = F32M(0.0);
        // Invocation t fetches uvec4 q = t % 4 of rows t / 4 + 128 h: h < 1 of dC, h < 2 of B.
        const uint q = t % 4u, row = t / 4u;
        uvec4 xa[1], xb[2];
        [[unroll]] for (uint h = 0u; h < 1u; h++) xa[h] = fetch_dc(r0 + row + 128u * h, 8u * q, vec);
        [[unroll]] for (uint h = 0u; h < 2u; h++) xb[h] = fetch_b(c0 + row + 128u * h, 8u * q, vec);
        for (uint l0 = 0u; l0 < p.n; l0 += BK) {
            barrier(); // the previous step's products are done with the tiles
            [[unroll]] for (uint h = 0u; h < 1u; h++) sa[(row + 128u * h) * ROWQ + q] = xa[h];
            [[unroll]] for (uint h = 0u; h < 2u; h++) sb[(row + 128u * h) * ROWQ + q] = xb[h];
            barrier();
            if (l0 + BK < p.n)
                {
                    [[unroll]] for (uint h = 0u; h < 1u; h++) xa[h] = fetch_dc(r0 + row + 128u * h, l0 + BK + 8u * q, vec);
                    [[unroll]] for (uint h = 0u; h < 2u; h++) xb[h] = fetch_b(c0 + row + 128u * h, l0 + BK + 8u * q, vec);
                }
            [[unroll]] for (uint kk = 0u; kk < BK / 8u; kk += 2u) { // 16 of the reduction: 2 uvec4
                F16M a[2], b[4];
                [[unroll]] for (uint i = 0u; i < 2u; i++) coopMatLoadNV(a[i], sa, (wr + 16u * i) * ROWQ + kk, ROWQ, false);
                // B's tile (reduction x columns) is the rows of B16: column-major.
                [[unroll]] for (uint j = 0u; j < 4u; j++) coopMatLoadNV(b[j], sb, (wc + 16u * j) * ROWQ + kk, ROWQ, true);
                [[unroll]] for (uint i = 0u; i < 2u; i++)
                    [[unroll]] for (uint j = 0u; j < 4u; j++) acc[i][j] = coopMatMulAddNV(a[i], b[j], acc[i][j]);
            }
        }
        [[unroll]] for (uint i = 0u; i < 2u; i++)
            [[unroll]] for (uint j = 0u; j < 4u; j++) {
                uint r = r0 + wr + 16u * i, c = c0 + wc + 16u * j;
                if (r >= p.m || c >= p.k) continue;
                if (r + 16u <= p.m && c + 16u <= p.k) {
                    coopMatStoreNV(acc[i][j], da, r * p.k + c, p.k, false);
                } else {
                    coopMatStoreNV(acc[i][j], stage_out[sg], 0u, 16u, false);
                    subgroupMemoryBarrierShared();
                    subgroupBarrier();
                    for (uint e = lane; e < 256u; e += gl_SubgroupSize)
                        if (r + e / 16u < p.m && c + e % 16u < p.k) da[(r + e / 16u) * p.k + c + e % 16u] = stage_out[sg][e];
                    subgroupBarrier();
                }
            }
    }
}
