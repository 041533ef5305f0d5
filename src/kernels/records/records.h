/* records.h: the traced tiled forward's records turned into the engine's events, for every GPU
 * path that writes them: the CUDA trace kernel (src/kernels/cuda/cuda_trace.cu) and the WGSL one
 * (src/kernels/webgpu/fwd_trace.wgsl, through webgpu_trace.c).
 *
 * Both kernels give one thread (invocation) one query row of one head; it walks the KV tiles in
 * order and writes, per (row, KV tile), one record: the tile's class and skip reason, the row's
 * visible count and statistics after the tile, its scores s and weights P̃ in that tile, and o
 * after it. A row meets its KV tiles in the same order whichever loop is outer, so one kernel
 * serves both orders; only the order in which the records become events differs, and that is
 * decided here, once:
 *
 *     records (float32, the kernel's) ──> fs_records_events ──> TILE / SKIP, ROW …, OUT (fs_trace)
 *
 * Plain C, no GPU: it links into the program, the tests, the page's WebAssembly and the CUDA
 * programs (the .cu files include this header in extern "C").
 */
#ifndef FS_RECORDS_H
#define FS_RECORDS_H

#include <stdint.h>

#include "engine/attn.h"
#include "engine/tiled.h"
#include "engine/trace.h"

/* One record: these FS_REC_STATS numbers, then s[slots], P̃[slots], o[d_v] (slots = min(Bk, n_kv):
 * the keys a tile can hold). Class and reason are written for every row of a pair, skipped or
 * not; the rest only for a visited pair. */
enum {
    FS_REC_CLS = 0, FS_REC_WHY, FS_REC_VISIBLE, FS_REC_M_OLD, FS_REC_M_BLK, FS_REC_M_NEW,
    FS_REC_L_OLD, FS_REC_L_BLK, FS_REC_L_NEW, FS_REC_ALPHA, FS_REC_BETA, FS_REC_STATS
};

/* What a traced tiled kernel wrote. Scores and maxima are in the kernel's units (base 2 when the
 * run takes exp2); a value at or below −FLT_MAX reads as −∞ (the WGSL kernels' stand-in for it;
 * the CUDA kernel writes −∞ itself).
 *   rec: (n_q_heads, n_q, n_kt, rec_len) records
 *   O:   (n_q_heads, n_q, d_v) the output
 *   m, l: row x's final m and ℓ at m[x · ml_stride], l[x · ml_stride] */
typedef struct {
    const float *rec;
    int32_t n_kt, rec_len, slots;
    const float *O;
    const float *m, *l;
    int32_t ml_stride;
} fs_records;

/* Keys a record holds (min(Bk, n_kv)), KV tiles, and the floats of one record. */
int32_t fs_records_slots(const fs_attn *at, const fs_tiling *t);
int32_t fs_records_n_kt(const fs_attn *at, const fs_tiling *t);
int64_t fs_records_len(const fs_attn *at, const fs_tiling *t);

/* The engine's events for the run (at, t) from the records r, in the engine's order (t->order):
 * per (Q tile, KV tile) pair a TILE or SKIP, then a ROW per row of a visited pair (o_old: the
 * row's previous o_new, 0 at first), and an OUT per row where fs_tiled puts it: Q outer, a Q
 * tile's rows right after its last KV tile; KV outer, every row at the end. t is the tiling the kernel ran (for
 * 000's one-query walk: Bq = Bk = 1). FS_OK, or fs_trace_error's status when recording fails. */
fs_status fs_records_events(const fs_attn *at, const fs_tiling *t, const fs_records *r, fs_trace *tr);

#endif
