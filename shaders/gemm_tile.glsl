// Tiled product OUT[r, c] = sum_l X(r, l) * Y(l, c) for r < ROWS, c < COLS,
// l < RED, accumulated in f32. The including shader defines:
//   KV_X(r, l), KV_Y(l, c)  element loads (transposes happen here, in place)
//   KV_STORE(r, c, v)       the store of one result
//   ROWS, COLS, RED         the extents (uints)
// A workgroup of T x T invocations owns a T x T output tile and walks the
// reduction in steps of T through two shared tiles; tails are masked with
// zeros, so every extent >= 1 works. Output tiles are grid-strided.
#define T 16
layout(local_size_x = T, local_size_y = T) in;

shared float tx[T][T + 1];
shared float ty[T][T + 1];

void kv_gemm()
{
    uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
    uint tiles_c = (COLS + T - 1u) / T, tiles_r = (ROWS + T - 1u) / T;
    uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; tile < tiles_r * tiles_c;
         tile += groups) {
        uint r0 = (tile / tiles_c) * T, c0 = (tile % tiles_c) * T;
        uint r = r0 + ly, c = c0 + lx;
        float acc = 0.0;
        for (uint l0 = 0u; l0 < RED; l0 += T) {
            // tx[row][l]: X rows r0.., columns l0..; ty[l][col]: Y rows l0.., columns c0..
            uint xr = r0 + ly, xl = l0 + lx, yl = l0 + ly, yc = c0 + lx;
            tx[ly][lx] = (xr < ROWS && xl < RED) ? KV_X(xr, xl) : 0.0;
            ty[ly][lx] = (yl < RED && yc < COLS) ? KV_Y(yl, yc) : 0.0;
            barrier();
            for (uint l = 0u; l < T; l++) acc += tx[ly][l] * ty[l][lx];
            barrier();
        }
        if (r < ROWS && c < COLS) KV_STORE(r, c, acc);
    }
}
