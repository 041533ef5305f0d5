/* lowp.h: tiled attention with low-precision inputs, simulated exactly: FlashAttention-3's FP8
 * recipe, and the same recipe with 16-bit or float32 inputs for comparison.
 *
 * A recipe says how Q, K and V enter the tensor cores and how P leaves the softmax:
 *
 *   1. (optional, incoherent processing) Q and K are multiplied by the same random orthogonal
 *      matrix M = D H / √d (D diagonal random signs, H the d × d Hadamard matrix; d a power of
 *      two), in float64: Q Kᵀ = Q M Mᵀ Kᵀ is unchanged in exact arithmetic, and an outlier in
 *      one column of Q or K is spread over all d columns before rounding.
 *   2. Each input is taken as float32, then scaled into the format and rounded to it (nearest,
 *      ties to even, saturating): x8 = fmt(f32(x / s)), with one scale s = amax / max(fmt) for the
 *      whole tensor (FS_SCALE_TENSOR), one per tile of rows (FS_SCALE_BLOCK: Bq rows of Q, Bk
 *      rows of K and V, per head), or s = 1 (FS_SCALE_NONE, and the only choice for the 16-bit
 *      and float32 formats, whose range needs no scale). amax = 0 gives s = 1. Scales are
 *      float32 values.
 *   3. Tile by tile (Q tile outer, KV tile inner; the unnormalized form, as FlashAttention-3):
 *        S = (q8 · k8ᵀ) · σ           σ = f32(f32(scale · s_q) · s_k): the descales folded into
 *                                     the softmax scale; the dot products accumulate in float32
 *        m_new = max(m_old, max S),   α = exp(m_old − m_new),   P = exp(S − m_new)
 *        ℓ_new = α ℓ_old + Σ P
 *        P8 = fmt_P(f32(P · p_scale))  P rounded to e4m3 (FP8 inputs) or the input format
 *        o_new = α o_old + f32(P8 · v8) · f32(s_v / p_scale)
 *      and O = o / ℓ after the Q tile's last KV tile. Every operation is a float32 operation, rounded as float32
 *      rounds (exp and the conversions correctly rounded), one term at a time in a fixed order.
 *
 * Why P needs a scale of its own: every P is in (0, 1], but e4m3's normal values start at 2^-6
 * = 0.0156 and its smallest value is 2^-9 = 0.00195; weights below 0.00098 become 0 and those
 * below 0.0156 keep fewer than 4 significant bits. Multiplying P by p_scale = 256 (a power of
 * two, exact both ways; 256 · 1 ≤ 448) moves the normal range down to P ≥ 2^-14.
 *
 * The result is float32 values held in float64, so tests can demand bit-for-bit equality with
 * an independent simulation, and error tables compare against the float64 reference.
 */
#ifndef FS_LOWP_H
#define FS_LOWP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "status.h"
#include "trace.h"

/* The format of the inputs (and of P before P · V). */
typedef enum { FS_LOWP_F32 = 0, FS_LOWP_F16, FS_LOWP_BF16, FS_LOWP_E4M3, FS_LOWP_E5M2, FS_LOWP_COUNT } fs_lowp_fmt;
typedef enum { FS_SCALE_NONE = 0, FS_SCALE_TENSOR, FS_SCALE_BLOCK, FS_SCALE_COUNT } fs_lowp_scaling;

typedef struct {
    fs_lowp_fmt fmt;
    fs_lowp_scaling scaling;
    double p_scale;        /* P · p_scale is rounded, then divided out; 1: none. > 0 */
    bool hadamard;         /* incoherent processing of Q and K (d a power of two) */
    uint64_t seed;         /* the Hadamard's random signs */
    bool values;           /* trace: the exact and the rounded inputs (and P8) beside the run */
} fs_lowp_recipe;

/* e4m3, per-tensor scales, p_scale 256, no Hadamard (seed 1), no values. */
fs_lowp_recipe fs_lowp_recipe_default(void);

/* A recipe from words: a format (f32 f16 bf16 e4m3 e5m2), a scaling (tensor block none; only
 * none for the 16-bit and float32 formats), the
 * words hadamard, seed=N and p-scale=X, in any order, separated by blanks. Unnamed parts are the
 * format's defaults: FP8 formats take tensor scaling and p-scale=256, the others none and 1.
 * On failure returns false, *bad_at is the offset of the offending word in s and why says what
 * is wrong. */
bool fs_lowp_recipe_parse(const char *s, size_t n, fs_lowp_recipe *r, size_t *bad_at, char *why, size_t why_n);

/* "e4m3 block hadamard seed=1 p-scale=256": the words that parse back to r. Returns buf. */
const char *fs_lowp_recipe_str(const fs_lowp_recipe *r, char *buf, size_t n);

const char *fs_lowp_fmt_str(fs_lowp_fmt f);          /* "f32" "f16" "bf16" "e4m3" "e5m2" */
double fs_lowp_fmt_max(fs_lowp_fmt f);               /* largest finite value of the format */
/* x rounded to the format: nearest, ties to even, saturating at ±max (float32: rounded to float32,
 * overflowing to ±∞ as float32 does). Exact in float64. */
double fs_lowp_round(fs_lowp_fmt f, double x);

/* The random orthogonal matrix of step 1 applied to n rows of X (n × d, in place, float64):
 * x ← (x ∘ signs) H / √d. d must be a power of two; signs from the seed (fs_lowp_signs). */
fs_status fs_lowp_hadamard(double *X, int64_t n, int32_t d, uint64_t seed);
/* The d random signs (±1) the seed gives. */
void fs_lowp_signs(uint64_t seed, int32_t d, double *signs);

/* The recipe on the problem a, tiles of Bq × Bk. O (n_q_heads, n_q, d_v); m_out, l_out (n_q_heads,
 * n_q) may be NULL (m natural units). a must have Q and K (no given S), no soft-cap; any mask.
 * FS_ERR_ARG for a recipe out of range or d not a power of two with hadamard; FS_ERR_RANGE when an
 * input overflows float32 or the format without a scale (16-bit), or a score overflows float32.
 * Events as fs_tiled's in the unnormalized form: per pair one TILE or SKIP, per visited row one ROW
 * (s_row: the scores S as computed; p_row: P = exp(S − m_new) in float32; β = 1 and ℓ_blk = Σ P,
 * since P is taken against m_new), one OUT per row right after its Q tile's last KV tile. TILE and ROW events carry the scales (lowp:
 * q_scale, k_scale, v_scale, p_scale). With r->values, ROW events also carry the row of Q as the
 * quantizer saw it and its rounded value (x_row, x8_row: d each), and P8 / p_scale (p8_row); TILE
 * events K's and V's rows of the tile, exact and rounded (k_tile, k8_tile: nc·d; v_tile, v8_tile:
 * nc·d_v). Rounded values are dequantized (times their scale). */
fs_status fs_lowp_tiled(const fs_attn *a, int32_t Bq, int32_t Bk, const fs_lowp_recipe *r, double *O, double *m_out,
                        double *l_out, fs_trace *tr);

/* The root mean square of a − b over n values (NaN when any difference is NaN). */
double fs_lowp_rmse(const double *a, const double *b, size_t n);

/* splitmix64: the next 64-bit number of the stream whose state is *x (advanced). The engine's
 * and the lessons' reproducible random numbers (a seed gives the same numbers everywhere). */
uint64_t fs_splitmix64(uint64_t *x);

/* FlashAttention-3's test inputs: n values N(0, 1), each replaced with probability frac by one
 * from N(0, sigma) (an outlier). state is a splitmix64 state, advanced. */
void fs_lowp_fill_outliers(double *X, size_t n, double frac, double sigma, uint64_t *state);

#endif
