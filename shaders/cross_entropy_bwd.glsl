// cross-entropy-bwd's row kernel, shared by the f32 and bf16 stages: the
// including shader defines LOAD(i) (logit i as a float), STORE(i, v) and
// binds labels, valid and the push block {rows, classes, ignore_index,
// smoothing}. Per row r with label y (rows whose label is ignore_index get 0):
//   p = softmax(x[r, :]),  dx[r, c] = (p[c] - (1 - e) [c == y] - e / classes) / valid,
// PyTorch's gradient of the mean cross-entropy with label smoothing e.
// One workgroup per row, rows grid-strided; max and sum through shared memory.
#ifdef KV_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

shared float kv_mx[KV_WG];

float wg_max(float v)
{
#ifdef KV_SUBGROUP
    float s = subgroupMax(v);
    if (subgroupElect()) kv_mx[gl_SubgroupID] = s;
    barrier();
    float t = kv_mx[0];
    for (uint i = 1u; i < gl_NumSubgroups; i++) t = max(t, kv_mx[i]);
    barrier();
    return t;
#else
    uint i = gl_LocalInvocationIndex;
    kv_mx[i] = v;
    barrier();
    for (uint s = uint(KV_WG) / 2u; s > 0u; s >>= 1u) {
        if (i < s) kv_mx[i] = max(kv_mx[i], kv_mx[i + s]);
        barrier();
    }
    float t = kv_mx[0];
    barrier();
    return t;
#endif
}

void ce_rows()
{
    for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
        const uint base = row * p.classes;
        const int y = labels[row];
        if (y == p.ignore_index) { // uniform across the workgroup: no barrier is skipped by part of it
            for (uint c = gl_LocalInvocationID.x; c < p.classes; c += KV_WG) STORE(base + c, 0.0);
            continue;
        }
        float m = -1.0 / 0.0;
        for (uint c = gl_LocalInvocationID.x; c < p.classes; c += KV_WG) m = max(m, LOAD(base + c));
        m = wg_max(m);
        float z = 0.0;
        for (uint c = gl_LocalInvocationID.x; c < p.classes; c += KV_WG) z += exp(LOAD(base + c) - m);
        z = kv_wg_sum(z);
        const float n = valid[0], off = p.smoothing / float(p.classes);
        for (uint c = gl_LocalInvocationID.x; c < p.classes; c += KV_WG) {
            float target = (1.0 - p.smoothing) * (int(c) == y ? 1.0 : 0.0) + off;
            STORE(base + c, (exp(LOAD(base + c) - m) / z - target) / n);
        }
    }
}
