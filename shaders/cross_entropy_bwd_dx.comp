#version 450
// cross-entropy-bwd stage dx (cross_entropy_bwd.kernel.json): f32 logits in,
// f32 dlogits out; the row kernel is cross_entropy_bwd.glsl.
#define KV_WG 256
layout(local_size_x = KV_WG) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer L { int labels[]; };
layout(std430, set = 0, binding = 2) readonly buffer N { float valid[]; };
layout(std430, set = 0, binding = 3) writeonly buffer DX { float dx[]; };
layout(push_constant) uniform Push { uint rows; uint classes; int ignore_index; float smoothing; } p;

#define LOAD(i) x[i]
#define STORE(i, v) dx[i] = (v)
#include "reduce.glsl"
#include "cross_entropy_bwd.glsl"

void main() { ce_rows(); }
