/* prec.h: the precisions a kernel may run in, and the straightforward implementation run in one
 * of them, which check.h's rule measures a candidate against.
 *
 * fs_prec_round rounds a float64 to the nearest value of the format (ties to even, subnormals and
 * overflow to ±∞ as the format has them). The plain run rounds as it goes, like a kernel that
 * stores every intermediate in that format.
 */
#ifndef FS_CHECK_PREC_H
#define FS_CHECK_PREC_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "engine/attn.h"
#include "engine/status.h"

/* The precision a kernel ran in. E4M3 and E5M2: an FP8 kernel (FlashAttention-3's recipe, see
 * fs_check_plain_rows_fp8), whose inputs are FP8 values times per-tensor descales. */
typedef enum { FS_PREC_F64 = 0, FS_PREC_F32, FS_PREC_F16, FS_PREC_BF16, FS_PREC_E4M3, FS_PREC_E5M2, FS_PREC_COUNT } fs_prec;

static inline bool fs_prec_is_fp8(fs_prec p) { return p == FS_PREC_E4M3 || p == FS_PREC_E5M2; }

const char *fs_prec_str(fs_prec p);            /* "f64", "f32", "f16", "bf16" */
/* The nearest value of that format (ties to even). Inline: the plain run calls it for every
 * operation. Normal results take the fast path on the bits; subnormals, overflow and non-finite
 * values fs_prec_round_slow (prec.c). */
double fs_prec_round_slow(fs_prec p, double x);
static inline double fs_prec_round_bits(double x, int drop)
{
    /* drop the low `drop` bits of the significand, round to nearest even (a carry into the
     * exponent is the right result) */
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    u += ((uint64_t)1 << (drop - 1)) - 1 + ((u >> drop) & 1);
    u &= ~(((uint64_t)1 << drop) - 1);
    memcpy(&x, &u, sizeof x);
    return x;
}
static inline double fs_prec_round(fs_prec p, double x)
{
    double ax = fabs(x);
    switch (p) {
    case FS_PREC_F32: return (double)(float)x;
    case FS_PREC_F16: return ax >= 0x1p-14 && ax < 65504.0 ? fs_prec_round_bits(x, 42) : fs_prec_round_slow(p, x);
    case FS_PREC_BF16: return ax >= 0x1p-126 && ax < 0x1.FEp127 ? fs_prec_round_bits(x, 45) : fs_prec_round_slow(p, x);
    case FS_PREC_E4M3: case FS_PREC_E5M2: return fs_prec_round_slow(p, x);
    default: return x;
    }
}
double fs_prec_unit(fs_prec p);                /* unit roundoff u: 2^-53, 2^-24, 2^-11, 2^-8 */
double fs_check_floor_factor(fs_prec p);       /* c(prec) of the rule above */

/* The straightforward implementation in precision p, as a plain kernel computes it: inputs
 * rounded to p, every product, sum, exp, division rounded to p as it happens (dot products
 * accumulated one term at a time). O is (n_q_heads, n_q, d_v); lse (may be NULL) is
 * (n_q_heads, n_q), natural log, −∞ for a row that sees no key (its O row is 0). A row whose
 * run overflows p (a visible score, or an output, beyond p's range: inputs too large for the
 * format) is NaN in O and lse: p has no answer there. */
fs_status fs_check_plain(const fs_attn *a, fs_prec p, double *O, double *lse);

/* The same for rows r0 … r1 − 1 of head h only: O (r1 − r0, d_v), lse (r1 − r0, may be NULL).
 * Version 2 (rows.c), which fs_check_plain runs: bit-identical to version 1, faster. */
fs_status fs_check_plain_rows(const fs_attn *a, fs_prec p, int32_t h, int32_t r0, int32_t r1, double *O, double *lse);
/* Version 1 (prec.c): the textbook loop, one score at a time, every operation rounded in float64;
 * the spec version 2 is tested against. */
fs_status fs_check_plain_rows_v1(const fs_attn *a, fs_prec p, int32_t h, int32_t r0, int32_t r1, double *O, double *lse);

/* The plain run of an FP8 kernel in precision p (E4M3 or E5M2), FlashAttention-3's recipe, rows
 * r0 … r1 − 1 of head h: the inputs are FP8 values times the descales (q, k, v; Q = q8 · q_scale
 * …), which the run divides out and rounds to the format again, recovering q8, k8, v8; then
 *   S = q8 · k8ᵀ accumulated in float32 (every product exact there), times scale · q_scale ·
 *   k_scale (the descales folded into the softmax scale), m, P = exp(S − m) and ℓ = Σ P in
 *   float32, P rounded to e4m3 before P · V (in either format), o = Σ P8 · v8 in float32, and
 *   O = o / ℓ · v_scale.
 * fs_check_plain_rows runs it with descales of 1. */
fs_status fs_check_plain_rows_fp8(const fs_attn *a, fs_prec p, const double scales[3], int32_t h, int32_t r0, int32_t r1,
                                  double *O, double *lse);

/* The plain run of a kernel whose KV cache is FP8 (p E4M3 or E5M2) and whose query is float16,
 * the decode of a serving engine's FP8 cache (engine/decode.h's fs_decode_kv): K and V are FP8
 * values times their descales (scales[1], scales[2]; scales[0] is ignored), recovered as above;
 * Q is rounded to float16; then
 *   S = q16 · k8ᵀ accumulated in float32 (every product exact there), times scale · k_scale,
 *   m, P = exp(S − m), ℓ = Σ P in float32, P rounded to float16 for P · V (the tensor cores'
 *   input; no FP8 rounding of P), o = Σ P16 · v8 in float32, O = o / ℓ · v_scale. */
fs_status fs_check_plain_rows_fp8kv(const fs_attn *a, fs_prec p, const double scales[3], int32_t h, int32_t r0,
                                    int32_t r1, double *O, double *lse);

/* The float64 reference of rows r0 … r1 − 1 of head h, bit-identical to the engine's fs_reference
 * (the same operations in the same order), faster (rows.c): O (r1 − r0, d_v), m and l (r1 − r0,
 * may be NULL) as fs_reference gives them. */
fs_status fs_check_reference_rows(const fs_attn *a, int32_t h, int32_t r0, int32_t r1, double *O, double *m_out,
                                  double *l_out);

/* The keys query row i may see lie in [*lo, *hi): exactly them for no mask, causal and window
 * masks; a bit mask is tested key by key inside [0, n_kv) (rows.c). */
void fs_check_visible_range(const fs_attn *a, int32_t i, int32_t *lo, int32_t *hi);

/* One score of the plain run: s_ij of head h, rounded as fs_check_plain rounds it (−∞ where the
 * mask hides key j). Shared with the diagnosis, which runs some mistakes in precision p too. */
double fs_check_plain_score(const fs_attn *a, fs_prec p, int32_t h, int32_t i, int32_t j);

#endif
