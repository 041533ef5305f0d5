/* dropout.h: dropout on the attention weights P, from a counter-based generator (002, 004).
 *
 * Training drops each weight P_ij with probability p and scales the kept ones by 1/(1 − p), so
 * that the output's expectation is unchanged:
 *
 *     O = (Z ∘ P) V / (1 − p)        Z_ij = 0 (dropped) or 1 (kept)
 *
 * FlashAttention never stores Z. Its row sums ℓ are taken over P before dropout (the softmax is
 * computed as usual and only the product with V sees Z), and the backward pass rebuilds every
 * Z_ij from the same counters when it recomputes the tile, so no n × n array is kept between the
 * passes. That works because the generator is counter-based: the random bits of cell (i, j) are
 * a pure function of the seed and the cell's coordinates, Philox4x32-10 as Random123 defines it.
 *
 * The mapping from (seed, batch, head, row, column) to the decision, exactly:
 *
 *     key      k = (seed mod 2^32, seed >> 32)                     (the seed's two 32-bit words)
 *     counter  c = (batch, head, row, column >> 2)                 (four 32-bit words, c[0] first)
 *     x        = Philox4x32-10(c, k)[column & 3]                   (one of the four output words)
 *     dropped  ⟺  x < T,  T = ⌈p · 2^32⌉                            (that is, x · 2^−32 < p)
 *
 * head is the query head, row the query row within the head (0 .. n_q − 1), column the key
 * (0 .. n_kv − 1), batch 0 in the engine (one sequence). Four neighbouring keys share one call,
 * so a kernel pays one Philox per four weights. p = 0 drops nothing (T = 0); the scale of the
 * kept weights is then exactly 1 and the run is bit for bit the run without dropout.
 */
#ifndef FS_DROPOUT_H
#define FS_DROPOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "attn.h"
#include "status.h"
#include "trace.h"

typedef struct {
    bool on;           /* false: no dropout at all (the default) */
    double p;          /* drop probability, 0 ≤ p < 1 (on with p = 0 takes the dropout path and
                          drops nothing: the same bits as off) */
    uint64_t seed;     /* the Philox key */
} fs_dropout;

/* Philox4x32-10 (Random123): ten rounds of the Philox S-box on the counter ctr, key bumped
 * by the Weyl constants between rounds. */
void fs_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* T = ⌈p · 2^32⌉, the number of 32-bit outputs that mean "dropped" (0 for p = 0). */
uint64_t fs_dropout_threshold(double p);

/* 1/(1 − p), the factor on a kept weight. */
double fs_dropout_keep_scale(double p);

/* FS_OK when 0 ≤ p < 1 (FS_ERR_ARG otherwise, NaN included). */
fs_status fs_dropout_check(double p);

/* Is cell (row, column) of query head `head` in sequence `batch` dropped? */
bool fs_dropout_dropped(const fs_dropout *dr, uint32_t batch, uint32_t head, uint32_t row, uint32_t column);

/* The decisions for keys [c0, c0 + n) of one row: dropped[j] for key c0 + j (1 dropped, 0 kept).
 * One Philox call per group of four keys. */
void fs_dropout_row(const fs_dropout *dr, uint32_t batch, uint32_t head, uint32_t row, int32_t c0, int32_t n,
                    uint8_t *dropped);

/* Dropout on one (Q tile, KV tile) pair of query head `head` (batch 0), whose pair event te
 * (TILE, SKIP, BTILE or BSKIP) gives the rows [r0, r1), the keys [c0, c1) and the class. Unless
 * the pair is skipped, fills dropped (r1 − r0, c1 − c0) with the decisions (1 dropped) and pairs
 * with the visible cells that were dropped as (row, key) numbers (pairs holds at least
 * 2 · (r1 − r0) · (c1 − c0)); a masked cell is never listed: it has no weight to drop. Sets te's
 * dropout = p and n_drop, and with a trace te->drop = those pairs in its pool; a skipped pair gets
 * p and no cell, so that a replay of a run whose pairs are all skipped still knows it drops.
 * FS_ERR_NOMEM when the pool cannot grow. */
fs_status fs_dropout_pair(const fs_dropout *dr, const fs_attn *a, int32_t head, fs_event *te, uint8_t *dropped,
                          double *pairs, fs_trace *tr);

/* The keep mask Z (n_q_heads, n_q, n_kv) of problem a, 1 where kept, 0 where dropped (batch 0),
 * materialized for the dense spec: O(n²) memory, a test's and a lesson's tool only. */
void fs_dropout_keep_mask(const fs_dropout *dr, const fs_attn *a, uint8_t *Z);

/* The dense spec for dropout, which materializes everything: the whole keep mask is given as
 * an explicit array Z (n_q_heads, n_q, n_kv) of 0 and 1 and each head's P (n_q, n_kv) is built.
 *   fs_dropout_reference:  O = (Z ∘ P) V / (1 − p), O (n_q_heads, n_q, d_v); P = softmax(S)
 *   fs_dropout_backward_dense: with Pd = Z ∘ P / (1 − p),
 *       dV = Pdᵀ dO,  dPd = dO Vᵀ,  dP = Z ∘ dPd / (1 − p),  D = Σ_j P dP,
 *       dS = P ∘ (dP − D) (times the soft-cap's slope),  dQ = scale · dS K,  dK = scale · dSᵀ Q
 * Shapes as in backward.h. */
fs_status fs_dropout_reference(const fs_attn *a, const uint8_t *Z, double p, double *O);
fs_status fs_dropout_backward_dense(const fs_attn *a, const uint8_t *Z, double p, const double *dO, double *dQ,
                                    double *dK, double *dV);

/* Bytes of a stored mask for `heads` heads of n_q × n_kv cells at `bits` bits a cell (1: a
 * bitmask; 8: one byte a cell, as a framework keeps a boolean tensor). */
double fs_dropout_mask_bytes(double heads, double n_q, double n_kv, double bits);

#endif
