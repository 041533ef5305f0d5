/* prec.c: the precisions a kernel may run in, and the textbook algorithm run in one of them
 * (the yardstick of check.h's rule). */
#include "check/prec.h"
#include "engine/fp8.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- precisions ---- */

const char *fs_prec_str(fs_prec p)
{
    static const char *s[] = {"f64", "f32", "f16", "bf16", "e4m3", "e5m2"};
    return (unsigned)p < FS_PREC_COUNT ? s[p] : "?";
}

double fs_prec_unit(fs_prec p)
{
    switch (p) {
    case FS_PREC_F32: return 0x1p-24;
    case FS_PREC_F16: return 0x1p-11;
    case FS_PREC_BF16: return 0x1p-8;
    case FS_PREC_E4M3: return 0x1p-4;
    case FS_PREC_E5M2: return 0x1p-3;
    default: return 0x1p-53;
    }
}

/* FP8 kernels write their output in bfloat16 (FlashAttention-3's), so their floor is bfloat16's:
 * the quantization of the inputs and of P is measured by the plain run, not by the floor. */
double fs_check_floor_factor(fs_prec p)
{
    return p == FS_PREC_F64 ? 1e-12 : fs_prec_is_fp8(p) ? 4 * fs_prec_unit(FS_PREC_BF16) : 4 * fs_prec_unit(p);
}

/* Round x to a binary format with p significant bits, smallest normal exponent emin and largest
 * finite value maxv (round to nearest, ties to even; subnormals; overflow to ±inf). Division and
 * multiplication by the power of two q are exact in double. */
static double round_format(double x, int p, int emin, double maxv)
{
    if (x == 0 || !isfinite(x)) return x;
    int e;
    frexp(x, &e);            /* x = f · 2^e, 0.5 ≤ |f| < 1: the leading bit has weight 2^(e−1) */
    int E = e - 1 < emin ? emin : e - 1;
    double q = ldexp(1.0, E - p + 1);
    double r = nearbyint(x / q) * q;
    return fabs(r) > maxv ? copysign(INFINITY, x) : r;
}

/* Subnormal, overflowing and non-finite results (the fast path is fs_prec_round in prec.h). */
double fs_prec_round_slow(fs_prec p, double x)
{
    switch (p) {
    case FS_PREC_F32: return (double)(float)x;
    case FS_PREC_F16: return round_format(x, 11, -14, 65504.0);
    case FS_PREC_BF16: return round_format(x, 8, -126, 0x1.FEp127);
    case FS_PREC_E4M3: return fs_fp8_round(FS_FP8_E4M3, x);
    case FS_PREC_E5M2: return fs_fp8_round(FS_FP8_E5M2, x);
    default: return x;
    }
}

/* ---- the straightforward implementation in a given precision ---- */

double fs_check_plain_score(const fs_attn *a, fs_prec p, int32_t h, int32_t i, int32_t j)
{
    /* s_ij = scale · Σ_c q_ic k_jc, one rounded term at a time; −∞ where the mask hides j */
    if (!fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j)) return -INFINITY;
#define R(x) fs_prec_round(p, (x))
    double x;
    if (a->S) {
        x = R(a->S[((size_t)h * a->n_q + i) * a->n_kv + j]);
    } else {
        const int32_t g = fs_attn_kv_head(a, h);
        const double *q = a->Q + ((size_t)h * a->n_q + i) * a->d;
        const double *k = a->K + ((size_t)g * a->n_kv + j) * a->d;
        x = 0;
        for (int32_t c = 0; c < a->d; c++) x = R(x + R(R(q[c]) * R(k[c])));
    }
    x = R(x * R(a->scale));
    if (a->softcap > 0) x = R(R(a->softcap) * R(tanh(R(x / R(a->softcap)))));
#undef R
    return x;
}

/* Version 1, the spec: one score at a time, every operation rounded in float64 as it happens. */
fs_status fs_check_plain_rows_v1(const fs_attn *a, fs_prec p, int32_t h, int32_t r0, int32_t r1, double *O, double *lse)
{
    /* rows r0 … r1 − 1 of head h → O (r1 − r0, d_v), lse (r1 − r0, may be NULL) */
    if (fs_prec_is_fp8(p)) {
        static const double one[3] = {1, 1, 1};
        return fs_check_plain_rows_fp8(a, p, one, h, r0, r1, O, lse);
    }
    double *s = malloc(sizeof(double) * (size_t)a->n_kv);
    if (!s) return FS_ERR_NOMEM;
#define R(x) fs_prec_round(p, (x))
    const int32_t g = fs_attn_kv_head(a, h);
    const double *V = a->V + (size_t)g * a->n_kv * a->d_v;
    for (int32_t i = r0; i < r1; i++) {
        double m = -INFINITY;   /* S row, rounded as it is computed */
        bool overflow = false;  /* a visible score beyond the format's range (or NaN) */
        for (int32_t j = 0; j < a->n_kv; j++) {
            s[j] = fs_check_plain_score(a, p, h, i, j);
            if (!isfinite(s[j]) && fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j)) overflow = true;
            if (s[j] > m) m = s[j];
        }
        /* P = exp(S − m), ℓ = Σ P, O = P V / ℓ */
        double *o = O + (size_t)(i - r0) * a->d_v, l = 0;
        for (int32_t c = 0; c < a->d_v; c++) o[c] = 0;
        if (m > -INFINITY) {
            for (int32_t j = 0; j < a->n_kv; j++) {
                if (s[j] == -INFINITY) continue;
                double pj = R(exp(R(s[j] - m)));
                l = R(l + pj);
                for (int32_t c = 0; c < a->d_v; c++) o[c] = R(o[c] + R(pj * R(V[(size_t)j * a->d_v + c])));
            }
            for (int32_t c = 0; c < a->d_v; c++) o[c] = R(o[c] / l);
            for (int32_t c = 0; c < a->d_v; c++) overflow = overflow || !isfinite(o[c]);
        }
        double lse_i = m > -INFINITY ? R(m + R(log(l))) : -INFINITY;
        /* Overflowed: this precision has no answer for the row. NaN says so (a score that
         * overflowed to −∞ must not pass for a row that sees no key, whose O is 0). */
        if (overflow) {
            for (int32_t c = 0; c < a->d_v; c++) o[c] = NAN;
            lse_i = NAN;
        }
        if (lse) lse[i - r0] = lse_i;
    }
#undef R
    free(s);
    return FS_OK;
}

fs_status fs_check_plain(const fs_attn *a, fs_prec p, double *O, double *lse)
{
    /* Q (HQ, n_q, d), K (HKV, n_kv, d), V (HKV, n_kv, d_v) → O (HQ, n_q, d_v), lse (HQ, n_q) */
    assert(a && O);
    fs_status st = fs_attn_check(a);
    for (int32_t h = 0; h < a->n_q_heads && st == FS_OK; h++)
        st = fs_check_plain_rows(a, p, h, 0, a->n_q, O + (size_t)h * a->n_q * a->d_v, lse ? lse + (size_t)h * a->n_q : NULL);
    return st;
}

static fs_status plain_rows_fp8(const fs_attn *a, fs_prec p, const double scales[3], bool kv_only, int32_t h,
                                int32_t r0, int32_t r1, double *O, double *lse);

fs_status fs_check_plain_rows_fp8(const fs_attn *a, fs_prec p, const double scales[3], int32_t h, int32_t r0, int32_t r1,
                                  double *O, double *lse)
{
    return plain_rows_fp8(a, p, scales, false, h, r0, r1, O, lse);
}

fs_status fs_check_plain_rows_fp8kv(const fs_attn *a, fs_prec p, const double scales[3], int32_t h, int32_t r0,
                                    int32_t r1, double *O, double *lse)
{
    return plain_rows_fp8(a, p, scales, true, h, r0, r1, O, lse);
}

/* The FP8 recipe (prec.h), or with kv_only the FP8 KV cache's. Scalar: FP8 problems are judged at
 * the sizes of a test. */
static fs_status plain_rows_fp8(const fs_attn *a, fs_prec p, const double scales[3], bool kv_only, int32_t h,
                                int32_t r0, int32_t r1, double *O, double *lse)
{
    /* rows r0 … r1 − 1 of head h → O (r1 − r0, d_v), lse (r1 − r0, may be NULL) */
    if (!fs_prec_is_fp8(p) || a->S) return FS_ERR_ARG;
    const fs_fp8 f = p == FS_PREC_E5M2 ? FS_FP8_E5M2 : FS_FP8_E4M3;
    const int32_t n_kv = a->n_kv, d = a->d, dv = a->d_v, g = fs_attn_kv_head(a, h);
    float *k8 = malloc(sizeof(float) * ((size_t)n_kv * (d + dv) + (size_t)d + (size_t)n_kv + (size_t)dv));
    if (!k8) return FS_ERR_NOMEM;
    float *v8 = k8 + (size_t)n_kv * d, *q8 = v8 + (size_t)n_kv * dv, *s = q8 + d, *o = s + n_kv;
    const double *K = a->K + (size_t)g * n_kv * d, *V = a->V + (size_t)g * n_kv * dv;
    for (size_t e = 0; e < (size_t)n_kv * d; e++) k8[e] = (float)fs_fp8_round(f, K[e] / scales[1]);
    for (size_t e = 0; e < (size_t)n_kv * dv; e++) v8[e] = (float)fs_fp8_round(f, V[e] / scales[2]);
    const float sc = (float)(a->scale * (kv_only ? 1 : scales[0]) * scales[1]), vs = (float)scales[2];
    for (int32_t i = r0; i < r1; i++) {
        const double *qi = a->Q + ((size_t)h * a->n_q + i) * d;
        for (int32_t c = 0; c < d; c++)
            q8[c] = kv_only ? (float)fs_prec_round(FS_PREC_F16, qi[c]) : (float)fs_fp8_round(f, qi[c] / scales[0]);
        float m = -INFINITY, l = 0;
        for (int32_t j = 0; j < n_kv; j++) {
            if (!fs_mask_visible(&a->mask, a->n_q, n_kv, i, j)) { s[j] = -INFINITY; continue; }
            float x = 0;
            for (int32_t c = 0; c < d; c++) x += q8[c] * k8[(size_t)j * d + c];
            x *= sc;
            if (a->softcap > 0) x = (float)a->softcap * tanhf(x / (float)a->softcap);
            s[j] = x;
            if (x > m) m = x;
        }
        for (int32_t c = 0; c < dv; c++) o[c] = 0;
        if (m > -INFINITY) {
            for (int32_t j = 0; j < n_kv; j++) {
                if (s[j] == -INFINITY) continue;
                float pj = (float)exp((double)(s[j] - m));
                l += pj;
                /* P in e4m3 before P · V (FlashAttention-3), or in float16 (the FP8 cache's decode) */
                float p8 = kv_only ? (float)fs_prec_round(FS_PREC_F16, pj) : (float)fs_fp8_round(FS_FP8_E4M3, pj);
                for (int32_t c = 0; c < dv; c++) o[c] += p8 * v8[(size_t)j * dv + c];
            }
        }
        double *out = O + (size_t)(i - r0) * dv;
        for (int32_t c = 0; c < dv; c++) out[c] = m > -INFINITY ? (double)(o[c] / l * vs) : 0;
        if (lse) lse[i - r0] = m > -INFINITY ? (double)(m + logf(l)) : -INFINITY;
    }
    free(k8);
    return FS_OK;
}
