// Tensors read through device addresses (KV_ADDR): the build of a stage for
// tensors longer than a binding reaches (maxStorageBufferRange;
// pipeline/addr.h). The stage's bindings become 64-bit addresses at the
// start of its push constants, in binding order, and its own push constants
// follow; the shader names each tensor's elements by one macro in both
// builds (X[i]: a bound buffer's array, or p.x.v[i] here). Its access
// chains become 64-bit pointer arithmetic in the runner's rewrite
// (src/spirv/spirv_addr.c), since drivers make an access chain's byte offset
// in 32 bits: so a tensor may be as large as the device's buffers.
#extension GL_EXT_buffer_reference : require
layout(buffer_reference, std430, buffer_reference_align = 4) buffer KvF32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer KvVec4 { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer KvU32 { uint v[]; };
