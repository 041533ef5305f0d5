/* reference.h: attention computed the plain way, in float64. This is the spec.
 *
 * Every other path (online, tiled, decode, the SIMD and CUDA kernels) is tested against
 * fs_reference. It materializes one row of S at a time, takes the max over the visible scores,
 * exponentiates, sums, and divides: the textbook two-pass softmax of 000, row by row.
 */
#ifndef FS_REFERENCE_H
#define FS_REFERENCE_H

#include "attn.h"
#include "status.h"

/* O is (n_q_heads, n_q, d_v). If m_out / l_out are not NULL they receive each row's max and
 * Σ exp(s − m) over its visible scores, (n_q_heads, n_q) each (natural units). A row that sees
 * no key gets O = 0, m = −∞, ℓ = 0. */
fs_status fs_reference(const fs_attn *a, double *O, double *m_out, double *l_out);

/* The score S[i][j] of head h after scale, soft-cap and mask (−∞ where masked). */
double fs_reference_score(const fs_attn *a, int32_t h, int32_t i, int32_t j);

/* Softmax of a vector: p[i] = exp(z[i] − max) / Σ. Two passes (000's "standard softmax"). */
void fs_reference_softmax(const double *z, int32_t n, double *p);

#endif
