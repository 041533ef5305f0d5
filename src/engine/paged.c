/* paged.c: the paged KV cache: a pool of pages, block tables, allocation, sharing,
 * copy-on-write, and decode and prefill reading K and V through the tables (paged.h).
 *
 * Data flow: fs_paged_append (ALLOC, COW, WRITE events) fills the pool; fs_paged_decode hands
 * fs_decode_read a reader whose key/value functions follow the block table and whose visit hook
 * records a LOOKUP per block a split reads, before the split's PARTIAL.
 */
#include "paged.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

fs_status fs_paged_init(fs_paged_cache *c, int32_t page_size, int32_t n_pages, int32_t n_kv_heads, int32_t d,
                        int32_t d_v, const int32_t *order)
{
    memset(c, 0, sizeof *c);
    if (page_size < 1 || page_size > FS_MAX_DIM || n_pages < 1 || n_pages > FS_PAGED_MAX_PAGES || n_kv_heads < 1 ||
        n_kv_heads > FS_MAX_HEADS || d < 1 || d > FS_MAX_HEAD || d_v < 1 || d_v > FS_MAX_HEAD)
        return FS_ERR_SHAPE;
    /* The pool must stay addressable: bound it to 2^31 numbers. */
    if ((double)n_pages * page_size * n_kv_heads * (d > d_v ? d : d_v) > 2147483647.0) return FS_ERR_SHAPE;
    c->page_size = page_size;
    c->n_pages = n_pages;
    c->n_kv_heads = n_kv_heads;
    c->d = d;
    c->d_v = d_v;
    size_t slots = (size_t)n_pages * page_size * n_kv_heads;
    c->K = calloc(slots * d, sizeof(double));
    c->V = calloc(slots * d_v, sizeof(double));
    c->refs = calloc((size_t)n_pages, sizeof(int32_t));
    c->fill = calloc((size_t)n_pages, sizeof(int32_t));
    c->free_pages = malloc((size_t)n_pages * sizeof(int32_t));
    if (!c->K || !c->V || !c->refs || !c->fill || !c->free_pages) {
        fs_paged_free(c);
        return FS_ERR_NOMEM;
    }
    for (int32_t p = 0; p < n_pages; p++) {
        int32_t q = order ? order[p] : p;
        if (q < 0 || q >= n_pages || c->refs[q]) {   /* refs marks the pages seen, for now */
            fs_paged_free(c);
            return FS_ERR_ARG;
        }
        c->refs[q] = 1;
        c->free_pages[p] = q;
    }
    memset(c->refs, 0, (size_t)n_pages * sizeof(int32_t));
    c->n_free = n_pages;
    return FS_OK;
}

void fs_paged_free(fs_paged_cache *c)
{
    for (int32_t s = 0; s < c->n_seqs; s++) free(c->seq[s].table);
    free(c->seq);
    free(c->K);
    free(c->V);
    free(c->refs);
    free(c->fill);
    free(c->free_pages);
    memset(c, 0, sizeof *c);
}

/* The free list is a ring: pages are taken from the head and returned at the tail, so a
 * released page is reused last (a shuffled order stays shuffled). */
static int32_t take_page(fs_paged_cache *c)
{
    assert(c->n_free > 0);
    int32_t p = c->free_pages[c->free_head];
    c->free_head = (c->free_head + 1) % c->n_pages;
    c->n_free--;
    return p;
}

static void return_page(fs_paged_cache *c, int32_t p)
{
    c->free_pages[(c->free_head + c->n_free) % c->n_pages] = p;
    c->n_free++;
    c->fill[p] = 0;
}

static fs_status new_seq(fs_paged_cache *c, int32_t *seq)
{
    if (c->n_seqs >= FS_PAGED_MAX_SEQS) return FS_ERR_LIMIT;
    if (c->n_seqs == c->cap_seqs) {
        int32_t cap = c->cap_seqs ? 2 * c->cap_seqs : 4;
        fs_paged_seq *s = realloc(c->seq, (size_t)cap * sizeof *s);
        if (!s) return FS_ERR_NOMEM;
        c->seq = s;
        c->cap_seqs = cap;
    }
    fs_paged_seq *s = &c->seq[c->n_seqs];
    memset(s, 0, sizeof *s);
    s->live = 1;
    *seq = c->n_seqs++;
    return FS_OK;
}

fs_status fs_paged_add(fs_paged_cache *c, int32_t *seq) { return new_seq(c, seq); }

static fs_status grow_table(fs_paged_seq *s, int32_t n)
{
    if (n <= s->cap_blocks) return FS_OK;
    int32_t cap = s->cap_blocks ? s->cap_blocks : 4;
    while (cap < n) cap *= 2;
    int32_t *t = realloc(s->table, (size_t)cap * sizeof *t);
    if (!t) return FS_ERR_NOMEM;
    s->table = t;
    s->cap_blocks = cap;
    return FS_OK;
}

static fs_status push(fs_trace *tr, const fs_event *e)
{
    return !tr || fs_trace_push(tr, e) ? FS_OK : fs_trace_error(tr);
}

fs_status fs_paged_fork(fs_paged_cache *c, int32_t parent, int32_t *seq, fs_trace *tr)
{
    assert(parent >= 0 && parent < c->n_seqs && c->seq[parent].live);
    int32_t id;
    fs_status st = new_seq(c, &id);
    if (st != FS_OK) return st;
    fs_paged_seq *p = &c->seq[parent], *s = &c->seq[id];
    if ((st = grow_table(s, p->n_blocks)) != FS_OK) {
        c->n_seqs--;
        return st;
    }
    s->n_tokens = p->n_tokens;
    s->n_blocks = p->n_blocks;
    for (int32_t b = 0; b < p->n_blocks; b++) {
        s->table[b] = p->table[b];
        c->refs[p->table[b]]++;
    }
    *seq = id;
    for (int32_t b = 0; b < p->n_blocks && st == FS_OK; b++) {
        fs_event e = fs_event_blank(FS_EV_SHARE);
        e.seq = id;
        e.src = parent;
        e.block = b;
        e.page = s->table[b];
        e.refs = c->refs[e.page];
        e.c0 = b * c->page_size;
        e.c1 = e.c0 + c->fill[e.page];
        st = push(tr, &e);
    }
    return st;
}

static size_t k_at(const fs_paged_cache *c, int32_t page, int32_t slot, int32_t kv_head)
{
    return (((size_t)page * c->page_size + slot) * c->n_kv_heads + kv_head) * c->d;
}

static size_t v_at(const fs_paged_cache *c, int32_t page, int32_t slot, int32_t kv_head)
{
    return (((size_t)page * c->page_size + slot) * c->n_kv_heads + kv_head) * c->d_v;
}

fs_status fs_paged_append(fs_paged_cache *c, int32_t seq, const double *k, const double *v, fs_trace *tr)
{
    assert(seq >= 0 && seq < c->n_seqs && c->seq[seq].live && k && v);
    fs_paged_seq *s = &c->seq[seq];
    const int32_t ps = c->page_size, slot = s->n_tokens % ps, block = s->n_tokens / ps;
    if (s->n_tokens >= FS_MAX_DIM) return FS_ERR_SHAPE;
    fs_status st = FS_OK;
    if (slot == 0) {
        /* The last page is full (or there is none): take a free one for the new block. */
        if (c->n_free == 0) return FS_ERR_LIMIT;
        if ((st = grow_table(s, block + 1)) != FS_OK) return st;
        int32_t p = take_page(c);
        c->refs[p] = 1;
        c->fill[p] = 0;
        s->table[block] = p;
        s->n_blocks = block + 1;
        fs_event e = fs_event_blank(FS_EV_ALLOC);
        e.seq = seq;
        e.block = block;
        e.page = p;
        e.refs = 1;
        e.n_free = c->n_free;
        if ((st = push(tr, &e)) != FS_OK) return st;
    } else if (c->refs[s->table[block]] > 1) {
        /* The last page is shared: copy its filled slots into a page of our own first. */
        if (c->n_free == 0) return FS_ERR_LIMIT;
        int32_t old = s->table[block], p = take_page(c);
        memcpy(c->K + k_at(c, p, 0, 0), c->K + k_at(c, old, 0, 0), sizeof(double) * (size_t)slot * c->n_kv_heads * c->d);
        memcpy(c->V + v_at(c, p, 0, 0), c->V + v_at(c, old, 0, 0),
               sizeof(double) * (size_t)slot * c->n_kv_heads * c->d_v);
        c->refs[old]--;
        c->refs[p] = 1;
        c->fill[p] = slot;
        s->table[block] = p;
        fs_event e = fs_event_blank(FS_EV_COW);
        e.seq = seq;
        e.block = block;
        e.page = p;
        e.src = old;
        e.slot = slot;
        e.refs = c->refs[old];
        e.n_free = c->n_free;
        e.c0 = block * ps;
        e.c1 = block * ps + slot;
        if ((st = push(tr, &e)) != FS_OK) return st;
    }
    const int32_t p = s->table[block];
    /* A slot past the page's fill: a sequence that shares the page (refs > 1) would have
     * copied above, so only this sequence sees the slot. */
    for (int32_t h = 0; h < c->n_kv_heads; h++) {
        memcpy(c->K + k_at(c, p, slot, h), k + (size_t)h * c->d, sizeof(double) * (size_t)c->d);
        memcpy(c->V + v_at(c, p, slot, h), v + (size_t)h * c->d_v, sizeof(double) * (size_t)c->d_v);
    }
    c->fill[p] = slot + 1;
    s->n_tokens++;
    fs_event e = fs_event_blank(FS_EV_WRITE);
    e.seq = seq;
    e.block = block;
    e.page = p;
    e.slot = slot;
    e.refs = c->refs[p];
    e.c0 = s->n_tokens - 1;
    e.c1 = s->n_tokens;
    return push(tr, &e);
}

fs_status fs_paged_append_rows(fs_paged_cache *c, int32_t seq, const double *K, const double *V, int32_t n,
                               fs_trace *tr)
{
    const int32_t H = c->n_kv_heads, d = c->d, d_v = c->d_v;
    double *k = malloc(sizeof(double) * (size_t)H * d), *v = malloc(sizeof(double) * (size_t)H * d_v);
    fs_status st = k && v ? FS_OK : FS_ERR_NOMEM;
    for (int32_t j = 0; j < n && st == FS_OK; j++) {
        for (int32_t h = 0; h < H; h++) {
            memcpy(k + (size_t)h * d, K + ((size_t)h * n + j) * d, sizeof(double) * (size_t)d);
            memcpy(v + (size_t)h * d_v, V + ((size_t)h * n + j) * d_v, sizeof(double) * (size_t)d_v);
        }
        st = fs_paged_append(c, seq, k, v, tr);
    }
    free(k);
    free(v);
    return st;
}

void fs_paged_release(fs_paged_cache *c, int32_t seq)
{
    assert(seq >= 0 && seq < c->n_seqs);
    fs_paged_seq *s = &c->seq[seq];
    if (!s->live) return;
    for (int32_t b = 0; b < s->n_blocks; b++)
        if (--c->refs[s->table[b]] == 0) return_page(c, s->table[b]);
    s->live = 0;
    s->n_tokens = s->n_blocks = 0;
}

const double *fs_paged_key(const fs_paged_cache *c, int32_t seq, int32_t kv_head, int32_t j)
{
    const fs_paged_seq *s = &c->seq[seq];
    assert(j >= 0 && j < s->n_tokens && kv_head >= 0 && kv_head < c->n_kv_heads);
    return c->K + k_at(c, s->table[j / c->page_size], j % c->page_size, kv_head);
}

const double *fs_paged_value(const fs_paged_cache *c, int32_t seq, int32_t kv_head, int32_t j)
{
    const fs_paged_seq *s = &c->seq[seq];
    assert(j >= 0 && j < s->n_tokens && kv_head >= 0 && kv_head < c->n_kv_heads);
    return c->V + v_at(c, s->table[j / c->page_size], j % c->page_size, kv_head);
}

void fs_paged_gather(const fs_paged_cache *c, int32_t seq, double *K, double *V)
{
    const int32_t n = c->seq[seq].n_tokens;
    for (int32_t h = 0; h < c->n_kv_heads; h++)
        for (int32_t j = 0; j < n; j++) {
            memcpy(K + ((size_t)h * n + j) * c->d, fs_paged_key(c, seq, h, j), sizeof(double) * (size_t)c->d);
            memcpy(V + ((size_t)h * n + j) * c->d_v, fs_paged_value(c, seq, h, j), sizeof(double) * (size_t)c->d_v);
        }
}

int32_t fs_paged_pages_used(const fs_paged_cache *c) { return c->n_pages - c->n_free; }

/* ---- reading through the table ---- */

typedef struct {
    const fs_paged_cache *c;
    int32_t seq;
} reader_ctx;

static const double *read_key(const void *ctx, int32_t kv_head, int32_t j)
{
    const reader_ctx *r = ctx;
    return fs_paged_key(r->c, r->seq, kv_head, j);
}

static const double *read_value(const void *ctx, int32_t kv_head, int32_t j)
{
    const reader_ctx *r = ctx;
    return fs_paged_value(r->c, r->seq, kv_head, j);
}

/* One LOOKUP per logical block the split's keys first, first + stride, … < end fall in, in the
 * order the split reads them; c0, c1 are the first and one past the last key read there. */
static fs_status visit(const void *ctx, fs_trace *tr, int32_t head, int32_t kv_head, int32_t row, int32_t split,
                       int32_t first, int32_t end, int32_t stride)
{
    const reader_ctx *r = ctx;
    if (!tr) return FS_OK;
    const int32_t ps = r->c->page_size;
    const fs_paged_seq *s = &r->c->seq[r->seq];
    for (int32_t j = first; j < end;) {
        int32_t b = j / ps, last = j;
        while (last + stride < end && (last + stride) / ps == b) last += stride;
        fs_event e = fs_event_blank(FS_EV_LOOKUP);
        e.head = head;
        e.kv_head = kv_head;
        e.row = row;
        e.kt = split;
        e.seq = r->seq;
        e.block = b;
        e.page = s->table[b];
        e.c0 = j;
        e.c1 = last + 1;
        e.stride = stride;
        e.refs = r->c->refs[e.page];
        fs_status st = push(tr, &e);
        if (st != FS_OK) return st;
        j = last + stride;
    }
    return FS_OK;
}

static fs_status paged_decode(const fs_paged_cache *c, int32_t seq, const fs_attn *a, const fs_decoding *dc,
                              const fs_kv_store *kv, double *O, double *m_out, double *l_out, fs_trace *tr);

fs_status fs_paged_decode(const fs_paged_cache *c, int32_t seq, const fs_attn *a, const fs_decoding *dc,
                          double *O, double *m_out, double *l_out, fs_trace *tr)
{
    return paged_decode(c, seq, a, dc, NULL, O, m_out, l_out, tr);
}

fs_status fs_paged_decode_kv(const fs_paged_cache *c, int32_t seq, const fs_attn *a, const fs_decoding *dc,
                             const fs_kv_store *kv, double *O, double *m_out, double *l_out, fs_trace *tr)
{
    assert(kv);
    if (kv->page_size != 0 && kv->page_size != c->page_size) return FS_ERR_ARG;
    return paged_decode(c, seq, a, dc, kv, O, m_out, l_out, tr);
}

/* Both: kv NULL for the float64 cache. */
static fs_status paged_decode(const fs_paged_cache *c, int32_t seq, const fs_attn *a, const fs_decoding *dc,
                              const fs_kv_store *kv, double *O, double *m_out, double *l_out, fs_trace *tr)
{
    assert(c && a && dc && O);
    if (seq < 0 || seq >= c->n_seqs || !c->seq[seq].live) return FS_ERR_ARG;
    if (!a->Q || a->S) return FS_ERR_ARG;
    const int32_t n = c->seq[seq].n_tokens;
    if (a->n_kv != n || a->n_kv_heads != c->n_kv_heads || a->d != c->d || a->d_v != c->d_v) return FS_ERR_SHAPE;
    /* Check the values as fs_decode does: on the sequence laid out contiguously. */
    double *K = malloc(sizeof(double) * ((size_t)c->n_kv_heads * n * c->d + 1));
    double *V = malloc(sizeof(double) * ((size_t)c->n_kv_heads * n * c->d_v + 1));
    fs_status st = K && V ? FS_OK : FS_ERR_NOMEM;
    if (st == FS_OK) {
        fs_paged_gather(c, seq, K, V);
        fs_attn g = *a;
        g.K = K;
        g.V = V;
        st = fs_attn_check(&g);
    }
    free(K);
    free(V);
    if (st != FS_OK) return st;
    fs_attn paged = *a;
    paged.K = paged.V = NULL;   /* nothing below reads them: the reader does */
    reader_ctx ctx = {c, seq};
    fs_kv_reader rd = {read_key, read_value, visit, &ctx};
    return kv ? fs_decode_kv(&paged, dc, kv, &rd, O, m_out, l_out, tr) : fs_decode_read(&paged, dc, &rd, O, m_out, l_out, tr);
}

fs_status fs_paged_prefill(fs_paged_cache *c, int32_t seq, const fs_attn *a, fs_form form, double *O,
                           double *m_out, double *l_out, fs_trace *tr)
{
    assert(c && a && O);
    if (seq < 0 || seq >= c->n_seqs || !c->seq[seq].live) return FS_ERR_ARG;
    if (!a->Q || !a->K || !a->V || a->S) return FS_ERR_ARG;
    if (a->n_kv_heads != c->n_kv_heads || a->d != c->d || a->d_v != c->d_v || a->n_q < 1 ||
        a->n_kv != c->seq[seq].n_tokens + a->n_q)
        return FS_ERR_SHAPE;
    fs_status st = fs_paged_append_rows(c, seq, a->K, a->V, a->n_q, tr);
    if (st != FS_OK) return st;
    fs_attn all = *a;
    all.K = all.V = NULL;
    fs_decoding dc = {FS_SPLIT_CONTIGUOUS, c->page_size, 1, FS_MERGE_SEQUENTIAL, form};
    return fs_paged_decode(c, seq, &all, &dc, O, m_out, l_out, tr);
}

fs_status fs_paged_decode_table(const fs_attn *a, const fs_decoding *dc, int32_t page_size, const int32_t *table,
                                int32_t n_table, double *O, double *m_out, double *l_out, fs_trace *tr)
{
    assert(a && dc && O);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    if (!a->Q || a->S) return FS_ERR_ARG;
    if (page_size < 1 || page_size > FS_MAX_DIM) return FS_ERR_TILE;
    const int32_t blocks = (a->n_kv + page_size - 1) / page_size;
    if (table && n_table != blocks) return FS_ERR_ARG;
    int32_t n_pages = blocks;
    for (int32_t b = 0; table && b < n_table; b++) {
        if (table[b] < 0 || table[b] >= FS_PAGED_MAX_PAGES) return FS_ERR_ARG;
        if (table[b] + 1 > n_pages) n_pages = table[b] + 1;
    }
    /* The order pages are handed out: the table's, then the pool's other pages. */
    int32_t *order = malloc(sizeof(int32_t) * (size_t)n_pages);
    unsigned char *used = calloc((size_t)n_pages, 1);
    st = order && used ? FS_OK : FS_ERR_NOMEM;
    int32_t n = 0;
    for (int32_t b = 0; b < blocks && st == FS_OK; b++) {
        int32_t p = table ? table[b] : b;
        if (used[p]) st = FS_ERR_ARG;   /* two blocks in one page */
        used[p] = 1;
        order[n++] = p;
    }
    for (int32_t p = 0; p < n_pages && st == FS_OK; p++)
        if (!used[p]) order[n++] = p;
    fs_paged_cache c;
    memset(&c, 0, sizeof c);
    int32_t seq = 0;
    if (st == FS_OK) st = fs_paged_init(&c, page_size, n_pages, a->n_kv_heads, a->d, a->d_v, order);
    if (st == FS_OK) st = fs_paged_add(&c, &seq);
    if (st == FS_OK) st = fs_paged_append_rows(&c, seq, a->K, a->V, a->n_kv, tr);
    if (st == FS_OK) st = fs_paged_decode(&c, seq, a, dc, O, m_out, l_out, tr);
    fs_paged_free(&c);
    free(order);
    free(used);
    return st;
}
