#version 450
// Built with and without KV_INT8 (8-bit storage): see qdq_codes.glsl.
// qdq-affine init. Per group: lo, hi over its finite values; s = (hi - lo)/N,
// replaced by 1 when it is not a normal number; b = lo; codes
// q = clamp(round_half_away((w - b)/s), 0, N), so +-Inf clip to N and 0. A
// group with NaN, with no finite value, or whose hi - lo overflows gets
// s = b = NaN and codes 0. Non-finite values are recognised by their bits,
// never by float comparisons, and never reach the integer conversion.
// A workgroup takes tiles of 1024 elements, 4 per invocation; group_size
// (a power of two <= 1024) divides 1024, so groups never straddle tiles.
layout(local_size_x = 256) in;

#ifdef KV_ADDR
#include "addr.glsl"
layout(push_constant) uniform Push { KvF32 w, s, b; KvU32 q; uint groups; uint group_size; uint bits; } p;
#define w4 KvVec4(p.w).v
#define w1 p.w.v
#define scales p.s.v
#define biases p.b.v
#define CODES_WRITE
#include "qdq_codes.glsl"
#else
layout(std430, binding = 0) readonly buffer W4 { vec4 w4[]; };
layout(std430, binding = 0) readonly buffer W1 { float w1[]; };
layout(std430, binding = 1) writeonly buffer S { float scales[]; };
layout(std430, binding = 2) writeonly buffer B { float biases[]; };
#define CODES_BINDING 3
#define CODES_WRITE
#include "qdq_codes.glsl"
layout(push_constant) uniform Push { uint groups; uint group_size; uint bits; } p;
#endif

const uint F_NAN = 1u, F_FINITE = 2u;
shared float s_lo[256], s_hi[256];
shared uint s_fl[256];

uint flags_of(float v)
{
    uint u = floatBitsToUint(v);
    if ((u & 0x7F800000u) != 0x7F800000u) return F_FINITE;
    return (u & 0x007FFFFFu) != 0u ? F_NAN : 0u;
}

void main()
{
    const float FMAX = uintBitsToFloat(0x7F7FFFFFu), FMIN = uintBitsToFloat(0x00800000u);
    const float QNAN = uintBitsToFloat(0x7FC00000u);
    uint n = p.groups * p.group_size, N = (1u << p.bits) - 1u, lid = gl_LocalInvocationID.x;
    uint seg = max(p.group_size / 4u, 1u); // invocations per group when group_size >= 4
    uint ntiles = (n + 1023u) / 1024u;
    for (uint tile = gl_WorkGroupID.x; tile < ntiles; tile += gl_NumWorkGroups.x) {
        uint e0 = tile * 1024u + 4u * lid;
        uint valid = e0 < n ? min(n - e0, 4u) : 0u;
        vec4 v = vec4(0.0);
        if (valid == 4u) v = w4[e0 / 4u];
        else for (uint j = 0u; j < valid; j++) v[j] = w1[e0 + j];
        // Partials: one group, or two (elements 0-1 and 2-3) when group_size is 2.
        float lo[2] = float[2](FMAX, FMAX), hi[2] = float[2](-FMAX, -FMAX);
        uint fl[2] = uint[2](0u, 0u);
        for (uint j = 0u; j < valid; j++) {
            uint h = p.group_size == 2u ? j / 2u : 0u, f = flags_of(v[j]);
            fl[h] |= f;
            if (f == F_FINITE) lo[h] = min(lo[h], v[j]), hi[h] = max(hi[h], v[j]);
        }
        if (p.group_size >= 4u) {
            s_lo[lid] = lo[0];
            s_hi[lid] = hi[0];
            s_fl[lid] = fl[0];
            barrier();
            for (uint st = seg / 2u; st > 0u; st >>= 1u) {
                if ((lid & (seg - 1u)) < st) {
                    s_lo[lid] = min(s_lo[lid], s_lo[lid + st]);
                    s_hi[lid] = max(s_hi[lid], s_hi[lid + st]);
                    s_fl[lid] |= s_fl[lid + st];
                }
                barrier();
            }
            uint lead = lid & ~(seg - 1u);
            lo[0] = s_lo[lead];
            hi[0] = s_hi[lead];
            fl[0] = s_fl[lead];
            barrier(); // the next tile reuses the arrays
        }
        float s[2], b[2];
        bool poison[2];
        for (uint h = 0u; h < 2u; h++) {
            float r = hi[h] - lo[h];
            poison[h] = (fl[h] & F_NAN) != 0u || (fl[h] & F_FINITE) == 0u || (flags_of(r) & F_FINITE) == 0u;
            float sc = r / float(N);
            if (!(sc >= FMIN)) sc = 1.0;
            s[h] = sc;
            b[h] = lo[h];
        }
        uint nh = p.group_size == 2u ? 2u : 1u;
        bool leader = p.group_size == 2u || (lid & (seg - 1u)) == 0u;
        for (uint h = 0u; h < nh; h++) {
            uint e = e0 + 2u * h;
            if (leader && e < n) {
                uint g = e / p.group_size;
                scales[g] = poison[h] ? QNAN : s[h];
                biases[g] = poison[h] ? QNAN : b[h];
            }
        }
        uvec4 q = uvec4(0u);
        for (uint j = 0u; j < valid; j++) {
            uint h = p.group_size == 2u ? j / 2u : 0u;
            if (poison[h]) continue;
            float z = (v[j] - b[h]) / s[h];
            z = clamp(z, 0.0, float(N));
            float t = floor(z);
            q[j] = uint(t) + (z - t >= 0.5 ? 1u : 0u);
        }
        if (valid > 0u) store_codes(e0, q, valid);
    }
}
