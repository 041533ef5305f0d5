/* diagnose.h: naming the mistake of an output that failed check.h's rule (internal to src/check;
 * fs_check_judge calls it).
 *
 * Both fill r->diag and r->detail (and fit_scale, fit_bk, fit_offset, fit_slip and match_dist
 * where the variant has them); they read what the verdict filled in first: tolerance, max_ref,
 * worst, the per-row errors, and for the log-sum-exp lse_err and lse_tolerance.
 *   fs_check_diagnose      the output O against every known wrong variant
 *   fs_check_diagnose_lse  O passed but the log-sum-exp did not: base 2, m alone, ln ℓ alone
 * Shapes: O, Oref (n_q_heads, n_q, d_v); lref, m, lse (n_q_heads, n_q).
 */
#ifndef FS_CHECK_DIAGNOSE_H
#define FS_CHECK_DIAGNOSE_H

#include "check/check.h"

void fs_check_diagnose(const fs_attn *a, const double *O, const double *Oref, const double *lref,
                       const fs_check_opts *o, fs_check_result *r);
void fs_check_diagnose_lse(const fs_attn *a, const double *lse, const double *m, const double *lref,
                           const fs_check_opts *o, fs_check_result *r);

#endif
