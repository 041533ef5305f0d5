/* decode.h: FlashDecoding, the split-and-merge form for a few query rows and a long KV cache.
 *
 * Phase 1: the KV positions are cut into splits; each split computes its own partial
 * (m, ℓ, o) for a query row, independently of the others (000's flash_decode_phase1).
 * Phase 2: the partials are merged. merge(a, b):
 *     m = max(m_a, m_b),  c_a = exp(m_a − m),  c_b = exp(m_b − m)
 *     ℓ = c_a ℓ_a + c_b ℓ_b
 *     o = c_a o_a + c_b o_b                       (unnormalized partials)
 *     o = (c_a ℓ_a o_a + c_b ℓ_b o_b) / ℓ          (normalized partials)
 * The merge is associative, so the merges can run left to right (sequential) or as a pairwise
 * tree; the output is the same up to rounding. A partial that saw no visible key is the
 * identity (m = −∞, ℓ = 0, o = 0), and merging two such gives the identity with c_a = 1, c_b = 0.
 *
 * Splits: contiguous tiles of Bk positions, or 003's strided partition into P parts where part
 * p takes positions p, p + P, p + 2P, …
 */
#ifndef FS_DECODE_H
#define FS_DECODE_H

#include "attn.h"
#include "status.h"
#include "tiled.h"
#include "trace.h"

typedef enum { FS_MERGE_SEQUENTIAL = 0, FS_MERGE_TREE } fs_merge;
typedef enum { FS_SPLIT_CONTIGUOUS = 0, FS_SPLIT_STRIDED } fs_split;

typedef struct {
    fs_split split;
    int32_t Bk;           /* contiguous: positions per split, ≥ 1 */
    int32_t parts;        /* strided: number of parts P, ≥ 1 */
    fs_merge merge;
    fs_form form;         /* whether partials carry o normalized or not */
} fs_decoding;

fs_decoding fs_decoding_default(void);   /* contiguous, Bk = 64, sequential, unnormalized */

/* O is (n_q_heads, n_q, d_v). For each head and query row: one PARTIAL per split, then the
 * MERGE events, then one OUT. */
fs_status fs_decode(const fs_attn *a, const fs_decoding *dc, double *O, double *m_out,
                    double *l_out, fs_trace *tr);

/* Where a decode reads K and V when they are not a->K and a->V: a key row and a value row by
 * (KV head, position j), and, before each split's partial, a hook that records where the
 * split's keys come from (the paged cache's block-table lookups, paged.h). Given a reader,
 * fs_decode_read computes exactly what fs_decode computes, in the same order, so the results
 * are bit-for-bit those of the contiguous run on the same numbers. */
typedef struct {
    const double *(*key)(const void *ctx, int32_t kv_head, int32_t j);     /* d numbers */
    const double *(*value)(const void *ctx, int32_t kv_head, int32_t j);   /* d_v numbers */
    /* May be NULL. Called with the split's keys first, first + stride, … < end. */
    fs_status (*visit)(const void *ctx, fs_trace *tr, int32_t head, int32_t kv_head, int32_t row,
                       int32_t split, int32_t first, int32_t end, int32_t stride);
    const void *ctx;
} fs_kv_reader;

/* fs_decode reading K and V through rd. a must hold Q (not given scores); a->K and a->V are not
 * read and may be NULL; a's sizes, mask and values are the caller's to check (fs_attn_check on
 * the same problem laid out contiguously). */
fs_status fs_decode_read(const fs_attn *a, const fs_decoding *dc, const fs_kv_reader *rd, double *O,
                         double *m_out, double *l_out, fs_trace *tr);

/* A decode whose KV cache is stored in low precision, as a serving engine keeps it (vLLM's FP8
 * cache), with the float16 cache beside it for comparison:
 *
 *   FS_KV_F16:  K, V and Q rounded to float16 (k16 = f16(f32(k))), no scales.
 *   FS_KV_E4M3: K and V stored in e4m3 with scales, k8 = e4m3(f32(f32(k) / s_k)), one pair of
 *               scales (s_k, s_v) per KV head (page_size 0) or per (KV head, page of page_size
 *               positions) on the paged path; s = amax / 448 of the head's or page's values
 *               taken as float32 (amax 0: s = 1). Q is float16.
 *
 * Every split then runs in float32, one term at a time, as the kernel does after converting
 * the cache to float16 in registers:
 *     S_j = f32(Σ q16 · k8_j) · σ_j        σ_j = f32(scale) · s_k of key j's page (or head):
 *                                         the K descale folded into the softmax scale
 *     m = max S,  P_j = exp(S_j − m),  ℓ = Σ P_j   (float32; exp correctly rounded)
 *     o = Σ f16(P_j) · v8_j · w_j          P enters P · V in float16 (the tensor cores' input);
 *                                         w_j = s_v of key j's page (per page, one rounding a
 *                                         product), or 1 (per head: s_v multiplies O once)
 * and the merge of decode.h in float32. O = o / ℓ (· s_v per head). Every product of the
 * scores and of P · V is exact in float32 (at most 11 + 11 significant bits).
 *
 * fs_decode_kv's events are fs_decode's (PARTIAL, MERGE, OUT; s_row holds the float32 scores),
 * with lowp set on PARTIAL and k_scale, v_scale the scales of the split's first key (q_scale and
 * p_scale 1). A soft-cap is FS_ERR_ARG (no FP8 cache kernel here applies one). */
typedef enum { FS_KV_F16 = 0, FS_KV_E4M3, FS_KV_COUNT } fs_kv_fmt;

typedef struct {
    fs_kv_fmt fmt;
    int32_t page_size;    /* e4m3: 0 scales per KV head; > 0 per (KV head, page of page_size positions) */
} fs_kv_store;

const char *fs_kv_fmt_str(fs_kv_fmt f);   /* "f16", "e4m3" */

/* O (n_q_heads, n_q, d_v); m_out, l_out (n_q_heads, n_q) may be NULL (m in natural units). rd
 * NULL: K and V from a (checked as fs_decode checks them); else through rd as fs_decode_read
 * (its visit hook called as there). FS_ERR_ARG for a bad kv or a soft-cap, FS_ERR_RANGE when a
 * value overflows float16 (FS_KV_F16) or float32. */
fs_status fs_decode_kv(const fs_attn *a, const fs_decoding *dc, const fs_kv_store *kv, const fs_kv_reader *rd,
                       double *O, double *m_out, double *l_out, fs_trace *tr);

/* One merge of two states of length n (the formula above). o may alias o_a. */
void fs_decode_merge(double m_a, double l_a, const double *o_a,
                     double m_b, double l_b, const double *o_b, int32_t n, fs_form form,
                     double *m, double *l, double *o, double *c_a, double *c_b);

const char *fs_merge_str(fs_merge m);   /* "sequential", "tree" */
const char *fs_split_str(fs_split s);   /* "contiguous", "strided" */

#endif
