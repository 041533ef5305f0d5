/* check.h: judging someone's attention kernel by its output, and naming the mistake it made.
 *
 * A candidate output O (and optionally its log-sum-exp) for a problem fs_attn is judged the
 * way FlashAttention's own tests judge a kernel:
 *
 *     err_cand  = max |O − O_ref|           O_ref: the float64 reference (fs_reference)
 *     err_plain = max |O_plain − O_ref|     O_plain: the textbook algorithm run in the candidate's
 *                                           precision (fs_check_plain), on the same inputs
 *     pass  ⇔   err_cand ≤ 2 · err_plain + floor,   floor = c(prec) · max(1, max |O_ref|)
 *
 * with c = 4u for float32, float16 and bfloat16 (u = 2^-24, 2^-11, 2^-8, the unit roundoff) and
 * 1e-12 for float64 (room for a different order of summation); FP8 kernels take bfloat16's c
 * (they write bfloat16), an FP8 KV cache's decode (kv_only) float16's. A candidate that fails is then
 * compared with a zoo of known wrong variants, each computed in float64 by the engine on the same
 * inputs (a changed scale, mask or offset; tiled runs with 001's pitfalls; the final division
 * forgotten; K transposed; Q and K swapped). It matches a variant when its distance from that
 * variant passes the same rule (the tolerance grows with the variant's magnitude); the closest
 * match is the diagnosis.
 *
 * The module is pure: no printing, no exit. src/cli/cmd_check.c is its command line.
 */
#ifndef FS_CHECK_H
#define FS_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/attn.h"
#include "engine/status.h"
#include "check/prec.h"

/* What the candidate matches. FS_DIAG_OK: it passed. */
typedef enum {
    FS_DIAG_OK = 0,
    FS_DIAG_WRONG_SCALE,    /* scores multiplied by another scale (1/d instead of 1/√d, ...) */
    FS_DIAG_MASK_MISSING,   /* the causal (or window, or tree) mask not applied */
    FS_DIAG_CAUSAL_SHIFT,   /* the causal boundary one off (diagonal excluded, one future key
                               seen), or aligned top-left instead of bottom-right */
    FS_DIAG_NO_RESCALE,     /* 001 pitfall 1: the old output not rescaled when the max grows (also
                               the unnormalized form's o or ℓ left without α) */
    FS_DIAG_NO_BETA,        /* 001 pitfall 2: block weights exp(S − m_blk) used without β */
    FS_DIAG_UNNORMALIZED,   /* the final division by ℓ forgotten */
    FS_DIAG_NAN_ROWS,       /* NaN rows where a row (or its first block) sees no key */
    FS_DIAG_K_TRANSPOSED,   /* K read as Kᵀ (only when n_kv = d) */
    FS_DIAG_Q_K_SWAPPED,    /* S = K Qᵀ instead of Q Kᵀ (only when n_q = n_kv) */
    FS_DIAG_UNKNOWN,        /* wrong, but like none of the above */
    FS_DIAG_COUNT
} fs_diag;

const char *fs_diag_str(fs_diag d);       /* the id: "ok", "wrong-scale", ... */
const char *fs_diag_sentence(fs_diag d);  /* one sentence on the mistake */
const char *fs_diag_lesson(fs_diag d);    /* the lesson that shows it ("001_10"), or NULL */

/* Block sizes tried for no-rescale and no-beta when none is given (those < n_kv). */
#define FS_CHECK_BLOCKS {2, 4, 8, 16, 32, 64, 128, 256}

/* Work done so far and in all (in visible scores times d, roughly proportional to time), and
 * what is being done ("judging", "diagnosing"); called from the thread that called
 * fs_check_judge, a few times a second at most between pieces of work. */
typedef void (*fs_check_progress)(void *ctx, const char *what, double done, double total);

typedef struct {
    fs_prec prec;         /* the precision the candidate ran in */
    int32_t bk;           /* > 0: the only block size tried for no-rescale / no-beta */
    const double *lse;    /* optional candidate log-sum-exp (n_q_heads, n_q), natural log */
    bool diagnose;        /* false: the verdict only */
    int32_t heads_per_batch; /* > 0: heads are batch-major groups of this many (for messages) */
    int threads;          /* threads for the passes and the variants; ≤ 0: one per core */
    double fp8_scale[3];  /* FP8 (prec E4M3, E5M2): the descales of Q, K and V (1: none); the
                           * problem's Q, K, V are the FP8 values times these */
    bool kv_only;         /* FP8: only K and V were stored in FP8 (a decode over an FP8 KV cache):
                           * Q is float16 (its descale 1), P stays float32 (fs_check_plain_rows_fp8kv) */
    fs_check_progress progress;   /* NULL: none */
    void *progress_ctx;
} fs_check_opts;

/* Threads fs_check_judge uses for opts o: o->threads, or one per online core. */
int fs_check_threads(const fs_check_opts *o);

/* What judging problem a will cost (check --dry-run): the verdict's passes timed on a sample of
 * rows (the last ones of head 0, the costliest under a causal mask) and scaled to the whole
 * problem and o's threads; the diagnosis of a failing output estimated from the same rate, as
 * the number of variant runs it makes on the rows it diagnoses (fs_check_diagnose). */
typedef struct {
    double scores;          /* visible scores of the whole problem */
    double work;            /* multiply-adds of one pass: scores × (d + d_v) */
    int threads;
    int64_t sample_rows;
    double verdict_s;       /* both passes */
    double diagnose_s;      /* the listed variants */
    double diagnose_max_s;  /* and the scale fit, when none of them fits */
} fs_check_estimate;

fs_status fs_check_estimate_cost(const fs_attn *a, const fs_check_opts *o, fs_check_estimate *e);

fs_check_opts fs_check_opts_default(void);  /* f32, blocks from the list, no lse, diagnose */

typedef struct {
    bool pass;
    /* output O */
    double max_abs_err;     /* max |O − O_ref| (+inf when O holds NaN or inf) */
    double reference_err;   /* max |O_plain − O_ref| over the rows the plain run computes */
    double floor, tolerance;/* tolerance = 2 · reference_err + floor */
    double max_ref;         /* max |O_ref| */
    int64_t worst;          /* flat row index (head · n_q + row) of the largest error */
    int32_t worst_col;
    int64_t rows_over;      /* rows whose error exceeds the tolerance */
    int64_t nan_rows;       /* rows of O with a NaN or inf */
    int64_t plain_overflow_rows; /* rows the plain run cannot compute (inputs beyond the
                               precision's range): their plain error is +inf, left out of
                               reference_err, so the other rows and the floor judge them */
    /* per row, (n_q_heads · n_q) each: the candidate's and the plain implementation's error,
     * and the column of the candidate's largest error */
    double *row_err, *row_ref_err;
    int32_t *row_col;
    /* log-sum-exp, when opts.lse was given */
    bool lse_checked, lse_pass;
    double lse_err, lse_reference_err, lse_tolerance;
    double *row_lse_err;    /* (n_q_heads · n_q), NULL without lse */
    /* diagnosis (FS_DIAG_OK when pass) */
    fs_diag diag;
    double fit_scale;       /* wrong-scale: the scale that fits */
    int32_t fit_bk;         /* no-rescale, no-beta, nan-rows (001 pitfall 4): the block size */
    int32_t fit_offset;     /* causal-shift: the offset that fits (query i at position i + offset) */
    int32_t fit_slip;       /* no-rescale: 0 001's normalized form; in the unnormalized form, 1 the
                               accumulator o, 2 the sum ℓ was not multiplied by α; 3 the normalized
                               form with the running maximum, o not rescaled */
    double match_dist;      /* max |O − O_variant| of the match */
    char detail[400];       /* one or two sentences: what fits, where the error sits */
} fs_check_result;

/* Judge candidate O (n_q_heads, n_q, d_v) for problem a (its inputs must be finite: the caller
 * checks them and reports where they are not). O may hold NaN or inf. r is filled; free it with
 * fs_check_result_free. */
fs_status fs_check_judge(const fs_attn *a, const double *O, const fs_check_opts *o,
                         fs_check_result *r);
void fs_check_result_free(fs_check_result *r);

#endif
