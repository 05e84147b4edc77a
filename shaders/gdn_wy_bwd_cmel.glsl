// gdn-wy-bwd stage wy_cm, the KV_CM_EL build's helpers (included by
// gdn_wy_bwd_cm.glsl): epilogues on the lane's own accumulator elements.
// The accumulators' layout that the KV_CM_EL build is written for (the runner
// probes it: src/vk/cm_layout.c): lane 4 gq + q holds elements 2pp, 2pp + 1
// (pp = 0..3) of a 16 x 16 block at row gq + ER(pp), columns EC(pp) + 2q, + 1.
#define ER(pp) (8u * ((pp) >> 1u))
#define EC(pp) (8u * ((pp) & 1u))
#define P2_LOOP [[dont_unroll]] // pass 2's U k and U^T (k beta) loop: 122 registers, not 146

// The lane's 4 bf16 pairs w[pp] of a 16 x 16 block (rows ra + ER(pp), columns
// c0 + EC(pp) + 2q, + 1, of width D) into dk_head (out_ 0) or dv (out_ 1), rows
// past nv and columns past D left out. Aligned: lanes q and q ^ 1 swap a word
// and store 8 bytes each (q even: columns 2q .. 2q + 3; odd: 2q + 6 .. 2q + 9).
void put_pairs(uint out_, uint ra, uint q, uint c0, uint D, uint w[4], bool al)
{
    if (!al) {
        [[unroll]] for (uint pp = 0u; pp < 4u; pp++) {
            const uint r = ra + ER(pp), c = c0 + EC(pp) + 2u * q, o = vrow(r) * D + c;
            for (uint e = 0u; e < 2u && r < nv && c + e < D; e++)
                if (out_ == 0u) dkh[o + e] = uint16_t(w[pp] >> (16u * e)); else dvo[o + e] = uint16_t(w[pp] >> (16u * e));
        }
        return;
    }
    [[unroll]] for (uint h2 = 0u; h2 < 2u; h2++) {
        const bool ev = (q & 1u) == 0u;
        const uint got = subgroupShuffleXor(ev ? w[2u * h2 + 1u] : w[2u * h2], 1u);
        const uint r = ra + 8u * h2, c = c0 + (ev ? 2u * q : 2u * q + 6u);
        if (r < nv && c < D) {
            const uvec2 v2 = ev ? uvec2(w[2u * h2], got) : uvec2(got, w[2u * h2 + 1u]);
            const uint o = (vrow(r) * D + c) / 4u;
            if (out_ == 0u) dkh2[o] = v2; else dv2[o] = v2;
        }
    }
}

// Lane l's share of the sums s[h2] kept by the quad of row i = 16 rt + l / 2
// (gq = (l / 2) % 8, h2 = l / 16): those of its lanes 2 (l % 2) and 2 (l % 2) + 1,
// so that the row's two lanes together hold the whole.
float row_share(float s[2], uint lane)
{
    float S = 0.0;
    [[unroll]] for (uint t = 0u; t < 2u; t++) {
        const uint src = 4u * ((lane / 2u) % 8u) + 2u * (lane % 2u) + t;
        const float a0 = subgroupShuffle(s[0], src), a1 = subgroupShuffle(s[1], src);
        S += lane >= 16u ? a1 : a0;
    }
    return S;
}

// The two bf16 of dk_head (pass 1's) at row r, columns col, col + 1 (col even); zeros past nv and K.
uint dkh_pair(uint r, uint col, bool al)
{
    if (r >= nv || col >= p.dk) return 0u;
    const uint o = vrow(r) * p.dk + col;
    if (al) return dkh4[o / 2u];
    return uint(dkh[o]) | (col + 1u < p.dk ? uint(dkh[o + 1u]) << 16 : 0u);
}

// The lane's 8 values of a 16 x 16 block (rows ra + ER(pp), columns 16 cb + EC(pp) + 2q,
// + 1) as bf16 pairs at their places in w_s, or in x_s (to_x).
void put_el8(float v[8], uint ra, uint q, uint cb, bool to_x)
{
    uint w[4];
    pack8v(v, w);
    [[unroll]] for (uint pp = 0u; pp < 4u; pp++) {
        const uint r = ra + ER(pp), c = 16u * cb + EC(pp) + 2u * q;
        if (to_x) x_s[r * ROWQ + c / 8u][q] = w[pp]; else w_s[r * ROWQ + c / 8u][q] = w[pp];
    }
}
