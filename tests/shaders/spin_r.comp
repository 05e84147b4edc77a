#version 450
// rmsnorm-bwd's r stage made to run for minutes on a CPU device (a million
// invocations of 60000 sines each, below lavapipe's loop limit of 65535): a
// submission that --timeout ends (tests/cli/bad_input.sh, suite.sh).
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer XB { float X[]; };
layout(std430, set = 0, binding = 1) writeonly buffer RB { float R[]; };
layout(push_constant) uniform Push { uint rows; uint dim; float eps; } p;

void main()
{
    float a = X[gl_GlobalInvocationID.x % p.dim];
    for (uint k = 0u; k < 60000u; k++) a = sin(a) + 1.0;
    if (gl_GlobalInvocationID.x < p.rows) R[gl_GlobalInvocationID.x] = a;
}
