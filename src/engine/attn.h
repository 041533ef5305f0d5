/* attn.h: the attention problem and its masks.
 *
 * This is the first thing to read in the engine. An fs_attn says what to compute:
 *
 *     S = scale · Q Kᵀ            (or S given directly)
 *     S = cap · tanh(S / cap)     (optional logit soft-capping, 003)
 *     S[i][j] = −∞ where the mask hides key j from query i
 *     P = softmax(S) row by row,  O = P V
 *
 * for every query head h, which reads KV head h / (n_q_heads / n_kv_heads) (GQA, 000 and 003).
 *
 * Layout (row-major, float64, the engine's only number type):
 *     Q is (n_q_heads, n_q, d)      K is (n_kv_heads, n_kv, d)
 *     V is (n_kv_heads, n_kv, d_v)  O is (n_q_heads, n_q, d_v)
 *     S, when given, is (n_q_heads, n_q, n_kv) and Q, K are then unused.
 *
 * Masks. Query row i sits at absolute position i + offset, where offset defaults to
 * n_kv − n_q (the queries are the newest positions of the KV sequence, as in decode or in a
 * prefill that extends a cache). Key j sits at position j.
 *     none:    every key visible
 *     causal:  key j visible to query i when j ≤ i + offset
 *     window:  causal and within the W most recent positions: i + offset − W < j ≤ i + offset (003)
 *     bits:    an explicit bitmask, one row of 64-bit words per query (tree masks use this)
 */
#ifndef FS_ATTN_H
#define FS_ATTN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Sizes are bounded so that every index and every count of elements fits in int64 comfortably
 * and no request can ask for absurd memory by accident. */
#define FS_MAX_DIM   (1 << 20)   /* n_q, n_kv */
#define FS_MAX_HEAD  4096        /* d, d_v */
#define FS_MAX_HEADS 1024        /* n_q_heads */

typedef enum {
    FS_MASK_NONE = 0,
    FS_MASK_CAUSAL,
    FS_MASK_WINDOW,
    FS_MASK_BITS,
} fs_mask_kind;

/* Why a whole tile was skipped. The order is the order of the checks. */
typedef enum {
    FS_SKIP_NONE = 0,
    FS_SKIP_CAUSAL,    /* every key of the tile lies in the future of every query */
    FS_SKIP_WINDOW,    /* every key is older than the window of every query */
    FS_SKIP_TREE,      /* the tree mask hides every key from every query */
    FS_SKIP_BITMASK,   /* an explicit bitmask hides every pair */
} fs_skip_reason;

typedef enum {
    FS_TILE_FULL = 0,  /* every (query, key) pair is visible: no element mask needed */
    FS_TILE_PARTIAL,   /* some pairs visible: the element mask is applied */
    FS_TILE_SKIPPED,   /* no pair visible: the tile costs nothing */
} fs_tile_class;

typedef struct {
    fs_mask_kind kind;
    bool has_offset;          /* false: offset = n_kv − n_q */
    int32_t offset;           /* query i sits at position i + offset */
    int32_t window;           /* W for FS_MASK_WINDOW, ≥ 1 */
    bool is_tree;             /* FS_MASK_BITS built from a parent array: skips say "tree" */
    const uint64_t *bits;     /* FS_MASK_BITS: n_q rows of words_per_row words; bit j of row i */
    int32_t words_per_row;    /* ≥ (n_kv + 63) / 64 */
} fs_mask;

typedef struct {
    int32_t n_q_heads, n_kv_heads;  /* n_q_heads a multiple of n_kv_heads; both ≥ 1 */
    int32_t n_q, n_kv, d, d_v;
    const double *Q, *K, *V;        /* see layout above; Q, K may be NULL when S is given */
    const double *S;                /* optional given scores; the scale still multiplies them */
    double scale;                   /* multiplies Q Kᵀ (or S); fs_attn_default_scale gives 1/√d */
    double softcap;                 /* > 0: S = cap · tanh(S / cap); 0: off */
    fs_mask mask;
} fs_attn;

/* A problem with one head, no mask, scale 1/√d, no soft-cap; the caller fills the rest. */
fs_attn fs_attn_make(int32_t n_q, int32_t n_kv, int32_t d, int32_t d_v);

/* 1/√d, the scale the documents use by default. */
double fs_attn_default_scale(int32_t d);

/* FS_OK when the sizes, pointers, mask and values are usable; the first problem otherwise.
 * Finite inputs can still overflow float64 on the way (entries of 1e308, or --scale 1e300):
 * that is FS_ERR_RANGE, from fs_attn_check_range below, which this calls last. */
fs_status fs_attn_check(const fs_attn *a);

/* Limits that keep every intermediate of every algorithm finite.
 *   |s| ≤ FS_SCORE_LIMIT for every score s = scale · q·k: the exp2 form multiplies s by log2 e,
 *       and s − m stays finite for two scores of opposite sign. With the soft-cap on, the capped
 *       score is at most cap in size whatever s is, so only a NaN s (two overflowing terms of q·k
 *       that cancel) is out of range.
 *   n_kv · max|v| ≤ FS_VALUE_LIMIT: the unnormalized output Σ p·v and the normalized update
 *       α·ℓ_old·o_old + β·Σ p·v stay below ℓ · max|v| with ℓ ≤ n_kv. */
#define FS_SCORE_LIMIT 4.4e307
#define FS_VALUE_LIMIT 4.4e307

/* Where fs_attn_check_range found the first value out of range. For a score: head, row and
 * col name the query head, the query row and the key, and value is scale · q·k computed in
 * long double (beyond float64's range on x86-64; ±inf where even that overflows). For V:
 * in_v is set, head is the KV head, row the key, col the column, value the entry. */
typedef struct {
    bool in_v;
    int32_t head, row, col;
    long double value;
} fs_range_issue;

/* FS_OK when every score and every running sum stays within the limits above, FS_ERR_RANGE
 * otherwise with *where (if not NULL) filled. Cheap in the common case: a bound from the row
 * norms of Q and K decides without visiting the scores. */
fs_status fs_attn_check_range(const fs_attn *a, fs_range_issue *where);

/* One English sentence for a failed check of a: fs_status_str(st), except for FS_ERR_RANGE,
 * where it names the score (query head, row, key, value of scale · q·k) or the entry of V that
 * is out of range. Writes at most n bytes into buf (always terminated) and returns buf. */
const char *fs_attn_status_detail(const fs_attn *a, fs_status st, char *buf, size_t n);

/* FS_OK when the mask is usable for n_kv keys (window ≥ 1, bitmask rows wide enough). */
fs_status fs_mask_check(const fs_mask *m, int32_t n_kv);

/* The score of query row i of head h against key j before masking: scale · q·k (or scale ·
 * S[i][j] when S is given; a given −∞ stays −∞), then the soft-cap when it is on. Every path
 * of the engine and the lessons computes scores through this one function. */
double fs_attn_score(const fs_attn *a, int32_t h, int32_t i, int32_t j);

/* The same score against a key row k (d numbers) held outside a->K, as the paged KV cache
 * holds it (paged.h): the same arithmetic in the same order, so the score is bit-for-bit the
 * one fs_attn_score gives for the key row that k copies. Needs Q (not given scores). */
double fs_attn_score_key(const fs_attn *a, int32_t h, int32_t i, const double *k);

/* The KV head that query head h reads: h / (n_q_heads / n_kv_heads). */
int32_t fs_attn_kv_head(const fs_attn *a, int32_t h);

/* Position of query row i (i + offset). */
int64_t fs_mask_query_pos(const fs_mask *m, int32_t n_q, int32_t n_kv, int32_t i);

/* Is key j visible to query row i? */
bool fs_mask_visible(const fs_mask *m, int32_t n_q, int32_t n_kv, int32_t i, int32_t j);

/* Classify the tile of query rows [r0, r1) and keys [c0, c1) before computing it. For a skipped
 * tile, *why (if not NULL) says why; for the others it is FS_SKIP_NONE. Causal and window
 * masks decide in O(1); bitmasks scan the tile's bits. */
fs_tile_class fs_mask_classify(const fs_mask *m, int32_t n_q, int32_t n_kv,
                               int32_t r0, int32_t r1, int32_t c0, int32_t c1,
                               fs_skip_reason *why);

/* Words per bitmask row for n_kv keys. */
int32_t fs_mask_words(int32_t n_kv);

/* Build the speculative-decoding tree mask of 000: query i sees key j when j is i or an
 * ancestor of i. parent[i] is the parent of position i, −1 for the root; exactly one root, every
 * parent in range, no cycles. bits must hold n · fs_mask_words(n) words. On FS_ERR_TREE,
 * *bad_index (if not NULL) is the position where the problem was found. */
fs_status fs_mask_tree_build(const int32_t *parent, int32_t n, uint64_t *bits, int32_t *bad_index);

/* A tree mask over those bits (kind FS_MASK_BITS, is_tree set). */
fs_mask fs_mask_tree(const uint64_t *bits, int32_t n);

const char *fs_mask_kind_str(fs_mask_kind k);      /* "none", "causal", "window", "bits" */
const char *fs_skip_reason_str(fs_skip_reason r);  /* "causal", "window", "tree", "bitmask" */
const char *fs_tile_class_str(fs_tile_class c);    /* "full", "partial", "skipped" */

#endif
