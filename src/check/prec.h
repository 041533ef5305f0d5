/* prec.h: the precisions a kernel may run in, and the straightforward implementation run in one
 * of them, which check.h's rule measures a candidate against.
 *
 * fs_prec_round rounds a float64 to the nearest value of the format (ties to even, subnormals and
 * overflow to ±∞ as the format has them). The plain run rounds as it goes, like a kernel that
 * stores every intermediate in that format.
 */
#ifndef FS_CHECK_PREC_H
#define FS_CHECK_PREC_H

#include "engine/attn.h"
#include "engine/status.h"

/* The precision a kernel ran in. */
typedef enum { FS_PREC_F64 = 0, FS_PREC_F32, FS_PREC_F16, FS_PREC_BF16, FS_PREC_COUNT } fs_prec;

const char *fs_prec_str(fs_prec p);            /* "f64", "f32", "f16", "bf16" */
double fs_prec_round(fs_prec p, double x);     /* nearest value of that format (ties to even) */
double fs_prec_unit(fs_prec p);                /* unit roundoff u: 2^-53, 2^-24, 2^-11, 2^-8 */
double fs_check_floor_factor(fs_prec p);       /* c(prec) of the rule above */

/* The straightforward implementation in precision p, as a plain kernel computes it: inputs
 * rounded to p, every product, sum, exp, division rounded to p as it happens (dot products
 * accumulated one term at a time). O is (n_q_heads, n_q, d_v); lse (may be NULL) is
 * (n_q_heads, n_q), natural log, −∞ for a row that sees no key (its O row is 0). A row whose
 * run overflows p (a visible score, or an output, beyond p's range: inputs too large for the
 * format) is NaN in O and lse: p has no answer there. */
fs_status fs_check_plain(const fs_attn *a, fs_prec p, double *O, double *lse);

/* One score of the plain run: s_ij of head h, rounded as fs_check_plain rounds it (−∞ where the
 * mask hides key j). Shared with the diagnosis, which runs some mistakes in precision p too. */
double fs_check_plain_score(const fs_attn *a, fs_prec p, int32_t h, int32_t i, int32_t j);

#endif
