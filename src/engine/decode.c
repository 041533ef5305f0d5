/* decode.c: FlashDecoding: per-split partials (phase 1), then their merge (phase 2).
 *
 * Each query row is handled on its own: its KV positions are cut into splits, each split gives
 * a partial state (m, ℓ, o) that depends on that split alone, and the partials are merged either
 * left to right or as a pairwise tree. Node ids: the partials are 0 … n_splits − 1, each merge
 * makes the next id.
 */
#include "decode.h"
#include "fp8.h"
#include "lowp.h"
#include "reference.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

fs_decoding fs_decoding_default(void)
{
    fs_decoding d = {FS_SPLIT_CONTIGUOUS, 64, 4, FS_MERGE_SEQUENTIAL, FS_FORM_UNNORMALIZED};
    return d;
}

void fs_decode_merge(double m_a, double l_a, const double *o_a, double m_b, double l_b,
                     const double *o_b, int32_t n, fs_form form, double *m, double *l, double *o,
                     double *c_a, double *c_b)
{
    double mm = m_a > m_b ? m_a : m_b;
    if (mm == -INFINITY) {
        /* Two states that saw nothing: the identity, with the α = 1, β = 0 convention. */
        *c_a = 1;
        *c_b = 0;
        *m = mm;
        *l = 0;
        for (int32_t c = 0; c < n; c++) o[c] = 0;
        return;
    }
    double ca = exp(m_a - mm), cb = exp(m_b - mm);
    double ll = ca * l_a + cb * l_b;
    if (form == FS_FORM_NORMALIZED)
        for (int32_t c = 0; c < n; c++) o[c] = (ca * l_a * o_a[c] + cb * l_b * o_b[c]) / ll;
    else
        for (int32_t c = 0; c < n; c++) o[c] = ca * o_a[c] + cb * o_b[c];
    *c_a = ca;
    *c_b = cb;
    *m = mm;
    *l = ll;
}

/* Split p of query row i: its keys first, first + stride, … below end (contiguous: the p-th run
 * of Bk keys; strided: every nsp-th key from p), and what the mask makes of them (a strided
 * split is always partial: its keys are spread over the whole row). */
static fs_tile_class split_keys(const fs_attn *a, const fs_decoding *dc, int32_t i, int32_t p, int32_t *first,
                                int32_t *end, fs_skip_reason *why)
{
    const int32_t n_kv = a->n_kv;
    *why = FS_SKIP_NONE;
    if (dc->split != FS_SPLIT_CONTIGUOUS) {
        *first = p;
        *end = n_kv;
        return FS_TILE_PARTIAL;
    }
    *first = p * dc->Bk;
    *end = *first + dc->Bk < n_kv ? *first + dc->Bk : n_kv;
    return fs_mask_classify(&a->mask, a->n_q, n_kv, i, i + 1, *first, *end, why);
}

/* The events both decodes record (fs_decode in float64, fs_decode_kv in float32): a split's
 * partial, a merge and the output, without their vectors. */
static fs_event partial_event(int32_t h, int32_t kvh, int32_t i, int32_t p, int32_t first, int32_t end, int32_t stride,
                              fs_tile_class cls, fs_skip_reason why, int32_t visible, double m, double l, int32_t n,
                              int32_t d_v, fs_form form)
{
    fs_event e = fs_event_blank(FS_EV_PARTIAL);
    e.head = h;
    e.kv_head = kvh;
    e.row = i;
    e.kt = p;
    e.id = p;
    e.c0 = first;
    e.c1 = end;
    e.stride = stride;
    e.cls = cls;
    e.reason = why;
    e.visible = visible;
    e.m_new = m;
    e.l_new = l;
    e.n_s = n;
    e.n_o = d_v;
    e.normalized = form == FS_FORM_NORMALIZED;
    return e;
}

/* x and y merged into id: (m, ℓ) before (x), of the block (y) and after (id), the factors. */
static fs_event merge_event(int32_t h, int32_t kvh, int32_t i, int32_t x, int32_t y, int32_t id, int32_t level,
                            const double ml[6], double c_a, double c_b, int32_t d_v, fs_form form)
{
    fs_event e = fs_event_blank(FS_EV_MERGE);
    e.head = h;
    e.kv_head = kvh;
    e.row = i;
    e.a = x;
    e.b = y;
    e.id = id;
    e.level = level;
    e.m_old = ml[0];
    e.l_old = ml[1];
    e.m_blk = ml[2];
    e.l_blk = ml[3];
    e.m_new = ml[4];
    e.l_new = ml[5];
    e.alpha = c_a;
    e.beta = c_b;
    e.n_o = d_v;
    e.normalized = form == FS_FORM_NORMALIZED;
    return e;
}

static fs_event out_event(int32_t h, int32_t kvh, int32_t i, int32_t root, double m, double l, int32_t d_v)
{
    fs_event e = fs_event_blank(FS_EV_OUT);
    e.head = h;
    e.kv_head = kvh;
    e.row = i;
    e.id = root;
    e.m_new = m;
    e.l_new = l;
    e.n_o = d_v;
    e.normalized = true;
    return e;
}

/* Phase 2's order: nsp partials (nodes 0 … nsp − 1) merged left to right or as a pairwise tree,
 * each merge making the next node id; merge(ctx, x, y, id, level) does one. The root in *root.
 * live: room for nsp ids. */
typedef fs_status (*merge_fn)(const void *ctx, int32_t x, int32_t y, int32_t id, int32_t level);

static fs_status merge_all(fs_merge order, int32_t nsp, int32_t *live, merge_fn merge, const void *ctx, int32_t *root)
{
    fs_status st = FS_OK;
    int32_t next = nsp;
    *root = 0;
    if (order == FS_MERGE_SEQUENTIAL) {
        for (int32_t p = 1; p < nsp && st == FS_OK; p++) {
            st = merge(ctx, *root, p, next, p - 1);
            *root = next++;
        }
        return st;
    }
    int32_t n = nsp, level = 0;
    for (int32_t p = 0; p < nsp; p++) live[p] = p;
    while (n > 1 && st == FS_OK) {
        int32_t k = 0;
        for (int32_t p = 0; p + 1 < n && st == FS_OK; p += 2) {
            st = merge(ctx, live[p], live[p + 1], next, level);
            live[k++] = next++;
        }
        if (n % 2) live[k++] = live[n - 1];   /* the odd one waits a level */
        n = k;
        level++;
    }
    *root = live[0];
    return st;
}

typedef struct {
    double *m, *l, *o;   /* (nodes), (nodes), (nodes, d_v) */
} states;

/* fs_decode's merge (float64) of nodes x and y into id, and its MERGE event. */
typedef struct {
    fs_trace *tr;
    const fs_attn *a;
    int32_t h, i;
    states *st;
    fs_form form;
} merge_ctx;

static fs_status push_merge(const void *ctx, int32_t x, int32_t y, int32_t id, int32_t level)
{
    const merge_ctx *k = ctx;
    const int32_t d_v = k->a->d_v;
    states *st = k->st;
    double ca, cb;
    fs_decode_merge(st->m[x], st->l[x], st->o + (size_t)x * d_v, st->m[y], st->l[y], st->o + (size_t)y * d_v, d_v,
                    k->form, &st->m[id], &st->l[id], st->o + (size_t)id * d_v, &ca, &cb);
    if (!k->tr) return FS_OK;
    const double ml[6] = {st->m[x], st->l[x], st->m[y], st->l[y], st->m[id], st->l[id]};
    fs_event e = merge_event(k->h, fs_attn_kv_head(k->a, k->h), k->i, x, y, id, level, ml, ca, cb, d_v, k->form);
    if ((e.o_old = fs_trace_vec(k->tr, st->o + (size_t)x * d_v, d_v)) < 0 ||
        (e.o_blk = fs_trace_vec(k->tr, st->o + (size_t)y * d_v, d_v)) < 0 ||
        (e.o_new = fs_trace_vec(k->tr, st->o + (size_t)id * d_v, d_v)) < 0 || !fs_trace_push(k->tr, &e))
        return fs_trace_error(k->tr);
    return FS_OK;
}

static fs_status decode(const fs_attn *a, const fs_decoding *dc, const fs_kv_reader *rd, double *O,
                        double *m_out, double *l_out, fs_trace *tr);

fs_status fs_decode(const fs_attn *a, const fs_decoding *dc, double *O, double *m_out, double *l_out,
                    fs_trace *tr)
{
    assert(a && dc && O);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    return decode(a, dc, NULL, O, m_out, l_out, tr);
}

fs_status fs_decode_read(const fs_attn *a, const fs_decoding *dc, const fs_kv_reader *rd, double *O,
                         double *m_out, double *l_out, fs_trace *tr)
{
    assert(a && dc && rd && rd->key && rd->value && O && a->Q && !a->S);
    return decode(a, dc, rd, O, m_out, l_out, tr);
}

/* Both: K and V from a->K, a->V (rd NULL) or through rd. */
static fs_status decode(const fs_attn *a, const fs_decoding *dc, const fs_kv_reader *rd, double *O,
                        double *m_out, double *l_out, fs_trace *tr)
{
    fs_status st;
    if ((unsigned)dc->merge > FS_MERGE_TREE || (unsigned)dc->form > FS_FORM_UNNORMALIZED ||
        (unsigned)dc->split > FS_SPLIT_STRIDED)
        return FS_ERR_ARG;
    if (dc->split == FS_SPLIT_CONTIGUOUS && dc->Bk < 1) return FS_ERR_TILE;
    if (dc->split == FS_SPLIT_STRIDED && (dc->parts < 1 || dc->parts > FS_MAX_DIM)) return FS_ERR_TILE;

    const int32_t n_kv = a->n_kv, d_v = a->d_v;
    const int32_t nsp = dc->split == FS_SPLIT_CONTIGUOUS ? (n_kv + dc->Bk - 1) / dc->Bk : dc->parts;
    const int32_t nodes = 2 * nsp;          /* nsp leaves + at most nsp − 1 merges */
    const int32_t stride = dc->split == FS_SPLIT_CONTIGUOUS ? 1 : dc->parts;
    states s = {malloc(sizeof(double) * (size_t)nodes), malloc(sizeof(double) * (size_t)nodes),
                malloc(sizeof(double) * (size_t)nodes * d_v)};
    double *sc = malloc(sizeof(double) * (size_t)n_kv);   /* one split's scores, in order */
    int32_t *live = malloc(sizeof(int32_t) * (size_t)nsp);
    st = FS_ERR_NOMEM;
    if (!s.m || !s.l || !s.o || !sc || !live) goto done;
    st = FS_OK;

    for (int32_t h = 0; h < a->n_q_heads && st == FS_OK; h++) {
        const int32_t kvh = fs_attn_kv_head(a, h);
        const double *V = rd ? NULL : a->V + (size_t)kvh * n_kv * d_v;
        for (int32_t i = 0; i < a->n_q && st == FS_OK; i++) {
            /* Phase 1: each split on its own. */
            for (int32_t p = 0; p < nsp; p++) {
                int32_t first, end;
                fs_skip_reason why;
                fs_tile_class cls = split_keys(a, dc, i, p, &first, &end, &why);
                if (rd && rd->visit && cls != FS_TILE_SKIPPED &&
                    (st = rd->visit(rd->ctx, tr, h, kvh, i, p, first, end, stride)) != FS_OK)
                    goto done;
                double m = -INFINITY, l = 0, *o = s.o + (size_t)p * d_v;
                int32_t n = 0, visible = 0;
                for (int32_t j = first; j < end; j += stride) {
                    double x = -INFINITY;
                    if (cls != FS_TILE_SKIPPED &&
                        (cls == FS_TILE_FULL || fs_mask_visible(&a->mask, a->n_q, n_kv, i, j)))
                        x = rd ? fs_attn_score_key(a, h, i, rd->key(rd->ctx, kvh, j))
                               : fs_reference_score(a, h, i, j);   /* same score as the spec */
                    sc[n++] = x;
                    if (x > m) m = x;
                    visible += x > -INFINITY;
                }
                for (int32_t c = 0; c < d_v; c++) o[c] = 0;
                if (m > -INFINITY) {
                    int32_t k = 0;
                    for (int32_t j = first; j < end; j += stride, k++) {
                        if (sc[k] == -INFINITY) continue;
                        double w = exp(sc[k] - m);
                        l += w;
                        const double *v = rd ? rd->value(rd->ctx, kvh, j) : V + (size_t)j * d_v;
                        for (int32_t c = 0; c < d_v; c++) o[c] += w * v[c];
                    }
                    if (dc->form == FS_FORM_NORMALIZED)
                        for (int32_t c = 0; c < d_v; c++) o[c] /= l;
                }
                s.m[p] = m;
                s.l[p] = l;
                if (tr) {
                    fs_event e = partial_event(h, kvh, i, p, first, end, stride, cls, why, visible, m, l, n, d_v, dc->form);
                    if ((e.s_row = fs_trace_vec(tr, sc, n)) < 0 ||
                        (e.o_new = fs_trace_vec(tr, o, d_v)) < 0 || !fs_trace_push(tr, &e)) {
                        st = fs_trace_error(tr);
                        goto done;
                    }
                }
            }

            /* Phase 2: merge. */
            const merge_ctx mc = {tr, a, h, i, &s, dc->form};
            int32_t root;
            if ((st = merge_all(dc->merge, nsp, live, push_merge, &mc, &root)) != FS_OK) goto done;

            double *out = O + ((size_t)h * a->n_q + i) * d_v, *o = s.o + (size_t)root * d_v;
            double l = s.l[root];
            for (int32_t c = 0; c < d_v; c++)
                out[c] = dc->form == FS_FORM_NORMALIZED ? o[c] : (l > 0 ? o[c] / l : 0);
            if (m_out) m_out[(size_t)h * a->n_q + i] = s.m[root];
            if (l_out) l_out[(size_t)h * a->n_q + i] = l;
            if (tr) {
                fs_event e = out_event(h, kvh, i, root, s.m[root], l, d_v);
                if ((e.o_new = fs_trace_vec(tr, out, d_v)) < 0 || !fs_trace_push(tr, &e)) {
                    st = fs_trace_error(tr);
                    goto done;
                }
            }
        }
    }
done:
    free(s.m);
    free(s.l);
    free(s.o);
    free(sc);
    free(live);
    return st;
}

const char *fs_merge_str(fs_merge m) { return m == FS_MERGE_TREE ? "tree" : "sequential"; }
const char *fs_split_str(fs_split s) { return s == FS_SPLIT_STRIDED ? "strided" : "contiguous"; }

/* ---- a low-precision KV cache (decode.h: fs_decode_kv) ---------------------------------- */

const char *fs_kv_fmt_str(fs_kv_fmt f) { return f == FS_KV_E4M3 ? "e4m3" : f == FS_KV_F16 ? "f16" : "?"; }

/* The cache as the kernel holds it: the stored values (k16 or k8, not descaled) and the scales. */
typedef struct {
    float *k, *v;      /* (n_kv_heads, n_kv, d), (n_kv_heads, n_kv, d_v) */
    float *sk, *sv;    /* (n_kv_heads, n_pages) */
    int32_t per;       /* positions that share one pair of scales: page_size, or n_kv (per head) */
    int32_t n_pages;
} kv_cache;

static const double *kv_row(const fs_attn *a, const fs_kv_reader *rd, bool key, int32_t g, int32_t j)
{
    if (rd) return key ? rd->key(rd->ctx, g, j) : rd->value(rd->ctx, g, j);
    return key ? a->K + ((size_t)g * a->n_kv + j) * a->d : a->V + ((size_t)g * a->n_kv + j) * a->d_v;
}

/* Rows [j0, j1) of one KV head, n numbers each, stored in the format: the scale into *s. */
static fs_status kv_store_rows(const fs_attn *a, const fs_kv_reader *rd, fs_kv_fmt fmt, bool key, int32_t g,
                               int32_t j0, int32_t j1, int32_t n, float *out, float *s)
{
    float amax = 0;
    for (int32_t j = j0; j < j1; j++) {
        const double *x = kv_row(a, rd, key, g, j);
        for (int32_t c = 0; c < n; c++) {
            float xf = (float)x[c];
            if (!isfinite(xf)) return FS_ERR_RANGE;
            amax = fmaxf(amax, fabsf(xf));
        }
    }
    float sc = 1.0f;
    if (fmt == FS_KV_E4M3 && amax > 0 && amax / 448.0f > 0) sc = amax / 448.0f;
    *s = sc;
    for (int32_t j = j0; j < j1; j++) {
        const double *x = kv_row(a, rd, key, g, j);
        float *o = out + (size_t)j * n;
        for (int32_t c = 0; c < n; c++) {
            float xf = (float)x[c];
            if (fmt == FS_KV_E4M3) {
                float y = xf / sc;
                o[c] = (float)fs_fp8_round(FS_FP8_E4M3, (double)y);
            } else {
                if (fabsf(xf) > 65504.0f) return FS_ERR_RANGE;
                o[c] = (float)fs_lowp_round(FS_LOWP_F16, (double)xf);
            }
        }
    }
    return FS_OK;
}

static fs_status kv_cache_make(const fs_attn *a, const fs_kv_store *kv, const fs_kv_reader *rd, kv_cache *c)
{
    const int32_t n_kv = a->n_kv, H = a->n_kv_heads;
    c->per = kv->fmt == FS_KV_E4M3 && kv->page_size > 0 ? kv->page_size : n_kv;
    c->n_pages = (n_kv + c->per - 1) / c->per;
    c->k = malloc(sizeof(float) * (size_t)H * n_kv * a->d);
    c->v = malloc(sizeof(float) * (size_t)H * n_kv * a->d_v);
    c->sk = malloc(sizeof(float) * (size_t)H * c->n_pages);
    c->sv = malloc(sizeof(float) * (size_t)H * c->n_pages);
    if (!c->k || !c->v || !c->sk || !c->sv) return FS_ERR_NOMEM;
    for (int32_t g = 0; g < H; g++)
        for (int32_t p = 0; p < c->n_pages; p++) {
            int32_t j0 = p * c->per, j1 = j0 + c->per < n_kv ? j0 + c->per : n_kv;
            size_t at = (size_t)g * c->n_pages + p;
            fs_status st = kv_store_rows(a, rd, kv->fmt, true, g, j0, j1, a->d, c->k + (size_t)g * n_kv * a->d, &c->sk[at]);
            if (st == FS_OK)
                st = kv_store_rows(a, rd, kv->fmt, false, g, j0, j1, a->d_v, c->v + (size_t)g * n_kv * a->d_v, &c->sv[at]);
            if (st != FS_OK) return st;
        }
    return FS_OK;
}

/* decode.h's merge in float32 (exp correctly rounded to float32). o may alias o_a. */
static void merge_f32(float m_a, float l_a, const float *o_a, float m_b, float l_b, const float *o_b, int32_t n,
                      fs_form form, float *m, float *l, float *o, float *c_a, float *c_b)
{
    float mm = m_a > m_b ? m_a : m_b;
    if (mm == -INFINITY) {
        *c_a = 1;
        *c_b = 0;
        *m = mm;
        *l = 0;
        for (int32_t c = 0; c < n; c++) o[c] = 0;
        return;
    }
    float ca = (float)exp((double)(m_a - mm)), cb = (float)exp((double)(m_b - mm));
    float la = ca * l_a, lb = cb * l_b, ll = la + lb;
    for (int32_t c = 0; c < n; c++) {
        float x, y;
        if (form == FS_FORM_NORMALIZED) {
            x = la * o_a[c];
            y = lb * o_b[c];
            o[c] = (x + y) / ll;
        } else {
            x = ca * o_a[c];
            y = cb * o_b[c];
            o[c] = x + y;
        }
    }
    *c_a = ca;
    *c_b = cb;
    *m = mm;
    *l = ll;
}

/* A float vector into the trace (through buf, n doubles). */
static int64_t trace_f32(fs_trace *tr, double *buf, const float *v, int32_t n)
{
    for (int32_t c = 0; c < n; c++) buf[c] = v[c];
    return fs_trace_vec(tr, buf, n);
}

/* One float32 merge of nodes x and y into id, and its MERGE event. */
typedef struct {
    const fs_attn *a;
    fs_form form;
    int32_t h, g, i;
    float *M, *L, *S;   /* m, ℓ, o of every node */
    double *buf;
    fs_trace *tr;
} kv_merge_ctx;

static fs_status kv_merge(const void *ctx, int32_t x, int32_t y, int32_t id, int32_t level)
{
    const kv_merge_ctx *k = ctx;
    const int32_t d_v = k->a->d_v;
    float ca, cb, *S = k->S;
    merge_f32(k->M[x], k->L[x], S + (size_t)x * d_v, k->M[y], k->L[y], S + (size_t)y * d_v, d_v, k->form, &k->M[id],
              &k->L[id], S + (size_t)id * d_v, &ca, &cb);
    if (!k->tr) return FS_OK;
    const double ml[6] = {k->M[x], k->L[x], k->M[y], k->L[y], k->M[id], k->L[id]};
    fs_event e = merge_event(k->h, k->g, k->i, x, y, id, level, ml, ca, cb, d_v, k->form);
    if ((e.o_old = trace_f32(k->tr, k->buf, S + (size_t)x * d_v, d_v)) < 0 ||
        (e.o_blk = trace_f32(k->tr, k->buf, S + (size_t)y * d_v, d_v)) < 0 ||
        (e.o_new = trace_f32(k->tr, k->buf, S + (size_t)id * d_v, d_v)) < 0 || !fs_trace_push(k->tr, &e))
        return fs_trace_error(k->tr);
    return FS_OK;
}

fs_status fs_decode_kv(const fs_attn *a, const fs_decoding *dc, const fs_kv_store *kv, const fs_kv_reader *rd,
                       double *O, double *m_out, double *l_out, fs_trace *tr)
{
    /* Q (HQ, n_q, d); K (HKV, n_kv, d), V (HKV, n_kv, d_v) from a or rd → O (HQ, n_q, d_v) */
    assert(a && dc && kv && O);
    fs_status st = rd ? FS_OK : fs_attn_check(a);
    if (st != FS_OK) return st;
    if (rd) assert(rd->key && rd->value && a->Q && !a->S);
    if ((unsigned)kv->fmt >= FS_KV_COUNT || kv->page_size < 0 || kv->page_size > FS_MAX_DIM || !a->Q || a->S ||
        a->softcap > 0)
        return FS_ERR_ARG;
    if ((unsigned)dc->merge > FS_MERGE_TREE || (unsigned)dc->form > FS_FORM_UNNORMALIZED ||
        (unsigned)dc->split > FS_SPLIT_STRIDED)
        return FS_ERR_ARG;
    if (dc->split == FS_SPLIT_CONTIGUOUS && dc->Bk < 1) return FS_ERR_TILE;
    if (dc->split == FS_SPLIT_STRIDED && (dc->parts < 1 || dc->parts > FS_MAX_DIM)) return FS_ERR_TILE;
    if (!isfinite((float)a->scale)) return FS_ERR_RANGE;

    const int32_t n_kv = a->n_kv, d = a->d, d_v = a->d_v;
    const int32_t nsp = dc->split == FS_SPLIT_CONTIGUOUS ? (n_kv + dc->Bk - 1) / dc->Bk : dc->parts;
    const int32_t nodes = 2 * nsp;
    const int32_t stride = dc->split == FS_SPLIT_CONTIGUOUS ? 1 : dc->parts;
    const bool per_page = kv->fmt == FS_KV_E4M3 && kv->page_size > 0;
    const int32_t wide = n_kv > d ? (n_kv > d_v ? n_kv : d_v) : (d > d_v ? d : d_v);
    kv_cache c = {0};
    float *sm = malloc(sizeof(float) * (size_t)nodes * (2 + (size_t)d_v));   /* m, ℓ, o of every node */
    float *sc = malloc(sizeof(float) * ((size_t)n_kv + d));                  /* a split's scores; q16 */
    double *buf = malloc(sizeof(double) * (size_t)wide);
    int32_t *live = malloc(sizeof(int32_t) * (size_t)nsp);
    st = FS_ERR_NOMEM;
    if (!sm || !sc || !buf || !live) goto done;
    if ((st = kv_cache_make(a, kv, rd, &c)) != FS_OK) goto done;
    float *M = sm, *L = sm + nodes, *S = sm + 2 * (size_t)nodes, *q16 = sc + n_kv;
    const float scale = (float)a->scale;

    for (int32_t h = 0; h < a->n_q_heads && st == FS_OK; h++) {
        const int32_t g = fs_attn_kv_head(a, h);
        const float *Kg = c.k + (size_t)g * n_kv * d, *Vg = c.v + (size_t)g * n_kv * d_v;
        const float *sk = c.sk + (size_t)g * c.n_pages, *sv = c.sv + (size_t)g * c.n_pages;
        for (int32_t i = 0; i < a->n_q && st == FS_OK; i++) {
            const double *q = a->Q + ((size_t)h * a->n_q + i) * d;
            for (int32_t x = 0; x < d; x++) {
                float qf = (float)q[x];
                if (!(fabsf(qf) <= 65504.0f)) { st = FS_ERR_RANGE; goto done; }
                q16[x] = (float)fs_lowp_round(FS_LOWP_F16, (double)qf);
            }
            /* Phase 1: each split on its own, in float32. */
            for (int32_t p = 0; p < nsp; p++) {
                int32_t first, end;
                fs_skip_reason why;
                fs_tile_class cls = split_keys(a, dc, i, p, &first, &end, &why);
                if (rd && rd->visit && cls != FS_TILE_SKIPPED &&
                    (st = rd->visit(rd->ctx, tr, h, g, i, p, first, end, stride)) != FS_OK)
                    goto done;
                float m = -INFINITY, l = 0, *o = S + (size_t)p * d_v;
                int32_t n = 0, visible = 0;
                for (int32_t j = first; j < end; j += stride) {
                    float x = -INFINITY;
                    if (cls != FS_TILE_SKIPPED &&
                        (cls == FS_TILE_FULL || fs_mask_visible(&a->mask, a->n_q, n_kv, i, j))) {
                        const float *k = Kg + (size_t)j * d;
                        float acc = 0;
                        for (int32_t y = 0; y < d; y++) {
                            float pr = q16[y] * k[y];   /* exact: 11 × 11 bits at most */
                            acc += pr;
                        }
                        float sigma = scale * sk[j / c.per];   /* K's descale in the softmax scale */
                        x = acc * sigma;
                        if (!isfinite(x)) { st = FS_ERR_RANGE; goto done; }
                    }
                    sc[n++] = x;
                    if (x > m) m = x;
                    visible += x > -INFINITY;
                }
                for (int32_t y = 0; y < d_v; y++) o[y] = 0;
                if (m > -INFINITY) {
                    int32_t k = 0;
                    for (int32_t j = first; j < end; j += stride, k++) {
                        if (sc[k] == -INFINITY) continue;
                        float w = (float)exp((double)(sc[k] - m));
                        l += w;
                        float w16 = (float)fs_lowp_round(FS_LOWP_F16, (double)w);   /* P as the tensor cores take it */
                        float svj = sv[j / c.per];
                        const float *v = Vg + (size_t)j * d_v;
                        for (int32_t y = 0; y < d_v; y++) {
                            float pr = w16 * v[y];   /* exact */
                            if (per_page) pr = pr * svj;
                            o[y] += pr;
                        }
                    }
                    if (dc->form == FS_FORM_NORMALIZED)
                        for (int32_t y = 0; y < d_v; y++) o[y] /= l;
                }
                for (int32_t y = 0; y < d_v; y++)
                    if (!isfinite(o[y])) { st = FS_ERR_RANGE; goto done; }
                M[p] = m;
                L[p] = l;
                if (tr) {
                    fs_event e = partial_event(h, g, i, p, first, end, stride, cls, why, visible, m, l, n, d_v, dc->form);
                    e.lowp = true;
                    e.q_scale = e.p_scale = 1;
                    e.k_scale = first < n_kv ? sk[first / c.per] : 1;
                    e.v_scale = first < n_kv ? sv[first / c.per] : 1;
                    if ((e.s_row = trace_f32(tr, buf, sc, n)) < 0 || (e.o_new = trace_f32(tr, buf, o, d_v)) < 0 ||
                        !fs_trace_push(tr, &e)) {
                        st = fs_trace_error(tr);
                        goto done;
                    }
                }
            }

            /* Phase 2: merge, in float32. */
            const kv_merge_ctx mc = {a, dc->form, h, g, i, M, L, S, buf, tr};
            int32_t root;
            if ((st = merge_all(dc->merge, nsp, live, kv_merge, &mc, &root)) != FS_OK) goto done;

            double *out = O + ((size_t)h * a->n_q + i) * d_v;
            const float *o = S + (size_t)root * d_v, l = L[root];
            for (int32_t y = 0; y < d_v; y++) {
                float r = dc->form == FS_FORM_NORMALIZED ? o[y] : (l > 0 ? o[y] / l : 0);
                if (!per_page) r = r * sv[0];   /* V's one descale, on the output */
                out[y] = r;
            }
            if (m_out) m_out[(size_t)h * a->n_q + i] = M[root];
            if (l_out) l_out[(size_t)h * a->n_q + i] = l;
            if (tr) {
                fs_event e = out_event(h, g, i, root, M[root], l, d_v);
                if ((e.o_new = fs_trace_vec(tr, out, d_v)) < 0 || !fs_trace_push(tr, &e)) {
                    st = fs_trace_error(tr);
                    goto done;
                }
            }
        }
    }
done:
    free(c.k);
    free(c.v);
    free(c.sk);
    free(c.sv);
    free(sm);
    free(sc);
    free(buf);
    free(live);
    return st;
}
