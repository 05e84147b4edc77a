#version 450
// cross-entropy-bwd stage count (cross_entropy_bwd.kernel.json): the rows whose
// label is not ignore_index, as a float (exact below 2^24 rows): the mean's
// divisor. One workgroup, rows strided by its invocations.
#define KV_WG 256
layout(local_size_x = KV_WG) in;

layout(std430, set = 0, binding = 0) readonly buffer L { int labels[]; };
layout(std430, set = 0, binding = 1) writeonly buffer N { float valid[]; };
layout(push_constant) uniform Push { uint rows; int ignore_index; } p;

#include "reduce.glsl"

void main()
{
    float n = 0.0;
    for (uint r = gl_LocalInvocationID.x; r < p.rows; r += KV_WG) n += labels[r] == p.ignore_index ? 0.0 : 1.0;
    const float t = kv_wg_sum(n);
    if (gl_LocalInvocationID.x == 0u) valid[0] = t;
}
