/* attn.c: the attention problem: defaults, validation, GQA head mapping and masks.
 *
 * Masks answer two questions: is key j visible to query i (for the element mask inside a
 * partial tile), and what class is a whole tile (asked once per tile, before any arithmetic).
 */
#include "attn.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

fs_attn fs_attn_make(int32_t n_q, int32_t n_kv, int32_t d, int32_t d_v)
{
    fs_attn a;
    memset(&a, 0, sizeof a);
    a.n_q_heads = a.n_kv_heads = 1;
    a.n_q = n_q;
    a.n_kv = n_kv;
    a.d = d;
    a.d_v = d_v;
    a.scale = fs_attn_default_scale(d);
    a.mask.kind = FS_MASK_NONE;
    return a;
}

double fs_attn_default_scale(int32_t d) { return d > 0 ? 1.0 / sqrt((double)d) : 1.0; }

static long double wide_score(const fs_attn *a, int32_t h, int32_t i, int32_t j);
static long double wide_dot(const double *q, const double *k, int32_t d, double scale);

/* 1 when every one of the n numbers of x is finite. */
static int all_finite(const double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

fs_status fs_attn_check(const fs_attn *a)
{
    assert(a);
    if (a->n_q < 1 || a->n_kv < 1 || a->d_v < 1 || a->n_q > FS_MAX_DIM || a->n_kv > FS_MAX_DIM ||
        a->d_v > FS_MAX_HEAD)
        return FS_ERR_SHAPE;
    if (a->n_q_heads < 1 || a->n_kv_heads < 1 || a->n_q_heads > FS_MAX_HEADS ||
        a->n_q_heads % a->n_kv_heads != 0)
        return FS_ERR_SHAPE;
    if (!a->S && (a->d < 1 || a->d > FS_MAX_HEAD || !a->Q || !a->K)) return FS_ERR_SHAPE;
    if (!a->V) return FS_ERR_SHAPE;
    if (!isfinite(a->scale) || !isfinite(a->softcap) || a->softcap < 0) return FS_ERR_ARG;
    int64_t hq = a->n_q_heads, hk = a->n_kv_heads;
    if (a->S) {
        /* Given scores may hold −∞ (masked), never NaN or +∞. */
        int64_t n = hq * a->n_q * a->n_kv;
        for (int64_t i = 0; i < n; i++)
            if (isnan(a->S[i]) || a->S[i] == INFINITY) return FS_ERR_VALUE;
    } else {
        if (!all_finite(a->Q, hq * a->n_q * a->d) || !all_finite(a->K, hk * a->n_kv * a->d))
            return FS_ERR_VALUE;
    }
    if (!all_finite(a->V, hk * a->n_kv * a->d_v)) return FS_ERR_VALUE;
    fs_status st = fs_mask_check(&a->mask, a->n_kv);
    return st != FS_OK ? st : fs_attn_check_range(a, NULL);
}

/* The largest Euclidean norm of n rows of length d, or +∞ when it overflows. */
static double max_row_norm(const double *x, int64_t n, int32_t d)
{
    double best = 0;
    for (int64_t r = 0; r < n; r++) {
        double ss = 0;
        for (int32_t c = 0; c < d; c++) ss += x[r * d + c] * x[r * d + c];
        if (ss > best) best = ss;
    }
    return sqrt(best);
}

/* scale · q_i·k_j (or scale · S[i][j]) in long double, for the report. */
static long double wide_dot(const double *q, const double *k, int32_t d, double scale)
{
    long double dot = 0;
    for (int32_t c = 0; c < d; c++) dot += (long double)q[c] * k[c];
    return dot * scale;
}

static long double wide_score(const fs_attn *a, int32_t h, int32_t i, int32_t j)
{
    if (a->S) {
        double s = a->S[((size_t)h * a->n_q + i) * a->n_kv + j];
        return s == -INFINITY ? -INFINITY : (long double)s * a->scale;
    }
    const double *q = a->Q + ((size_t)h * a->n_q + i) * a->d;
    const double *k = a->K + ((size_t)fs_attn_kv_head(a, h) * a->n_kv + j) * a->d;
    return wide_dot(q, k, a->d, a->scale);
}

fs_status fs_attn_check_range(const fs_attn *a, fs_range_issue *where)
{
    /* shapes: Q (Hq, n_q, d), K (Hkv, n_kv, d) or S (Hq, n_q, n_kv); V (Hkv, n_kv, d_v) */
    int64_t hq = a->n_q_heads, hk = a->n_kv_heads;
    int64_t nv = hk * a->n_kv * a->d_v;
    double v_limit = FS_VALUE_LIMIT / a->n_kv;
    for (int64_t x = 0; x < nv; x++)
        if (fabs(a->V[x]) > v_limit) {
            if (where) {
                where->in_v = true;
                where->head = (int32_t)(x / ((int64_t)a->n_kv * a->d_v));
                where->row = (int32_t)(x / a->d_v % a->n_kv);
                where->col = (int32_t)(x % a->d_v);
                where->value = a->V[x];
            }
            return FS_ERR_RANGE;
        }
    /* Cauchy–Schwarz: |q·k| ≤ ‖q‖ ‖k‖. When the bound is within the limit, no score can pass it. */
    double bound;
    if (a->S) {
        double mx = 0;
        for (int64_t x = 0; x < hq * a->n_q * a->n_kv; x++)
            if (a->S[x] != -INFINITY && fabs(a->S[x]) > mx) mx = fabs(a->S[x]);
        bound = mx * fabs(a->scale);
    } else {
        bound = max_row_norm(a->Q, hq * a->n_q, a->d) * max_row_norm(a->K, hk * a->n_kv, a->d) *
                fabs(a->scale);
    }
    if (bound <= FS_SCORE_LIMIT) return FS_OK;
    for (int32_t h = 0; h < a->n_q_heads; h++)
        for (int32_t i = 0; i < a->n_q; i++)
            for (int32_t j = 0; j < a->n_kv; j++) {
                long double s = wide_score(a, h, i, j);
                /* !(|s| ≤ limit) also refuses a NaN, where long double has no more range than
                 * double and two overflowing terms of q·k cancel. */
                /* With the soft-cap on, any finite or infinite s becomes cap · tanh(s / cap), at
                 * most cap in size: only a NaN is out of range. */
                bool bad = a->softcap > 0 ? isnan(s) : s != -INFINITY && !(fabsl(s) <= FS_SCORE_LIMIT);
                if (bad) {
                    if (where) {
                        where->in_v = false;
                        where->head = h;
                        where->row = i;
                        where->col = j;
                        where->value = s;
                    }
                    return FS_ERR_RANGE;
                }
            }
    return FS_OK;
}

fs_status fs_mask_check(const fs_mask *m, int32_t n_kv)
{
    switch (m->kind) {
    case FS_MASK_NONE:
    case FS_MASK_CAUSAL: return FS_OK;
    case FS_MASK_WINDOW: return m->window < 1 ? FS_ERR_MASK : FS_OK;
    case FS_MASK_BITS:
        return !m->bits || m->words_per_row < fs_mask_words(n_kv) ? FS_ERR_MASK : FS_OK;
    }
    return FS_ERR_MASK;
}

double fs_attn_score(const fs_attn *a, int32_t h, int32_t i, int32_t j)
{
    if (a->S) {
        double s = a->S[((size_t)h * a->n_q + i) * a->n_kv + j];
        if (s == -INFINITY) return s;
        s *= a->scale;
        if (a->softcap > 0) s = a->softcap * tanh(s / a->softcap);
        return s;
    }
    return fs_attn_score_key(a, h, i, a->K + ((size_t)fs_attn_kv_head(a, h) * a->n_kv + j) * a->d);
}

double fs_attn_score_key(const fs_attn *a, int32_t h, int32_t i, const double *k)
{
    const double *q = a->Q + ((size_t)h * a->n_q + i) * a->d;
    double dot = 0;
    for (int32_t c = 0; c < a->d; c++) dot += q[c] * k[c];
    double s = dot * a->scale;
    /* q·k can overflow where scale · q·k does not (scale 1e-200 on entries of 1e200), or
     * two overflowing terms cancel: fs_attn_check_range let this score through because its
     * long double value is in range, so take that value. */
    if (!isfinite(s)) s = (double)wide_dot(q, k, a->d, a->scale);
    if (a->softcap > 0) s = a->softcap * tanh(s / a->softcap);
    return s;
}

const char *fs_attn_status_detail(const fs_attn *a, fs_status st, char *buf, size_t n)
{
    fs_range_issue w;
    if (st != FS_ERR_RANGE || fs_attn_check_range(a, &w) != FS_ERR_RANGE) {
        snprintf(buf, n, "%s", fs_status_str(st));
    } else if (w.in_v) {
        snprintf(buf, n,
                 "V's entry at KV head %d, key %d, column %d is %.6Lg: with %d keys the running sum "
                 "of p·v can reach %.3Lg, beyond the limit of %.2g that keeps float64 finite; scale "
                 "V down",
                 w.head, w.row, w.col, w.value, a->n_kv, fabsl(w.value) * a->n_kv, FS_VALUE_LIMIT);
    } else {
        snprintf(buf, n,
                 "the score of query row %d and key %d (query head %d), %s = %.6Lg, is beyond ±%.2g, "
                 "the limit that keeps the softmax's intermediates (s − m, and s·log2 e in the exp2 "
                 "form) finite in float64; scale the inputs or --scale down",
                 w.row, w.col, w.head, a->S ? "scale·S" : "scale·q·k", w.value, FS_SCORE_LIMIT);
    }
    return buf;
}

int32_t fs_attn_kv_head(const fs_attn *a, int32_t h) { return h / (a->n_q_heads / a->n_kv_heads); }

int64_t fs_mask_query_pos(const fs_mask *m, int32_t n_q, int32_t n_kv, int32_t i)
{
    int64_t off = m->has_offset ? m->offset : (int64_t)n_kv - n_q;
    return (int64_t)i + off;
}

int32_t fs_mask_words(int32_t n_kv) { return (n_kv + 63) / 64; }

/* Bit j of bitmask row i: is key j visible to query row i? */
static bool bit_at(const fs_mask *m, int32_t i, int32_t j)
{
    return (m->bits[(size_t)i * (size_t)m->words_per_row + (size_t)(j >> 6)] >> (j & 63)) & 1u;
}

bool fs_mask_visible(const fs_mask *m, int32_t n_q, int32_t n_kv, int32_t i, int32_t j)
{
    switch (m->kind) {
    case FS_MASK_NONE: return true;
    case FS_MASK_CAUSAL: return j <= fs_mask_query_pos(m, n_q, n_kv, i);
    case FS_MASK_WINDOW: {
        int64_t p = fs_mask_query_pos(m, n_q, n_kv, i);
        return j <= p && j > p - m->window;
    }
    case FS_MASK_BITS: return bit_at(m, i, j);
    }
    return false;
}

fs_tile_class fs_mask_classify(const fs_mask *m, int32_t n_q, int32_t n_kv, int32_t r0, int32_t r1,
                               int32_t c0, int32_t c1, fs_skip_reason *why)
{
    assert(r0 < r1 && c0 < c1);
    fs_skip_reason reason = FS_SKIP_NONE;
    fs_tile_class cls = FS_TILE_FULL;
    switch (m->kind) {
    case FS_MASK_NONE: break;
    case FS_MASK_CAUSAL:
    case FS_MASK_WINDOW: {
        int64_t p0 = fs_mask_query_pos(m, n_q, n_kv, r0);      /* first query's position */
        int64_t p1 = fs_mask_query_pos(m, n_q, n_kv, r1 - 1);  /* last query's position */
        int64_t last = c1 - 1;
        if (c0 > p1) { /* the oldest key is newer than the newest query */
            cls = FS_TILE_SKIPPED;
            reason = FS_SKIP_CAUSAL;
        } else if (m->kind == FS_MASK_WINDOW && last <= p0 - m->window) {
            /* the newest key is older than the oldest query's window... for every query */
            cls = FS_TILE_SKIPPED;
            reason = FS_SKIP_WINDOW;
        } else {
            bool full = last <= p0; /* every key at or before every query */
            if (m->kind == FS_MASK_WINDOW) full = full && c0 > p1 - m->window;
            cls = full ? FS_TILE_FULL : FS_TILE_PARTIAL;
        }
        break;
    }
    case FS_MASK_BITS: {
        int64_t seen = 0, total = (int64_t)(r1 - r0) * (c1 - c0);
        for (int32_t i = r0; i < r1; i++)
            for (int32_t j = c0; j < c1; j++) seen += bit_at(m, i, j);
        if (seen == 0) {
            cls = FS_TILE_SKIPPED;
            reason = m->is_tree ? FS_SKIP_TREE : FS_SKIP_BITMASK;
        } else {
            cls = seen == total ? FS_TILE_FULL : FS_TILE_PARTIAL;
        }
        break;
    }
    }
    if (why) *why = reason;
    return cls;
}

fs_status fs_mask_tree_build(const int32_t *parent, int32_t n, uint64_t *bits, int32_t *bad_index)
{
    assert(parent && bits);
    if (bad_index) *bad_index = -1;
    if (n < 1 || n > FS_MAX_DIM) return FS_ERR_SHAPE;
    int32_t w = fs_mask_words(n), roots = 0;
    for (int32_t i = 0; i < n; i++) {
        if (parent[i] < -1 || parent[i] >= n || parent[i] == i) {
            if (bad_index) *bad_index = i;
            return FS_ERR_TREE;
        }
        if (parent[i] == -1 && ++roots > 1) {
            if (bad_index) *bad_index = i;
            return FS_ERR_TREE;
        }
    }
    if (roots == 0) {
        if (bad_index) *bad_index = 0;
        return FS_ERR_TREE;
    }
    memset(bits, 0, sizeof(uint64_t) * (size_t)n * (size_t)w);
    for (int32_t i = 0; i < n; i++) {
        /* Walk up to the root; more than n steps means a cycle. */
        int32_t j = i, steps = 0;
        while (j != -1) {
            if (++steps > n) {
                if (bad_index) *bad_index = i;
                return FS_ERR_TREE;
            }
            bits[(size_t)i * (size_t)w + (size_t)(j >> 6)] |= (uint64_t)1 << (j & 63);
            j = parent[j];
        }
    }
    return FS_OK;
}

fs_mask fs_mask_tree(const uint64_t *bits, int32_t n)
{
    fs_mask m;
    memset(&m, 0, sizeof m);
    m.kind = FS_MASK_BITS;
    m.is_tree = true;
    m.bits = bits;
    m.words_per_row = fs_mask_words(n);
    return m;
}

const char *fs_mask_kind_str(fs_mask_kind k)
{
    static const char *s[] = {"none", "causal", "window", "bits"};
    return (unsigned)k < 4 ? s[k] : "?";
}

const char *fs_skip_reason_str(fs_skip_reason r)
{
    static const char *s[] = {"none", "causal", "window", "tree", "bitmask"};
    return (unsigned)r < 5 ? s[r] : "?";
}

const char *fs_tile_class_str(fs_tile_class c)
{
    static const char *s[] = {"full", "partial", "skipped"};
    return (unsigned)c < 3 ? s[c] : "?";
}
