#version 450
// The probe of a cap on loop iterations (src/vk/loop_cap.c): one invocation
// runs a loop of p.n iterations, whose trip count the compiler cannot know and
// whose body it cannot fold (a linear congruential step), and writes how many
// it ran (i, which leaves the loop at p.n, or where the device cut it short:
// Mesa's llvmpipe stops every loop of an invocation after 65535 iterations in
// all) and the step's value, which keeps the loop alive and tells the host the loop
// ran as many iterations as it counted (src/vk/loop_cap.c checks it).
layout(local_size_x = 1) in;
layout(std430, binding = 0) writeonly buffer OUT { uint outv[]; };
layout(push_constant) uniform Push { uint n; } p;

void main()
{
    uint i = 0u, x = 1u;
    for (; i < p.n; i++) x = x * 1664525u + 1013904223u;
    outv[0] = i;
    outv[1] = x;
}
