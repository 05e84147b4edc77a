/* SPIRV-Tools' validator, for the unit tests of kverify's SPIR-V rewrites
 * (the sanitizer's instrumentation, the address build). Include after
 * cmocka.h and spirv-tools/libspirv.h. */
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

#endif
