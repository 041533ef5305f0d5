/* rows.c: the verdict's two passes (the float64 reference and the plain run in the candidate's
 * precision), version 2: the same operations in the same order as version 1 (fs_reference in the
 * engine, fs_check_plain_rows_v1 in prec.c), so the same bits, only faster:
 *
 *   - one block of query rows of one head at a time (a task), so blocks run on threads;
 *   - the head's K transposed once per task (d × n_kv), so that the scores of one query row
 *     against many keys are computed side by side: for each c, s_j ← s_j + q_c · k_jc over j,
 *     each s_j still summed in the order c = 0, 1, …, d − 1 (the compiler vectorizes over j);
 *   - the inputs rounded to the precision once per task, not once per product;
 *   - in float16 and bfloat16, every operation done in float32 and then rounded to the format.
 *     This is bit-identical to doing it in float64 and rounding: the exact sum, product or
 *     quotient of two numbers of p bits, rounded first to q ≥ 2p + 2 bits and then to p bits,
 *     equals the exact result rounded once to p bits (double rounding is innocuous for +, −, ×,
 *     ÷ when q ≥ 2p + 2: float32 has q = 24, float16 p = 11, bfloat16 p = 8). exp, log and tanh
 *     are not such operations: they are still computed in float64 and rounded from there. On a
 *     processor with AVX-512, float16's two hot loops round with its own conversions.
 * tests/check_check.c compares this with version 1, bit for bit, on random problems (values near
 * the formats' smallest and largest ones included).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check/prec.h"
#include "engine/reference.h"

/* On x86-64 with GCC or clang (and glibc's ifunc), the loops are also compiled for AVX2 and for
 * AVX-512 and the best one for the processor is picked when the program starts; the build keeps
 * -ffp-contract=off (module.mk), so no clone fuses a multiply and an add. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#define FAST_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define FAST_CLONES
#endif

/* The processor's float16 conversions, on x86-64 with GCC or clang (f16c_usable says whether this
 * processor has them with AVX-512). Elsewhere the float16 rounding below is used alone. */
#if defined(__x86_64__) && defined(__GNUC__)
#define FS_HAVE_F16C 1
#include <immintrin.h>
static bool f16c_usable(void)
{
    return __builtin_cpu_supports("avx512f");   /* every processor with AVX-512 has F16C */
}
#else
#define FS_HAVE_F16C 0
static bool f16c_usable(void) { return false; }
#endif

/* ---- rounding a float32 to float16 or bfloat16 precision, as a float32 (branch-free, so that
 * the loops below vectorize). Normal results: drop the low bits of the significand with round to
 * nearest even (a carry into the exponent is right; float16's overflow handled after). Results in
 * the format's subnormal range: x + M − M rounds |x| to the multiple of the subnormal step in
 * float32's own round-to-nearest-even (M = 1.5 · step · 2^23, so the sum's ulp is the step). ---- */

static inline float bits_round(float x, int drop)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += ((uint32_t)1 << (drop - 1)) - 1 + ((u >> drop) & 1);
    u &= ~(((uint32_t)1 << drop) - 1);
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline float r_f16(float x)
{
    float ax = fabsf(x);
    float sub = copysignf((ax + 0x1.8p-1f) - 0x1.8p-1f, x);     /* step 2^-24 */
    float r = ax < 0x1p-14f ? sub : bits_round(x, 13);
    return fabsf(r) > 65504.0f ? copysignf(INFINITY, x) : r;  /* NaN passes through */
}

static inline float r_bf16(float x)
{
    float ax = fabsf(x);
    float sub = copysignf((ax + 0x1.8p-110f) - 0x1.8p-110f, x); /* step 2^-133 */
    return ax < 0x1p-126f ? sub : bits_round(x, 16);          /* overflow rounds to inf itself */
}

static inline float r_f32(float x) { return x; }

void fs_check_visible_range(const fs_attn *a, int32_t i, int32_t *lo, int32_t *hi)
{
    *lo = 0;
    *hi = a->n_kv;
    if (a->mask.kind == FS_MASK_CAUSAL || a->mask.kind == FS_MASK_WINDOW) {
        int64_t p = fs_mask_query_pos(&a->mask, a->n_q, a->n_kv, i);
        int64_t h = p + 1 < a->n_kv ? p + 1 : a->n_kv;
        int64_t l = a->mask.kind == FS_MASK_WINDOW ? p - a->mask.window + 1 : 0;
        *hi = (int32_t)(h > 0 ? h : 0);
        *lo = (int32_t)(l > 0 ? (l < *hi ? l : *hi) : 0);
    }
}

/* ---- the float64 reference (fs_reference's operations, in its order) ---- */

/* The cloned loops are static: an exported function with clones is not linked by clang 14. */
FAST_CLONES static fs_status reference_rows(const fs_attn *a, int32_t h, int32_t r0, int32_t r1, double *O, double *m_out,
                                            double *l_out)
{
    /* rows r0 … r1 − 1 of head h → O (r1 − r0, d_v), m_out and l_out (r1 − r0) */
    if (a->S || r0 >= r1) {   /* scores given: the engine's own loop on a view of these rows */
        fs_attn b = *a;
        b.n_q_heads = b.n_kv_heads = 1;
        b.n_q = r1 - r0;
        if (a->S) b.S = a->S + ((size_t)h * a->n_q + r0) * a->n_kv;
        if (a->Q) b.Q = a->Q + ((size_t)h * a->n_q + r0) * a->d;
        int32_t g = fs_attn_kv_head(a, h);
        if (a->K) b.K = a->K + (size_t)g * a->n_kv * a->d;
        b.V = a->V + (size_t)g * a->n_kv * a->d_v;
        b.mask.has_offset = true;
        b.mask.offset = (a->mask.has_offset ? a->mask.offset : a->n_kv - a->n_q) + r0;
        if (a->mask.kind == FS_MASK_BITS) b.mask.bits = a->mask.bits + (size_t)r0 * a->mask.words_per_row;
        return r0 >= r1 ? FS_OK : fs_reference(&b, O, m_out, l_out);
    }
    const int32_t n_kv = a->n_kv, d = a->d, dv = a->d_v, g = fs_attn_kv_head(a, h);
    const double *K = a->K + (size_t)g * n_kv * d, *V = a->V + (size_t)g * n_kv * dv;
    double *kt = malloc(sizeof(double) * ((size_t)d * n_kv + (size_t)n_kv));
    if (!kt) return FS_ERR_NOMEM;
    double *s = kt + (size_t)d * n_kv;
    for (int32_t j = 0; j < n_kv; j++)
        for (int32_t c = 0; c < d; c++) kt[(size_t)c * n_kv + j] = K[(size_t)j * d + c];
    for (int32_t i = r0; i < r1; i++) {
        const double *q = a->Q + ((size_t)h * a->n_q + i) * d;
        int32_t lo, hi;
        fs_check_visible_range(a, i, &lo, &hi);
        for (int32_t j = lo; j < hi; j++) s[j] = 0;
        for (int32_t c = 0; c < d; c++) {
            const double qc = q[c], *kc = kt + (size_t)c * n_kv;
            for (int32_t j = lo; j < hi; j++) s[j] += qc * kc[j];
        }
        double m = -INFINITY, l = 0;
        for (int32_t j = lo; j < hi; j++) {
            if (!fs_mask_visible(&a->mask, a->n_q, n_kv, i, j)) { s[j] = -INFINITY; continue; }
            double x = s[j] * a->scale;
            if (!isfinite(x)) x = fs_attn_score(a, h, i, j);   /* the engine's care with overflow */
            else if (a->softcap > 0) x = a->softcap * tanh(x / a->softcap);
            s[j] = x;
            if (x > m) m = x;
        }
        double *o = O + (size_t)(i - r0) * dv;
        for (int32_t c = 0; c < dv; c++) o[c] = 0;
        if (m > -INFINITY) {
            for (int32_t j = lo; j < hi; j++) {
                if (s[j] == -INFINITY) continue;
                double p = exp(s[j] - m);
                l += p;
                const double *vj = V + (size_t)j * dv;
                for (int32_t c = 0; c < dv; c++) o[c] += p * vj[c];
            }
            for (int32_t c = 0; c < dv; c++) o[c] /= l;
        }
        if (m_out) m_out[i - r0] = m;
        if (l_out) l_out[i - r0] = l;
    }
    free(kt);
    return FS_OK;
}

fs_status fs_check_reference_rows(const fs_attn *a, int32_t h, int32_t r0, int32_t r1, double *O, double *m_out,
                                  double *l_out)
{
    return reference_rows(a, h, r0, r1, O, m_out, l_out);
}

/* ---- the plain run (fs_check_plain_v1's operations, in its order) ---- */

/* One block of rows held in T (float: float32, float16 or bfloat16 with rounding R; double:
 * float64, R the identity). */
#define PLAIN_ROWS(NAME, T, R, AXPY)                                                                           \
    FAST_CLONES static fs_status NAME(const fs_attn *a, fs_prec p, int32_t h, int32_t r0, int32_t r1, double *O, double *lse) \
    {                                                                                                          \
        const int32_t n_kv = a->n_kv, d = a->d, dv = a->d_v, g = fs_attn_kv_head(a, h);                       \
        const double *K = a->K + (size_t)g * n_kv * d, *V = a->V + (size_t)g * n_kv * dv;                     \
        size_t nk = (size_t)d * n_kv, nv = (size_t)n_kv * dv;                                                 \
        T *kt = malloc(sizeof(T) * (nk + nv + (size_t)n_kv + (size_t)d + (size_t)dv));               \
        if (!kt) return FS_ERR_NOMEM;                                                                          \
        T *vr = kt + nk, *s = vr + nv, *q = s + n_kv, *o = q + d;                                          \
        for (int32_t j = 0; j < n_kv; j++)                                                                     \
            for (int32_t c = 0; c < d; c++) kt[(size_t)c * n_kv + j] = (T)fs_prec_round(p, K[(size_t)j * d + c]); \
        for (size_t e = 0; e < nv; e++) vr[e] = (T)fs_prec_round(p, V[e]);                                \
        const T scale = (T)fs_prec_round(p, a->scale), cap = (T)fs_prec_round(p, a->softcap);     \
        const bool f16_hw = f16c_usable();                                                                     \
        (void)f16_hw;                                                                                          \
        for (int32_t i = r0; i < r1; i++) {                                                                    \
            const double *qi = a->Q + ((size_t)h * a->n_q + i) * d;                                            \
            for (int32_t c = 0; c < d; c++) q[c] = (T)fs_prec_round(p, qi[c]);                            \
            int32_t lo, hi;                                                                                    \
            fs_check_visible_range(a, i, &lo, &hi);                                                                     \
            for (int32_t j = lo; j < hi; j++) s[j] = 0;                                                        \
            for (int32_t c = 0; c < d; c++) {                                                                  \
                const T qc = q[c], *kc = kt + (size_t)c * n_kv;                                            \
                AXPY(s + lo, qc, kc + lo, hi - lo, R);                                                         \
            }                                                                                                  \
            T m = -INFINITY;                                                                               \
            bool overflow = false;                                                                             \
            for (int32_t j = lo; j < hi; j++) {                                                                \
                if (!fs_mask_visible(&a->mask, a->n_q, n_kv, i, j)) { s[j] = -INFINITY; continue; }            \
                T x = R(s[j] * scale);                                                                     \
                if (a->softcap > 0) x = R(cap * (T)fs_prec_round(p, tanh((double)R(x / cap))));           \
                if (!isfinite(x)) overflow = true;                                                             \
                s[j] = x;                                                                                      \
                if (x > m) m = x;                                                                              \
            }                                                                                                  \
            T l = 0;                                                                                       \
            for (int32_t c = 0; c < dv; c++) o[c] = 0;                                                         \
            if (m > -INFINITY) {                                                                               \
                for (int32_t j = lo; j < hi; j++) {                                                            \
                    if (s[j] == -INFINITY) continue;                                                           \
                    const T pj = (T)fs_prec_round(p, exp((double)R(s[j] - m)));                       \
                    l = R(l + pj);                                                                             \
                    const T *vj = vr + (size_t)j * dv;                                                     \
                    AXPY(o, pj, vj, dv, R);                                                                    \
                }                                                                                              \
                for (int32_t c = 0; c < dv; c++) o[c] = R(o[c] / l);                                           \
                for (int32_t c = 0; c < dv; c++) overflow = overflow || !isfinite(o[c]);                       \
            }                                                                                                  \
            double *out = O + (size_t)(i - r0) * dv;                                                           \
            double lse_i = m > -INFINITY ? fs_prec_round(p, m + fs_prec_round(p, log((double)l))) : -INFINITY; \
            for (int32_t c = 0; c < dv; c++) out[c] = overflow ? NAN : o[c];                                   \
            if (lse) lse[i - r0] = overflow ? NAN : lse_i;                                                     \
        }                                                                                                      \
        free(kt);                                                                                              \
        return FS_OK;                                                                                          \
    }

static inline double r_f64(double x) { return x; }

/* y ← R(y + R(a · x)) over n elements: every score's next term, every output's next value. */
#define AXPY_LOOP(y, a, x, n, R)                                                                               \
    do {                                                                                                       \
        for (int32_t e_ = 0; e_ < (n); e_++) (y)[e_] = R((y)[e_] + R((a) * (x)[e_]));                          \
    } while (0)

#if FS_HAVE_F16C
/* The same in float16 with the processor's own conversions (AVX-512's vcvtps2ph and vcvtph2ps,
 * round to nearest even, subnormals and overflow as IEEE has them): bit-identical to r_f16, tested
 * with the rest of version 2. Picked when the processor has AVX-512 (f16_hw below). */
__attribute__((target("avx512f,f16c"))) static void axpy_f16c(float *y, float a, const float *x, int32_t n)
{
#define RN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
    const __m512 va = _mm512_set1_ps(a);
    int32_t e = 0;
    for (; e + 16 <= n; e += 16) {
        __m512 p = _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_mul_ps(va, _mm512_loadu_ps(x + e)), RN));
        _mm512_storeu_ps(y + e, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_add_ps(_mm512_loadu_ps(y + e), p), RN)));
    }
#undef RN
    for (; e < n; e++) y[e] = r_f16(y[e] + r_f16(a * x[e]));
}
#define AXPY_F16(y, a, x, n, R)                                                                                \
    do {                                                                                                       \
        if (f16_hw) axpy_f16c(y, a, x, n);                                                                     \
        else AXPY_LOOP(y, a, x, n, R);                                                                         \
    } while (0)
#else
#define AXPY_F16 AXPY_LOOP
#endif

PLAIN_ROWS(plain_rows_f64, double, r_f64, AXPY_LOOP)
PLAIN_ROWS(plain_rows_f32, float, r_f32, AXPY_LOOP)
PLAIN_ROWS(plain_rows_f16, float, r_f16, AXPY_F16)
PLAIN_ROWS(plain_rows_bf16, float, r_bf16, AXPY_LOOP)

fs_status fs_check_plain_rows(const fs_attn *a, fs_prec p, int32_t h, int32_t r0, int32_t r1, double *O, double *lse)
{
    /* rows r0 … r1 − 1 of head h → O (r1 − r0, d_v), lse (r1 − r0, may be NULL) */
    if (r0 >= r1) return FS_OK;
    if (a->S) return fs_check_plain_rows_v1(a, p, h, r0, r1, O, lse);
    switch (p) {
    case FS_PREC_F64: return plain_rows_f64(a, p, h, r0, r1, O, lse);
    case FS_PREC_F32: return plain_rows_f32(a, p, h, r0, r1, O, lse);
    case FS_PREC_F16: return plain_rows_f16(a, p, h, r0, r1, O, lse);
    case FS_PREC_BF16: return plain_rows_bf16(a, p, h, r0, r1, O, lse);
    case FS_PREC_E4M3: case FS_PREC_E5M2: return fs_check_plain_rows_v1(a, p, h, r0, r1, O, lse);   /* the FP8 recipe */
    default: return FS_ERR_ARG;
    }
}
