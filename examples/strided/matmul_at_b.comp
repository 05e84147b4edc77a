#version 450
// C = A^T * B for row-major matrices given by element strides and offsets in
// the push constants (the style of libraries that bind whole arenas and
// address tensors inside them): A is M x K, B is M x N, C is K x N;
// C[i][j] = sum_m A[m][i] * B[m][j], one invocation per element of C, the
// tile edge a specialization constant.
layout(constant_id = 0) const uint TILE = 8;
layout(local_size_x_id = 0, local_size_y_id = 0, local_size_z = 1) in;

layout(binding = 0) readonly buffer BufA { float a[]; };
layout(binding = 1) readonly buffer BufB { float b[]; };
layout(binding = 2) writeonly buffer BufC { float c[]; };

layout(push_constant) uniform Shape {
    uint M, N, K;
    uint stride_a, stride_b, stride_c;  // elements between rows
    uint offset_a, offset_b, offset_c;  // first element of each matrix
} s;

void main() {
    const uint j = gl_GlobalInvocationID.x; // column of C
    const uint i = gl_GlobalInvocationID.y; // row of C
    if (i >= s.K || j >= s.N) {
        return;
    }
    float acc = 0.0;
    for (uint m = 0u; m < s.M; m++) {
        acc += a[s.offset_a + m * s.stride_a + i] * b[s.offset_b + m * s.stride_b + j];
    }
    c[s.offset_c + i * s.stride_c + j] = acc;
}
