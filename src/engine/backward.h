/* backward.h: the backward pass of attention by recomputation (001, 004; FlashAttention 2's
 * loop order), instrumented.
 *
 * Training needs the gradients dQ, dK, dV of a loss whose gradient with respect to the output is
 * dO. A materializing backward keeps the n_q × n_kv matrix P from the forward pass. FlashAttention
 * keeps only one number per query row, the log-sum-exp of its visible scores,
 *
 *     L = m + ln ℓ          (m, ℓ the forward's final running max and sum; −∞ when ℓ = 0)
 *
 * and recomputes every tile of S and P when it needs it:
 *
 *     D   = rowsum(dO ∘ O)                 one number per query row, before any tile
 *     S   = scale · Q_tile K_tileᵀ         (masked, soft-capped, exactly as the forward)
 *     P   = exp(S − L)                     the forward's normalized weights, recomputed
 *     dV += Pᵀ dO
 *     dP  = dO Vᵀ
 *     dS  = P ∘ (dP − D)
 *     dQ += scale · dS K
 *     dK += scale · dSᵀ Q
 *
 * With the soft-cap on (S = cap · tanh(S_raw / cap)), dS is multiplied by the cap's derivative
 * 1 − (S / cap)² before it meets K and Q; the trace shows dS before that factor.
 *
 * Tiles are classified by the mask as in the forward (src/engine/tiled.h): a skipped pair costs
 * nothing, a full one needs no element mask. A row that sees no key has L = −∞, P = 0, and so
 * zero gradients everywhere it appears; no NaN.
 *
 * Loop orders (FS_ORDER_* of tiled.h):
 *   FS_ORDER_KV_OUTER (FlashAttention 2): for each KV head, for each KV tile, every query head of
 *     its group and every Q tile stream past it; the tile's dK and dV rows are finished in that
 *     one pass, dQ accumulates across KV tiles.
 *   FS_ORDER_Q_OUTER: head by head, a Q tile meets every KV tile, so its dQ rows are finished in
 *     one pass and dK, dV accumulate across Q tiles.
 * Both give the same gradients. GQA: dK and dV of a KV head sum over the query heads of its group.
 *
 * Dropout (dropout.h; t->dropout, the forward's): the forward used Pd = Z ∘ P / (1 − p). The
 * backward regenerates Z tile by tile from the same Philox counters (nothing n × n is kept) and
 *     dV += Pdᵀ dO,   dP = Z ∘ (dO Vᵀ) / (1 − p),   dS = P ∘ (dP − D)
 * with D = rowsum(dO ∘ O) unchanged (Σ_j P dP = Σ_j Pd (dO Vᵀ) = dO · O). The BROW event's dP
 * is this masked dP; its P is the weight before dropout. BTILE lists the dropped cells.
 */
#ifndef FS_BACKWARD_H
#define FS_BACKWARD_H

#include "attn.h"
#include "status.h"
#include "tiled.h"
#include "trace.h"

/* The log-sum-exp of n rows from the forward's statistics: L = m + ln ℓ, −∞ where ℓ = 0. m in
 * natural units (fs_tiled's m_out). */
void fs_lse(const double *m, const double *l, long n, double *L);

/* The tiled backward by recomputation.
 *   a    the problem the forward solved (Q and K required: given scores have no dQ, dK)
 *   t    Bq, Bk, the loop order and the dropout; form and exp2 are the forward's business and
 *        not read; a pitfall is refused (FS_ERR_ARG)
 *   O    (n_q_heads, n_q, d_v)  the forward's output
 *   L    (n_q_heads, n_q)       the forward's log-sum-exp per row (fs_lse)
 *   dO   (n_q_heads, n_q, d_v)  the gradient of the loss with respect to O
 *   dQ   (n_q_heads, n_q, d)    out
 *   dK   (n_kv_heads, n_kv, d)  out
 *   dV   (n_kv_heads, n_kv, d_v) out
 *   D    (n_q_heads, n_q)       out, may be NULL
 * tr may be NULL. Events, in order: one LSE per row, one DELTA per row (head by head), then in
 * loop order per pair one BTILE or BSKIP, after a BTILE one BROW per query row and one BKEY per
 * key of the tile; at the end one GRAD per row of dQ (query head by head), then of dK and of dV
 * (KV head by head). */
fs_status fs_backward(const fs_attn *a, const fs_tiling *t, const double *O, const double *L,
                      const double *dO, double *dQ, double *dK, double *dV, double *D,
                      fs_trace *tr);

/* What the backward keeps per query row before any tile: L as the forward left it, and
 *     D = rowsum(dO ∘ O)
 * into D (n_q_heads, n_q). With tr, one LSE event per row, then one DELTA per row (head by head),
 * as fs_backward records them (the ring's backward, ring.h, too). */
fs_status fs_backward_rows(const fs_attn *a, const double *O, const double *L, const double *dO, double *D,
                           fs_trace *tr);

/* The materializing backward, the spec the tiled one is tested against: it builds the whole
 * n_q × n_kv matrices S, P, dP and dS of each head (O(n²) memory), with D from Σ_j P dP rather
 * than from O. dO as above; dQ, dK, dV out. */
fs_status fs_backward_dense(const fs_attn *a, const double *dO, double *dQ, double *dK, double *dV);

/* Finite inputs whose gradients would overflow float64. With A = max |dO|, V∞ = max |v|,
 * Q∞ = max |q|, K∞ = max |k| and g query heads per KV head, every intermediate is bounded by
 *     |dP|, |D| ≤ d_v · A · V∞,   Σ_j |dS_ij| ≤ B = 2 · d_v · A · V∞   (P ≥ 0 sums to 1 per row)
 *     |dV| ≤ g · n_q · A,   |dQ| ≤ |scale| · B · K∞,   |dK| ≤ |scale| · g · n_q · B · Q∞
 * (the soft-cap's factor is at most 1). FS_OK when every bound is within FS_VALUE_LIMIT, else
 * FS_ERR_RANGE with a sentence naming the bound in why (may be NULL). fs_backward calls it after
 * fs_attn_check; dO must be finite (FS_ERR_VALUE otherwise). dO is (n_q_heads, n_q, d_v), or
 * NULL for dO = 1 everywhere. */
fs_status fs_backward_check_range(const fs_attn *a, const double *dO, char *why, size_t n);

const char *fs_grad_str(int tensor);   /* FS_GRAD_DQ → "dQ", "dK", "dV" */

enum { FS_GRAD_DQ = 0, FS_GRAD_DK, FS_GRAD_DV };

#endif
