// qdq-affine codes: one byte per element, little-endian within words. With
// KV_INT8 (8-bit storage buffers) they are read four at a time as a u8vec4
// and written byte by byte; without it (the packed fallback) they are read
// and written as whole words, each word by the one invocation that owns its
// four elements. The includer defines CODES_BINDING and CODES_WRITE (init)
// or not (the stages that read codes).
#ifdef KV_INT8
#extension GL_EXT_shader_8bit_storage : require
#ifdef CODES_WRITE
layout(std430, binding = CODES_BINDING) writeonly buffer Q1 { uint8_t q1[]; };
void store_codes(uint e0, uvec4 q, uint valid)
{
    for (uint j = 0u; j < valid; j++) q1[e0 + j] = uint8_t(q[j]);
}
#else
layout(std430, binding = CODES_BINDING) readonly buffer Q4 { u8vec4 q4[]; };
uvec4 load_codes(uint quad) { return uvec4(q4[quad]); }
#endif
#else
#ifdef CODES_WRITE
layout(std430, binding = CODES_BINDING) writeonly buffer QW { uint qw[]; };
void store_codes(uint e0, uvec4 q, uint valid)
{
    // Bytes past the end of the last word are padding (not guard words).
    qw[e0 / 4u] = q.x | (q.y << 8) | (q.z << 16) | (q.w << 24);
}
#else
layout(std430, binding = CODES_BINDING) readonly buffer QW { uint qw[]; };
uvec4 load_codes(uint quad)
{
    uint w = qw[quad];
    return uvec4(w, w >> 8, w >> 16, w >> 24) & 255u;
}
#endif
#endif
