// cross-entropy-bwd's row kernel, shared by the f32 and bf16 stages: the
// including shader defines LOAD(i) (logit i as a float), STORE(i, v) and
// binds labels, valid and the push block {rows, classes, ignore_index,
// smoothing}. Per row r with label y (rows whose label is ignore_index get 0):
//   p = softmax(x[r, :]),  dx[r, c] = (p[c] - (1 - e) [c == y] - e / classes) / valid,
// PyTorch's gradient of the mean cross-entropy with label smoothing e.
// One workgroup per row, rows grid-strided; its max and sum through reduce.glsl.
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
        m = kv_wg_max(m);
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
