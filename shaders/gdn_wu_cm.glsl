// gdn-wu on bf16 cooperative matrices (tensor cores), included by gdn_wu.glsl
// when built with KV_BF16CM. It is written against NV cooperative matrices of
// float16_t, which is what Debian 12's glslang compiles; the build rewrites
// the module to KHR cooperative matrices of bfloat16 (src/spirv/spirv_khr.h), so
// every float16_t below is a bfloat16 on the device.
// The including shader also declares A4 (A as vec4) and defines, for
// D % 8 == 0: fetch8(b, t, h, col), the 16-byte word of 8 inputs from a
// column that is a multiple of 8; factors(b, t, h), the row's scale factors,
// which stage8 (gdn_wu.glsl) applies to the word's 8 values.
// The staged values are bf16 already. A is f32: it is split exactly into
// three bf16 parts, A = hi + mid + lo (truncations; each remainder is exact
// in f32, and the last has at most 8 significant bits), and out = lo.S +
// mid.S + hi.S: 3 x 64 products, each exact in f32, summed in f32.
// A workgroup of 8 subgroups takes (batch, head, chunk) items, grid-strided:
// the three parts of the chunk's A sit in shared memory as bf16 rows; the
// output columns go 64 at a time through a shared block of staged rows;
// subgroup s computes rows 16 (s % 4) .. +16 and columns 32 (s / 4) .. +32
// of the block as two 16 x 16 blocks, and stores each through shared memory,
// rounded to bf16, masked to rows < seq and columns < D: where D % 8 == 0
// lanes 2r and 2r + 1 store row r's 32 bytes as two 16-byte words. The loads of the
// next block of staged rows are in flight while one block is multiplied.
// Measured on an H100 at B8 T4096 H16/4 K=V=128, u and w: 0.37 ms with 4
// subgroups and no loads ahead; 0.30 with the loads ahead; 0.23 with 8
// subgroups; u 0.235 -> 0.219 and w 0.237 -> 0.227 with 16-byte stores
// (were 8-byte). Fetching the next item's A during an item's last block (a
// workgroup taking 2..16 items) was no faster: 0.240..0.258. What bounds it
// is one item's dependent chain, at 2 items per SM (90 registers): a shader
// that moves the same bytes of the same items on the same grid, with no
// math, takes 0.137 / 0.105 ms (98 / 96% of copy), and the stage's time
// grows by ~7 us per wave of 264 items (9.3 us for one wave). No faster,
// u / w: outputs through one shared 64 x 64 f32 block, written as whole
// 128-byte rows, 0.225 / 0.245; also reading A as whole rows, 0.214 / 0.256;
// those two with 16 subgroups (51 registers, still 2 items per SM), 0.215 /
// 0.235 and 0.218 / 0.247; 32-column blocks (78 registers, 3 items per SM),
// 0.261 / 0.284.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define NSG 8u             // subgroups per workgroup
#define NI (32u * NSG)      // invocations
#define ROUNDS (512u / NI)  // 8-value pieces of a 64 x 64 block per invocation
#define CT (16u / NSG)      // 16 x 16 output blocks per subgroup and column block
layout(local_size_x = NI) in;

#define ROWQ 9u // uvec4 per shared row: 8 of data (64 bf16) and one of padding
shared uvec4 a_parts[3u * BT * ROWQ]; // part (hi, mid, lo), row i, column j of A
shared uvec4 s_blk[BT * ROWQ];        // staged row j, columns col0 .. col0 + 63
shared float out_blk[NSG][16 * 16];   // per subgroup: one block of outputs

#define OPM fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define ACCM fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

// The bf16 parts of a: hi + mid + lo == a exactly. inf keeps hi alone, NaN
// stays NaN.
uvec3 split3(float a)
{
    uint u = floatBitsToUint(a), hi = u & 0xffff0000u;
    if ((u & 0x7f800000u) == 0x7f800000u) return uvec3((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : hi >> 16, 0u, 0u);
    float r1 = a - uintBitsToFloat(hi);
    uint mid = floatBitsToUint(r1) & 0xffff0000u;
    float r2 = r1 - uintBitsToFloat(mid);
    return uvec3(hi >> 16, mid >> 16, floatBitsToUint(r2) >> 16);
}

// Invocation lid's share of A: 8 values of a row, ROUNDS times.
void fetch_a(uint b, uint h, uint t0, uint nv, out vec4 x[2u * ROUNDS])
{
    const uint lid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0u; r < ROUNDS; r++) {
        uint e = lid + NI * r, i = e / 8u, q = e % 8u;
        uint base = (((b * p.seq + t0 + i) * p.heads + h) * BT + 8u * q) / 4u;
        x[2u * r] = i < nv ? A4[base] : vec4(0.0);
        x[2u * r + 1u] = i < nv ? A4[base + 1u] : vec4(0.0);
    }
}

// Invocation lid's share of A (8 values of a row, 4 times), split into parts.
void put_a(vec4 x[2u * ROUNDS])
{
    const uint lid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0u; r < ROUNDS; r++) {
        uint e = lid + NI * r, i = e / 8u, q = e % 8u;
        uvec4 part[3] = uvec4[3](uvec4(0u), uvec4(0u), uvec4(0u));
        [[unroll]] for (uint k = 0u; k < 8u; k++) {
            uvec3 s = split3(x[2u * r + k / 4u][k % 4u]);
            [[unroll]] for (uint pp = 0u; pp < 3u; pp++) part[pp][k / 2u] |= s[pp] << (16u * (k % 2u));
        }
        [[unroll]] for (uint pp = 0u; pp < 3u; pp++) a_parts[(pp * BT + i) * ROWQ + q] = part[pp];
    }
}

// Staged rows of the block from col0: invocation lid takes 8 columns of a
// row, 4 times. Where D % 8 == 0 their loads (a 16-byte word and the row's
// factors) are issued by fetch_s and the values staged by put_s; otherwise
// put_s stages them one at a time. Zeros past seq and D.
void fetch_s(uint b, uint h, uint t0, uint nv, uint col0, out uvec4 xs[ROUNDS], out vec2 xf[ROUNDS])
{
    const uint lid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0u; r < ROUNDS; r++) {
        uint e = lid + NI * r, j = e / 8u, col = col0 + 8u * (e % 8u);
        bool ok = D % 8u == 0u && j < nv && col < D;
        xs[r] = ok ? fetch8(b, t0 + j, h, col) : uvec4(0u);
        xf[r] = ok ? factors(b, t0 + j, h) : vec2(0.0);
    }
}

void put_s(uint b, uint h, uint t0, uint nv, uint col0, uvec4 xs[ROUNDS], vec2 xf[ROUNDS])
{
    const uint lid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0u; r < ROUNDS; r++) {
        uint e = lid + NI * r, j = e / 8u, q = e % 8u, col = col0 + 8u * q;
        uvec4 v = uvec4(0u);
        if (D % 8u == 0u) {
            if (j < nv && col < D) v = stage8(xs[r], xf[r]);
        } else {
            [[unroll]] for (uint k = 0u; k < 8u; k++)
                if (j < nv && col + k < D) v[k / 2u] |= bf16_bits(staged(b, t0 + j, h, col + k)) << (16u * (k % 2u));
        }
        s_blk[j * ROWQ + q] = v;
    }
}

void main()
{
    const uint lid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint rt = sg % 4u, c0t = (sg / 4u) * CT; // the subgroup's row block and first column block
    const uint nt = (p.seq + BT - 1u) / BT, items = p.batch * p.heads * nt;
    for (uint id = gl_WorkGroupID.x; id < items; id += gl_NumWorkGroups.x) {
        // Heads vary fastest: workgroups running together read whole rows.
        uint h = id % p.heads, c = (id / p.heads) % nt, b = id / (nt * p.heads);
        uint t0 = c * BT, nv = min(BT, p.seq - t0);
        // A (zeros past seq) and the first block of staged rows: all their
        // loads are issued before any is used.
        vec4 x[2u * ROUNDS];
        uvec4 xs[ROUNDS];
        vec2 xf[ROUNDS];
        fetch_a(b, h, t0, nv, x);
        fetch_s(b, h, t0, nv, 0u, xs, xf);
        put_a(x);
        put_s(b, h, t0, nv, 0u, xs, xf);
        for (uint col0 = 0u; col0 < D; col0 += 64u) {
            barrier();
            // The next block's loads are in flight while this one is multiplied.
            if (col0 + 64u < D) fetch_s(b, h, t0, nv, col0 + 64u, xs, xf);
            ACCM acc[CT];
            [[unroll]] for (uint ct = 0u; ct < CT; ct++) acc[ct] = ACCM(0.0);
            [[unroll]] for (uint kk = 0u; kk < 4u; kk++) {
                OPM s[CT];
                [[unroll]] for (uint ct = 0u; ct < CT; ct++)
                    coopMatLoadNV(s[ct], s_blk, 16u * kk * ROWQ + 2u * (c0t + ct), ROWQ, false);
                [[unroll]] for (uint q = 0u; q < 3u; q++) { // lo, mid, hi
                    OPM a;
                    coopMatLoadNV(a, a_parts, ((2u - q) * BT + 16u * rt) * ROWQ + 2u * kk, ROWQ, false);
                    [[unroll]] for (uint ct = 0u; ct < CT; ct++) acc[ct] = coopMatMulAddNV(a, s[ct], acc[ct]);
                }
            }
            // Lane l stores 8 outputs: row l / 2 of the block, columns 8 (l % 2) ..
            uint i = 16u * rt + lane / 2u;
            [[unroll]] for (uint ct = 0u; ct < CT; ct++) {
                coopMatStoreNV(acc[ct], out_blk[sg], 0u, 16u, false);
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                uint col = col0 + 16u * (c0t + ct) + 8u * (lane % 2u), e = 16u * (lane / 2u) + 8u * (lane % 2u);
                if (i < nv && col < D) {
                    uint o = ((b * p.seq + t0 + i) * p.heads + h) * D + col;
                    vec4 lo = vec4(out_blk[sg][e], out_blk[sg][e + 1u], out_blk[sg][e + 2u], out_blk[sg][e + 3u]);
                    vec4 hi = vec4(out_blk[sg][e + 4u], out_blk[sg][e + 5u], out_blk[sg][e + 6u], out_blk[sg][e + 7u]);
                    if (D % 8u == 0u) {
                        store_out8(o, lo, hi);
                    } else if (D % 4u == 0u) {
                        store_out4(o, lo);
                        if (col + 4u < D) store_out4(o + 4u, hi);
                    } else {
                        [[unroll]] for (uint k = 0u; k < 8u; k++)
                            if (col + k < D) store_out(o + k, k < 4u ? lo[k] : hi[k - 4u]);
                    }
                }
                subgroupBarrier();
            }
            barrier(); // the block and the parts are read before the next writes
            if (col0 + 64u < D) put_s(b, h, t0, nv, col0 + 64u, xs, xf);
        }
    }
}
