// The index after i in a grid-stride loop over [0, n): i + stride, or n where
// that reaches n, so the index never wraps past 2^32 (n above 2^31, where
// i + stride would wrap to an element done already and the loop go on).
uint kv_next(uint i, uint stride, uint n)
{
    return stride < n - i ? i + stride : n;
}
