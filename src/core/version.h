#ifndef KV_VERSION_H
#define KV_VERSION_H
#define KV_VERSION "0.1.0"
#endif
