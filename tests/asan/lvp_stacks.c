/* Test support for the AddressSanitizer build (tests/CMakeLists.txt): keeps
 * lavapipe's coroutine frames, which it allocates and frees for every
 * workgroup of a shader with barriers, in a pool of reused blocks.
 *
 * The frames are 128 KiB and more, past the sanitizer's pooled sizes: under
 * AddressSanitizer each one is an mmap, a page fault per page and a munmap
 * (with its TLB shootdown) where glibc reuses the same memory, so that a
 * sweep on lavapipe spends most of its time in the kernel (rmsnorm-bwd's
 * sweep: 10 times its optimized time). Preloaded before lavapipe, this
 * library serves the posix_memalign calls that lavapipe's JIT-compiled code
 * makes (a call whose caller is called from code outside every loaded object:
 * the coroutine's frame) from blocks it keeps, and every other allocation
 * goes to the sanitizer as before. The library is built without the
 * sanitizers; kverify's own memory is checked as before: only lavapipe's
 * frames, memory the sanitizer never checked an access to, come from here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define REGION ((size_t)1 << 30) /* reserved once, pages touched as used */
#define MIN_FRAME ((size_t)128 << 10)
#define MAX_FRAME ((size_t)16 << 20)
#define CLASSES 256
#define SITES 64

struct block {
    struct block *next;
};
struct size_class {
    size_t size;
    struct block *free;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *region, *region_end, *bump;
static struct size_class classes[CLASSES];
static unsigned long served, made; /* frames served, blocks made (under the lock) */
static struct {
    void *ra;
    int jit;
} sites[SITES];
static int (*real_memalign)(void **, size_t, size_t);
static void (*real_free)(void *);

/* The region is mapped by the system call itself, not through the
 * sanitizer's mmap: it knows nothing of it, and touches no shadow for it. */
__attribute__((constructor)) static void init(void)
{
    real_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    long p = syscall(SYS_mmap, NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != -1) region = bump = (char *)p, region_end = region + REGION;
}

/* KV_LVP_STACKS_STATS set: one line at exit, how many frames came from the
 * pool and in how many blocks (tests/cli/lvp_stacks.sh reads it). */
__attribute__((destructor)) static void stats(void)
{
    const char *on = getenv("KV_LVP_STACKS_STATS");
    if (!on || !*on) return;
    char line[96];
    const int n = snprintf(line, sizeof line, "lvp_stacks: %lu frames served from %lu blocks\n", served, made);
    if (n > 0) (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Whether the posix_memalign call returning to ra is a coroutine frame's:
 * past the frames of ra's object (lavapipe), the stack holds code in no
 * loaded object (lavapipe's JIT). Decided once per call site; backtrace
 * runs outside the lock (it may load libgcc_s). */
static int jit_site(void *ra)
{
    pthread_mutex_lock(&lock);
    int known = -1;
    for (int i = 0; i < SITES && sites[i].ra; i++)
        if (sites[i].ra == ra) known = sites[i].jit;
    pthread_mutex_unlock(&lock);
    if (known >= 0) return known;
    void *f[8];
    Dl_info caller, at;
    const int n = backtrace(f, 8); /* the sanitizer's backtrace: its frames come first */
    int i = 0, jit = 0;
    while (i < n && f[i] != ra) i++;
    if (i < n && dladdr(ra, &caller)) {
        while (i < n && dladdr(f[i], &at) && at.dli_fbase == caller.dli_fbase) i++;
        jit = i < n && !dladdr(f[i], &at);
    }
    pthread_mutex_lock(&lock);
    for (int k = 0; k < SITES; k++)
        if (!sites[k].ra || sites[k].ra == ra) {
            sites[k].ra = ra, sites[k].jit = jit;
            break;
        }
    pthread_mutex_unlock(&lock);
    return jit;
}

/* A free block of the size, or a new one from the region (NULL: full). */
static void *take(size_t size)
{
    size = (size + 4095) & ~(size_t)4095;
    for (int i = 0; i < CLASSES; i++) {
        struct size_class *c = &classes[i];
        if (c->size == size && c->free) {
            struct block *b = c->free;
            c->free = b->next;
            served++;
            return b;
        }
        if (!c->size) break;
    }
    if ((size_t)(region_end - bump) < size + 4096) return NULL;
    /* the block's size in the page before it, where free finds it */
    *(size_t *)bump = size;
    void *b = bump + 4096;
    bump += size + 4096;
    served++, made++;
    return b;
}

__attribute__((noinline)) int posix_memalign(void **out, size_t align, size_t size)
{
    void *ra = __builtin_return_address(0);
    if (region && size >= MIN_FRAME && size <= MAX_FRAME && align <= 4096) {
        void *b = NULL;
        if (jit_site(ra)) {
            pthread_mutex_lock(&lock);
            b = take(size);
            pthread_mutex_unlock(&lock);
        }
        if (b) return *out = b, 0;
    }
    if (!real_memalign) real_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    return real_memalign(out, align, size);
}

void free(void *p)
{
    if ((char *)p >= region && (char *)p < region_end) {
        const size_t size = *(size_t *)((char *)p - 4096);
        pthread_mutex_lock(&lock);
        for (int i = 0; i < CLASSES; i++) {
            struct size_class *c = &classes[i];
            if (!c->size) c->size = size;
            if (c->size == size) {
                ((struct block *)p)->next = c->free, c->free = p;
                break;
            }
        }
        pthread_mutex_unlock(&lock);
        return;
    }
    if (!real_free) {
        /* dlsym frees its own error state: while it looks the name up (the
         * sanitizer's start-up, before init), those frees are dropped */
        static int resolving;
        if (__atomic_exchange_n(&resolving, 1, __ATOMIC_ACQ_REL)) return;
        void (*f)(void *) = (void (*)(void *))dlsym(RTLD_NEXT, "free");
        __atomic_store_n(&real_free, f, __ATOMIC_RELEASE);
        __atomic_store_n(&resolving, 0, __ATOMIC_RELEASE);
    }
    real_free(p);
}
