/* SPIRV-Tools' validator, for the unit tests of kverify's SPIR-V rewrites
 * (the sanitizer's instrumentation, the address build), and a count of a
 * module's loops. Include after cmocka.h and spirv-tools/libspirv.h. */
#ifndef KV_SPV_VALID_H
#define KV_SPV_VALID_H

#include <stdio.h>

/* Whether the validator accepts the n words at w in ctx's environment; its
 * message in why (size bytes) where why is given. */
static inline int kv_spv_valid(spv_context ctx, const uint32_t *w, size_t n, char *why, size_t size)
{
    spv_diagnostic diag = NULL;
    spv_const_binary_t bin = {w, n};
    spv_validator_options opts = spvValidatorOptionsCreate();
    spv_result_t r = spvValidateWithOptions(ctx, opts, &bin, &diag);
    if (why) snprintf(why, size, "%s", diag && diag->error ? diag->error : "");
    spvDiagnosticDestroy(diag);
    spvValidatorOptionsDestroy(opts);
    return r == SPV_SUCCESS;
}

/* The structured loops of the n words at w (their OpLoopMerge), and into
 * unrolled how many of them carry the Unroll hint. */
static inline int kv_spv_loops(const uint32_t *w, size_t n, int *unrolled)
{
    int k = 0;
    for (size_t i = 5; i < n && (w[i] >> 16); i += w[i] >> 16)
        if ((w[i] & 0xffffu) == 246) k++, *unrolled += (w[i + 3] & 1u) != 0; /* OpLoopMerge; LoopControl Unroll */
    return k;
}

#endif
