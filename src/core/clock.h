/* Milliseconds on the monotonic clock: only differences mean anything. */
#ifndef KV_CLOCK_H
#define KV_CLOCK_H

double kv_now_ms(void);

#endif
