/* --save DIR: everything needed to re-check or reproduce a case, as files:
 *   DIR/<case>/inputs/<name>.npy and params.json (--inputs DIR/<case>/inputs
 *                      reproduces the case)
 *   DIR/<case>/device/<output>.npy, <output>.chained.npy (the output's dtype;
 *                      bf16 as u2 bit patterns)
 *   DIR/<case>/oracle/<output>.npy (float64, the spec oracle)
 *   DIR/<case>/report.json (this case alone)
 * With --save-format safetensors the tensors go to three files instead, with
 * the kernel, its parameters and the seed in each file's __metadata__:
 *   DIR/<case>/inputs.safetensors (--inputs reproduces the case)
 *   DIR/<case>/device.safetensors (outputs in their dtypes, bf16 as BF16;
 *                      OUTPUT.chained for chained results)
 *   DIR/<case>/oracle.safetensors (F64; OUTPUT.exact for the exact oracle)
 * <case> is the case name with every character outside [A-Za-z0-9._=,+-]
 * replaced by '_'. */
#ifndef KV_SAVE_H
#define KV_SAVE_H

#include "kernels/kernel.h"
#include "reports/report.h"

enum { KV_SAVE_NPY, KV_SAVE_SAFETENSORS };

void kv_safe_name(const char *name, char *out, size_t size);
/* Create dir (and its parent) if missing; KV_EUSAGE when it cannot be made. */
enum kv_status kv_mkdir_p(const char *dir);
/* Whether dir exists as a folder or can be made (the deepest part of its
 * path that exists is a folder kverify may write): KV_EUSAGE, naming the
 * part, where not. Nothing is created: a case's files make it (kv_save_case),
 * so a run refused before its first case leaves nothing behind. */
enum kv_status kv_dir_makeable(const char *dir);
/* chained[t] is the chained device output of t or NULL; ran[t] says whether
 * the device produced t. Sets res->saved. */
enum kv_status kv_save_case(const char *dir, int format, const struct kv_case *c, void *const *chained, const int *ran,
                            const struct kv_vk_info *dev, struct kv_case_result *res);

#endif
