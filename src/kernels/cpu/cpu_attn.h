/* cpu_attn.h: full-size FlashAttention on the CPU (prefill and decode), its materializing
 * baseline, and the machine measurements the bench divides by.
 *
 * Where it sits: the engine (src/engine) computes the same attention in float64 on lesson-sized
 * problems and is the spec; these kernels compute it in float32 at full size, fast, and
 * tests/check_kernels_cpu.c checks every version against fs_reference on random shapes.
 * `flashstep bench` (src/cli/cmd_bench.c) times them.
 *
 * The problem, per batch element b and query head h (KV head g = h / (n_q_heads / n_kv_heads)):
 *     S = scale · Q Kᵀ,   S[i][j] = −∞ where the mask hides key j from query i,
 *     P = softmax(S) row by row,   O = P V.
 * Layout, row-major:
 *     Q, O are (batch, n_q_heads, n_q, d)      K, V are (batch, n_kv_heads, n_kv, d)
 * The mask is the engine's fs_mask (attn.h), the same for every batch element and head; query
 * row i sits at position i + offset (offset defaults to n_kv − n_q). A row that sees no key
 * gets O = 0, as in fs_reference.
 *
 * Storage: float32, or float16 / bfloat16 with every product and sum in float32.
 *
 * Versions (prefill; details and measurements at the top of cpu_attn.c and in
 * docs/kernels-cpu.md): 1 textbook online softmax, one row at a time; 2 tiles + tile classes +
 * threads; 3 SIMD; 4 register-blocked micro-kernels on packed tiles; 5 larger tiles (192 × 128);
 * 6 diagonal tiles trimmed to the columns their rows see (and 192 × 256 tiles at d ≤ 128). 0 picks
 * the newest.
 */
#ifndef FS_CPU_ATTN_H
#define FS_CPU_ATTN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/attn.h"
#include "engine/dropout.h"
#include "engine/status.h"

#define FS_CPU_VERSIONS 7      /* prefill versions 1 … FS_CPU_VERSIONS */
#define FS_CPU_MAX_THREADS 256
#define FS_CPU_MIN_D 1
#define FS_CPU_MAX_D 512       /* d from 32 to 256 is what the bench and tests exercise */

typedef enum {
    FS_CPU_DTYPE_F32 = 0,
    FS_CPU_DTYPE_F16,          /* IEEE binary16 */
    FS_CPU_DTYPE_BF16,         /* bfloat16: the top half of a float32 */
} fs_cpu_dtype;

/* The instruction set the SIMD versions use. AUTO: the best this CPU supports, asked at run
 * time (__builtin_cpu_supports on x86; NEON whenever the compiler targets ARM). */
typedef enum {
    FS_CPU_ISA_AUTO = 0,
    FS_CPU_ISA_SCALAR,         /* plain C, one lane: the fallback and the portable spec */
    FS_CPU_ISA_AVX2,           /* 8 lanes, AVX2 + FMA */
    FS_CPU_ISA_AVX512,         /* 16 lanes, AVX-512F */
    FS_CPU_ISA_NEON,           /* 4 lanes, AArch64 NEON */
    FS_CPU_ISA_COUNT
} fs_cpu_isa;

typedef struct {
    int32_t batch, n_q_heads, n_kv_heads;   /* n_q_heads a multiple of n_kv_heads; all ≥ 1 */
    int32_t n_q, n_kv, d;                   /* d is also the width of V and O */
    fs_cpu_dtype dtype;
    const void *Q, *K, *V;                  /* layout above, elements of dtype */
    void *O;
    float scale;                            /* 0: 1/√d */
    fs_mask mask;                           /* the engine's mask; bits (if any) n_q rows */
    float *L;   /* optional output, NULL to skip: (batch, n_q_heads, n_q) float32, each row's
                   log-sum-exp L = m + ln ℓ of the scaled scores (natural units, −∞ for a row
                   that sees no key): what the backward pass keeps from the forward */
    const fs_dropout *dropout;   /* optional, NULL or off for none: dropout on P with the mapping
                   of engine/dropout.h (batch b of the layout is the counter's batch); ℓ sums P
                   before dropout, O takes the kept weights times 1/(1 − p), and the backward
                   regenerates the same mask. Prefill versions 4 to 7 and the backward; the other
                   versions, decode and the baselines refuse it (FS_ERR_ARG) */
} fs_cpu_attn;

typedef struct {
    int32_t version;    /* 1 … FS_CPU_VERSIONS, 0 = newest */
    int32_t threads;    /* ≥ 1 */
    int32_t Bq, Bk;     /* tile sizes, 0 = the version's default (see cpu_attn.c) */
    fs_cpu_isa isa;     /* FS_CPU_ISA_AUTO unless testing a narrower one */
    int32_t block;      /* versions 4-7: the micro-tile, 0 = this CPU's choice, k = the k-th of
                           fs_cpu_prefill_blocks (tests and measurements) */
    void *work;         /* optional, NULL for none: memory the call uses for its packed K, V and
                           per-thread scratch instead of allocating its own, which the system
                           clears page by page on every call; 64-byte aligned (fs_cpu_alloc_big
                           gives huge pages too), its contents need not survive the call */
    size_t work_bytes;  /* the size of work: at least fs_cpu_prefill_workspace (FS_ERR_ARG if less) */
} fs_cpu_opts;

/* Decode (FlashDecoding): a few query rows against a long KV cache. The KV positions are cut
 * into contiguous splits of split_len positions; the threads share the (batch, KV head, split)
 * items; each item folds all query rows of the KV head's group (n_q rows × the query heads that
 * read it) into partial (m, ℓ, o) states, reading each K and V row once; the partials are then
 * merged left to right with the merge of decode.h. */
#define FS_CPU_DECODE_VERSIONS 5   /* decode versions 1 … FS_CPU_DECODE_VERSIONS */

typedef struct {
    int32_t version;    /* 1: a dot product and an axpy per (row, key); 2: four rows × two
                           keys per Q and K load, o kept in registers over a block of keys, the
                           key 64 positions ahead prefetched (into L2); 3: the same prefetched
                           into L1, and 16-bit K, V widened with vector instructions (with the
                           same prefetch) instead of element by element; 4: blocks of 16
                           keys that stay in L1 from scores to P V, scores four rows × four
                           keys per chunk of d, 16-bit rows widened by the loads that feed the
                           FMAs, α applied as o is loaded and only when the maximum grew; also
                           reads a paged cache (fs_cpu_decode_paged); 5: version 4 with
                           the block ahead in the item's walk (through the block table when
                           paged) prefetched into L2 line by line over the score loop; also
                           reads a paged cache; 0 = newest */
    int32_t threads;    /* ≥ 1 */
    int32_t split_len;  /* positions per split, 0 = chosen from n_kv and threads */
    fs_cpu_isa isa;
} fs_cpu_decode_opts;

fs_cpu_opts fs_cpu_opts_default(void);                 /* newest version, 1 thread, AUTO */
fs_cpu_decode_opts fs_cpu_decode_opts_default(void);   /* 1 thread, split chosen, AUTO */

/* FS_OK when the problem is usable (sizes, GQA ratio, pointers, mask); the first problem
 * otherwise. The kernels call it first. */
fs_status fs_cpu_attn_check(const fs_cpu_attn *a);

/* Prefill forward. Scratch memory is linear in n_q + n_kv (tiles and packed K, V). */
fs_status fs_cpu_prefill(const fs_cpu_attn *a, const fs_cpu_opts *o);
/* The bytes of work a prefill of this problem with these options needs (o->work ignored);
 * 0 when the call would refuse the problem or the options, or needs none (version 1). One
 * workspace serves every later call whose problem and options need no more. */
size_t fs_cpu_prefill_workspace(const fs_cpu_attn *a, const fs_cpu_opts *o);

/* Decode forward (any n_q, meant for 1 … a few). */
fs_status fs_cpu_decode(const fs_cpu_attn *a, const fs_cpu_decode_opts *o);

/* A paged KV cache, vLLM's layout: K and V live in pools of fixed-size pages,
 *     K_pool, V_pool : (n_pages, page_size, n_kv_heads, d)      elements of the problem's dtype
 * and the logical position j of batch element b sits in physical page
 *     block_table[b · blocks_per_seq + j / page_size],  slot j mod page_size,
 * so that a sequence's pages may lie anywhere in the pool, in any order. Every batch element
 * has the problem's n_kv positions; blocks_per_seq ≥ ⌈n_kv / page_size⌉ and every entry of the
 * table that those positions use is in [0, n_pages). */
typedef struct {
    int32_t page_size;            /* tokens per page, ≥ 1 (16 and 256 are what the bench runs) */
    int32_t n_pages;              /* pages in each pool */
    int32_t blocks_per_seq;       /* columns of block_table */
    const int32_t *block_table;   /* (batch, blocks_per_seq) physical page per logical block */
    const void *K_pool, *V_pool;  /* (n_pages, page_size, n_kv_heads, d) */
} fs_cpu_paged_kv;

/* Decode forward reading K and V from a paged cache (a->K and a->V are not read and may be
 * NULL); everything else as fs_cpu_decode. Decode version 4 and later (0 = newest); an earlier
 * version, a bad page size or a table entry outside the pool is FS_ERR_ARG. */
fs_status fs_cpu_decode_paged(const fs_cpu_attn *a, const fs_cpu_paged_kv *kv,
                              const fs_cpu_decode_opts *o);

/* Backward (FlashAttention 2's order, by recomputation): given the forward's inputs a->Q, K, V,
 * its output a->O and its per-row log-sum-exp L (a->L, as the forward writes it), and dO (the
 * gradient of the loss with respect to O, same layout as O), write
 *     dQ (like Q), dK, dV (like K, V; summed over the query heads of a GQA group).
 * Per row D = Σ_k dO ∘ O; per pair of tiles S = scale·Q Kᵀ (masked), P = exp(S − L),
 *     dV += Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP − D),  dQ += scale·dS K,  dK += scale·dSᵀ Q.
 * K/V-outer: a work item is one (batch, KV head, KV tile), which finishes its dK, dV rows in one
 * pass over the Q tiles the mask lets it see; dQ is accumulated per thread and summed at the
 * end. Memory: linear in n_q + n_kv (packed tiles, per-thread dQ, per-row L and D); nothing of
 * size n_q × n_kv. float32 storage only (FS_ERR_ARG otherwise). Rows that see no key get
 * dQ = 0 and contribute nothing to dK, dV. */
#define FS_CPU_BACKWARD_VERSIONS 2

typedef struct {
    int32_t version;    /* 0 = newest; 1: SIMD register-blocked micro-kernels, threads; 2: 1 with
                           the next Q tile's Q and dO streamed into L2 during this one's products */
    int32_t threads;    /* ≥ 1 */
    int32_t Bq, Bk;     /* tile sizes, 0 = defaults (Bq 96, Bk 64) */
    fs_cpu_isa isa;
    void *work;         /* optional, as fs_cpu_opts.work: at least fs_cpu_backward_workspace bytes,
                           64-byte aligned, used instead of memory allocated by each call */
    size_t work_bytes;
} fs_cpu_backward_opts;

fs_cpu_backward_opts fs_cpu_backward_opts_default(void);   /* newest, 1 thread, AUTO */
fs_status fs_cpu_backward(const fs_cpu_attn *a, const float *dO, float *dQ, float *dK,
                          float *dV, const fs_cpu_backward_opts *o);
/* The bytes of work a backward of this problem with these options needs (o->work ignored); 0
 * when the call would refuse the problem or the options. */
size_t fs_cpu_backward_workspace(const fs_cpu_attn *a, const fs_cpu_backward_opts *o);

/* The materializing backward, as a user with a BLAS writes it: P = softmax(scale·Q Kᵀ) for
 * every batch element and head recomputed and held in full, dP = dO Vᵀ held in full, then the
 * same formulas with OpenBLAS cblas_sgemm for the five products (dK, dV summed over a GQA
 * group). float32; memory 2 · batch · n_q_heads · n_q · n_kv floats, refused like the forward
 * baseline's (FS_ERR_NOMEM with why) when it would not fit. Needs a->O; not a->L. */
fs_status fs_cpu_baseline_backward(const fs_cpu_attn *a, const float *dO, float *dQ, float *dK,
                                   float *dV, int32_t threads, char *why, size_t n);

/* The materializing baseline, as a user would write it: S = scale·Q Kᵀ and P = softmax(S) for
 * every batch element and head held in full (two float32 arrays of batch·n_q_heads·n_q·n_kv),
 * both products through OpenBLAS cblas_sgemm with `threads` threads (openblas_set_num_threads:
 * process-wide, it stays set after the call). float32 only. When the
 * arrays would not fit (more than the memory the system reports available, or malloc fails) it
 * returns FS_ERR_NOMEM without computing and writes why into why[0..n). */
fs_status fs_cpu_baseline(const fs_cpu_attn *a, int32_t threads, char *why, size_t n);

/* Bytes the baseline would allocate for S and P. */
double fs_cpu_baseline_bytes(const fs_cpu_attn *a);

/* The ISA that AUTO resolves to on this CPU, and whether a given one can run here. */
fs_cpu_isa fs_cpu_isa_best(void);
bool fs_cpu_isa_supported(fs_cpu_isa isa);
const char *fs_cpu_isa_str(fs_cpu_isa isa);        /* "auto", "scalar", "avx2", "avx512", "neon" */
/* The prefill's micro-tiles (rows x keys of the register block of versions 4-7): how many isa
 * has (AVX-512: two, 6x64 and 12x32, of which every CPU so far gets 6x64, docs/benchmarks.md
 * "Intel and AMD"; the others one), and the name of block k ("6x64"; k = 0: this CPU's). */
int32_t fs_cpu_prefill_blocks(fs_cpu_isa isa);
const char *fs_cpu_prefill_block_str(fs_cpu_isa isa, int32_t block);
const char *fs_cpu_dtype_str(fs_cpu_dtype t);      /* "f32", "f16", "bf16" */
size_t fs_cpu_dtype_size(fs_cpu_dtype t);          /* 4 or 2 */
const char *fs_cpu_version_str(int32_t version);   /* one line on what that version is */

/* malloc aligned to 64 bytes, except that a buffer of 4 MiB or more is aligned to 2 MiB and
 * offered transparent huge pages (madvise; the machine's THP mode is often `madvise`): a 32 MiB
 * packed K/V buffer then costs 16 page faults instead of 8192, and its streaming far fewer TLB
 * misses. free() releases it. Good for fs_cpu_opts.work. The bench allocates decode K/V (contiguous or paged pools) and its read probe's
 * buffer this way, so that both sides of the ratio see the same pages. */
void *fs_cpu_alloc_big(size_t bytes);

/* Storage conversions (round to nearest even on the way down). */
uint16_t fs_cpu_f32_to_f16(float x);
float fs_cpu_f16_to_f32(uint16_t h);
uint16_t fs_cpu_f32_to_bf16(float x);
float fs_cpu_bf16_to_f32(uint16_t h);

/* Measurements the bench reports against, taken on the spot. */
/* Float32 FMA throughput of `threads` threads running independent FMA chains in registers for
 * about `seconds`, in GFLOP/s (an FMA counts 2). */
double fs_cpu_measure_fma_gflops(int32_t threads, double seconds);
/* The same on one thread, timed by the process's CPU time (the bench's --cpu-time). */
double fs_cpu_measure_fma_gflops_cputime(double seconds);
/* The clock one thread runs at, in GHz, from a chain of dependent integer multiplies (3 cycles
 * each on Intel and AMD cores alike); 0 where not measured (not x86-64). FMA peak / threads /
 * clock = FLOP per cycle per core, the check that the peak probe measures what the core can do
 * (64 on a core with two 512-bit FMA pipes, 32 on one that splits 512-bit FMAs in two halves). */
double fs_cpu_measure_clock_ghz(void);
/* Whether a clock reading fits the 1-thread FMA peak: its FLOP per cycle within 10 % of what
 * one or two FMA pipes of `lanes` float32 lanes do (2 × lanes × pipes). The bench prints the
 * clock only when it does: a reading nothing confirms is left out rather than shown wrong. */
bool fs_cpu_clock_plausible(double fma1_gflops, double ghz, int32_t lanes);
/* Whether `threads` threads share cores' FMA pipes: their FMA peak under 3/4 of `threads` times
 * the 1-thread peak (hyperthreads of one core, or a virtual machine's host placing vCPUs on the
 * same cores; one lent host's 16 vCPUs read 7.9 one-thread peaks). The bench says so in its
 * header, since every share at that thread count is then of a shared peak. */
bool fs_cpu_threads_share_cores(double fma1_gflops, double fman_gflops, int32_t threads);
/* Read bandwidth of `threads` threads summing a buffer of `bytes` (use one well past the last
 * cache level), best of a few passes, in GB/s (1e9 bytes). 0 if the buffer cannot be had. */
double fs_cpu_measure_read_gbps(int32_t threads, size_t bytes);
/* One timed pass of the same probe over a caller's buffer x[0..n) (floats): `threads` threads
 * each sum their contiguous share, started and joined the way the kernels' threads are.
 * Returns the seconds of the pass (wall clock). The bench's decode rows alternate such passes
 * with kernel calls over a buffer of the kernel's own size. */
double fs_cpu_read_pass_s(int32_t threads, const float *x, size_t n);
/* Peak resident memory of this process in MiB since the last fs_cpu_rss_reset (Linux:
 * VmHWM after clear_refs; elsewhere getrusage's lifetime peak). */
double fs_cpu_rss_peak_mb(void);
void fs_cpu_rss_reset(void);
/* Memory the system reports available, in bytes (0 if unknown). */
double fs_cpu_mem_available(void);

#endif
