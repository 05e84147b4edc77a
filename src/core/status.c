#include "core/status.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char kv_msg[1024];

enum kv_status kv_verror(enum kv_status code, const char *fmt, va_list ap)
{
    /* Format aside first: callers may pass kv_error_msg() to wrap it. */
    char tmp[sizeof kv_msg];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    memcpy(kv_msg, tmp, sizeof kv_msg);
    /* Messages are one line by contract: fold anything a driver or a file
     * name smuggled in. */
    for (char *p = kv_msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    return code;
}

enum kv_status kv_error(enum kv_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kv_verror(code, fmt, ap);
    va_end(ap);
    return code;
}

const char *kv_error_msg(void) { return kv_msg; }

void kv_error_clear(void) { kv_msg[0] = '\0'; }

const char *kv_status_str(enum kv_status s)
{
    switch (s) {
    case KV_OK: return "ok";
    case KV_FAIL: return "out of tolerance";
    case KV_EUSAGE: return "usage error";
    case KV_EDATA: return "bad input data";
    case KV_EDEVICE: return "device error";
    case KV_ENODEV: return "no usable Vulkan device";
    }
    return "unknown status";
}
