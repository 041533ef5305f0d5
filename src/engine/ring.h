/* ring.h: ring (context-parallel) attention over P simulated devices, forward and backward.
 *
 * None of the five source documents covers this: it is the multi-GPU form of the algorithms
 * they do cover. Q, K and V of one sequence are sharded by position over P devices. Each device
 * keeps its own queries; the KV shards travel around a ring, one hop a step, so after P steps
 * every device has met every shard once without any device ever holding the whole of K and V.
 *
 * Convention: at ring step t (0 ≤ t < P) device p holds KV shard s = (p − t) mod P. It starts
 * with its own shard (t = 0), and after each step sends the shard it holds to device p + 1 and
 * receives shard (p − t − 1) mod P from device p − 1.
 *
 * Shardings (N = n_q = n_kv positions; shard s is what device s holds at step 0):
 *   contiguous  device p holds the block [⌊pN/P⌋, ⌊(p+1)N/P⌋). Under causal the last device sees
 *               every shard and the first only its own: unbalanced.
 *   zigzag      the sequence cut into 2P blocks; device p holds blocks p and 2P−1−p, an early
 *               one and its mirror image at the end, so under causal every device does the
 *               same work. Exactly: the first half (⌊N/2⌋ positions) is cut at ⌊p⌊N/2⌋/P⌋ into
 *               early blocks, device p's late block is the mirror of its early one (position i
 *               ↔ N − 1 − i), and an odd N's middle position joins device P − 1's early block.
 *               A query at i and its mirror see i + 1 and N − i keys, N + 1 together, so a
 *               device's causal work is (its early block's size) · (N + 1) pairs (plus the
 *               middle's ⌈N/2⌉): equal for N a multiple of 2P, otherwise within 2(N + 1).
 *   striped     token i on device i mod P (balanced too, within one token a row).
 * N need not be a multiple of P or 2P: the cuts above give shards that differ by at most one
 * token (zigzag: at most three). Every shard must hold a token: N ≥ P (zigzag N ≥ 2P), else
 * FS_ERR_SHAPE. A device's tokens are kept in increasing position; local query i (or key j) of a
 * device's step is the i-th (j-th) position of its shard (fs_ring_positions).
 *
 * Forward, per step and device: the device's queries against the held shard run through the
 * tiled kernel (tiled.h: Bq, Bk and the form of the tiling, the per-tile online-softmax update),
 * which gives the block's partial state (m_blk, ℓ_blk, o_blk) per row; it is merged into the
 * row's running state as FlashDecoding merges partials (decode.h):
 *     m_new = max(m_old, m_blk),  α = exp(m_old − m_new),  β = exp(m_blk − m_new)
 *     ℓ_new = α ℓ_old + β ℓ_blk,  o_new = (α ℓ_old o_old + β ℓ_blk o_blk) / ℓ_new
 * A block with no visible key leaves the state as it is (no merge, nothing recorded); the first
 * block with visible keys is taken as it is (α = 0, β = 1, no arithmetic).
 *
 * Masks: none or causal (offset 0: n_q = n_kv, query i at position i). Inside a step the mask is
 * the causal one on global positions; a (Q tile, KV tile) pair whose keys all lie after all its
 * queries is skipped with reason "causal".
 *
 * Bit for bit: a row whose visible keys all lie in one shard, at the same places of that shard's
 * tiles of Bk keys as of the sequence's, gets exactly fs_tiled's output, m and ℓ (same tiling):
 * with P = 1 (every sharding then holds the sequence in order), every row; under causal, the rows
 * of the first block (contiguous: device 0's rows; zigzag: those of block 0; striped: row 0).
 * Elsewhere the merges regroup the sums, and the result agrees with fs_reference and fs_tiled to
 * float64 rounding.
 *
 * Backward: each device keeps Q, O, dO, L = m + ln ℓ, D = rowsum(dO ∘ O) and its dQ; dK and dV
 * of a shard travel with its K and V. At each step the device recomputes its queries against the
 * held shard (backward.h, by tiles), adds to its dQ and to the travelling dK, dV. After step
 * P − 1 one more hop carries each shard's dK and dV (alone) back to its home device.
 *
 * Trace (trace.h), in order: per step t, per device p: HOLD (the shard, its positions), then the
 * tiled kernel's TILE/SKIP/ROW events (backward: BTILE/BSKIP/BROW/BKEY) with device, ring_step
 * and shard set and rows, keys and tiles local to the step, then (forward) one RMERGE per row
 * that saw a key; after the step every device's SEND, then every device's RECV (none after the
 * last forward step; the backward's last are dK and dV going home). The forward ends with one OUT per row (head by
 * head, global rows); the backward starts with LSE and DELTA per row and ends with GRAD rows.
 */
#ifndef FS_RING_H
#define FS_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "attn.h"
#include "status.h"
#include "tiled.h"
#include "trace.h"

#define FS_RING_MAX_DEVICES 1024

typedef enum { FS_SHARD_CONTIGUOUS = 0, FS_SHARD_ZIGZAG, FS_SHARD_STRIPED, FS_SHARD_COUNT } fs_sharding;

typedef struct {
    int32_t P;              /* devices, 1 … FS_RING_MAX_DEVICES */
    fs_sharding sharding;
    fs_tiling tiling;       /* Bq, Bk, form (and the backward's loop order) inside a step; no
                               exp2, pitfall or dropout */
} fs_ring;

/* P = 4, zigzag, Bq = Bk = 2, normalized. */
fs_ring fs_ring_default(void);

/* FS_OK when the ring can run a: sizes as fs_attn_check, n_q = n_kv, mask none or causal with
 * offset 0, P in range, N ≥ P (zigzag 2P), tiles ≥ 1, no exp2/pitfall/dropout. Otherwise the
 * status, and a sentence in why (may be NULL) when it is the ring's own condition. */
fs_status fs_ring_check(const fs_attn *a, const fs_ring *r, char *why, size_t n);

/* The number of positions of shard s (0 ≤ s < P) of a sequence of n, and, when pos is not
 * NULL, the positions themselves in increasing order (pos holds at least that many). */
int32_t fs_ring_positions(const fs_ring *r, int32_t n, int32_t s, int32_t *pos);

/* The bytes of one shard's hop in float64, as the engine moves it: K and V rows of every KV head
 * (forward: n_s (d + d_v) n_kv_heads · 8); the backward's hop adds dK, dV (twice that); the last
 * hop home carries dK and dV only. */
int64_t fs_ring_shard_bytes(const fs_attn *a, int32_t n_s, bool backward, bool last);

/* Forward. O (n_q_heads, n, d_v); m_out, l_out (n_q_heads, n) natural units, may be NULL. Given
 * scores (a->S) are sharded like Q and K. */
fs_status fs_ring_forward(const fs_attn *a, const fs_ring *r, double *O, double *m_out, double *l_out,
                          fs_trace *tr);

/* Backward, with the forward's O and L (n_q_heads, n) and dO (n_q_heads, n, d_v); dQ
 * (n_q_heads, n, d), dK (n_kv_heads, n, d), dV (n_kv_heads, n, d_v), D (n_q_heads, n; may be
 * NULL) out. Q and K required. */
fs_status fs_ring_backward(const fs_attn *a, const fs_ring *r, const double *O, const double *L, const double *dO,
                           double *dQ, double *dK, double *dV, double *D, fs_trace *tr);

/* The work table, from the mask alone (no arithmetic): for device p at step t, index p·P + t,
 * the (Q tile, KV tile) pairs visited and skipped, and the visible (query, key) pairs of one
 * head. Any of the three may be NULL. Per device the row sums are its load. */
fs_status fs_ring_work(const fs_attn *a, const fs_ring *r, int64_t *visited, int64_t *skipped, int64_t *pairs);

/* Whether the HOLD event at index hold of trace t is followed, before the next HOLD, SEND or
 * RECV, by skipped tiles only (at least one): the device's queries see none of the shard's keys. */
bool fs_ring_hold_skipped(const fs_trace *t, int64_t hold);

const char *fs_sharding_str(fs_sharding s);   /* "contiguous", "zigzag", "striped" */
/* The sharding named s, or FS_SHARD_COUNT when none is. */
fs_sharding fs_sharding_parse(const char *s);

#endif
