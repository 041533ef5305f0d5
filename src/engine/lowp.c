/* lowp.c: tiled attention with FP8 (or 16-bit, or float32) inputs, every operation rounded as
 * float32 rounds it (see lowp.h for the recipe). Scalar and plain: this is the spec a fast FP8
 * kernel is compared with, run at the sizes of a lesson or a measurement.
 *
 * The float32 arithmetic is C's own float arithmetic (FLT_EVAL_METHOD 0 on the targets we build
 * for); each product is a statement of its own so that no compiler fuses it with the sum. exp is
 * computed in float64 and rounded to float32, which is the correctly rounded float32 exp.
 */
#include "lowp.h"

#include <assert.h>
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8.h"

fs_lowp_recipe fs_lowp_recipe_default(void)
{
    fs_lowp_recipe r = {FS_LOWP_E4M3, FS_SCALE_TENSOR, 256.0, false, 1, false};
    return r;
}

const char *fs_lowp_fmt_str(fs_lowp_fmt f)
{
    static const char *s[] = {"f32", "f16", "bf16", "e4m3", "e5m2"};
    return (unsigned)f < FS_LOWP_COUNT ? s[f] : "?";
}

static const char *scaling_str(fs_lowp_scaling s)
{
    static const char *n[] = {"none", "tensor", "block"};
    return (unsigned)s < FS_SCALE_COUNT ? n[s] : "?";
}

static bool is_fp8(fs_lowp_fmt f) { return f == FS_LOWP_E4M3 || f == FS_LOWP_E5M2; }

double fs_lowp_fmt_max(fs_lowp_fmt f)
{
    switch (f) {
    case FS_LOWP_F16: return 65504.0;
    case FS_LOWP_BF16: return 0x1.FEp127;
    case FS_LOWP_E4M3: return fs_fp8_max(FS_FP8_E4M3);
    case FS_LOWP_E5M2: return fs_fp8_max(FS_FP8_E5M2);
    default: return FLT_MAX;
    }
}

/* x rounded to a binary format with `man` fraction bits, smallest normal exponent emin, largest
 * finite value max; nearest, ties to even, saturating (as fp8.c, for the 16-bit formats). */
static double round_fmt(double x, int man, int emin, double max)
{
    if (isnan(x) || x == 0) return x;
    if (isinf(x)) return copysign(max, x);
    int e;
    frexp(x, &e);
    int E = e - 1 < emin ? emin : e - 1;
    double q = ldexp(1.0, E - man);
    double r = nearbyint(x / q) * q;
    return fabs(r) > max ? copysign(max, x) : r;
}

double fs_lowp_round(fs_lowp_fmt f, double x)
{
    switch (f) {
    case FS_LOWP_F16: return round_fmt(x, 10, -14, 65504.0);
    case FS_LOWP_BF16: return round_fmt(x, 7, -126, 0x1.FEp127);
    case FS_LOWP_E4M3: return fs_fp8_round(FS_FP8_E4M3, x);
    case FS_LOWP_E5M2: return fs_fp8_round(FS_FP8_E5M2, x);
    default: return (double)(float)x;
    }
}

/* ---- recipes as words -------------------------------------------------------------------- */

static bool word_is(const char *w, size_t n, const char *name) { return strlen(name) == n && !memcmp(w, name, n); }

bool fs_lowp_recipe_parse(const char *s, size_t n, fs_lowp_recipe *r, size_t *bad_at, char *why, size_t why_n)
{
    fs_lowp_recipe x = fs_lowp_recipe_default();
    bool fmt_set = false, scale_set = false, p_set = false, seed_set = false;
    size_t i = 0, seed_at = 0, p_at = 0, scale_at = 0;
    *bad_at = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
        if (i == n) break;
        size_t a = i;
        while (i < n && s[i] != ' ' && s[i] != '\t') i++;
        const char *w = s + a;
        size_t wn = i - a;
        *bad_at = a;
        int f = -1, sc = -1;
        for (int k = 0; k < FS_LOWP_COUNT; k++)
            if (word_is(w, wn, fs_lowp_fmt_str((fs_lowp_fmt)k))) f = k;
        for (int k = 0; k < FS_SCALE_COUNT; k++)
            if (word_is(w, wn, scaling_str((fs_lowp_scaling)k))) sc = k;
        if (f >= 0) {
            if (fmt_set) return snprintf(why, why_n, "a second format '%s'", fs_lowp_fmt_str((fs_lowp_fmt)f)), false;
            x.fmt = (fs_lowp_fmt)f;
            fmt_set = true;
        } else if (sc >= 0) {
            if (scale_set) return snprintf(why, why_n, "a second scaling '%s'", scaling_str((fs_lowp_scaling)sc)), false;
            x.scaling = (fs_lowp_scaling)sc;
            scale_set = true;
            scale_at = a;
        } else if (word_is(w, wn, "hadamard")) {
            if (x.hadamard) return snprintf(why, why_n, "'hadamard' twice"), false;
            x.hadamard = true;
        } else if (wn > 5 && !memcmp(w, "seed=", 5)) {
            unsigned long long v = 0;
            size_t k = 5;
            for (; k < wn && isdigit((unsigned char)w[k]); k++) {
                unsigned dig = (unsigned)(w[k] - '0');
                if (v > (UINT64_MAX - dig) / 10) break;
                v = v * 10 + dig;
            }
            if (k < wn || seed_set) return snprintf(why, why_n, seed_set ? "'seed=' twice" : "seed= takes a whole number below 2^64"), false;
            x.seed = v;
            seed_set = true;
            seed_at = a;
        } else if (wn > 8 && !memcmp(w, "p-scale=", 8)) {
            char num[40];
            if (wn - 8 >= sizeof num || p_set) return snprintf(why, why_n, p_set ? "'p-scale=' twice" : "p-scale= takes a number"), false;
            memcpy(num, w + 8, wn - 8);
            num[wn - 8] = 0;
            char *end;
            double v = strtod(num, &end);
            if (end == num || *end || !(v > 0) || v > 1e30 || v < 1e-30)
                return snprintf(why, why_n, "p-scale= takes a number between 1e-30 and 1e30"), false;
            x.p_scale = v;
            p_set = true;
            p_at = a;
        } else {
            return snprintf(why, why_n, "unknown word '%.*s' (formats f32 f16 bf16 e4m3 e5m2, scalings tensor block none, "
                                        "hadamard, seed=N, p-scale=X)", (int)(wn < 24 ? wn : 24), w), false;
        }
    }
    if (!scale_set) x.scaling = is_fp8(x.fmt) ? FS_SCALE_TENSOR : FS_SCALE_NONE;
    if (!p_set) x.p_scale = is_fp8(x.fmt) ? 256.0 : 1.0;
    if (!is_fp8(x.fmt) && x.scaling != FS_SCALE_NONE)
        return *bad_at = scale_at, snprintf(why, why_n, "scales are for the 8-bit formats (%s takes none)", fs_lowp_fmt_str(x.fmt)), false;
    if (x.fmt == FS_LOWP_F32 && p_set)
        return *bad_at = p_at, snprintf(why, why_n, "f32 keeps P in float32: p-scale does not apply"), false;
    if (seed_set && !x.hadamard) return *bad_at = seed_at, snprintf(why, why_n, "seed= is for hadamard's signs"), false;
    *r = x;
    return true;
}

const char *fs_lowp_recipe_str(const fs_lowp_recipe *r, char *buf, size_t n)
{
    char h[40] = "";
    if (r->hadamard) snprintf(h, sizeof h, " hadamard seed=%llu", (unsigned long long)r->seed);
    if (r->fmt == FS_LOWP_F32) snprintf(buf, n, "f32%s", h);
    else snprintf(buf, n, "%s %s%s p-scale=%.17g", fs_lowp_fmt_str(r->fmt), scaling_str(r->scaling), h, r->p_scale);
    return buf;
}

/* ---- incoherent processing ---------------------------------------------------------------- */

uint64_t fs_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void fs_lowp_signs(uint64_t seed, int32_t d, double *signs)
{
    uint64_t st = seed;
    for (int32_t c = 0; c < d; c++) signs[c] = (fs_splitmix64(&st) >> 63) ? -1.0 : 1.0;
}

static bool pow2(int32_t d) { return d >= 1 && (d & (d - 1)) == 0; }

fs_status fs_lowp_hadamard(double *X, int64_t n, int32_t d, uint64_t seed)
{
    /* X (n, d) → X D H / √d, row by row: signs, then the fast Walsh–Hadamard transform */
    if (!pow2(d) || d > FS_MAX_DIM) return FS_ERR_ARG;
    double *sg = malloc(sizeof(double) * (size_t)d);
    if (!sg) return FS_ERR_NOMEM;
    fs_lowp_signs(seed, d, sg);
    const double norm = 1.0 / sqrt((double)d);
    for (int64_t r = 0; r < n; r++) {
        double *x = X + (size_t)r * d;
        for (int32_t c = 0; c < d; c++) x[c] *= sg[c];
        for (int32_t len = 1; len < d; len <<= 1)
            for (int32_t i = 0; i < d; i += 2 * len)
                for (int32_t j = i; j < i + len; j++) {
                    double u = x[j], v = x[j + len];
                    x[j] = u + v;
                    x[j + len] = u - v;
                }
        for (int32_t c = 0; c < d; c++) x[c] *= norm;
    }
    free(sg);
    return FS_OK;
}

/* ---- quantization --------------------------------------------------------------------------- */

/* One tensor (heads × rows × cols of float64) as the recipe stores it: x8 the rounded values in
 * the format's units (float32 holds each exactly), one scale per (head, block of `blk` rows). */
typedef struct {
    float *x8;
    float *scale;      /* (heads, nblk) */
    int32_t rows, cols, blk, nblk;
} quant;

static fs_status quantize(const fs_lowp_recipe *r, const double *X, int32_t heads, int32_t rows, int32_t cols,
                          int32_t blk, quant *q)
{
    /* X (heads, rows, cols) → q->x8 (same shape), q->scale (heads, ⌈rows / blk⌉) */
    q->rows = rows;
    q->cols = cols;
    q->blk = blk;
    q->nblk = (rows + blk - 1) / blk;
    size_t n = (size_t)heads * rows * cols;
    q->x8 = malloc(sizeof(float) * n);
    q->scale = malloc(sizeof(float) * (size_t)heads * q->nblk);
    if (!q->x8 || !q->scale) return FS_ERR_NOMEM;
    for (size_t e = 0; e < n; e++) {
        q->x8[e] = (float)X[e];                        /* the input as float32 */
        if (isinf(q->x8[e])) return FS_ERR_RANGE;
    }
    const float fmax = (float)fs_lowp_fmt_max(r->fmt);
    float tensor_amax = 0;
    for (size_t e = 0; e < n; e++) tensor_amax = fmaxf(tensor_amax, fabsf(q->x8[e]));
    for (int32_t h = 0; h < heads; h++)
        for (int32_t b = 0; b < q->nblk; b++) {
            size_t e0 = ((size_t)h * rows + (size_t)b * blk) * cols;
            size_t e1 = ((size_t)h * rows + (size_t)(b + 1 < q->nblk ? (b + 1) * blk : rows)) * cols;
            float amax = tensor_amax, s = 1;
            if (r->scaling == FS_SCALE_BLOCK) {
                amax = 0;
                for (size_t e = e0; e < e1; e++) amax = fmaxf(amax, fabsf(q->x8[e]));
            }
            if (r->scaling != FS_SCALE_NONE && amax > 0) s = fmaxf(amax / fmax, FLT_MIN);
            q->scale[(size_t)h * q->nblk + b] = s;
            for (size_t e = e0; e < e1; e++) {
                float y = q->x8[e] / s;
                q->x8[e] = (float)fs_lowp_round(r->fmt, (double)y);
            }
        }
    return FS_OK;
}

static void quant_free(quant *q)
{
    free(q->x8);
    free(q->scale);
}

static float qscale(const quant *q, int32_t h, int32_t row) { return q->scale[(size_t)h * q->nblk + row / q->blk]; }

/* ---- the tiled run ---------------------------------------------------------------------------- */

typedef struct {
    const fs_attn *a;
    const fs_lowp_recipe *r;
    int32_t Bq, Bk;
    const double *Qx, *Kx;   /* Q and K as the quantizer saw them (after the Hadamard), float64 */
    quant q, k, v;
    float *m, *l, *o;        /* running state of every row: (HQ·n_q), (HQ·n_q), (HQ·n_q, d_v) */
    /* scratch for one row */
    float *s, *P, *P8, *pv;
    double *dv;              /* (max(Bk, d, d_v) · max(d, d_v)) doubles for the trace */
    fs_lowp_fmt pfmt;
} run_t;

static double *to_d(double *dst, const float *src, size_t n, float mul)
{
    for (size_t e = 0; e < n; e++) dst[e] = (double)src[e] * (double)mul;
    return dst;
}

static fs_status push_vec(fs_trace *tr, int64_t *off, const double *v, int32_t n)
{
    return (*off = fs_trace_vec(tr, v, n)) < 0 ? FS_ERR_NOMEM : FS_OK;
}

/* The TILE event's inputs: K's and V's rows [c0, c1), exact and dequantized. */
static fs_status record_tile_values(run_t *R, fs_trace *tr, fs_event *te, int32_t g, int32_t c0, int32_t c1)
{
    const fs_attn *a = R->a;
    int32_t nc = c1 - c0, d = a->d, dv = a->d_v;
    fs_status st;
    size_t ko = ((size_t)g * a->n_kv + c0) * d, vo = ((size_t)g * a->n_kv + c0) * dv;
    float sk = qscale(&R->k, g, c0), sv = qscale(&R->v, g, c0);
    if ((st = push_vec(tr, &te->k_tile, R->Kx + ko, nc * d)) != FS_OK) return st;
    if ((st = push_vec(tr, &te->k8_tile, to_d(R->dv, R->k.x8 + ko, (size_t)nc * d, sk), nc * d)) != FS_OK) return st;
    if ((st = push_vec(tr, &te->v_tile, a->V + vo, nc * dv)) != FS_OK) return st;
    return push_vec(tr, &te->v8_tile, to_d(R->dv, R->v.x8 + vo, (size_t)nc * dv, sv), nc * dv);
}

/* One query row i of head h against keys [c0, c1) (the pair te), float32 throughout. */
static fs_status row_step(run_t *R, int32_t h, int32_t g, int32_t i, const fs_event *te, fs_trace *tr)
{
    const fs_attn *a = R->a;
    const int32_t d = a->d, dv = a->d_v, c0 = te->c0, c1 = te->c1, nc = c1 - c0;
    const size_t ri = (size_t)h * a->n_q + i;
    const float *q8 = R->q.x8 + ri * d;
    const float sq = qscale(&R->q, h, i), sk = qscale(&R->k, g, c0), sv = qscale(&R->v, g, c0);
    const float sigma = ((float)a->scale * sq) * sk;            /* descales folded into the scale */
    const float sp = (float)R->r->p_scale, dvs = sv / sp;
    float *o = R->o + ri * dv;
    float m_old = R->m[ri], l_old = R->l[ri], m_blk = -INFINITY;
    int32_t visible = 0;
    for (int32_t j = 0; j < nc; j++) {
        if (te->cls == FS_TILE_PARTIAL && !fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, c0 + j)) {
            R->s[j] = -INFINITY;
            continue;
        }
        const float *k8 = R->k.x8 + ((size_t)g * a->n_kv + c0 + j) * d;
        float acc = 0;
        for (int32_t c = 0; c < d; c++) {
            float prod = q8[c] * k8[c];
            acc += prod;
        }
        float s = acc * sigma;
        if (isinf(s)) return FS_ERR_RANGE;
        R->s[j] = s;
        visible++;
        if (s > m_blk) m_blk = s;
    }
    float m_new = m_old > m_blk ? m_old : m_blk, alpha = 1, sum = 0, l_new = l_old;
    double *trace_o_old = R->dv;
    if (tr) to_d(trace_o_old, o, (size_t)dv, 1);
    for (int32_t j = 0; j < nc; j++) R->P[j] = R->P8[j] = 0;
    if (m_new > -INFINITY) {
        alpha = (float)exp((double)(m_old - m_new));   /* 0 on the row's first visible key */
        for (int32_t c = 0; c < dv; c++) R->pv[c] = 0;
        for (int32_t j = 0; j < nc; j++) {
            if (R->s[j] == -INFINITY) continue;
            float p = (float)exp((double)(R->s[j] - m_new));
            R->P[j] = p;
            sum += p;
            float ps = p * sp;
            float p8 = R->pfmt == FS_LOWP_F32 ? ps : (float)fs_lowp_round(R->pfmt, (double)ps);
            R->P8[j] = p8;
            const float *v8 = R->v.x8 + ((size_t)g * a->n_kv + c0 + j) * dv;
            for (int32_t c = 0; c < dv; c++) {
                float prod = p8 * v8[c];
                R->pv[c] += prod;
            }
        }
        float al = alpha * l_old;
        l_new = al + sum;
        for (int32_t c = 0; c < dv; c++) {
            float ao = alpha * o[c], add = R->pv[c] * dvs;
            o[c] = ao + add;
        }
    }
    R->m[ri] = m_new;
    R->l[ri] = l_new;
    if (!tr) return FS_OK;

    fs_event e = fs_event_in_pair(FS_EV_ROW, te);
    e.row = i;
    e.m_old = m_old; e.m_blk = m_blk; e.m_new = m_new;
    e.l_old = l_old; e.l_blk = sum; e.l_new = l_new;
    e.alpha = alpha;
    e.beta = m_new > -INFINITY && visible ? 1 : 0;
    e.visible = visible;
    e.normalized = false;
    e.lowp = true;
    e.q_scale = sq; e.k_scale = sk; e.v_scale = sv; e.p_scale = sp;
    e.n_s = nc;
    e.n_o = dv;
    fs_status st;
    if ((st = push_vec(tr, &e.o_old, trace_o_old, dv)) != FS_OK) return st;
    double *buf = R->dv;
    for (int32_t j = 0; j < nc; j++) buf[j] = R->s[j];
    if ((st = push_vec(tr, &e.s_row, buf, nc)) != FS_OK) return st;
    if ((st = push_vec(tr, &e.p_row, to_d(buf, R->P, (size_t)nc, 1), nc)) != FS_OK) return st;
    if ((st = push_vec(tr, &e.o_new, to_d(buf, o, (size_t)dv, 1), dv)) != FS_OK) return st;
    if (R->r->values) {
        e.n_x = d;
        for (int32_t j = 0; j < nc; j++) buf[j] = (double)R->P8[j] / (double)sp;
        if ((st = push_vec(tr, &e.p8_row, buf, nc)) != FS_OK) return st;
        if ((st = push_vec(tr, &e.x_row, R->Qx + ri * d, d)) != FS_OK) return st;
        if ((st = push_vec(tr, &e.x8_row, to_d(buf, q8, (size_t)d, sq), d)) != FS_OK) return st;
    }
    return fs_trace_push(tr, &e) ? FS_OK : fs_trace_error(tr);
}

static fs_status visit(run_t *R, int32_t h, int32_t qt, int32_t kt, fs_trace *tr)
{
    const fs_attn *a = R->a;
    const int32_t g = fs_attn_kv_head(a, h);
    const int32_t r0 = qt * R->Bq, r1 = r0 + R->Bq < a->n_q ? r0 + R->Bq : a->n_q;
    const int32_t c0 = kt * R->Bk, c1 = c0 + R->Bk < a->n_kv ? c0 + R->Bk : a->n_kv;
    fs_skip_reason why;
    fs_tile_class cls = fs_mask_classify(&a->mask, a->n_q, a->n_kv, r0, r1, c0, c1, &why);
    fs_event te = fs_event_pair(cls == FS_TILE_SKIPPED ? FS_EV_SKIP : FS_EV_TILE, h, g, qt, kt, r0, r1, c0, c1, cls);
    te.reason = why;
    if (tr) {
        te.lowp = true;
        te.q_scale = qscale(&R->q, h, r0);
        te.k_scale = qscale(&R->k, g, c0);
        te.v_scale = qscale(&R->v, g, c0);
        te.p_scale = R->r->p_scale;
        if (R->r->values && cls != FS_TILE_SKIPPED) {
            te.n_x = a->d;
            te.n_xv = a->d_v;
            fs_status st = record_tile_values(R, tr, &te, g, c0, c1);
            if (st != FS_OK) return st;
        }
        if (!fs_trace_push(tr, &te)) return fs_trace_error(tr);
    }
    if (cls == FS_TILE_SKIPPED) return FS_OK;
    for (int32_t i = r0; i < r1; i++) {
        fs_status st = row_step(R, h, g, i, &te, tr);
        if (st != FS_OK) return st;
    }
    return FS_OK;
}

/* Finish rows e_beg .. e_end − 1 (indices h · n_q + i): O = o / ℓ (0 for a row that saw
 * nothing), the row's OUT event, m and ℓ copied out.
 *   O (n_q_heads · n_q, d_v); m_out, l_out (n_q_heads · n_q) may be NULL. */
static fs_status finish_rows(const run_t *R, size_t e_beg, size_t e_end, double *O, double *m_out, double *l_out,
                             fs_trace *tr)
{
    const fs_attn *a = R->a;
    const int32_t dv = a->d_v;
    for (size_t e = e_beg; e < e_end; e++) {
        double *out = O + e * (size_t)dv;
        for (int32_t c = 0; c < dv; c++) out[c] = R->l[e] > 0 ? (double)(R->o[e * dv + c] / R->l[e]) : 0;
        if (m_out) m_out[e] = R->m[e];
        if (l_out) l_out[e] = R->l[e];
        if (tr) {
            const fs_status st = fs_trace_push_out(tr, a, e, out, R->m[e], R->l[e]);
            if (st != FS_OK) return st;
        }
    }
    return FS_OK;
}

fs_status fs_lowp_tiled(const fs_attn *a, int32_t Bq, int32_t Bk, const fs_lowp_recipe *r, double *O, double *m_out,
                        double *l_out, fs_trace *tr)
{
    /* Q (HQ, n_q, d), K (HKV, n_kv, d), V (HKV, n_kv, d_v) → O (HQ, n_q, d_v) */
    assert(a && r && O);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    if (Bq < 1 || Bk < 1) return FS_ERR_TILE;
    if ((unsigned)r->fmt >= FS_LOWP_COUNT || (unsigned)r->scaling >= FS_SCALE_COUNT || !(r->p_scale > 0) ||
        !isfinite(r->p_scale) || (!is_fp8(r->fmt) && r->scaling != FS_SCALE_NONE) || !a->Q || !a->K || a->S ||
        a->softcap > 0 || (r->hadamard && !pow2(a->d)))
        return FS_ERR_ARG;
    if (!isfinite((float)a->scale) || !isfinite((float)r->p_scale)) return FS_ERR_RANGE;

    run_t R;
    memset(&R, 0, sizeof R);
    R.a = a;
    R.r = r;
    R.Bq = Bq < a->n_q ? Bq : a->n_q;
    R.Bk = Bk < a->n_kv ? Bk : a->n_kv;
    R.pfmt = is_fp8(r->fmt) ? FS_LOWP_E4M3 : r->fmt;
    const size_t nq = (size_t)a->n_q_heads * a->n_q, nk = (size_t)a->n_kv_heads * a->n_kv;
    const int32_t d = a->d, dv = a->d_v;
    const int32_t wide = R.Bk > d ? (R.Bk > dv ? R.Bk : dv) : (d > dv ? d : dv);
    double *Qh = NULL, *Kh = NULL;
    st = FS_ERR_NOMEM;
    R.m = malloc(sizeof(float) * nq);
    R.l = malloc(sizeof(float) * nq);
    R.o = malloc(sizeof(float) * nq * (size_t)dv);
    R.s = malloc(sizeof(float) * (size_t)R.Bk * 3 + sizeof(float) * (size_t)dv);
    R.dv = malloc(sizeof(double) * (size_t)wide * (size_t)(d > dv ? d : dv));
    if (!R.m || !R.l || !R.o || !R.s || !R.dv) goto done;
    R.P = R.s + R.Bk;
    R.P8 = R.P + R.Bk;
    R.pv = R.P8 + R.Bk;
    R.Qx = a->Q;
    R.Kx = a->K;
    if (r->hadamard) {
        Qh = malloc(sizeof(double) * nq * (size_t)d);
        Kh = malloc(sizeof(double) * nk * (size_t)d);
        if (!Qh || !Kh) goto done;
        memcpy(Qh, a->Q, sizeof(double) * nq * (size_t)d);
        memcpy(Kh, a->K, sizeof(double) * nk * (size_t)d);
        if ((st = fs_lowp_hadamard(Qh, (int64_t)nq, d, r->seed)) != FS_OK ||
            (st = fs_lowp_hadamard(Kh, (int64_t)nk, d, r->seed)) != FS_OK)
            goto done;
        R.Qx = Qh;
        R.Kx = Kh;
    }
    if ((st = quantize(r, R.Qx, a->n_q_heads, a->n_q, d, R.Bq, &R.q)) != FS_OK ||
        (st = quantize(r, R.Kx, a->n_kv_heads, a->n_kv, d, R.Bk, &R.k)) != FS_OK ||
        (st = quantize(r, a->V, a->n_kv_heads, a->n_kv, dv, R.Bk, &R.v)) != FS_OK)
        goto done;
    for (size_t e = 0; e < nq; e++) {
        R.m[e] = -INFINITY;
        R.l[e] = 0;
    }
    memset(R.o, 0, sizeof(float) * nq * (size_t)dv);

    const int32_t nqt = (a->n_q + R.Bq - 1) / R.Bq, nkt = (a->n_kv + R.Bk - 1) / R.Bk;
    st = FS_OK;
    /* Q tile outer: a Q tile's rows are final after its last KV tile, and go out then. */
    for (int32_t h = 0; h < a->n_q_heads && st == FS_OK; h++)
        for (int32_t qt = 0; qt < nqt && st == FS_OK; qt++) {
            for (int32_t kt = 0; kt < nkt && st == FS_OK; kt++) st = visit(&R, h, qt, kt, tr);
            const int32_t r0 = qt * R.Bq, r1 = r0 + R.Bq < a->n_q ? r0 + R.Bq : a->n_q;
            const size_t base = (size_t)h * (size_t)a->n_q;
            if (st == FS_OK) st = finish_rows(&R, base + (size_t)r0, base + (size_t)r1, O, m_out, l_out, tr);
        }

done:
    quant_free(&R.q);
    quant_free(&R.k);
    quant_free(&R.v);
    free(R.m);
    free(R.l);
    free(R.o);
    free(R.s);
    free(R.dv);
    free(Qh);
    free(Kh);
    return st;
}

double fs_lowp_rmse(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        double d = a[i] - b[i];
        s += d * d;
    }
    return n ? sqrt(s / (double)n) : 0;
}

void fs_lowp_fill_outliers(double *X, size_t n, double frac, double sigma, uint64_t *state)
{
    for (size_t i = 0; i < n; i++) {
        /* Box–Muller from two uniforms in (0, 1] and [0, 1) */
        double u1 = ((double)(fs_splitmix64(state) >> 11) + 1.0) * 0x1p-53;
        double u2 = (double)(fs_splitmix64(state) >> 11) * 0x1p-53;
        double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        double pick = (double)(fs_splitmix64(state) >> 11) * 0x1p-53;
        X[i] = pick < frac ? sigma * z : z;
    }
}
