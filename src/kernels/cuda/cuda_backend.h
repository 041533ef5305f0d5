/* cuda_backend.h: what the rest of flashstep sees of the optional CUDA path.
 *
 * Two parts:
 *   1. The lesson-size path (fs_cuda_available, fs_cuda_trace): the float32 reference kernel, the
 *      straightforward port of the tiled algorithm, which records each row's (m, ℓ, α) after
 *      every KV tile so `flashstep trace --backend cuda` prints the same events as the engine,
 *      and of the backward pass (`flashstep trace --backward --backend cuda`).
 *   2. The full-size kernels (fs_cuda_prefill_run, fs_cuda_decode_run) on float16 / bfloat16 with
 *      float32 accumulation, in numbered versions (decode also from a paged cache), and an e4m3
 *      (FP8) forward with its quantizing pre-passes (fs_cuda_fp8_*); the bench (bench/cuda) checks
 *      them against the engine's float64 reference and times them.
 *
 * Without CUDA (the default build), only part 1 exists and says so: fs_cuda_available returns
 * false with the reason, and every run returns FS_ERR_ARG with that reason. The command line
 * turns that into a clear message and a non-zero exit.
 *
 * Plain C on purpose: the engine and the command line are C11 and never include a CUDA header.
 */
#ifndef FS_CUDA_BACKEND_H
#define FS_CUDA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* true when the program was built with CUDA and a device and driver answer; otherwise false
 * and why (e.g. "built without CUDA: rebuild with make CUDA=1", "no CUDA device found"). */
bool fs_cuda_available(char *why, size_t n);

/* Run a FS_ALGO_TILED (or FS_ALGO_QUERY) problem of lesson size on the GPU in float32 and
 * record, for each visited tile, each row's (m, l, alpha) in the engine's event form (TILE,
 * SKIP, ROW and OUT events, in the engine's loop order), so the trace can be compared with the
 * engine's event by event. res receives the output as fs_run_exec would give it.
 *
 * FS_ALGO_BACKWARD (cuda_trace_bwd.cu): the forward (O, m, ℓ and L = m + ln ℓ per row, with the
 * run's dropout), D = rowsum(dO ∘ O), then the backward by recomputation, all on the GPU in
 * float32, one thread per query row for dQ and one per key for dK and dV; the engine's backward
 * events (LSE, DELTA, BTILE or BSKIP, BROW, BKEY, GRAD, in the tiling's loop order, dropout
 * fields included) and res as fs_run_exec gives it (O, m, l, L, D, dQ, dK, dV). */
fs_status fs_cuda_trace(const fs_run *r, fs_result *res, fs_trace *tr, char *why, size_t n);

/* The FS_ALGO_BACKWARD case of fs_cuda_trace with the kernels' per-thread code run by loops on
 * the CPU instead of on the device (the same __host__ __device__ functions, the same records,
 * the same conversion into events): it needs no GPU, so that a machine with nvcc and no device
 * checks the backward's bookkeeping against the engine (test_cuda --host). Its numbers are the
 * host's float32, not the GPU's. FS_ERR_ARG with why for any other algorithm, and in a build
 * without CUDA. */
fs_status fs_cuda_trace_emulated(const fs_run *r, fs_result *res, fs_trace *tr, char *why, size_t n);

/* ---- Full-size kernels (only in a build with CUDA=1) ---------------------------------------- */

typedef enum { FS_CUDA_F16 = 0, FS_CUDA_BF16 } fs_cuda_dtype;

/* A batched prefill problem. Device pointers, row-major:
 *     Q is (batch, n_q_heads, n_q, d)     K, V are (batch, n_kv_heads, n_kv, d)
 *     O is (batch, n_q_heads, n_q, d)
 * Query i sits at position i + offset (as in the engine). The mask is the engine's:
 * FS_MASK_NONE, _CAUSAL, _WINDOW (window W) or _BITS (bits: device pointer to n_q rows of
 * words_per_row 64-bit words, shared by every batch entry and head). A row that sees no key
 * gets O = 0. */
typedef struct {
    int32_t batch, n_q_heads, n_kv_heads, n_q, n_kv, d;
    fs_mask_kind mask;
    int32_t offset;
    int32_t window;
    const uint64_t *bits;
    int32_t words_per_row;
    float scale;
    fs_cuda_dtype dtype;
    float *lse;          /* NULL, or device (batch, n_q_heads, n_q) float32 that receives each
                            row's log-sum-exp L = m + ln ℓ (natural units; −∞ for a row that sees
                            nothing): what the backward pass keeps of the forward */
    void *work;          /* device memory of fs_cuda_prefill_workspace(p, version) bytes where
                            that is not 0 (version 32 without a mask keeps the pieces of the
                            query tiles it splits there); may hold anything before the call */
    int32_t max_blocks;  /* version 32: at most this many blocks (0: one per SM), so that a small
                            problem also takes the split (the checks use it); the persistent
                            kernels of versions 18, 25-31 and 33 take it too (the ring leaves SMs
                            to NCCL that way) */
    void *stream;        /* the cudaStream_t the prefill versions launch on; NULL: the default
                            stream (the ring, src/kernels/cuda/ring.cu, computes on its own stream
                            while NCCL moves the next shard on another) */
} fs_cuda_prefill;

/* Number of prefill versions (numbered 1..n) and one line on each. */
int fs_cuda_prefill_versions(void);
const char *fs_cuda_prefill_version_str(int version);

/* Bytes of device workspace version `version` needs for p (p->work); 0 for most. */
size_t fs_cuda_prefill_workspace(const fs_cuda_prefill *p, int version);

/* Launch version `version` on p->stream (NULL: the default stream; asynchronous). FS_ERR_ARG with why filled
 * when the version does not cover the problem (e.g. d not 64 or 128) or the launch failed. */
fs_status fs_cuda_prefill_run(const fs_cuda_prefill *p, int version, const void *Q, const void *K,
                              const void *V, void *O, char *why, size_t n);

/* The backward pass (attn_backward.cu): given the forward's problem p (its lse field: the
 * forward's L, device float32), Q, K, V, O and dO (device, the forward's layouts and dtype),
 * write dQ, dK, dV (same layouts as Q, K, V) with backward version `version` (1..n). Masks: none, causal, window (no bitmask). GQA:
 * dK, dV are summed over the query heads of a group. work: fs_cuda_backward_workspace bytes
 * (the float32 dQ accumulator and D = rowsum(dO ∘ O)). Asynchronous on p->stream (NULL: the default
 * stream; the ring's backward runs its pairs on its own stream). */
int fs_cuda_backward_versions(void);
const char *fs_cuda_backward_version_str(int version);
size_t fs_cuda_backward_workspace(const fs_cuda_prefill *p);
fs_status fs_cuda_backward_run(const fs_cuda_prefill *p, int version, const void *Q, const void *K, const void *V,
                               const void *O, const void *dO, void *dQ, void *dK, void *dV, void *work,
                               char *why, size_t n);

/* ---- e4m3 (FP8) forward, Hopper only (hopper_fp8.cu) ----------------------------------------
 * The pre-pass quantizes a 16-bit tensor X (heads, n, d) to e4m3 and writes the descales (device
 * floats: what an e4m3 code must be multiplied by). block = 0: one scale for the whole tensor (its
 * largest |value| becomes 448), one descale = amax / 448. block > 0: one scale for each `block`
 * rows of each head (for FS_FP8_V_T each `block` keys, a multiple of 32), heads ·
 * fs_cuda_fp8_scale_blocks(n, block) descales, head by head; amax = 0 gives descale 1.
 * Layouts of the result X8:
 *   FS_FP8_ROWS           (heads, n, d), for Q and K
 *   FS_FP8_ROWS_HADAMARD  the same after each row is multiplied by a random-sign Hadamard matrix
 *                         H·diag(s)/√d (s from seed): give Q and K the same seed and Q Kᵀ is
 *                         unchanged, while outliers are spread over the row (d a power of 2)
 *   FS_FP8_V_T            V transposed, (heads, d, fs_cuda_fp8_vt_len(n)), keys in the order the
 *                         kernel's registers hold P (hopper_fp8.cu says which), zero past n
 * fs_cuda_fp8_prefill_run: e4m3 version `version` (1..fs_cuda_fp8_versions()) of the forward on
 * e4m3 Q, K (FS_FP8_ROWS or _HADAMARD) and Vᵀ (FS_FP8_V_T), with the descales of each (qd, kd,
 * vd) as the version's fs_cuda_fp8_version_blocks says: one each, or Q's per block of that many
 * rows and K's and V's per block of FS_CUDA_FP8_KV_BLOCK keys; O bfloat16 (batch, n_q_heads,
 * n_q, d); the problem's fields as for fs_cuda_prefill_run (dtype unused; d =
 * fs_cuda_fp8_head_size(version); masks none, causal, window; lse must be NULL: only O is
 * written). Versions 28 and 29 without a mask need p->work: fs_cuda_fp8_prefill_workspace bytes of
 * device memory (prefill version 32's split schedule). Asynchronous on p->stream (NULL: the
 * default stream); the pre-pass runs on the default stream. */
typedef enum { FS_FP8_ROWS = 0, FS_FP8_ROWS_HADAMARD, FS_FP8_V_T } fs_cuda_fp8_layout;
int fs_cuda_fp8_vt_len(int n_kv);
/* Blocks of `block` rows in n (1 when block is 0: the whole tensor). */
int fs_cuda_fp8_scale_blocks(int n, int block);
fs_status fs_cuda_fp8_quantize(const void *X, fs_cuda_dtype dt, int heads, int n, int d, fs_cuda_fp8_layout lay,
                               uint64_t seed, int block, void *X8, float *descale, char *why, size_t nw);
int fs_cuda_fp8_versions(void);
const char *fs_cuda_fp8_version_str(int version);
/* The keys a tile of e4m3 version `version` takes (128 or 256): where its running maximum is
 * updated, and so where P is rounded, which a simulation of its arithmetic must follow. */
int fs_cuda_fp8_block_keys(int version);
/* The head size d an e4m3 version takes: 128, or 256 (versions 8-10, 14, 15 and the odd ones from 17). */
int fs_cuda_fp8_head_size(int version);
/* The rows of Q a descale covers in e4m3 version `version`: 0 (one scale per tensor: versions
 * 1-17, 20, 21 and 26-29) or 64 (versions 18, 19 and 22-25, whose K and V scales cover
 * FS_CUDA_FP8_KV_BLOCK keys). */
int fs_cuda_fp8_version_blocks(int version);
/* 1 where the version folds V's block descale into P before rounding P to e4m3 (versions 24 and
 * 25: P_j times vd_j / max(vd_0 .. vd_j)), which a simulation of its arithmetic must follow. */
int fs_cuda_fp8_version_v_fold(int version);
/* The query rows a block of e4m3 version `version` takes (64 per consumer warpgroup: 128 or 192). */
int fs_cuda_fp8_block_queries(int version);
/* Bytes of device workspace e4m3 version `version` needs for p (p->work): 0 but for versions 28
 * and 29 without a mask. */
size_t fs_cuda_fp8_prefill_workspace(const fs_cuda_prefill *p, int version);
enum { FS_CUDA_FP8_KV_BLOCK = 128 };
fs_status fs_cuda_fp8_prefill_run(const fs_cuda_prefill *p, int version, const void *Q8, const void *K8,
                                  const void *Vt8, const float *qd, const float *kd, const float *vd, void *O,
                                  char *why, size_t n);

/* A batched decode problem: one query row per (batch, query head), at the newest position, no
 * mask: it sees every cached key. Device pointers:
 *     Q is (batch, n_q_heads, d)   K, V are (batch, n_kv_heads, n_kv, d)   O is (batch, n_q_heads, d)
 * The keys are cut into `splits` contiguous splits (0: chosen to fill the GPU).
 *
 * A paged cache (page_size > 0; the paged versions only, fs_cuda_decode_version_paged): K and V
 * are pools of n_pages pages, (n_pages, page_size, n_kv_heads, d) (vLLM's layout, "NHD"), or with
 * head_major set (n_pages, n_kv_heads, page_size, d) (FlashInfer's "HND": a head's slots of a
 * page lie together), and sequence b's key j sits in page block_table[b · blocks_per_seq +
 * j / page_size], slot j mod page_size.
 * Sequence b holds seq_lens[b] keys (1 ≤ seq_lens[b] ≤ n_kv; NULL: every sequence n_kv);
 * block_table and seq_lens are device int32. Only the table entries of a sequence's own blocks
 * are read; the slots of its last page past its length are read and weighted by 0, so they
 * must hold finite values. page_size: 16, 32, or a multiple of 64. Fields left 0 mean a
 * contiguous cache. */
typedef struct {
    int32_t batch, n_q_heads, n_kv_heads, n_kv, d;
    int32_t splits;
    float scale;
    fs_cuda_dtype dtype;
    int32_t page_size, n_pages, blocks_per_seq;
    const int32_t *block_table;
    const int32_t *seq_lens;
    int32_t head_major;   /* paged: 1 for the (n_pages, n_kv_heads, page_size, d) pools; 0: vLLM's */
} fs_cuda_decode;

/* The decode over an e4m3 KV cache (a serving engine's FP8 cache), odd versions contiguous and
 * even ones paged (fs_cuda_decode_fp8_version_paged; page_size 16, 32 or a multiple of 64),
 * versions 5 and up on a Hopper GPU only: the problem as above with Q and O float16
 * (dtype FS_CUDA_F16), d = 64 or 128, at most 16 query heads per KV head; K8 and V8 hold e4m3
 * bytes in the layouts above, and kv_scales (device float32) their descales, K's then V's: the
 * stored value times its descale is the cache entry. Contiguous: (batch, n_kv_heads, 2), one
 * pair per head; paged: (n_pages, n_kv_heads, 2), one pair per page and head. work: at
 * least fs_cuda_decode_fp8_workspace bytes. Asynchronous on the default stream. */
int fs_cuda_decode_fp8_versions(void);
const char *fs_cuda_decode_fp8_version_str(int version);
bool fs_cuda_decode_fp8_version_paged(int version);
size_t fs_cuda_decode_fp8_workspace(const fs_cuda_decode *p, int version);
int fs_cuda_decode_fp8_splits(const fs_cuda_decode *p, int version);
fs_status fs_cuda_decode_fp8_run(const fs_cuda_decode *p, int version, const void *Q, const void *K8,
                                 const void *V8, const float *kv_scales, void *O, void *work, char *why,
                                 size_t n);

int fs_cuda_decode_versions(void);
const char *fs_cuda_decode_version_str(int version);
/* true for the versions that read a paged cache (page_size > 0), which the others refuse */
bool fs_cuda_decode_version_paged(int version);

/* Bytes of device workspace the split partials need (for the splits the run will use). */
size_t fs_cuda_decode_workspace(const fs_cuda_decode *p, int version);

/* The split count a run of `version` chooses for p when p->splits is 0 (the GPU's SMs times the
 * blocks of that version one SM holds, a device query). A caller that runs one shape many times
 * (a serving loop) asks once and sets p->splits to it: the run then skips the query, part of the
 * host's work before each launch. The same for the e4m3 cache: fs_cuda_decode_fp8_splits. */
int fs_cuda_decode_splits(const fs_cuda_decode *p, int version);

/* Launch: phase 1 (every split's partial (m, ℓ, o)) then phase 2 (the merge) on the default
 * stream. work: at least fs_cuda_decode_workspace bytes of device memory. */
fs_status fs_cuda_decode_run(const fs_cuda_decode *p, int version, const void *Q, const void *K,
                             const void *V, void *O, void *work, char *why, size_t n);

/* A decode planned once and run many times, as a serving loop runs one shape over the same cache
 * (FlashInfer's plan and run): fs_cuda_decode_plan_make does the host's work of a run once, for
 * problem p, this version, the cache K, V and the workspace work (at least
 * fs_cuda_decode_workspace bytes): the checks, the split count, and for versions 13 to 18 the
 * tensor maps of K and V and the kernels' shared-memory attribute. fs_cuda_decode_plan_run then
 * launches alone, for a new Q and O: the same kernels and the same result as fs_cuda_decode_run,
 * bit for bit. p's pointers (block table, lengths), K, V and work must stay valid, and their
 * addresses the same, while the plan is used; the cache's contents and the table's entries may
 * change between runs. Other versions keep their arguments and call fs_cuda_decode_run. *out
 * is NULL on failure; fs_cuda_decode_plan_free(NULL) does nothing. */
typedef struct fs_cuda_decode_plan fs_cuda_decode_plan;
fs_status fs_cuda_decode_plan_make(const fs_cuda_decode *p, int version, const void *K, const void *V, void *work,
                                   fs_cuda_decode_plan **out, char *why, size_t n);
fs_status fs_cuda_decode_plan_run(const fs_cuda_decode_plan *plan, const void *Q, void *O, char *why, size_t n);
void fs_cuda_decode_plan_free(fs_cuda_decode_plan *plan);
/* The same for the e4m3 cache (fs_cuda_decode_fp8_run's problem, K8, V8 and kv_scales; work at
 * least fs_cuda_decode_fp8_workspace bytes): the split count, and for versions 5 to 16 the tensor
 * maps and the kernel's attribute, done once; run with fs_cuda_decode_plan_run (the same result as
 * fs_cuda_decode_fp8_run, bit for bit) and freed with fs_cuda_decode_plan_free. The descales'
 * address stays too; their values, like the cache's, may change between runs. */
fs_status fs_cuda_decode_fp8_plan_make(const fs_cuda_decode *p, int version, const void *K8, const void *V8,
                                       const float *kv_scales, void *work, fs_cuda_decode_plan **out, char *why,
                                       size_t n);
/* A plan's run for one Q and one O captured into a CUDA graph (a serving loop that keeps its
 * buffers in place, as CUDA-graph decoders do): fs_cuda_decode_plan_run with that Q and O then
 * launches the graph, one launch for the split kernel and its merge, the same result bit for bit;
 * with any other Q or O it launches as before. A second call replaces the graph. For plans of
 * float16 versions 13 to 18 and e4m3-cache versions 9 to 16 (fs_cuda_decode_plan_graphs says
 * whether a plan can have one); FS_ERR_ARG with why otherwise or when the capture fails. */
bool fs_cuda_decode_plan_graphs(const fs_cuda_decode_plan *plan);
fs_status fs_cuda_decode_plan_graph(fs_cuda_decode_plan *plan, const void *Q, void *O, char *why, size_t n);

#ifdef FS_DECODE_CLOCKS
/* A measurement build's per-block clocks of the last contiguous split kernel and merge
 * (hopper_decode.cu says what each holds): n_split and n_merge values copied out, then cleared
 * when clear is non-zero. 0 on success. */
int fs_cuda_decode_clocks(unsigned long long *split, size_t n_split, unsigned long long *merge, size_t n_merge, int clear);
#endif

#ifdef __cplusplus
}
#endif

#endif
