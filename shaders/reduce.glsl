// Workgroup-wide float sum over a 1-D workgroup of KV_WG invocations (a power
// of two). The including shader defines KV_WG and declares local_size_x = KV_WG.
// With KV_SUBGROUP the sum goes through subgroupAdd and one shared slot per
// subgroup, which subgroup 0 adds in order and hands out through one more
// slot (one shared read per invocation: on CPU devices each is a loop over
// lanes); without it, a shared-memory tree. Every invocation gets the same
// value. Call it from uniform control flow (it contains barriers).
#ifdef KV_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

shared float kv_red[KV_WG];
#ifdef KV_SUBGROUP
// The workgroup's value. Reuse needs no third barrier: the next call writes
// kv_red after this call's second barrier (subgroup 0 has read it), and
// kv_all after its own first one (every invocation has read it).
shared float kv_all;
#endif

float kv_wg_sum(float v)
{
#ifdef KV_SUBGROUP
    float s = subgroupAdd(v);
    if (subgroupElect()) kv_red[gl_SubgroupID] = s;
    barrier();
    if (gl_SubgroupID == 0u) {
        float t = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; i++) t += kv_red[i];
        if (subgroupElect()) kv_all = t;
    }
    barrier();
    return kv_all;
#else
    uint i = gl_LocalInvocationIndex;
    kv_red[i] = v;
    barrier();
    for (uint s = uint(KV_WG) / 2u; s > 0u; s >>= 1u) {
        if (i < s) kv_red[i] += kv_red[i + s];
        barrier();
    }
    float t = kv_red[0];
    barrier();
    return t;
#endif
}

// Workgroup-wide float max, the same way (and the same shared slots) as
// kv_wg_sum; a NaN goes as GLSL's max takes it. Every invocation gets it.
float kv_wg_max(float v)
{
#ifdef KV_SUBGROUP
    float s = subgroupMax(v);
    if (subgroupElect()) kv_red[gl_SubgroupID] = s;
    barrier();
    if (gl_SubgroupID == 0u) {
        float t = kv_red[0];
        for (uint i = 1u; i < gl_NumSubgroups; i++) t = max(t, kv_red[i]);
        if (subgroupElect()) kv_all = t;
    }
    barrier();
    return kv_all;
#else
    uint i = gl_LocalInvocationIndex;
    kv_red[i] = v;
    barrier();
    for (uint s = uint(KV_WG) / 2u; s > 0u; s >>= 1u) {
        if (i < s) kv_red[i] = max(kv_red[i], kv_red[i + s]);
        barrier();
    }
    float t = kv_red[0];
    barrier();
    return t;
#endif
}
