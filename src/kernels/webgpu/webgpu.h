/* webgpu.h: the C half of the WebGPU path: what a traced WGSL kernel is given, and what it
 * wrote turned back into the engine's events.
 *
 * The WGSL kernels (src/kernels/webgpu/, the .wgsl files) and their host (fsgpu.js) run in a browser or in
 * Node; they know nothing of the engine. For a lesson-sized problem the page asks this module for
 * a job (fs_gpu_job_make): the problem in float32 and the parameter block the kernels read
 * (common.wgsl's Params, word for word). The host runs the traced kernel, reads back its records
 * and hands them to fs_gpu_job_events, which makes the TILE / SKIP / ROW / OUT events (the tiled
 * forward, fwd_trace.wgsl) or the PARTIAL / MERGE / OUT events (FlashDecoding, decode_trace.wgsl)
 * in the engine's order, each number the GPU's. fs_gpu_trace_compare then compares them with the
 * engine's trace of the same run, event by event.
 *
 * Data flow: fs_run (float64) -> fs_gpu_job (float32 inputs, Params, the merge schedule) ->
 * WGSL -> records -> fs_gpu_job_events -> fs_trace -> fs_gpu_trace_compare against fs_run_exec.
 */
#ifndef FS_WEBGPU_H
#define FS_WEBGPU_H

#include <float.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/run.h"
#include "kernels/records/records.h"

/* common.wgsl's Params: 24 four-byte words (u32, i32 or f32 as the struct says). */
enum {
    FS_GPU_N_Q_HEADS = 0, FS_GPU_N_KV_HEADS, FS_GPU_N_Q, FS_GPU_N_KV,
    FS_GPU_D, FS_GPU_D_V, FS_GPU_BQ, FS_GPU_BK,
    FS_GPU_N_KT, FS_GPU_REC_LEN, FS_GPU_MASK_KIND, FS_GPU_WORDS,
    FS_GPU_OFFSET, FS_GPU_WINDOW, FS_GPU_FLAGS, FS_GPU_N_SPLIT,
    FS_GPU_SCALE, FS_GPU_SOFTCAP, FS_GPU_SPLIT_LEN, FS_GPU_STRIDE,
    FS_GPU_PARAMS = 24
};
/* Params.flags */
enum {
    FS_GPU_F_EXP2 = 1, FS_GPU_F_NORMALIZED = 2, FS_GPU_F_TREE = 4, FS_GPU_F_GIVEN_S = 8,
    FS_GPU_F_MERGE_TREE = 16, FS_GPU_F_STRIDED = 32
};
/* The per-(row, tile) record of fwd_trace.wgsl is the CUDA trace kernel's: records.h's layout
 * (FS_REC_CLS … FS_REC_STATS, then s[Bk], P̃[Bk], o[d_v]), turned into events by the same code. */

/* The kernels' stand-in for −∞ (float32's lowest finite number), read back as −∞. */
#define FS_GPU_NEG (-FLT_MAX)

/* Lesson size: one job's records stay under this many floats (64 MiB). */
#define FS_GPU_MAX_RECORD_FLOATS ((int64_t)1 << 24)

typedef enum { FS_GPU_TILED = 0, FS_GPU_DECODE } fs_gpu_kind;

/* One traced run for the GPU. Every array is the caller's to hand to the kernel as it is.
 *   qs: Q (n_q_heads, n_q, d), or the given scores S (n_q_heads, n_q, n_kv)
 *   k, v: K (n_kv_heads, n_kv, d), V (n_kv_heads, n_kv, d_v); bits: the bitmask rows as u32
 *   sched: decode's merges, (n_split − 1) triples (x, y, id), in the engine's order
 *   rec_floats, node_floats, o_floats, ml_floats: what the kernel writes, in floats. */
typedef struct {
    fs_gpu_kind kind;
    fs_run run;                  /* the run the job came from (pointers are the caller's) */
    uint32_t params[FS_GPU_PARAMS];
    float *qs, *k, *v;
    int64_t n_qs, n_k, n_v;
    uint32_t *bits;
    int64_t n_bits;
    uint32_t *sched;
    int32_t n_sched;             /* triples */
    int64_t rec_floats, node_floats, o_floats, ml_floats;
} fs_gpu_job;

/* The job for run r (the tiled forward or the one-query walk, or a contiguous decode: the
 * algorithms the traced kernels take), or FS_ERR_ARG with a sentence in why for any other (the
 * online softmax, the backward, pitfalls, dropout, low precision, a paged cache), FS_ERR_SHAPE
 * past lesson size. Free with fs_gpu_job_free. */
fs_status fs_gpu_job_make(const fs_run *r, fs_gpu_job *job, char *why, size_t n);
void fs_gpu_job_free(fs_gpu_job *job);

/* The engine's events from what the kernel wrote, each number the GPU's: rec and (decode) node
 * as the kernels lay them out, O (n_q_heads, n_q, d_v), ml (tiled: m, ℓ per row; NULL for a
 * decode, whose root node holds them). res (may be NULL) gets O, m, ℓ, L in float64. */
fs_status fs_gpu_job_events(const fs_gpu_job *job, const float *rec, const float *node, const float *O,
                            const float *ml, fs_result *res, fs_trace *tr);

/* The first event where gpu and engine differ, or −1 when they match: the same number of
 * events, kinds, indices, classes, reasons and visible counts exactly, every number and vector
 * within tol · max(1, |engine|) (−∞ only against −∞). A sentence saying where and what goes to
 * msg (n bytes, always terminated). */
int64_t fs_gpu_trace_compare(const fs_trace *gpu, const fs_trace *engine, double tol, char *msg, size_t n);

/* The tolerance the page and the tests use for float32 kernels on lesson-sized problems. */
#define FS_GPU_TRACE_TOL 2e-4

#endif
