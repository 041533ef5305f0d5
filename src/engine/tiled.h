/* tiled.h: tiled FlashAttention on the engine's problem, instrumented.
 *
 * The query rows are cut into tiles of Bq, the keys into tiles of Bk (the last tiles may be
 * shorter). Every (Q tile, KV tile) pair is classified by the mask before any arithmetic: a
 * skipped pair costs nothing, a full pair needs no element mask, a partial pair masks elements.
 * Each row of a visited tile folds the tile's visible scores into its running (m, ℓ, o):
 *
 *   normalized form (001):   α = exp(m_old − m_new), β = exp(m_blk − m_new)
 *                            ℓ_new = α ℓ_old + β ℓ_blk
 *                            o_new = (α ℓ_old o_old + β P̃ V) / ℓ_new      (o always normalized)
 *   unnormalized form (000, 002, 004):
 *                            P = exp(S − m_new);  ℓ_new = α ℓ_old + Σ P;  o_new = α o_old + P V
 *                            O = o / ℓ once per row, when the row is final (below).
 *
 * Loop orders: FS_ORDER_Q_OUTER (000, 002, 004: a Q tile meets every KV tile, then the next Q
 * tile) or FS_ORDER_KV_OUTER (001: a KV tile meets every Q tile). Both give the same output.
 * With heads, the loops run head by head; for GQA the heads of one group are adjacent.
 *
 * Dropout (dropout.h): ℓ and m are those of P before dropout; only the product with V sees the
 * mask, each kept weight times 1/(1 − p):
 *   normalized:   o_new = (α ℓ_old o_old + β (Z ∘ P̃) V / (1 − p)) / ℓ_new
 *   unnormalized: o_new = α o_old + (Z ∘ P) V / (1 − p)
 * The TILE event lists the visible cells of the pair that were dropped.
 */
#ifndef FS_TILED_H
#define FS_TILED_H

#include <stdbool.h>

#include "attn.h"
#include "dropout.h"
#include "status.h"
#include "trace.h"

typedef enum { FS_FORM_NORMALIZED = 0, FS_FORM_UNNORMALIZED } fs_form;
typedef enum { FS_ORDER_Q_OUTER = 0, FS_ORDER_KV_OUTER } fs_order;

/* Deliberately wrong variants, for the pitfall lessons of 001. FS_PITFALL_NONE is the algorithm;
 * every other value computes something else on purpose and is labelled so in the trace. */
typedef enum {
    FS_PITFALL_NONE = 0,
    FS_PITFALL_NO_RESCALE,        /* 001 pitfall 1: o_new = o_old + P̃ V / ℓ_new (no α ℓ_old) */
    FS_PITFALL_GLOBAL_MAX_NO_BETA,/* 001 pitfall 2 as printed: P = exp(S − m_new), ℓ_new = α ℓ + Σ P,
                                     no β. This one is in fact exact (β is folded into P). */
    FS_PITFALL_BLOCK_MAX_NO_BETA, /* pitfall 2 as it bites: P̃ = exp(S − m_blk) used without β */
    FS_PITFALL_MASKED_NAN,        /* 001 pitfall 4: no guard; a row with nothing visible yet
                                     computes exp(−∞ − (−∞)) = NaN */
    FS_PITFALL_MASKED_DOC_FIX,    /* 001's own fix: β guarded, α not; still NaN when a row's
                                     first visited tile hides all its keys */
    FS_PITFALL_COUNT
} fs_pitfall;

typedef struct {
    int32_t Bq, Bk;        /* ≥ 1 */
    fs_form form;
    fs_order order;
    bool exp2;             /* 003: scores in base-2 units, exp2 everywhere */
    fs_pitfall pitfall;
    fs_dropout dropout;    /* dropout on P (dropout.h); off by default. Not with a pitfall. */
} fs_tiling;

/* Bq = Bk = 64 (clamped by nothing), normalized, Q outer, exp, no pitfall. */
fs_tiling fs_tiling_default(void);

/* O is (n_q_heads, n_q, d_v). m_out, l_out (n_q_heads, n_q) may be NULL; m in natural units.
 * tr may be NULL (no recording: full speed at any size). Events, in loop order: per pair one
 * TILE or SKIP; after a TILE one ROW per query row of the tile; one OUT per row when the row is
 * final: Q outer, right after its Q tile's last KV tile (the tile's rows in order, before the
 * next Q tile's first TILE or SKIP); KV outer, at the very end (head by head, row by row), since
 * every row stays live until the last KV tile. The numbers do not depend on the order. */
fs_status fs_tiled(const fs_attn *a, const fs_tiling *t, double *O, double *m_out,
                   double *l_out, fs_trace *tr);

/* Online attention for one query (000): tiled with Bq = 1, Bk = 1, unnormalized form. The ROW
 * events are 000's steps: α is its "correction", β its "weight" exp(s − m_new). */
fs_status fs_online_query(const fs_attn *a, double *O, fs_trace *tr);

const char *fs_form_str(fs_form f);        /* "normalized", "unnormalized" */
const char *fs_order_str(fs_order o);      /* "q-outer", "kv-outer" */
const char *fs_pitfall_str(fs_pitfall p);  /* "none", "no-rescale", … */

#endif
