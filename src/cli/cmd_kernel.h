/* The options of a kernel command (`kverify KERNEL ...`, and each entry of
 * a suite): parsing them into a job's options, and checking the report paths. */
#ifndef KV_CMD_KERNEL_H
#define KV_CMD_KERNEL_H

#include "pipeline/jobs.h"

enum kv_status kv_kopts_parse(const struct kv_kernel *k, int argc, char **argv, struct kopts *o, int *help);
/* --shader STAGE=FILE into run->shader (kernel commands and kverify mutate). */
enum kv_status kv_shader_option(const struct kv_kernel *k, const char *arg, struct kv_run_opts *run);
/* --device SEL: the device; repeated, a list of them (all run, side by side). */
enum kv_status kv_device_option(const char *arg, struct kv_outputs *out);
/* --timeout S into out (kverify KERNEL and kverify run). */
enum kv_status kv_timeout_option(const char *arg, struct kv_outputs *out);
/* Check the report paths before any work: writable directories, at most one on stdout. */
enum kv_status kv_outputs_check(const struct kv_outputs *o);

#endif
