#version 450
// gdn-wy-bwd stage wy: the WY chunk gradient of one (batch, head, chunk), in
// FLA's order of operations (prepare_wy_repr_bwd) and at its cast points
// (kernels.md, src/kernels/gdn_wy_bwd.c). For rows i, j < nv of the chunk,
// key head kh = h / (heads / kv_heads), bg_i = f32(beta_i * exp(g_i)):
//   pass K:  dA  = sum_c dw[i,c] * bf16(k[j,c] * bg_j)
//            dkbg = A^T dw;  dkh = bf16(dkbg * bg_i)  (stored, read back in pass 2)
//            dbeta_i += sum_c dkbg * k * exp(g_i);  dg_i += sum_c dkbg * (k * bg_i)
//   pass V:  dA += sum_c du[i,c] * bf16(v[j,c] * beta_j)
//            dvb = A^T du;  dv = bf16(dvb * beta_i);  dbeta_i += sum_c dvb * v
//   dA kept strictly lower; U = bf16(-(A^T cast(cast(dA) A^T)) * exp(g_i - g_j)),
//            cast: to A's dtype (f32, or bf16 with KV_ABF16)
//   pass 2:  M = (k k^T) beta_i;  dkb = U k;  dbeta_i += sum_c dkb * k
//            dkh = bf16(dkb * beta_i + U^T bf16(k * beta) + dkh)
//   dg_i += sum_j U[i,j] M[i,j] - sum_j U[j,i] M[j,i]
// Products accumulate in f32. A workgroup holds A and a 64 x 64 work matrix
// in shared memory (32 KiB), walks K and V 32 columns at a time, and keeps
// its block of dA (and of k k^T) in registers. Rows past seq (a partial last
// chunk) stage as zero and are not written.
// Built with KV_BF16CM, the a-bf16 spec runs on bf16 cooperative matrices (gdn_wy_bwd_cm.glsl;
// KV_ALIGNED8: for K, V multiples of 8; KV_CM_EL: epilogues on accumulator elements); else f32 FMAs:
#extension GL_EXT_shader_16bit_storage : require
layout(push_constant) uniform Push { uint batch; uint seq; uint heads; uint kv_heads; uint dk; uint dv; } p;
layout(std430, binding = 0) readonly buffer K { uint16_t k[]; };
layout(std430, binding = 1) readonly buffer V { uint16_t v[]; };
layout(std430, binding = 2) readonly buffer BETA { float beta[]; };
layout(std430, binding = 3) readonly buffer G { float g[]; };
#if defined(KV_ABF16) || defined(KV_BF16CM) // --variant a-bf16 (and bf16-coopmat): A in bf16, as FLA's pipeline keeps it; dA and A^T dA cast to bf16
layout(std430, binding = 4) readonly buffer AA { uint16_t A16[]; };
#define A_AT(i) bf16_float(uint(A16[i]))
#define A_CAST(x) bf16_round(x)
#else
layout(std430, binding = 4) readonly buffer AA { float A[]; };
#define A_AT(i) A[i]
#define A_CAST(x) (x)
#endif
layout(std430, binding = 5) readonly buffer DW { uint16_t dw[]; };
layout(std430, binding = 6) readonly buffer DU { uint16_t du[]; };
layout(std430, binding = 7) buffer DKH { uint16_t dkh[]; };
layout(std430, binding = 8) writeonly buffer DV { uint16_t dvo[]; };
layout(std430, binding = 9) writeonly buffer DB { float dbeta[]; };
layout(std430, binding = 10) writeonly buffer DG { float dg[]; };

#define BT 64u

uint rne_hi(float f) // f's bf16 (round to nearest even; a NaN stays one) in the high half
{
    const uint u = floatBitsToUint(f);
    return isnan(f) ? u | 0x400000u : u + 0x7fffu + ((u >> 16) & 1u);
}
uint bf16_bits(float f) { return rne_hi(f) >> 16; }
float bf16_float(uint h) { return uintBitsToFloat(h << 16); }
float bf16_round(float f) { return bf16_float(bf16_bits(f)); }

uint nv, t0, b, h, kh;
uint vrow(uint i) { return (b * p.seq + t0 + i) * p.heads + h; }
uint krow(uint i) { return ((b * p.seq + t0 + i) * p.kv_heads + kh) * p.dk; }

#ifdef KV_BF16CM
#include "gdn_wy_bwd_cm.glsl"
#else
layout(local_size_x = 256) in;
shared float As[BT * BT]; // A[m][i] (then U) at sw(m, i)
shared float Ws[BT * BT]; // two 64 x 32 tiles at tw(); or dA, A^T dA; or the reductions

// XOR-swizzled indices: a row or a column of 32 is spread over 32 banks.
uint sw(uint r, uint c) { return r * BT + (c ^ (r & 31u)); }
uint tw(uint r, uint c) { return r * 32u + (c ^ (r & 31u)); }


// Tiles X (Ws[0..2047]) and Y (Ws[2048..]) of rows 0..63, columns c0..c0+31 of
// width D: X the gradient (dw, du) or k; Y its staged partner.
void load_tiles(uint c0, uint which)
{
    for (uint e = gl_LocalInvocationID.x; e < BT * 32u; e += 256u) {
        uint r = e / 32u, c = e % 32u, col = c0 + c;
        float x = 0.0, y = 0.0;
        uint D = which == 1u ? p.dv : p.dk;
        if (r < nv && col < D) {
            uint R = vrow(r);
            if (which == 0u) { // pass K: dw and bf16(k * bg)
                float kv = bf16_float(uint(k[krow(r) + col]));
                x = bf16_float(uint(dw[R * p.dk + col]));
                y = bf16_round(kv * (beta[R] * exp(g[R])));
            } else if (which == 1u) { // pass V: du and bf16(v * beta)
                x = bf16_float(uint(du[R * p.dv + col]));
                y = bf16_round(bf16_float(uint(v[R * p.dv + col])) * beta[R]);
            } else { // pass 2: k and bf16(k * beta)
                x = bf16_float(uint(k[krow(r) + col]));
                y = bf16_round(x * beta[R]);
            }
        }
        Ws[tw(r, c)] = x;
        Ws[2048u + tw(r, c)] = y;
    }
}

void main()
{
    const uint lid = gl_LocalInvocationID.x, ai = lid / 16u, aj = lid % 16u, ri = lid % 32u, cj = lid / 32u;
    const uint nt = (p.seq + BT - 1u) / BT, items = p.batch * p.heads * nt;
    for (uint id = gl_WorkGroupID.x; id < items; id += gl_NumWorkGroups.x) {
        h = id % p.heads, b = id / (nt * p.heads), kh = h / (p.heads / p.kv_heads);
        t0 = ((id / p.heads) % nt) * BT, nv = min(BT, p.seq - t0);
        for (uint e = lid; e < BT * BT; e += 256u) {
            uint m = e / BT, i = e % BT;
            As[sw(m, i)] = m < nv && i < nv ? A_AT(vrow(m) * BT + i) : 0.0;
        }
        // This invocation's rows of the 64 x 32 products: ri and ri + 32.
        float be[2], ge[2], bg[2], db[2] = float[2](0.0, 0.0), dgp[2] = float[2](0.0, 0.0);
        for (uint s = 0u; s < 2u; s++) {
            uint i = ri + 32u * s;
            be[s] = i < nv ? beta[vrow(i)] : 0.0;
            ge[s] = i < nv ? exp(g[vrow(i)]) : 0.0;
            bg[s] = be[s] * ge[s];
        }
        float dA[4][4];
        for (uint q = 0u; q < 4u; q++) for (uint r = 0u; r < 4u; r++) dA[q][r] = 0.0;
        for (uint pass = 0u; pass < 2u; pass++) {
            uint D = pass == 0u ? p.dk : p.dv;
            for (uint c0 = 0u; c0 < D; c0 += 32u) {
                load_tiles(c0, pass);
                barrier();
                for (uint c = 0u; c < 32u; c++)
                    for (uint q = 0u; q < 4u; q++) {
                        float x = Ws[tw(ai + 16u * q, c)];
                        for (uint r = 0u; r < 4u; r++) dA[q][r] += x * Ws[2048u + tw(aj + 16u * r, c)];
                    }
                for (uint s = 0u; s < 2u; s++) {
                    uint i = ri + 32u * s;
                    for (uint q = 0u; q < 4u; q++) {
                        uint c = cj + 8u * q, col = c0 + c;
                        float acc = 0.0; // (A^T X)[i][c]
                        for (uint m = 0u; m < BT; m++) acc += As[sw(m, i)] * Ws[tw(m, c)];
                        if (i >= nv || col >= D) continue;
                        if (pass == 0u) {
                            float kv = bf16_float(uint(k[krow(i) + col]));
                            dkh[vrow(i) * p.dk + col] = uint16_t(bf16_bits(acc * bg[s]));
                            db[s] += acc * kv * ge[s];
                            dgp[s] += acc * (kv * bg[s]);
                        } else {
                            dvo[vrow(i) * p.dv + col] = uint16_t(bf16_bits(acc * be[s]));
                            db[s] += acc * bf16_float(uint(v[vrow(i) * p.dv + col]));
                        }
                    }
                }
                barrier();
            }
        }
        // dA strictly lower, in A's dtype; T = cast(dA) A^T, cast; U from A^T T.
        for (uint q = 0u; q < 4u; q++)
            for (uint r = 0u; r < 4u; r++) {
                uint i = ai + 16u * q, j = aj + 16u * r;
                Ws[sw(i, j)] = j < i && i < nv ? A_CAST(dA[q][r]) : 0.0; // rows past nv: 0 * a NaN or Inf staged in row j is not 0
            }
        barrier();
        float T[4][4];
        for (uint q = 0u; q < 4u; q++) for (uint r = 0u; r < 4u; r++) T[q][r] = 0.0;
        for (uint m = 0u; m < BT; m++)
            for (uint q = 0u; q < 4u; q++) {
                float x = Ws[sw(ai + 16u * q, m)];
                for (uint r = 0u; r < 4u; r++) T[q][r] += x * As[sw(aj + 16u * r, m)];
            }
        barrier();
        for (uint q = 0u; q < 4u; q++)
            for (uint r = 0u; r < 4u; r++) Ws[sw(ai + 16u * q, aj + 16u * r)] = A_CAST(T[q][r]);
        barrier();
        for (uint q = 0u; q < 4u; q++) for (uint r = 0u; r < 4u; r++) T[q][r] = 0.0;
        for (uint m = 0u; m < BT; m++)
            for (uint q = 0u; q < 4u; q++) {
                float x = As[sw(m, ai + 16u * q)];
                for (uint r = 0u; r < 4u; r++) T[q][r] += x * Ws[sw(m, aj + 16u * r)];
            }
        barrier();
        for (uint q = 0u; q < 4u; q++)
            for (uint r = 0u; r < 4u; r++) {
                uint i = ai + 16u * q, j = aj + 16u * r;
                // (the gate's guard keeps g's reads within the chunk; rows past
                // nv masked: A's zero columns there times an Inf in T are NaN)
                float gate = i < nv && j < nv ? exp(g[vrow(i)] - g[vrow(j)]) : 0.0;
                T[q][r] = j < i && i < nv ? bf16_round(-(T[q][r] * gate)) : 0.0; // U, kept for dg
                As[sw(i, j)] = T[q][r];
            }
        // Pass 2 over K: dA (registers) now holds k k^T.
        for (uint q = 0u; q < 4u; q++) for (uint r = 0u; r < 4u; r++) dA[q][r] = 0.0;
        for (uint c0 = 0u; c0 < p.dk; c0 += 32u) {
            barrier();
            load_tiles(c0, 2u);
            barrier();
            for (uint c = 0u; c < 32u; c++)
                for (uint q = 0u; q < 4u; q++) {
                    float x = Ws[tw(ai + 16u * q, c)];
                    for (uint r = 0u; r < 4u; r++) dA[q][r] += x * Ws[tw(aj + 16u * r, c)];
                }
            for (uint s = 0u; s < 2u; s++) {
                uint i = ri + 32u * s;
                for (uint q = 0u; q < 4u; q++) {
                    uint c = cj + 8u * q, col = c0 + c;
                    float dkb = 0.0, t = 0.0; // (U k)[i][c], (U^T bf16(k beta))[i][c]
                    for (uint m = 0u; m < BT; m++) {
                        dkb += As[sw(i, m)] * Ws[tw(m, c)];
                        t += As[sw(m, i)] * Ws[2048u + tw(m, c)];
                    }
                    if (i >= nv || col >= p.dk) continue;
                    db[s] += dkb * Ws[tw(i, c)];
                    uint o = vrow(i) * p.dk + col;
                    dkh[o] = uint16_t(bf16_bits(dkb * be[s] + t + bf16_float(uint(dkh[o]))));
                }
            }
        }
        barrier();
        // Reductions over the invocations that share a row (or a column):
        // Ws[0..1023] row sums of U*M by aj, [1024..2047] column sums by ai,
        // [2048..2559] dbeta and [2560..3071] dg partials by cj.
        float rs[4] = float[4](0.0, 0.0, 0.0, 0.0), cs[4] = float[4](0.0, 0.0, 0.0, 0.0);
        for (uint q = 0u; q < 4u; q++)
            for (uint r = 0u; r < 4u; r++) {
                uint i = ai + 16u * q;
                float um = T[q][r] * (dA[q][r] * (i < nv ? beta[vrow(i)] : 0.0));
                rs[q] += um, cs[r] += um;
            }
        for (uint q = 0u; q < 4u; q++) {
            Ws[aj * BT + ai + 16u * q] = rs[q];
            Ws[1024u + ai * BT + aj + 16u * q] = cs[q];
        }
        for (uint s = 0u; s < 2u; s++) {
            Ws[2048u + cj * BT + ri + 32u * s] = db[s];
            Ws[2560u + cj * BT + ri + 32u * s] = dgp[s];
        }
        barrier();
        if (lid < nv) {
            float sb = 0.0, sg = 0.0, sr = 0.0, sc = 0.0;
            for (uint x = 0u; x < 8u; x++) sb += Ws[2048u + x * BT + lid], sg += Ws[2560u + x * BT + lid];
            for (uint x = 0u; x < 16u; x++) sr += Ws[x * BT + lid], sc += Ws[1024u + x * BT + lid];
            dbeta[vrow(lid)] = sb;
            dg[vrow(lid)] = sg + (sr - sc);
        }
        barrier();
    }
}
#endif
