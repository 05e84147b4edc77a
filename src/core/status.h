/* Status codes and the error detail that travels with them.
 * A failing function returns a kv_status and leaves a one-line message in the
 * process-wide error slot (sqlite style); the caller that decides the exit code
 * prints it once. */
#ifndef KV_STATUS_H
#define KV_STATUS_H

#include <stdarg.h>

enum kv_status {
    KV_OK = 0,
    KV_FAIL = 1,      /* an output exceeded its tolerance */
    KV_EUSAGE = 2,    /* unknown flag, bad value */
    KV_EDATA = 3,     /* unreadable or malformed input data */
    KV_EDEVICE = 4,   /* device or driver error: OOM, device lost, pipeline failure */
    KV_ENODEV = 77,   /* no usable Vulkan device */
};

/* Record a formatted message for the current error; returns code so callers can
 * write `return kv_error(KV_EUSAGE, "...")`. A later call replaces the message. */
enum kv_status kv_error(enum kv_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
enum kv_status kv_verror(enum kv_status code, const char *fmt, va_list ap);
/* The last recorded message (static storage, never NULL). */
const char *kv_error_msg(void);
void kv_error_clear(void);
/* Short name of a status code ("usage error", ...). */
const char *kv_status_str(enum kv_status s);

/* Evaluate expr; on a non-OK status jump to cleanup with st set. Needs `st`
 * and a `cleanup:` label in scope. */
#define KV_TRY(expr)                                                         \
    do {                                                                     \
        st = (expr);                                                         \
        if (st != KV_OK) goto cleanup;                                       \
    } while (0)

/* Evaluate expr; return a non-OK status at once (functions with nothing to
 * clean up). */
#define KV_TRY_RET(expr)                                                     \
    do {                                                                     \
        enum kv_status try_st_ = (expr);                                     \
        if (try_st_ != KV_OK) return try_st_;                                \
    } while (0)

/* If cond is false, record the message and jump to cleanup with st = code. */
#define KV_CHECK(cond, code, ...)                                            \
    do {                                                                     \
        if (!(cond)) {                                                       \
            st = kv_error((code), __VA_ARGS__);                              \
            goto cleanup;                                                    \
        }                                                                    \
    } while (0)

#endif
