// qdq-affine codes: one byte per element, little-endian within words.
// Writing (init, CODES_WRITE): with KV_INT8 (8-bit storage buffers) each code
// is stored as a byte; without it (the packed fallback) each invocation
// stores the whole word of the four elements it owns. Reading: whole words on
// every device, four codes per 32-bit load (byte loads measured slower on the
// H100: 1367 against 1512 GB/s for forward). The includer defines CODES_BINDING,
// or with KV_ADDR declares the codes' address as p.q (KvU32) before it.
#ifdef KV_ADDR
#define qw p.q.v
#define q1 KvU8(p.q).v
#endif
#ifdef CODES_WRITE
#ifdef KV_INT8
#extension GL_EXT_shader_8bit_storage : require
#ifdef KV_ADDR
layout(buffer_reference, std430, buffer_reference_align = 1) buffer KvU8 { uint8_t v[]; };
#else
layout(std430, binding = CODES_BINDING) writeonly buffer Q1 { uint8_t q1[]; };
#endif
void store_codes(uint e0, uvec4 q, uint valid)
{
    for (uint j = 0u; j < valid; j++) q1[e0 + j] = uint8_t(q[j]);
}
#else
#ifndef KV_ADDR
layout(std430, binding = CODES_BINDING) writeonly buffer QW { uint qw[]; };
#endif
void store_codes(uint e0, uvec4 q, uint valid)
{
    // Bytes past the end of the last word are padding (not guard words).
    qw[e0 / 4u] = q.x | (q.y << 8) | (q.z << 16) | (q.w << 24);
}
#endif
#else
#ifndef KV_ADDR
layout(std430, binding = CODES_BINDING) readonly buffer QW { uint qw[]; };
#endif
uvec4 unpack_codes(uint w) { return uvec4(w, w >> 8, w >> 16, w >> 24) & 255u; }
#endif
