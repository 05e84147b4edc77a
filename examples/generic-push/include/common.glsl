// Shared by the shaders of this style: one push block for every operator
// (row length, row count and two float parameters), and the arithmetic type.
#ifndef COMMON_GLSL
#define COMMON_GLSL
layout(push_constant) uniform Params {
    uint KX;      // elements per row
    uint KY;      // rows
    float param1; // the operator's first parameter (here: eps)
    float param2;
} p;
#define FLOAT_TYPE float
#endif
