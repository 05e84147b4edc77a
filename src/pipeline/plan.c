#include "pipeline/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "pipeline/abi_stage.h"
#include "pipeline/addr.h"
#include "pipeline/chains.h"

static size_t round4(size_t n) { return (n + 3) & ~(size_t)3; }

/* Whether every tensor is staged whole in up and down (neither streamed nor direct). */
static int staged(const struct kv_plan *p) { return !p->streamed && !p->direct; }

/* The products that --abi stages bind, computed on the host and uploaded
 * like inputs (with a poisoned tail). */
static enum kv_status make_products(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, size_t *up,
                                    struct kv_tensor *host)
{
    enum kv_status st = KV_OK;
    for (int s = 0; s < r->k->n_stages; s++)
        for (int i = 0; r->abi[s] && i < r->abi[s]->n_bindings; i++) {
            const struct kv_abi_binding *b = &r->abi[s]->b[i];
            if (b->tensor >= 0) continue;
            struct kv_tensor *h = &host[s * KV_ABI_MAX + i];
            KV_TRY(kv_abi_product(c, b, h));
            size_t bytes = kv_tensor_bytes(h);
            KV_TRY(kv_vk_buffer_create(r->d, round4(bytes) + 2 * kv_poison_bytes(bytes), KV_MEM_DEVICE,
                                       &p->product[s][i]));
            p->product_bytes[s][i] = bytes;
            p->product_off[s][i] = *up;
            *up += round4(bytes);
        }
cleanup:
    return st;
}

/* Whether every buffer the transfers touch is mapped (a CPU device's memory). */
static int all_mapped(const struct kv_kernel *k, const struct kv_plan *p)
{
    for (int t = 0; t < k->n_tensors; t++)
        if ((p->dev[t].buf && !p->dev[t].map) || (p->iso[t].buf && !p->iso[t].map) ||
            (p->chain[t].buf && !p->chain[t].map))
            return 0;
    for (int s = 0; s < KV_MAX_STAGES; s++)
        for (int i = 0; i < KV_ABI_MAX; i++)
            if (p->product[s][i].buf && !p->product[s][i].map) return 0;
    return 1;
}

/* A direct or streamed plan's staging: bounded, or none; the downloads land
 * in host memory, and the products are kept for the uploads at each run. */
static enum kv_status bounded_staging(struct kv_vk_device *d, const struct kv_kernel *k, struct kv_plan *p, size_t up,
                                      size_t down, struct kv_tensor *prod)
{
    enum kv_status st = KV_OK;
    const size_t stage = p->direct ? 4 : kv_stage_bytes();
    KV_TRY(kv_vk_buffer_create(d, up < stage ? (up ? up : 4) : stage, KV_MEM_UPLOAD, &p->up));
    KV_TRY(kv_vk_buffer_create(d, down < stage ? (down ? down : 4) : stage, KV_MEM_READBACK, &p->down));
    for (int t = 0; p->streamed && t < k->n_tensors; t++)
        for (int ch = 0; ch < 2; ch++) {
            const struct kv_vk_buffer *b = ch ? &p->chain[t] : &p->dev[t];
            if (k->tensors[t].role != KV_OUTPUT || !b->buf) continue;
            p->host_down[t][ch] = kv_malloc_big(b->size);
            KV_CHECK(p->host_down[t][ch], KV_EDEVICE, "out of host memory for the download of %s", k->tensors[t].name);
        }
    if (prod) {
        memcpy(p->prod_host, prod, KV_MAX_STAGES * KV_ABI_MAX * sizeof *prod);
        memset(prod, 0, KV_MAX_STAGES * KV_ABI_MAX * sizeof *prod);
    }
cleanup:
    return st;
}

/* The transfers' way (direct, streamed or staged whole) and their staging
 * buffers, for up and down bytes; prod: the --abi products (NULL: none). */
static enum kv_status plan_staging(struct kv_vk_device *d, const struct kv_kernel *k, struct kv_plan *p, size_t up,
                                   size_t down, struct kv_tensor *prod)
{
    const int forced = kv_transfers_forced();
    p->direct = forced < 0 && all_mapped(k, p);
    p->streamed = forced == 1 || (forced < 0 && !p->direct && up + down > kv_stream_threshold());
    if (p->direct || p->streamed) return bounded_staging(d, k, p, up, down, prod);
    KV_TRY_RET(kv_vk_buffer_create(d, up ? up : 4, KV_MEM_UPLOAD, &p->up));
    return kv_vk_buffer_create(d, down ? down : 4, KV_MEM_READBACK, &p->down);
}

/* Each active stage's windows (binding.h); --abi stages bind whole tensors. */
static enum kv_status plan_windows(const struct kv_runner *r, const struct kv_case *c, struct kv_plan *p)
{
    const struct kv_vk_info *dev = &r->d->info;
    for (int s = 0; s < r->k->n_stages; s++) {
        p->win[s].n = 1;
        if (!kv_stage_on(c, s)) continue;
        KV_TRY_RET(kv_windows_plan(c, s, dev->max_storage_range, dev->min_storage_align, &p->win[s]));
        if (p->win[s].addr) KV_TRY_RET(kv_addr_plan(c, s, dev->max_storage_range, kv_runner_addr_lacks(r, s)));
        if (r->abi[s] && p->win[s].n > 1)
            return kv_error(KV_EUSAGE, "%s: stage %s runs with an --abi file, which binds whole tensors, and one "
                            "of its tensors is longer than maxStorageBufferRange", c->name, r->k->stages[s].name);
    }
    return KV_OK;
}

enum kv_status kv_plan_alloc(struct kv_runner *r, const struct kv_case *c, const int *chain_stage, struct kv_plan *p)
{
    enum kv_status st = KV_OK;
    struct kv_vk_device *d = r->d;
    const struct kv_kernel *k = r->k;
    size_t up = 0, down = 0;
    KV_TRY(plan_windows(r, c, p));
    for (int t = 0; t < k->n_tensors; t++)
        if (k->tensors[t].role == KV_OUTPUT && chain_stage[k->tensors[t].stage]) p->has_chain[t] = 1;
    for (int t = 0; t < k->n_tensors; t++) {
        size_t bytes = kv_tensor_bytes(&c->t[t]);
        if (!kv_tensor_on(c, t)) continue;
        if (k->tensors[t].role == KV_INPUT) {
            /* The bound range covers a poisoned tail (NaN words), so that a
             * shader reading past an input's end (a masking bug) reads NaN on
             * every device instead of the zeros of robust access; as much
             * again unbound beyond it, so that a further read cannot fault. */
            size_t tail = kv_poison_bytes(bytes);
            KV_TRY(kv_vk_buffer_create(d, round4(bytes) + 2 * tail, KV_MEM_DEVICE, &p->dev[t]));
            p->up_off[0][t] = up;
            up += round4(bytes);
            continue;
        }
        size_t padded = round4(bytes) + KV_GUARD_BYTES;
        KV_TRY(kv_vk_buffer_create(d, padded, KV_MEM_DEVICE, &p->dev[t]));
        p->down_off[0][t] = down;
        down += padded;
        if (kv_is_intermediate(c, t)) {
            KV_TRY(kv_vk_buffer_create(d, round4(bytes) + 2 * kv_poison_bytes(bytes), KV_MEM_DEVICE, &p->iso[t]));
            p->up_off[1][t] = up;
            up += round4(bytes);
        }
        if (p->has_chain[t]) {
            KV_TRY(kv_vk_buffer_create(d, padded, KV_MEM_DEVICE, &p->chain[t]));
            p->down_off[1][t] = down;
            down += padded;
        }
    }
    p->up_bytes = up, p->down_bytes = down;
    p->alloced = 1;
    /* without --abi products the staging's size is known now */
    int abi = 0;
    for (int s = 0; s < k->n_stages; s++) abi |= r->abi[s] != NULL;
    if (!abi) KV_TRY(plan_staging(d, k, p, up, down, NULL));
cleanup:
    return st;
}

enum kv_status kv_plan_make(struct kv_runner *r, struct kv_case *c, const int *chain_stage, struct kv_plan *p)
{
    enum kv_status st = KV_OK;
    struct kv_vk_device *d = r->d;
    const struct kv_kernel *k = r->k;
    struct kv_tensor *prod = calloc(KV_MAX_STAGES * KV_ABI_MAX, sizeof *prod);
    KV_CHECK(prod, KV_EDEVICE, "out of host memory");
    if (!p->alloced) KV_TRY(kv_plan_alloc(r, c, chain_stage, p));
    size_t up = p->up_bytes, down = p->down_bytes;
    /* the oracle's rounded intermediates, which the isolated stages read */
    for (int t = 0; t < k->n_tensors; t++) {
        if (!p->iso[t].buf) continue;
        struct kv_tensor *h = &p->iso_host[t];
        p->iso_lent[t] = 0;
        if (c->compact[t] || c->blocked[t]) { /* the oracle's whole intermediate, in its dtype */
            KV_CHECK(c->iso[t].data, KV_EDEVICE, "internal: %s's isolated input is gone", k->tensors[t].name);
            *h = c->iso[t];
            if (c->blocked[t]) p->iso_lent[t] = 1; /* lent: its blocks read it while it is judged */
            else memset(&c->iso[t], 0, sizeof c->iso[t]); /* taken over */
        } else {
            KV_TRY(kv_tensor_alloc(h, k->tensors[t].name, c->t[t].dtype, c->t[t].ndim, c->t[t].shape));
            kv_store_f64_all(h->dtype, h->data, c->y[t], h->count);
        }
    }
    KV_TRY(make_products(r, c, p, &up, prod));
    if (!p->up.buf) KV_TRY(plan_staging(d, k, p, up, down, prod)); /* not made with the buffers */
    if (p->direct || p->streamed) goto cleanup;
    for (int t = 0; t < k->n_tensors; t++) {
        if (!kv_tensor_on(c, t)) continue;
        if (k->tensors[t].role == KV_INPUT)
            memcpy((char *)p->up.map + p->up_off[0][t], c->t[t].data, kv_tensor_bytes(&c->t[t]));
        else if (p->iso[t].buf)
            memcpy((char *)p->up.map + p->up_off[1][t], p->iso_host[t].data, kv_tensor_bytes(&c->t[t]));
    }
    for (int i = 0; i < KV_MAX_STAGES * KV_ABI_MAX; i++)
        if (prod[i].data) memcpy((char *)p->up.map + p->product_off[i / KV_ABI_MAX][i % KV_ABI_MAX], prod[i].data,
                                 kv_tensor_bytes(&prod[i]));
    KV_TRY(kv_vk_buffer_flush(d, &p->up));
cleanup:
    for (int i = 0; prod && i < KV_MAX_STAGES * KV_ABI_MAX; i++) kv_tensor_free(&prod[i]);
    free(prod);
    return st;
}

static struct kv_vk_range whole(const struct kv_vk_buffer *b, size_t size)
{
    return (struct kv_vk_range){b, 0, size};
}

/* The bindings of stage s: pass 0 reads the oracle's rounded intermediates
 * (stage isolation), pass 1 the device's own and writes the chained copies. */
/* The buffer tensor t is read from or written to by stage s in pass 0
 * (isolated) or 1 (chained). */
static const struct kv_vk_buffer *tensor_buffer(const struct kv_kernel *k, struct kv_plan *p, int t, int s, int pass)
{
    const struct kv_tensor_def *td = &k->tensors[t];
    if (td->role == KV_OUTPUT && td->stage != s) return pass == 0 ? &p->iso[t] : &p->dev[t];
    if (td->role == KV_OUTPUT && pass == 1) return &p->chain[t];
    return &p->dev[t];
}

/* An --abi stage's bindings: tensors and products at the file's binding
 * numbers; a number the file leaves out gets the first binding's range. */
static void abi_bindings(const struct kv_abi *a, const struct kv_kernel *k, struct kv_case *c, struct kv_plan *p,
                         int pass, uint64_t max_range, struct kv_vk_range *bind)
{
    for (int i = 0; i < a->n_bindings; i++) {
        const struct kv_abi_binding *b = &a->b[i];
        if (b->tensor < 0) {
            const size_t pb = p->product_bytes[a->stage][i], want = round4(pb) + kv_poison_bytes(pb);
            bind[b->binding] = whole(&p->product[a->stage][i], kv_range_cut(want, round4(pb), max_range));
            continue;
        }
        int t = kv_case_tensor(c, k->tensors[b->tensor].name);
        t = t < 0 ? b->tensor : t;
        bind[b->binding] = whole(tensor_buffer(k, p, t, a->stage, pass),
                                 kv_bound_bytes(&k->tensors[t], kv_tensor_bytes(&c->t[t]), max_range));
    }
    for (uint32_t n = 0; n < kv_abi_slots(a); n++) {
        int mapped = 0;
        for (int i = 0; i < a->n_bindings; i++) mapped |= a->b[i].binding == n;
        if (!mapped) bind[n] = bind[a->b[0].binding];
    }
}

/* The bindings of a window of `rows` rows from row row0 (rows 0: the whole tensors). */
static void stage_bindings(const struct kv_kernel *k, const struct kv_case *c, int64_t row0, int64_t rows,
                           struct kv_plan *p, int s, int pass, uint64_t max_range, struct kv_vk_range *bind)
{
    const struct kv_stage_def *sd = &k->stages[s];
    for (int i = 0; i < sd->n_bindings; i++) {
        int t = sd->bindings[i];
        size_t bytes = kv_tensor_bytes(&c->t[t]), off = 0;
        if (rows) {
            size_t row = (size_t)kv_window_row_bytes(c, t);
            off = (size_t)row0 * row;
            bytes = (size_t)rows * row;
        }
        /* Whole words (f16 and u8 tensors are read as packed uints), and the
         * guard words or poisoned tail after them (kv_bound_bytes): in a
         * window, the next window's rows where it is not the last. */
        bind[i] = (struct kv_vk_range){tensor_buffer(k, p, t, s, pass), off,
                                       kv_bound_bytes(&k->tensors[t], bytes, max_range)};
    }
}

/* The group-count limits a stage's launch rule sees: the device's, or at
 * most cap workgroups in all (cap 0: none). */
static void group_limits(const struct kv_runner *r, int s, uint32_t cap, uint32_t max[3])
{
    memcpy(max, r->d->info.max_groups, 3 * sizeof *max);
    if (cap && !r->k->stages[s].fixed_grid) {
        max[0] = cap < max[0] ? cap : max[0];
        max[1] = max[2] = 1;
    }
}

/* Stage s's bindings, push constants and group counts for case c: its own
 * launch rule, or its --abi file's (which --max-groups cannot cap). */
static enum kv_status stage_launch(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, int s, int pass,
                                   uint32_t cap, int64_t window, struct kv_vk_range *bind, void *push,
                                   uint32_t groups[3])
{
    const uint64_t range = r->d->info.max_storage_range;
    if (r->abi[s]) {
        abi_bindings(r->abi[s], r->k, c, p, pass, range, bind);
        return kv_abi_launch(c, r->abi[s], r->d->info.max_groups, push, groups);
    }
    uint32_t max[3];
    group_limits(r, s, cap, max);
    if (p->win[s].n == 1) {
        stage_bindings(r->k, c, 0, 0, p, s, pass, range, bind);
        r->k->stages[s].launch(c, r->local[s], max, push, groups);
        return KV_OK;
    }
    /* the window launches as the case of its batch and length */
    struct kv_case *wc = malloc(sizeof *wc);
    if (!wc) return kv_error(KV_EDEVICE, "out of host memory");
    *wc = *c;
    int64_t row0 = kv_window_at(c, &p->win[s], window, &wc->p[r->k->window_batch].i, &wc->p[r->k->window_seq].i);
    stage_bindings(r->k, c, row0, wc->p[r->k->window_batch].i * wc->p[r->k->window_seq].i, p, s, pass, range, bind);
    r->k->stages[s].launch(wc, r->local[s], max, push, groups);
    free(wc);
    return KV_OK;
}

/* The logical bytes of each binding of stage s (the record buffer's header). */
static int san_logical(const struct kv_runner *r, const struct kv_case *c, const struct kv_plan *p, int s,
                       uint64_t *bytes)
{
    const struct kv_kernel *k = r->k;
    const struct kv_abi *a = r->abi[s];
    if (!a) {
        const struct kv_stage_def *sd = &k->stages[s];
        for (int i = 0; i < sd->n_bindings; i++) bytes[i] = kv_tensor_bytes(&c->t[sd->bindings[i]]);
        return sd->n_bindings;
    }
    uint32_t n = kv_abi_slots(a);
    for (uint32_t i = 0; i < n; i++) bytes[i] = UINT64_MAX; /* a slot the file leaves out: not checked */
    for (int i = 0; i < a->n_bindings; i++) {
        const struct kv_abi_binding *b = &a->b[i];
        int t = b->tensor < 0 ? -1 : kv_case_tensor(c, k->tensors[b->tensor].name);
        if (b->tensor >= 0 && t < 0) t = b->tensor;
        bytes[b->binding] = t < 0 ? p->product_bytes[s][i] : kv_tensor_bytes(&c->t[t]);
    }
    return (int)n;
}

/* A fill of a buffer's range: on the host where the plan is direct (a CPU
 * device's mapped memory, which the device fills on one thread), else
 * recorded into b. */
static void fill(const struct kv_plan *p, struct kv_vk_batch *b, struct kv_vk_range r, uint32_t word)
{
    if (p->direct && r.size) kv_stream_fill((char *)r.buf->map + r.offset, r.size, word);
    else kv_vk_batch_fill(b, r, word);
}

/* The uploads of inputs (with their poisoned tails), outputs' sentinels and
 * guard words, the oracle's intermediates and --abi products. */
static void record_upload(const struct kv_kernel *k, struct kv_case *c, struct kv_plan *p, struct kv_vk_batch *b)
{
    for (int t = 0; t < k->n_tensors; t++) {
        size_t bytes = kv_tensor_bytes(&c->t[t]);
        if (!kv_tensor_on(c, t)) continue;
        if (k->tensors[t].role == KV_INPUT) {
            if (staged(p))
                kv_vk_batch_copy(b, (struct kv_vk_range){&p->up, p->up_off[0][t], bytes}, whole(&p->dev[t], bytes));
            fill(p, b, (struct kv_vk_range){&p->dev[t], round4(bytes), p->dev[t].size - round4(bytes)}, KV_POISON);
            continue;
        }
        fill(p, b, whole(&p->dev[t], p->dev[t].size), KV_SENTINEL);
        if (p->chain[t].buf) fill(p, b, whole(&p->chain[t], p->chain[t].size), KV_SENTINEL);
        if (p->iso[t].buf) {
            fill(p, b, (struct kv_vk_range){&p->iso[t], round4(bytes), p->iso[t].size - round4(bytes)}, KV_POISON);
            if (staged(p))
                kv_vk_batch_copy(b, (struct kv_vk_range){&p->up, p->up_off[1][t], bytes}, whole(&p->iso[t], bytes));
        }
    }
    for (int s = 0; s < k->n_stages; s++)
        for (int i = 0; i < KV_ABI_MAX; i++) {
            size_t bytes = p->product_bytes[s][i];
            if (!p->product[s][i].buf) continue;
            if (staged(p))
                kv_vk_batch_copy(b, (struct kv_vk_range){&p->up, p->product_off[s][i], bytes},
                                 whole(&p->product[s][i], bytes));
            fill(p, b, (struct kv_vk_range){&p->product[s][i], round4(bytes), p->product[s][i].size - round4(bytes)},
                 KV_POISON);
        }
}

/* The storage-buffer shadow, as large as the largest stage's workgroups need. */
static enum kv_status san_shadow(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, uint32_t cap)
{
    uint64_t need = 0;
    for (int s = 0; s < r->k->n_stages; s++) {
        const struct kv_san_module *m = r->san_mod[s];
        if (!m || !m->shadow_binding || !r->san[s].pipeline) continue;
        for (int pass = 0; pass < 2; pass++) {
            struct kv_vk_range bind[KV_VK_MAX_BINDINGS];
            unsigned char push[256] = {0};
            uint32_t g[3];
            KV_TRY_RET(stage_launch(r, c, p, s, pass, cap, 0, bind, push, g));
            uint64_t bytes = (uint64_t)g[0] * g[1] * g[2] * m->shadow_units * 8;
            need = bytes > need ? bytes : need;
        }
    }
    if (need >= ((uint64_t)1 << 31))
        return kv_error(KV_EDEVICE,
                        "the sanitizer's shadow of shared memory would take %llu bytes (workgroups x shared scalars x "
                        "8): run with fewer workgroups (--max-groups) or --no-sanitize",
                        (unsigned long long)need);
    if (!need || p->san_shadow.size >= need) return KV_OK;
    kv_vk_buffer_destroy(r->d, &p->san_shadow);
    return kv_vk_buffer_create(r->d, need, KV_MEM_DEVICE, &p->san_shadow);
}

/* The sanitized run's record buffers: made once, their headers written
 * (counts zero, each binding's logical length) and uploaded. */
static enum kv_status san_upload(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, uint32_t cap,
                                 struct kv_vk_batch *b)
{
    enum kv_status st = KV_OK;
    size_t bytes = (size_t)2 * KV_MAX_STAGES * KV_SAN_SLOT;
    if (!p->san_dev.buf) {
        KV_TRY(kv_vk_buffer_create(r->d, bytes, KV_MEM_DEVICE, &p->san_dev));
        KV_TRY(kv_vk_buffer_create(r->d, bytes, KV_MEM_UPLOAD, &p->san_up));
        KV_TRY(kv_vk_buffer_create(r->d, bytes, KV_MEM_READBACK, &p->san_down));
    }
    memset(p->san_up.map, 0, bytes);
    size_t gbytes = 0, align = r->d->info.min_storage_align > 256 ? (size_t)r->d->info.min_storage_align : 256;
    for (int s = 0; s < r->k->n_stages; s++) {
        uint64_t logical[KV_SAN_MAX_BINDINGS];
        if (!r->san_mod[s]) continue;
        int n = san_logical(r, c, p, s, logical);
        for (int pass = 0; pass < 2; pass++) { /* and racecheck-global's part (a word where none is made) */
            char *slot = (char *)p->san_up.map + (size_t)(2 * s + pass) * KV_SAN_SLOT;
            uint32_t words = kv_san_buffer_init(r->san_mod[s], (uint32_t *)slot, logical, n);
            p->san_goff[s][pass] = gbytes, p->san_gbytes[s][pass] = 4 * (size_t)(words ? words : 1);
            gbytes += (p->san_gbytes[s][pass] + align - 1) / align * align;
        }
    }
    if (gbytes && p->san_global.size < gbytes) kv_vk_buffer_destroy(r->d, &p->san_global);
    if (gbytes && !p->san_global.buf) KV_TRY(kv_vk_buffer_create(r->d, gbytes, KV_MEM_DEVICE, &p->san_global));
    if (gbytes) kv_vk_batch_fill(b, whole(&p->san_global, gbytes), 0);
    KV_TRY(san_shadow(r, c, p, cap));
    KV_TRY(kv_vk_buffer_flush(r->d, &p->san_up));
    kv_vk_batch_copy(b, (struct kv_vk_range){&p->san_up, 0, bytes}, (struct kv_vk_range){&p->san_dev, 0, bytes});
cleanup:
    return st;
}

/* A streamed or direct plan's uploads at each run: inputs, the oracle's rounded
 * intermediates, products (through the staging buffer, or into the mapped buffers). */
static enum kv_status stream_uploads(struct kv_vk_device *d, struct kv_case *c, struct kv_plan *p)
{
    struct kv_piece pc[2 * KV_MAX_TENSORS + KV_MAX_STAGES * KV_ABI_MAX];
    int n = 0;
    for (int t = 0; t < c->k->n_tensors; t++) {
        if (!kv_tensor_on(c, t)) continue;
        if (c->k->tensors[t].role == KV_INPUT) pc[n++] = (struct kv_piece){c->t[t].data, &p->dev[t], kv_tensor_bytes(&c->t[t])};
        else if (p->iso[t].buf) pc[n++] = (struct kv_piece){p->iso_host[t].data, &p->iso[t], kv_tensor_bytes(&c->t[t])};
    }
    for (int s = 0; s < KV_MAX_STAGES; s++)
        for (int i = 0; i < KV_ABI_MAX; i++)
            if (p->product[s][i].buf)
                pc[n++] = (struct kv_piece){p->prod_host[s][i].data, &p->product[s][i], p->product_bytes[s][i]};
    return kv_stream(d, p->direct ? NULL : &p->up, pc, n, 0);
}

/* A streamed plan's downloads: each output's buffers, guard words included. */
static enum kv_status stream_downloads(struct kv_vk_device *d, struct kv_case *c, struct kv_plan *p)
{
    struct kv_piece pc[2 * KV_MAX_TENSORS];
    int n = 0;
    for (int t = 0; t < c->k->n_tensors; t++)
        for (int ch = 0; ch < 2; ch++)
            if (p->host_down[t][ch]) {
                const struct kv_vk_buffer *b = ch ? &p->chain[t] : &p->dev[t];
                pc[n++] = (struct kv_piece){p->host_down[t][ch], b, b->size};
            }
    return kv_stream(d, &p->down, pc, n, 1);
}

const void *kv_plan_download(const struct kv_plan *p, int t, int ch)
{
    if (p->direct) return ch ? p->chain[t].map : p->dev[t].map;
    return p->streamed ? p->host_down[t][ch] : (const char *)p->down.map + p->down_off[ch][t];
}

enum kv_status kv_plan_dispatch(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, int s, int pass,
                                uint32_t cap, int variant, struct kv_vk_batch *b)
{
    for (int64_t w = 0; w < p->win[s].n; w++) { /* windows touch different rows: no barrier between */
        struct kv_vk_range bind[KV_VK_MAX_BINDINGS];
        unsigned char push[256] = {0};
        uint32_t groups[3];
        KV_TRY_RET(stage_launch(r, c, p, s, pass, cap, w, bind, push, groups));
        const struct kv_vk_pipeline *pipe = kv_runner_pipe(r, c, s, variant);
        unsigned char pushed[256];
        const void *pushes = push;
        if (p->win[s].addr) { /* the addresses, then the stage's own push constants */
            uint32_t n_bind, own;
            int lengths;
            kv_runner_addr_layout(r, s, &n_bind, &own);
            KV_TRY_RET(kv_runner_addr(r, s, variant == KV_VARIANT_REVERSED, &pipe, &lengths));
            KV_TRY_RET(kv_addr_push(r->d, bind, (int)n_bind, lengths, push, own, pushed));
            pushes = pushed;
        } else {
            if (pipe == &r->san[s] || pipe == &r->loops[s][3]) { /* the sanitized build, or its loop-cut one */
                bind[r->san_mod[s]->binding] = (struct kv_vk_range){&p->san_dev, (size_t)(2 * s + pass) * KV_SAN_SLOT,
                                                                    KV_SAN_SLOT};
                if (r->san_mod[s]->shadow_binding)
                    bind[r->san_mod[s]->shadow_binding] = whole(&p->san_shadow, p->san_shadow.size);
                if (r->san_mod[s]->global_binding)
                    bind[r->san_mod[s]->global_binding] =
                        (struct kv_vk_range){&p->san_global, p->san_goff[s][pass], p->san_gbytes[s][pass]};
            }
            for (int v = 0; v < 4; v++)
                if (pipe == &r->loops[s][v]) {
                    const uint32_t at = r->loops_binding[s][v];
                    bind[at] = (struct kv_vk_range){&p->loops_dev, (2 * (size_t)s + (size_t)pass) * KV_LOOPS_SLOT, 4};
                    bind[at + 1] = whole(&p->loops_flags, p->loops_flags.size);
                }
        }
        KV_TRY_RET(kv_vk_batch_dispatch(b, pipe, bind, pushes, groups));
    }
    return KV_OK;
}

enum kv_status kv_plan_run(struct kv_runner *r, struct kv_case *c, struct kv_plan *p, const int *run_stage,
                           const int *chain_stage, uint32_t cap, int variant, double *stage_ms, double *chained_ms,
                           double *upload_ms, double *download_ms)
{
    enum kv_status st = KV_OK;
    const struct kv_kernel *k = r->k;
    struct kv_vk_device *d = r->d;
    struct kv_vk_batch b;
    int64_t n_disp = 0;
    int addressed = 0;
    for (int s = 0; s < k->n_stages; s++) n_disp += 2 * p->win[s].n, addressed |= p->win[s].addr;
    const int san = variant == KV_VARIANT_SANITIZED || variant == KV_VARIANT_LOOPS_SANITIZED;
    KV_CHECK(!san || (n_disp == 2 * k->n_stages && !addressed), KV_EUSAGE,
             "%s: the sanitizer checks whole bindings, and a stage here runs in windows or by address (a tensor "
             "is longer than maxStorageBufferRange)", c->name);
    KV_CHECK(n_disp < UINT32_MAX - 4, KV_EUSAGE, "%s: %lld dispatches of windows are too many", c->name,
             (long long)n_disp);
    double t_host = kv_now_ms();
    if (!staged(p)) KV_TRY(stream_uploads(d, c, p));
    double streamed_up = kv_now_ms() - t_host;
    KV_TRY(kv_vk_batch_begin(d, (uint32_t)n_disp, 2 * (uint32_t)k->n_stages + 4, &b));
    int t_start = kv_vk_batch_stamp(&b);
    double t_fill = kv_now_ms();
    record_upload(k, c, p, &b);
    if (p->direct) streamed_up += kv_now_ms() - t_fill; /* its fills were the host's */
    if (san) KV_TRY(san_upload(r, c, p, cap, &b));
    if (variant >= KV_VARIANT_LOOPS) kv_vk_batch_fill(&b, whole(&p->loops_dev, p->loops_dev.size), 0);
    kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_COMPUTE);
    int t_prev = kv_vk_batch_stamp(&b), t_uploaded = t_prev;
    int stamp_before[KV_MAX_STAGES], stamp_after[KV_MAX_STAGES], t_chain = -1;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) t_chain = t_prev;
        for (int s = 0; s < k->n_stages; s++) {
            if (!run_stage[s] || (pass == 1 && !chain_stage[s])) continue;
            KV_TRY(kv_plan_dispatch(r, c, p, s, pass, cap, variant, &b));
            kv_vk_batch_barrier(&b, KV_BARRIER_COMPUTE_TO_COMPUTE);
            if (pass == 0) stamp_before[s] = t_prev;
            t_prev = kv_vk_batch_stamp(&b);
            if (pass == 0) stamp_after[s] = t_prev;
        }
    }
    int t_computed = t_prev;
    kv_vk_batch_barrier(&b, KV_BARRIER_COMPUTE_TO_TRANSFER);
    for (int t = 0; t < k->n_tensors; t++) {
        if (k->tensors[t].role != KV_OUTPUT || !kv_tensor_on(c, t) || !staged(p)) continue;
        kv_vk_batch_copy(&b, whole(&p->dev[t], p->dev[t].size),
                         (struct kv_vk_range){&p->down, p->down_off[0][t], p->dev[t].size});
        if (p->chain[t].buf)
            kv_vk_batch_copy(&b, whole(&p->chain[t], p->chain[t].size),
                             (struct kv_vk_range){&p->down, p->down_off[1][t], p->chain[t].size});
    }
    if (san)
        kv_vk_batch_copy(&b, whole(&p->san_dev, p->san_dev.size), whole(&p->san_down, p->san_down.size));
    if (variant >= KV_VARIANT_LOOPS)
        kv_vk_batch_copy(&b, whole(&p->loops_dev, p->loops_dev.size), whole(&p->loops_down, p->loops_down.size));
    kv_vk_batch_barrier(&b, KV_BARRIER_TRANSFER_TO_HOST);
    if (p->direct) kv_vk_batch_barrier(&b, KV_BARRIER_COMPUTE_TO_HOST); /* read in place */
    int t_end = kv_vk_batch_stamp(&b);
    KV_TRY(kv_vk_batch_submit(&b));
    if (staged(p)) KV_TRY(kv_vk_buffer_invalidate(d, &p->down));
    if (san) KV_TRY(kv_vk_buffer_invalidate(d, &p->san_down));
    if (variant >= KV_VARIANT_LOOPS) KV_TRY(kv_vk_buffer_invalidate(d, &p->loops_down));
    for (int s = 0; s < k->n_stages; s++)
        stage_ms[s] = run_stage[s] ? kv_vk_batch_ms(&b, stamp_before[s], stamp_after[s]) : 0;
    if (chained_ms) *chained_ms = kv_vk_batch_ms(&b, t_chain, t_computed);
    *upload_ms = kv_vk_batch_ms(&b, t_start, t_uploaded);
    *download_ms = kv_vk_batch_ms(&b, t_computed, t_end);
    if (!staged(p)) { /* the transfers, timed on the host */
        t_host = kv_now_ms();
        if (p->streamed) KV_TRY(stream_downloads(d, c, p));
        *upload_ms += streamed_up;
        *download_ms += kv_now_ms() - t_host;
    }
cleanup:
    kv_vk_batch_destroy(&b);
    return st;
}
