/* trace.h: the record of a run, as plain data.
 *
 * An algorithm given an fs_trace appends one fs_event per thing that happens, in the order it
 * happens: a tile visited or skipped, a row's running statistics updated, an element of a vector
 * folded into online softmax, a decode partial, a merge, an output row. Vectors (an o row, a row
 * of scores) do not fit in a fixed-size struct, so they live in one pool of doubles and an event
 * holds their offset (−1 when absent) and length.
 *
 * Every event stores the values before and after, so a viewer steps backward as easily as
 * forward without recomputing anything. Given no trace (NULL), the algorithms skip all of this.
 *
 * The letters follow the documents (001's normalized form):
 *     m_old, ℓ_old      running max and sum before the update
 *     m_blk, ℓ_blk      max of the visible scores in this block, Σ exp(s − m_blk) over them
 *     m_new = max(m_old, m_blk)
 *     α = exp(m_old − m_new)    rescales what was accumulated
 *     β = exp(m_blk − m_new)    rescales the new block
 *     ℓ_new = α ℓ_old + β ℓ_blk
 * A row that has seen no visible key yet keeps m = −∞, ℓ = 0 and reports α = 1, β = 0.
 * With the exp2 option (003), m values and scores are in base-2 units (multiplied by log2 e);
 * α, β and ℓ are unchanged.
 */
#ifndef FS_TRACE_H
#define FS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "status.h"

typedef enum {
    FS_EV_ELEM = 0, /* online softmax of a vector: one element or chunk folded in */
    FS_EV_TILE,     /* a (Q tile, KV tile) pair is computed */
    FS_EV_SKIP,     /* a (Q tile, KV tile) pair is skipped */
    FS_EV_ROW,      /* one query row updated from one tile (or one key) */
    FS_EV_PARTIAL,  /* decode: one split's partial (m, ℓ, o) for one query row */
    FS_EV_MERGE,    /* decode: two partial states merged into one */
    FS_EV_OUT,      /* a final output row (or the softmax vector) */
    /* The backward pass (backward.h). */
    FS_EV_LSE,      /* one query row's log-sum-exp L from the forward (x) */
    FS_EV_DELTA,    /* one query row's D = rowsum(dO ∘ O) (x) */
    FS_EV_BTILE,    /* a (Q tile, KV tile) pair is recomputed */
    FS_EV_BSKIP,    /* a pair is skipped by the backward */
    FS_EV_BROW,     /* one query row of a recomputed tile: S, P, dP, dS and its dQ contribution */
    FS_EV_BKEY,     /* one key row of a recomputed tile: its dK and dV contributions */
    FS_EV_GRAD,     /* a final row of dQ, dK or dV */
    /* The paged KV cache (paged.h). */
    FS_EV_LOOKUP,   /* a split reads a logical block: the block table says which page */
    FS_EV_ALLOC,    /* a free page taken for a sequence's new logical block */
    FS_EV_SHARE,    /* a forked sequence shares one of its parent's pages */
    FS_EV_COW,      /* copy-on-write: a shared page copied before a sequence writes into it */
    FS_EV_WRITE,    /* one position's K and V written into a slot of a page */
    /* Ring attention (ring.h). */
    FS_EV_HOLD,     /* a device holds a KV shard at a ring step */
    FS_EV_SEND,     /* a device sends the shard it holds to the next device */
    FS_EV_RECV,     /* a device receives a shard from the previous device */
    FS_EV_RMERGE,   /* one query row's running state merged with a step's block */
    FS_EV_COUNT
} fs_event_kind;

typedef struct {
    fs_event_kind kind;
    int32_t step;          /* index of this event in the trace, 0-based */
    int32_t head;          /* query head (0 without heads) */
    int32_t kv_head;       /* KV head it reads */
    int32_t qt, kt;        /* Q tile and KV tile (decode: kt is the split); −1 when n/a */
    int32_t row;           /* query row within the head; −1 when n/a */
    int32_t r0, r1;        /* rows [r0, r1) of the tile */
    int32_t c0, c1;        /* keys [c0, c1) of the tile / split / chunk; elements for ELEM */
    int32_t stride;        /* 1, or P for 003's strided decode partition (keys c0, c0+P, …) */
    fs_tile_class cls;     /* TILE, SKIP */
    fs_skip_reason reason; /* SKIP */
    int32_t visible;       /* ROW, PARTIAL: visible keys this row saw in the block */
    double x;              /* ELEM with one element: its value */
    double m_old, m_blk, m_new;
    double l_old, l_blk, l_new;
    double alpha, beta;
    /* MERGE: the inputs are (m_old, l_old, o_old) and (m_blk, l_blk, o_blk), their correction
     * factors alpha and beta, the result (m_new, l_new, o_new); a, b and id name the nodes. */
    int32_t a, b, id;
    int32_t level;         /* MERGE as a tree: depth in the reduction (0 = leaves merged) */
    /* Vectors in the pool; offset −1 when absent. */
    int64_t s_row;         /* ROW: the row's scores in the tile, c1 − c0 values, −∞ where masked;
                              ELEM: the chunk's values */
    int64_t p_row;         /* ROW: P̃ = exp(s − m_blk), c1 − c0 values (0 where masked) */
    int32_t n_s;           /* length of s_row and p_row */
    int64_t o_old, o_blk, o_new; /* o vectors of length n_o (ROW: o_blk absent) */
    int32_t n_o;
    bool normalized;       /* o_old / o_new are normalized (divided by ℓ) */
    /* Backward events (backward.h):
     *   LSE:   x = L.   DELTA: x = D, o_blk = the dO row, o_new = the O row (n_o = d_v).
     *   BROW:  x = L, m_new = D; s_row = S, p_row = P = exp(S − L), dp_row = dP, ds_row = dS
     *          (n_s each, P = 0 where masked); o_old, o_blk, o_new = the row's dQ before, this
     *          tile's scale · dS K, after (n_o = d).
     *   BKEY:  row = the key; o_old, o_blk, o_new = its dK row (n_o = d) and g_old, g_blk,
     *          g_new = its dV row (n_g = d_v), before, this tile's contribution, after.
     *   GRAD:  tensor (FS_GRAD_*), row, o_new (n_o values); head = kv_head = the KV head for
     *          dK and dV. */
    int64_t dp_row, ds_row;
    int64_t g_old, g_blk, g_new;
    int32_t n_g;
    int32_t tensor;
    /* Dropout (dropout.h), on TILE and BTILE when the run drops: dropout = p, and the visible
     * cells of the pair that were dropped, n_drop (row, key) pairs stored as 2 · n_drop numbers
     * in the pool at drop (−1 when the run has no dropout; n_drop may be 0). */
    double dropout;
    int64_t drop;
    int32_t n_drop;
    /* Low-precision runs (lowp.h; lowp true on their TILE and ROW events): the scales of the
     * tile (dequantized value = rounded value · scale; p_scale multiplies P before its rounding).
     * On request (the recipe's values), the exact inputs beside the rounded ones, dequantized:
     *   ROW:  x_row, x8_row (n_x = d): the query row; p8_row (n_s): P8 / p_scale, the P of P · V.
     *   TILE: k_tile, k8_tile ((c1 − c0) · n_x), v_tile, v8_tile ((c1 − c0) · n_xv): K's, V's rows.
     * Offsets −1 when absent. */
    bool lowp;
    double q_scale, k_scale, v_scale, p_scale;
    int64_t x_row, x8_row, p8_row;
    int64_t k_tile, k8_tile, v_tile, v8_tile;
    int32_t n_x, n_xv;
    /* Paged KV cache events (paged.h); −1 when n/a:
     *   LOOKUP: seq, block → page; head, kv_head, row and kt (the split) as in its PARTIAL;
     *           c0, c1, stride: the positions of the block the split reads.
     *   ALLOC:  seq, block, page taken; n_free pages left.
     *   SHARE:  seq (the new one) shares block → page of sequence src; refs after.
     *   COW:    seq's block moves from the shared page src to the copy page; slot = slots copied;
     *           refs = the sequences still holding src; n_free pages left.
     *   WRITE:  position c0 of seq into page, slot (block = c0 / page_size); refs of the page. */
    int32_t seq, block, page, src, slot, refs, n_free;
    /* Ring attention (ring.h); −1 when n/a. device, ring_step and shard are set on every event
     * of a step (HOLD, the kernel's TILE, SKIP, ROW, BTILE, BSKIP, BROW, BKEY, and RMERGE): the
     * device, the step t, the KV shard (p − t) mod P it holds. Inside a step rows, keys and
     * tiles are local: row i is the device's i-th query, key j the shard's j-th key; pos is
     * the global position of the row (ROW, BROW, RMERGE) or the key (BKEY).
     *   HOLD:   s_row = the shard's positions (n_s, increasing).
     *   SEND, RECV: shard, a = from device, b = to device, bytes (float64, ring.h), and
     *           tensor: 0 K and V, 1 K, V, dK and dV, 2 dK and dV (the last hop home).
     *   RMERGE: as MERGE: (m_old, l_old, o_old) the running state, (m_blk, l_blk, o_blk) the
     *           step's block, alpha, beta, the result (m_new, l_new, o_new), normalized. */
    int32_t device, ring_step, shard, pos;
    int64_t bytes;
} fs_event;

typedef struct {
    fs_event *ev;
    int64_t n, cap;
    double *pool;
    int64_t n_pool, cap_pool;
    int64_t max_events;    /* a bound: past it, recording fails with FS_ERR_LIMIT (0: 1<<24) */
} fs_trace;

void fs_trace_init(fs_trace *t);
void fs_trace_free(fs_trace *t);
void fs_trace_clear(fs_trace *t);

/* Append a copy of e (its step is set to the index); returns the new event or NULL when out of
 * memory or past max_events. */
fs_event *fs_trace_push(fs_trace *t, const fs_event *e);

/* Why the last fs_trace_push or fs_trace_vec failed: FS_ERR_LIMIT at max_events, else
 * FS_ERR_NOMEM. The algorithms return this when recording fails. */
fs_status fs_trace_error(const fs_trace *t);

/* Record that output row r of a is finished (an FS_EV_OUT event): r indexes the (head, query)
 * rows, r = head · n_q + query; o is its d_v values as written (divided by ℓ), m and ℓ its final
 * statistics. FS_OK, or fs_trace_error's status when recording fails. */
fs_status fs_trace_push_out(fs_trace *t, const fs_attn *a, size_t r, const double *o, double m, double l);

/* Copy n doubles into the pool; returns the offset, or −1 when out of memory. */
int64_t fs_trace_vec(fs_trace *t, const double *v, int32_t n);

/* The vector at offset off (NULL for −1). Valid until the next push. */
const double *fs_trace_at(const fs_trace *t, int64_t off);

/* An event with every index −1, every number 0, offsets −1. */
fs_event fs_event_blank(fs_event_kind kind);

/* A blank event of `kind` in a (Q tile, KV tile) pair: query head `head` reading KV head
 * kv_head, Q tile qt (rows [r0, r1)) against KV tile kt (keys [c0, c1)), of class cls. The
 * pair's own event is one (TILE or SKIP, BTILE or BSKIP; the caller then sets its reason). */
fs_event fs_event_pair(fs_event_kind kind, int32_t head, int32_t kv_head, int32_t qt, int32_t kt, int32_t r0,
                       int32_t r1, int32_t c0, int32_t c1, fs_tile_class cls);

/* A blank event of `kind` in the same pair as the event `pair` (fs_event_pair with pair's head,
 * tiles, bounds and class; not its reason): how a pair's ROW, BROW and BKEY events start. */
fs_event fs_event_in_pair(fs_event_kind kind, const fs_event *pair);

/* "elem", "tile", "skip", "row", "partial", "merge", "out", for the backward "lse", "delta",
 * "btile", "bskip", "brow", "bkey", "grad", and for the paged cache "lookup", "alloc", "share",
 * "cow", "write", for the ring "hold", "send", "recv", "rmerge". */
const char *fs_event_kind_str(fs_event_kind k);

/* The keys c0, c0 + stride, … < c1 of an event (a decode split or a paged lookup) in words, for
 * the viewers: "key 5", "keys 4-7" (stride 1), "keys 24, 27" or "keys 24, 27, ..., 45". Writes
 * at most n bytes into buf (always terminated) and returns buf. */
const char *fs_event_keys(const fs_event *e, char *buf, size_t n);

/* Significant events for a viewer's "next interesting step": a new maximum that rescales
 * (α < 1 on a row that had seen keys), a row whose m or ℓ first turns NaN (a pitfall's point),
 * a skip, a merge, an output; in the backward a skip and a
 * finished gradient row; in the paged cache a page taken, shared or copied; in the ring a
 * merge and a send. */
bool fs_event_significant(const fs_event *e);

#endif
