/* memory.h: what attention allocates and moves, materializing versus tiled.
 *
 * The documents argue for FlashAttention with byte counts; this model makes those counts
 * computable for any problem and tile shape, so lessons can verify them and the window can
 * show bytes-moved counters. It does no arithmetic on matrices, only on sizes.
 *
 * Materializing ("standard") attention, 000's accounting, per query head:
 *     S = Q Kᵀ            n_q × n_kv elements of mat_bytes, written, then read by softmax
 *     P = softmax(S)      n_q × n_kv elements of mat_bytes, written, then read by P V
 *     traffic for S and P = 4 · n_q · n_kv · mat_bytes      (000: 16 · n² bytes in FP32)
 * Tiled attention (one Q tile per threadgroup, Q tiles outer as in 000/002/004):
 *     on chip:  Q tile Bq·d, K tile Bk·d, V tile Bk·d_v in in_bytes; S tile Bq·Bk in acc_bytes
 *     registers: m and ℓ (Bq each) and the O tile Bq·d_v, in acc_bytes
 *     traffic:  each Q tile read once, each visited (Q tile, KV tile) pair reads its K and V
 *               tiles, each O row written once; skipped pairs move nothing.
 * Pairs are classified with fs_mask_classify, so causal, window and tree masks count exactly.
 *
 * Units: every size is in bytes, every count of operations in FLOPs (a multiply-add is 2),
 * all as int64 (or double for the scalar helpers, whose arguments can be large).
 */
#ifndef FS_MEMORY_H
#define FS_MEMORY_H

#include <stdint.h>

#include "attn.h"
#include "status.h"

typedef struct {
    int32_t n_q_heads, n_kv_heads;   /* ≥ 1; n_q_heads a multiple of n_kv_heads */
    int32_t n_q, n_kv, d, d_v;       /* ≥ 1 */
    int32_t Bq, Bk;                  /* tile shape, ≥ 1 */
    int32_t in_bytes;                /* element size of Q, K, V, O in device memory (2: FP16) */
    int32_t mat_bytes;               /* element size of a materialized S or P (4: FP32) */
    int32_t acc_bytes;               /* element size of on-chip scores and accumulators (4) */
    fs_mask mask;                    /* as in fs_attn; bits must cover n_q × n_kv */
} fs_mem_problem;

typedef struct {
    /* materializing, all query heads */
    int64_t s_bytes;          /* one matrix S (P is the same size): heads · n_q · n_kv · mat_bytes */
    int64_t sp_bytes;         /* S and P held at once: 2 · s_bytes */
    int64_t mat_traffic;      /* S written and read, P written and read: 4 · s_bytes */
    int64_t io_bytes;         /* Q, K, V read once and O written once (both implementations) */
    int64_t mat_flops;        /* 2·n_q·n_kv·(d + d_v) per head: every score, masked or not */
    /* tiled, per query head unless said otherwise */
    int64_t q_tiles, kv_tiles;
    int64_t tiles_full, tiles_partial, tiles_skipped;   /* summed over heads */
    int64_t sram_bytes;       /* one threadgroup: Q, K, V tiles (in_bytes) and S tile (acc_bytes) */
    int64_t reg_bytes;        /* one threadgroup: m, ℓ and the O tile (acc_bytes) */
    int64_t tiled_traffic;    /* all heads: Q tiles + K, V tiles of visited pairs + O */
    int64_t tiled_flops;      /* all heads: 2·rows·cols·(d + d_v) over visited pairs */
    int64_t state_bytes;      /* all heads: m and ℓ per query row (acc_bytes each) */
} fs_mem_report;

/* A problem with one head, no mask, FP16 inputs, FP32 S/P and accumulators, Bq = Bk = 32. */
fs_mem_problem fs_mem_problem_make(int32_t n_q, int32_t n_kv, int32_t d, int32_t d_v);

/* Fill r. FS_ERR_SHAPE on non-positive sizes or a problem whose pair count exceeds 2^28
 * (the model walks the pairs); FS_ERR_TILE for tile sizes < 1; FS_ERR_MASK for a bad mask. */
fs_status fs_mem_model(const fs_mem_problem *p, fs_mem_report *r);

/* Scalar helpers for arithmetic claims (doubles: n can be 131072 and more). */
double fs_mem_s_bytes(double n_q, double n_kv, double heads, double elem);      /* one S */
double fs_mem_sp_bytes(double n_q, double n_kv, double heads, double elem);     /* S and P */
/* What a training run saves from the forward pass for the backward pass (001, 004):
 * materializing: one n_q × n_kv matrix per head (P; S too for 2 · fs_mem_s_bytes);
 * FlashAttention: per_row numbers per query row (1 for L = m + ln ℓ, 2 for m and ℓ). */
double fs_mem_stats_bytes(double n_q, double heads, double per_row, double elem);
double fs_mem_mat_traffic(double n_q, double n_kv, double heads, double elem);  /* 4 · S */
/* One threadgroup's on-chip tiles: (Bq·d + 2·Bk·d)·in_bytes + Bq·Bk·acc_bytes. */
double fs_mem_tile_sram(double Bq, double Bk, double d, double in_bytes, double acc_bytes);
/* FLOPs of one (Q tile, KV tile) pair with d_v = d: S (2·Bq·Bk·d) and P V (2·Bq·Bk·d). */
double fs_mem_tile_flops(double Bq, double Bk, double d);
/* K and V of n positions: 2 · n · d · heads · in_bytes. */
double fs_mem_kv_bytes(double n, double d, double heads, double in_bytes);

/* The KV cache of a batch of sequences, contiguous against paged (paged.h).
 *
 * A contiguous cache reserves, for every sequence, room for the longest length it may reach
 * (max_len positions), whatever length it actually has. A paged cache holds pages of
 * page_size positions as the sequences grow. Here the n sequences share a prompt of `shared`
 * positions (forked after it, as parallel samples or beams of one request are): the prompt's
 * full pages are held once; its partly filled last page, when there is one, is copied on
 * write by every sequence that appends past it but the last one (which keeps the original);
 * every later block of a sequence has a page of its own. Appends fill a page before taking
 * the next, so every page but each sequence's last one is full: the empty slots are at most
 * n · (page_size − 1), one partly filled page per sequence.
 *
 * Counts are in positions and pages; one position's K and V cost fs_mem_kv_bytes(1, d, heads,
 * in_bytes) per layer. */
typedef struct {
    int64_t reserved;      /* contiguous: n · max_len positions reserved */
    int64_t filled;        /* contiguous: Σ len, the positions written (the prompt once per sequence) */
    int64_t unique;        /* distinct positions: shared + Σ (len − shared) */
    int64_t pages;         /* pages held */
    int64_t slots;         /* pages · page_size */
    int64_t copied;        /* slots filled by copy-on-write (duplicates of the prompt's tail) */
    int64_t empty;         /* slots − unique − copied: the unfilled slots of the last pages */
    int64_t shared_pages;  /* pages held by more than one sequence */
} fs_mem_paged;

/* Fill r for n sequences of lengths len[0 … n−1] (each ≥ shared, ≤ max_len) sharing a prompt
 * of `shared` positions (0: nothing shared), in pages of page_size. FS_ERR_SHAPE on a length out
 * of range, n < 1 or page_size < 1. */
fs_status fs_mem_paged_model(int32_t n, const int32_t *len, int32_t shared, int32_t max_len, int32_t page_size,
                             fs_mem_paged *r);

#endif
