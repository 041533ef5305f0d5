/* run.h: one entry point for every algorithm of the engine.
 *
 * The command line, the lessons and the window all describe what to run with an fs_run and
 * call fs_run_exec; the engine allocates the result and, when given a trace, records into it.
 */
#ifndef FS_RUN_H
#define FS_RUN_H

#include "attn.h"
#include "backward.h"
#include "decode.h"
#include "lowp.h"
#include "online.h"
#include "paged.h"
#include "reference.h"
#include "ring.h"
#include "status.h"
#include "tiled.h"
#include "trace.h"

typedef enum {
    FS_ALGO_REFERENCE = 0, /* fs_reference: no events but the OUT rows */
    FS_ALGO_SOFTMAX,       /* fs_online_softmax on z */
    FS_ALGO_QUERY,         /* fs_online_query: one query, one key at a time */
    FS_ALGO_TILED,         /* fs_tiled */
    FS_ALGO_DECODE,        /* fs_decode */
    FS_ALGO_BACKWARD,      /* fs_tiled untraced (O and L), then fs_backward traced */
    FS_ALGO_RING,          /* fs_ring_forward; with ring_backward, fs_ring_forward untraced (O and
                              L), then fs_ring_backward traced */
    FS_ALGO_COUNT
} fs_algo;

typedef struct {
    fs_algo algo;
    fs_attn attn;           /* all but SOFTMAX */
    fs_tiling tiling;       /* TILED, BACKWARD, and RING inside each step */
    fs_decoding decoding;   /* DECODE */
    const double *z;        /* SOFTMAX: the vector, n_z values */
    int32_t n_z;
    int32_t chunk;          /* SOFTMAX: ≥ 1 */
    const double *dO;       /* BACKWARD and the ring's: (n_q_heads, n_q, d_v); NULL: dO = 1, the gradient of sum(O) */
    fs_ring ring;           /* RING: devices and sharding (its tiling is replaced by the run's) */
    bool ring_backward;     /* RING: the backward pass around the ring */
    bool lowp;              /* TILED: run the low-precision recipe (lowp.h) with the tiling's Bq, Bk */
    fs_lowp_recipe recipe;
    /* DECODE through a paged KV cache when page_size > 0 (fs_paged_decode_table): K and V are
     * appended to a pool of pages of page_size positions, block b in page block_table[b]
     * (n_table entries; NULL: pages 0, 1, 2, …), and read back through the table. */
    int32_t page_size;
    const int32_t *block_table;
    int32_t n_table;
} fs_run;

typedef struct {
    double *O;              /* (n_q_heads, n_q, d_v); SOFTMAX: the softmax vector (n_z) */
    double *m, *l;          /* (n_q_heads, n_q) in natural units; SOFTMAX: one each */
    int32_t n_heads, n_rows, n_cols;   /* O's shape: n_heads × n_rows × n_cols */
    double *L;              /* every attention algorithm: (n_q_heads, n_q) L = m + ln ℓ, −∞ when ℓ = 0 */
    /* BACKWARD and the ring's backward only (else NULL): D (n_q_heads, n_q), dQ (n_q_heads, n_q, d),
     * dK (n_kv_heads, n_kv, d), dV (n_kv_heads, n_kv, d_v). */
    double *D, *dQ, *dK, *dV;
} fs_result;

/* A run of algo with defaults: default tiling (for FS_ALGO_QUERY in the unnormalized form, as
 * 000 walks it; QUERY takes only form and exp2 from the tiling), default decoding, chunk 1. */
fs_run fs_run_make(fs_algo algo);

/* Run it. res is filled with fresh allocations (free with fs_result_free), also on failure
 * (then with NULLs). tr may be NULL. */
fs_status fs_run_exec(const fs_run *r, fs_result *res, fs_trace *tr);

void fs_result_free(fs_result *res);

/* One English sentence for a failed fs_run_exec: what fs_attn_status_detail says, and for the
 * backward a gradient that would overflow (fs_backward_check_range). Returns buf. */
const char *fs_run_status_detail(const fs_run *r, fs_status st, char *buf, size_t n);

/* "reference", "softmax", "query", "tiled", "decode", "backward", "ring" */
const char *fs_algo_str(fs_algo a);

#endif
