/* decode.c: FlashDecoding: per-split partials (phase 1), then their merge (phase 2).
 *
 * Each query row is handled on its own: its KV positions are cut into splits, each split gives
 * a partial state (m, ℓ, o) that depends on that split alone, and the partials are merged either
 * left to right or as a pairwise tree. Node ids: the partials are 0 … n_splits − 1, each merge
 * makes the next id.
 */
#include "decode.h"
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

typedef struct {
    double *m, *l, *o;   /* (nodes), (nodes), (nodes, d_v) */
} states;

static fs_status push_merge(fs_trace *tr, const fs_attn *a, int32_t h, int32_t i, states *st,
                            int32_t x, int32_t y, int32_t id, int32_t level, fs_form form)
{
    const int32_t d_v = a->d_v;
    double ca, cb;
    fs_decode_merge(st->m[x], st->l[x], st->o + (size_t)x * d_v, st->m[y], st->l[y],
                    st->o + (size_t)y * d_v, d_v, form, &st->m[id], &st->l[id],
                    st->o + (size_t)id * d_v, &ca, &cb);
    if (!tr) return FS_OK;
    fs_event e = fs_event_blank(FS_EV_MERGE);
    e.head = h;
    e.kv_head = fs_attn_kv_head(a, h);
    e.row = i;
    e.a = x;
    e.b = y;
    e.id = id;
    e.level = level;
    e.m_old = st->m[x];
    e.l_old = st->l[x];
    e.m_blk = st->m[y];
    e.l_blk = st->l[y];
    e.m_new = st->m[id];
    e.l_new = st->l[id];
    e.alpha = ca;
    e.beta = cb;
    e.n_o = d_v;
    e.normalized = form == FS_FORM_NORMALIZED;
    if ((e.o_old = fs_trace_vec(tr, st->o + (size_t)x * d_v, d_v)) < 0 ||
        (e.o_blk = fs_trace_vec(tr, st->o + (size_t)y * d_v, d_v)) < 0 ||
        (e.o_new = fs_trace_vec(tr, st->o + (size_t)id * d_v, d_v)) < 0 || !fs_trace_push(tr, &e))
        return fs_trace_error(tr);
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
                int32_t first = dc->split == FS_SPLIT_CONTIGUOUS ? p * dc->Bk : p;
                int32_t end = dc->split == FS_SPLIT_CONTIGUOUS
                                  ? (first + dc->Bk < n_kv ? first + dc->Bk : n_kv) : n_kv;
                fs_tile_class cls = FS_TILE_PARTIAL;
                fs_skip_reason why = FS_SKIP_NONE;
                if (dc->split == FS_SPLIT_CONTIGUOUS)
                    cls = fs_mask_classify(&a->mask, a->n_q, n_kv, i, i + 1, first, end, &why);
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
                    e.normalized = dc->form == FS_FORM_NORMALIZED;
                    if ((e.s_row = fs_trace_vec(tr, sc, n)) < 0 ||
                        (e.o_new = fs_trace_vec(tr, o, d_v)) < 0 || !fs_trace_push(tr, &e)) {
                        st = fs_trace_error(tr);
                        goto done;
                    }
                }
            }

            /* Phase 2: merge. */
            int32_t next = nsp, root = 0;
            if (dc->merge == FS_MERGE_SEQUENTIAL) {
                for (int32_t p = 1; p < nsp && st == FS_OK; p++) {
                    st = push_merge(tr, a, h, i, &s, root, p, next, p - 1, dc->form);
                    root = next++;
                }
            } else {
                int32_t n = nsp, level = 0;
                for (int32_t p = 0; p < nsp; p++) live[p] = p;
                while (n > 1 && st == FS_OK) {
                    int32_t k = 0;
                    for (int32_t p = 0; p + 1 < n && st == FS_OK; p += 2) {
                        st = push_merge(tr, a, h, i, &s, live[p], live[p + 1], next, level, dc->form);
                        live[k++] = next++;
                    }
                    if (n % 2) live[k++] = live[n - 1];   /* the odd one waits a level */
                    n = k;
                    level++;
                }
                root = live[0];
            }
            if (st != FS_OK) goto done;

            double *out = O + ((size_t)h * a->n_q + i) * d_v, *o = s.o + (size_t)root * d_v;
            double l = s.l[root];
            for (int32_t c = 0; c < d_v; c++)
                out[c] = dc->form == FS_FORM_NORMALIZED ? o[c] : (l > 0 ? o[c] / l : 0);
            if (m_out) m_out[(size_t)h * a->n_q + i] = s.m[root];
            if (l_out) l_out[(size_t)h * a->n_q + i] = l;
            if (tr) {
                fs_event e = fs_event_blank(FS_EV_OUT);
                e.head = h;
                e.kv_head = kvh;
                e.row = i;
                e.id = root;
                e.m_new = s.m[root];
                e.l_new = l;
                e.n_o = d_v;
                e.normalized = true;
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
