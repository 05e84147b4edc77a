// adamw-step's update, shared by the f32 and bf16-parameter stages: the
// including shader defines PLOAD(i) and PSTORE(i, v) for the parameters and
// binds g, m, v, m_out, v_out and the push block. PyTorch's single-tensor
// AdamW (torch.optim.AdamW, foreach=False), step by step:
//   p  = p * (1 - lr * weight_decay)
//   m' = m + (1 - beta1) * (g - m)                  (exp_avg.lerp_(grad, 1 - beta1))
//   v' = v * beta2 + (1 - beta2) * g * g            (exp_avg_sq.mul_(beta2).addcmul_(...))
//   p' = p - step_size * m' / (sqrt(v') / bc2_sqrt + eps)
// with step_size = lr / (1 - beta1^step) and bc2_sqrt = sqrt(1 - beta2^step)
// computed on the host in float64 (push constants). Elementwise, grid-strided.
void adamw()
{
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        const float gi = g[i];
        const float mi = m[i] + (1.0 - p.beta1) * (gi - m[i]);
        const float vi = v[i] * p.beta2 + (1.0 - p.beta2) * gi * gi;
        const float pi = PLOAD(i) * (1.0 - p.lr * p.weight_decay);
        m_out[i] = mi;
        v_out[i] = vi;
        PSTORE(i, pi - p.step_size * mi / (sqrt(vi) / p.bc2_sqrt + p.eps));
    }
}
