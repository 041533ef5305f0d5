/* cpu_internal.h: what the files of src/kernels/cpu share and nobody else sees.
 *
 * cpu_attn.c owns the public entry points, validation, the thread runner, packing and the
 * scalar versions 1 and 2. cpu_kernels.inc is the SIMD body (prefill versions 3 to 7, decode and
 * the backward), written
 * once against the macro layer of cpu_simd.h and compiled once per instruction set by
 * cpu_isa_{scalar,avx2,avx512,neon}.c, each of which exports one cpu_isa_ops table.
 */
#ifndef FS_CPU_INTERNAL_H
#define FS_CPU_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu/cpu_attn.h"

/* A measurement build only (`make CFLAGS='-O2 -g -DFS_CPU_ABLATE=k'`, never the program): leave
 * one part of prefill versions 4-7 out, so that its time is the difference from a normal build:
 * 1 the softmax, 2 P V, 3 Q Kᵀ (cpu_kernels.inc), 4 everything after packing K and V
 * (cpu_attn.c). Results are then wrong; bench/intel-sweep.sh runs such builds. */
#ifndef FS_CPU_ABLATE
#define FS_CPU_ABLATE 0
#endif

#define FS_CPU_LOG2E 1.44269504088896340736f
#define FS_CPU_LN2 0.69314718055994530942f

/* Work shared by all threads of one prefill call (read-only while they run). */
typedef struct {
    const fs_cpu_attn *a;
    int32_t Bq, Bk;          /* tile sizes actually used (Bk a multiple of the micro-tile) */
    int32_t Bqp;             /* Bq rounded up to the micro-kernel's row count */
    int32_t dp;              /* d rounded up to the lane count: rows of packed buffers */
    int32_t n_qt, n_kt;      /* tile counts over n_q and n_kv */
    int32_t group;           /* n_q_heads / n_kv_heads */
    float scale;             /* scale (natural units) */
    float scale2;            /* scale · log2(e): scores in base-2 units (version 4, decode) */
    bool strips;             /* versions ≥ 5: each tile's Kᵀ packed as Bk/NR contiguous strips of
                                (d × NR), the block one qk_block call reads, and its V as
                                contiguous strips of (Bk × NR), the block one pv_block call
                                reads; version 4: Kᵀ one (d × Bk) block and V rows of dp, whose
                                64-column strips interleave in memory */
    bool trim;               /* version 6: a partial causal/window tile computes, per row block,
                                only the columns up to the last one its rows see */
    bool stream;             /* version 7: the next tile's Kᵀ and V asked into L2 a line at a
                                time during this tile's products (tile_stream) */
    /* Packed per (b, KV head), n_kt·Bk rows each, zero beyond n_kv and beyond d:
     *   Kp: rows of dp (version 3) or, versions ≥ 4, per tile Kᵀ of the tile: one (d × Bk)
     *       block (version 4) or Bk/NR strips of (d × NR) one after the other (strips)
     *   Vp: rows of dp (versions 3, 4) */
    float *Kp, *Vp;
    int64_t tile_stride;     /* floats per KV tile in Kp and Vp: Bk · dp, or with strips
                                Bk · dp rounded up to a multiple of NR columns */
    int64_t head_stride;     /* floats per (b, KV head) in Kp and Vp: n_kt · tile_stride */
} cpu_prefill;

/* Per-thread scratch of a prefill call. */
typedef struct {
    float *Qs;     /* (Bqp, dp): the Q tile as float, zero-padded (version 4: times scale2) */
    float *S;      /* (Bqp, Bk): scores, then probabilities of the current pair of tiles */
    float *Oacc;   /* (Bqp, dp): unnormalized output o of the Q tile */
    float *m, *l, *alpha;   /* (Bqp): running max, running sum, this tile's rescale */
    float *Kt, *Vt;         /* (Bk, dp): version 2's K and V tiles as float */
} cpu_scratch;

/* Decode work. Partials: per (b, KV head, split, row r), r over group·n_q rows. */
typedef struct {
    const fs_cpu_attn *a;
    int32_t group, rows;     /* rows = group · n_q, the query rows that read one KV head */
    int32_t split_len, n_splits;
    int32_t version;         /* decode version (fs_cpu_decode_opts) */
    float scale2;
    float *Qs;               /* (batch, n_kv_heads, rows, d): queries · scale2, as float */
    float *part_m, *part_l;  /* (batch, n_kv_heads, n_splits, rows) */
    float *part_o;           /* (batch, n_kv_heads, n_splits, rows, d) */
    /* Where K and V lie (version 4 reads them through these; versions 1–3 through a->K, a->V):
     * page_size 0: a->K, a->V, (batch, n_kv_heads, n_kv, d);
     * page_size > 0: pools (n_pages, page_size, n_kv_heads, d), logical position j of batch
     * element b in page block_table[b · blocks_per_seq + j / page_size], slot j mod page_size. */
    const void *K, *V;
    int32_t page_size, blocks_per_seq;
    const int32_t *block_table;
    int32_t pf_near, pf_far;   /* version 4: prefetch distances in keys (L1, L2); 0 = none */
    int32_t pf5_far;         /* version 5: the block this many keys on streams into L2; 0 = none */
    bool all_heads;          /* version 4, paged: an item is (b, split) over every KV head */
} cpu_decode;

#define FS_CPU_DEC_BLOCK 64   /* decode: keys per block (scores of every row kept in scratch) */
#ifndef FS_CPU_DEC_AHEAD
#define FS_CPU_DEC_AHEAD 64   /* decode version 2: prefetch distance, in keys (64 beat 0, 128, 256, 512 here) */
#endif
#ifndef FS_CPU_DEC_NEAR
#define FS_CPU_DEC_NEAR 8     /* decode version 3: into L1, this many keys ahead (8 beat 16, 32, 0 for 16-bit rows) */
#endif
#define FS_CPU_DEC4_BLOCK 16  /* decode version 4: keys per block (K and V of a block stay in L1) */
/* Decode version 4's prefetch distances, in keys, chosen by measurement (one thread timed by CPU
 * time, 32768 positions, GQA 32/8, d = 128, share of the probe; docs/benchmarks.md): */
#ifndef FS_CPU_DEC4_NEAR_F32
#define FS_CPU_DEC4_NEAR_F32 4    /* float32 rows into L1: 4 keys 0.63–0.65, 2 0.55–0.57, 8–16 0.53–0.56
                                     (prefetcht0; prefetchnta the same, prefetcht1/t2 0.55) */
#endif
#ifndef FS_CPU_DEC4_NEAR_16
#define FS_CPU_DEC4_NEAR_16 16    /* 16-bit rows into L1: 16–20 keys 0.73–0.80, 4–8 0.54–0.59, 32 0.68 */
#endif
#ifndef FS_CPU_DEC4_FAR_PAGED
#define FS_CPU_DEC4_FAR_PAGED 16  /* paged rows into L2 (none into L1): a few points above L1 */
#endif
/* Decode version 5: the block this many keys ahead in the walk streams into L2 (GQA 32/8,
 * d = 128, share of the probe; docs/benchmarks.md): */
#ifndef FS_CPU_DEC5_FAR_F32
#define FS_CPU_DEC5_FAR_F32 32     /* 16 KiB per stream. First chosen 12 (one thread, CPU time: 8–12
                                      keys 0.78–0.81, 24–40 0.68); re-measured on a Zen 4 by the
                                      bench's own wall-clock medians (2026-11-27-zen4-decode-far):
                                      2 threads 32 keys 0.84–0.86, 24 and 40 0.84–0.85, 12 0.81,
                                      48 0.70–0.76; 1 thread 32 keys 0.66–0.67, 12 0.63 */
#endif
#ifndef FS_CPU_DEC5_FAR_16
#define FS_CPU_DEC5_FAR_16 24      /* 6 KiB per stream: 24–40 keys 0.76–0.80, 16 0.72, 8 0.66 */
#endif
#ifndef FS_CPU_DEC5_FAR_PAGED
#define FS_CPU_DEC5_FAR_PAGED 16   /* the next block (every head: 64 KiB per stream in float32);
                                      none 0.44–0.52, 16–64 keys alike */
#endif
#ifndef FS_CPU_DEC5_HINT
#define FS_CPU_DEC5_HINT 2         /* the L2 stream's hint (prefetcht1): t0 and nta within the noise */
#endif
#ifndef FS_CPU_DEC_FAR
#define FS_CPU_DEC_FAR 128    /* decode version 3, 16-bit rows: into L2, this many keys ahead (128 beat 256, 512) */
#endif

typedef struct {
    float *s;      /* (rows, FS_CPU_DEC_BLOCK): scores of the current block of keys */
    float *o;      /* (rows, d); version 4 paged: (n_kv_heads · rows, d), every head of an item */
    float *m, *l;  /* (rows); version 4 paged: (n_kv_heads · rows) */
    float *alpha;  /* like m: version 4, this block's rescale of o */
    float *krow, *vrow;  /* (FS_CPU_DEC_BLOCK, d): converted rows (16-bit storage) */
} cpu_decode_scratch;

/* Backward work (cpu_backward.c prepares it, cpu_kernels.inc's backward_item runs it). Rows
 * of every float buffer below are dp floats, zero beyond d. */
typedef struct {
    const fs_cpu_attn *a;
    int32_t Bq, Bk;          /* Bk a multiple of the micro-tile's NR */
    int32_t dp, n_qt, n_kt, group;
    float scale, scale2;     /* scale; scale · log2(e) */
    const float *Qs;         /* (batch, n_q_heads, n_q, dp): Q · scale2 (scores in base 2) */
    const float *dOs;        /* (batch, n_q_heads, n_q, dp): dO */
    const float *L2;         /* (batch, n_q_heads, n_q): L · log2(e), −∞ for empty rows */
    const float *D;          /* (batch, n_q_heads, n_q): Σ dO ∘ O */
    float *dQt;              /* per thread (batch, n_q_heads, n_q, dp): Σ dS K (no scale) */
    float *dK, *dV;          /* outputs, layout of K and V */
    int64_t n_rows;          /* batch · n_q_heads · n_q: the rows of Qs, dOs */
    bool stream;             /* version 2: the next Q tile's Q and dO rows asked into L2 during
                                this one's S and dP (tile_stream) */
} cpu_backward;

/* Per-thread scratch of the backward. */
typedef struct {
    float *Kt, *Vt;          /* (d, Bk): Kᵀ and Vᵀ of the KV tile, zero beyond its keys */
    float *Kr;               /* (Bk, dp): K rows of the tile */
    float *dKa, *dVa;        /* (Bk, dp): the tile's dK (in Qs units) and dV being summed */
    float *S, *dP;           /* (Bq, Bk): S then P; dP then dS */
} cpu_backward_scratch;

/* One instruction set's kernels. */
typedef struct {
    fs_cpu_isa isa;
    int32_t lanes;           /* floats per vector */
    int32_t mr, nr;          /* the backward's micro-tile: mr rows × nr columns (nr = lanes · vectors) */
    int32_t pmr, pnr;        /* the prefill's (versions 4-7): pmr rows × pnr keys; Bk and the strips
                                are multiples of pnr, the Q tile of pmr */
    void (*prefill3)(const cpu_prefill *p, cpu_scratch *sc, int64_t item);
    void (*prefill4)(const cpu_prefill *p, cpu_scratch *sc, int64_t item);
    void (*decode)(const cpu_decode *p, cpu_decode_scratch *sc, int64_t item);
    void (*backward)(const cpu_backward *p, cpu_backward_scratch *sc, float *dQt, int64_t item);
    float (*fma_loop)(int64_t iters);              /* iters · 12 · lanes FMAs */
    float (*read_sum)(const float *x, size_t n);   /* Σ x[k], k < n */
    void (*exp2_vec)(float *x, int32_t n);         /* x[k] = vexp2(x[k]): the softmax's 2^x, for
                                                      tests against libm */
} cpu_isa_ops;

/* The table of an instruction set (AUTO: the best here); NULL when it cannot run here. */
const cpu_isa_ops *fs_cpu_isa_ops(fs_cpu_isa isa);

extern const cpu_isa_ops fs_cpu_ops_scalar;
#if defined(__x86_64__) || defined(__i386__)
extern const cpu_isa_ops fs_cpu_ops_avx2;
extern const cpu_isa_ops fs_cpu_ops_avx512;
extern const cpu_isa_ops fs_cpu_ops_avx512_12x32;
#endif
#if defined(__aarch64__)
extern const cpu_isa_ops fs_cpu_ops_neon;
#endif

/* Run fn(ctx, thread, item) for item = 0 … n_items−1 on `threads` threads; items are taken in
 * order from a shared counter (so put the heavy ones first). Falls back to the calling thread
 * when a thread cannot be started; the work is done either way. */
void fs_cpu_parallel(int32_t threads, int64_t n_items,
                     void (*fn)(void *ctx, int32_t thread, int64_t item), void *ctx);

/* The memory of one prefill or backward call, `bytes` long: the caller's workspace (work,
 * work_bytes: at least bytes, 64-byte aligned; otherwise FS_ERR_ARG) or, with none, memory of
 * the call's own from fs_cpu_alloc_big (FS_ERR_NOMEM if none is left). cpu_work_done gives
 * back what cpu_work_take allocated and leaves a caller's workspace alone. */
fs_status cpu_work_take(void *work, size_t work_bytes, size_t bytes, float **mem);
void cpu_work_done(const void *work, float *mem);

/* The start both materializing baselines share (cpu_baseline.c): the problem checked, float32
 * only, threads in range, memory for two (batch, n_q_heads, n_q, n_kv) float matrices checked
 * against what the system has and allocated into *X and *Y (free both), OpenBLAS's thread count
 * set. names ("S and P") go into the messages written to why. */
fs_status cpu_baseline_begin(const fs_cpu_attn *a, int32_t threads, const char *names, float **X, float **Y,
                             char *why, size_t n);

/* Prefill work item → (b, h, q tile): the heaviest Q tiles (the last, under a causal mask)
 * first, heads of one KV group next to each other. */
static inline void cpu_item_split(const cpu_prefill *p, int64_t item, int32_t *b, int32_t *h,
                                  int32_t *qt)
{
    int64_t bh = (int64_t)p->a->batch * p->a->n_q_heads;
    int64_t rank = item / bh, rest = item % bh;
    *qt = p->n_qt - 1 - (int32_t)rank;
    *b = (int32_t)(rest / p->a->n_q_heads);
    *h = (int32_t)(rest % p->a->n_q_heads);
}

/* Is key j visible to query row i? The engine's rule (attn.h), inlined for the element mask
 * of partial tiles. */
static inline bool cpu_visible(const fs_mask *m, int32_t n_q, int32_t n_kv, int32_t i, int32_t j)
{
    int64_t pos = (int64_t)i + (m->has_offset ? m->offset : (int64_t)n_kv - n_q);
    switch (m->kind) {
    case FS_MASK_NONE: return true;
    case FS_MASK_CAUSAL: return j <= pos;
    case FS_MASK_WINDOW: return j <= pos && j > pos - m->window;
    case FS_MASK_BITS:
        return (m->bits[(int64_t)i * m->words_per_row + (j >> 6)] >> (j & 63)) & 1u;
    }
    return true;
}

/* Element e of a row stored as dtype, as float. */
static inline float cpu_get(fs_cpu_dtype t, const void *base, int64_t e)
{
    switch (t) {
    case FS_CPU_DTYPE_F16: return fs_cpu_f16_to_f32(((const uint16_t *)base)[e]);
    case FS_CPU_DTYPE_BF16: return fs_cpu_bf16_to_f32(((const uint16_t *)base)[e]);
    default: return ((const float *)base)[e];
    }
}

static inline void cpu_put(fs_cpu_dtype t, void *base, int64_t e, float x)
{
    switch (t) {
    case FS_CPU_DTYPE_F16: ((uint16_t *)base)[e] = fs_cpu_f32_to_f16(x); break;
    case FS_CPU_DTYPE_BF16: ((uint16_t *)base)[e] = fs_cpu_f32_to_bf16(x); break;
    default: ((float *)base)[e] = x; break;
    }
}

/* n elements starting at element e into dst as float. */
static inline void cpu_get_row(fs_cpu_dtype t, const void *base, int64_t e, float *dst, int32_t n)
{
    if (t == FS_CPU_DTYPE_F32) {
        memcpy(dst, (const float *)base + e, (size_t)n * sizeof(float));
        return;
    }
    for (int32_t k = 0; k < n; k++) dst[k] = cpu_get(t, base, e + k);
}

/* ---- dropout (engine/dropout.h's mapping; fs_dropout_row draws the decisions) ---- */

/* Is dropout on for this problem? */
static inline bool cpu_dropout_on(const fs_cpu_attn *a) { return a->dropout && a->dropout->on; }

/* Offsets, in elements, of row i of head h of batch element b. */
static inline int64_t cpu_q_off(const fs_cpu_attn *a, int32_t b, int32_t h, int32_t i)
{
    return (((int64_t)b * a->n_q_heads + h) * a->n_q + i) * a->d;
}
static inline int64_t cpu_kv_off(const fs_cpu_attn *a, int32_t b, int32_t g, int32_t j)
{
    return (((int64_t)b * a->n_kv_heads + g) * a->n_kv + j) * a->d;
}

#endif
