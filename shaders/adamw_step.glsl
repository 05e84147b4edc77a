// adamw-step's update, shared by the f32 and bf16-parameter stages: the
// including shader defines PLOAD(i) and PSTORE(i, v) for the parameters and
// binds g, m, v, m_out, v_out and the push block. PyTorch's single-tensor
// AdamW (torch.optim.AdamW, foreach=False), step by step:
//   p  = p * decay                                   (param.mul_(1 - lr * weight_decay))
//   m' = m + omb1 * (g - m)                          (exp_avg.lerp_(grad, 1 - beta1))
//   v' = v * beta2 + omb2 * g * g                    (exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2))
//   p' = p - step_size * (m' / (sqrt(v') / bc2_sqrt + eps))   (param.addcdiv_(exp_avg, denom, -step_size))
// with decay = 1 - lr * weight_decay, omb1 = 1 - beta1, omb2 = 1 - beta2,
// step_size = lr / (1 - beta1^step) and bc2_sqrt = sqrt(1 - beta2^step)
// computed on the host in float64, as PyTorch computes its Python scalars
// (push constants). With coefficients = device (1), as PyTorch's fused kernel
// (fused=True) computes them instead, in f32 on the device:
//   p  = p - lr * weight_decay * p,  m' = beta1 m + (1 - beta1) g,
//   v' = beta2 v + (1 - beta2) g g,  p' = p - step_size_d * m' / (sqrt(v') / bc2_sqrt_d + eps)
// with the bias corrections from pow(beta, step) in f32. Elementwise, grid-strided.
#include "grid.glsl"

void adamw()
{
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i = kv_next(i, stride, p.n)) {
        const float gi = g[i];
        if (p.coefficients == 0u) {
            const float mi = m[i] + p.omb1 * (gi - m[i]);
            const float vi = v[i] * p.beta2 + p.omb2 * gi * gi;
            const float pi = PLOAD(i) * p.decay;
            m_out[i] = mi;
            v_out[i] = vi;
            PSTORE(i, pi - p.step_size * (mi / (sqrt(vi) / p.bc2_sqrt + p.eps)));
        } else {
            const float p0 = PLOAD(i), pi = p0 - p.lr * p.weight_decay * p0;
            const float mi = p.beta1 * m[i] + (1.0 - p.beta1) * gi;
            const float vi = p.beta2 * v[i] + (1.0 - p.beta2) * gi * gi;
            const float ss = p.lr / (1.0 - pow(p.beta1, float(p.step))), b2s = sqrt(1.0 - pow(p.beta2, float(p.step)));
            m_out[i] = mi;
            v_out[i] = vi;
            PSTORE(i, pi - ss * mi / (sqrt(vi) / b2s + p.eps));
        }
    }
}
