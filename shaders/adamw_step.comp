#version 450
// adamw-step (adamw_step.kernel.json): f32 parameters and moments; the
// update is adamw_step.glsl.
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer P { float param[]; };
layout(std430, set = 0, binding = 1) readonly buffer G { float g[]; };
layout(std430, set = 0, binding = 2) readonly buffer M { float m[]; };
layout(std430, set = 0, binding = 3) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 4) writeonly buffer PO { float p_out[]; };
layout(std430, set = 0, binding = 5) writeonly buffer MO { float m_out[]; };
layout(std430, set = 0, binding = 6) writeonly buffer VO { float v_out[]; };
layout(push_constant) uniform Push {
    uint n; float lr; float beta1; float beta2; float eps; float weight_decay; uint step; uint coefficients;
    float decay; float omb1; float omb2; float step_size; float bc2_sqrt;
} p;

#define PLOAD(i) param[i]
#define PSTORE(i, x) p_out[i] = (x)
#include "adamw_step.glsl"

void main() { adamw(); }
