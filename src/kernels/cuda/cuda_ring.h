/* cuda_ring.h: ring (context-parallel) attention over P GPUs of one host, with NCCL.
 *
 * The sequence is cut among the GPUs: each holds the rows of Q, K and V of its shard. At each
 * of P steps every GPU runs a prefill kernel (fs_cuda_prefill_run, one launch per pair of
 * query block and key block it holds) of its own queries against the K, V shard it holds at
 * that step, writing a partial (O, L) per pair, while NCCL sends that shard to the next GPU and
 * receives the previous GPU's on another stream into a second buffer (double buffering). After
 * P steps every query row has met every key; the partials are merged by their log-sum-exp:
 *     L = log Σᵢ e^{Lᵢ}        O = Σᵢ e^{Lᵢ − L} Oᵢ
 * (the same merge as FlashDecoding's splits; a row with L = −∞ saw nothing and gets O = 0).
 *
 * Sharding. Contiguous (FS_RING_CONTIG): GPU p holds rows [p·N/P, (p+1)·N/P). Under a causal
 * mask that gives the last GPU P times the first's work, so causal runs use zigzag
 * (FS_RING_ZIGZAG): the sequence in 2P blocks of c = N/(2P) rows, GPU p holds blocks p and
 * 2P−1−p, and every GPU has the same number of visible (query block, key block) pairs. A pair
 * with key block kb and query block qb is skipped when kb > qb (causal), is run with the causal
 * mask and offset (qb − kb)·c when kb = qb (offset 0: the diagonal), and with no mask when
 * kb < qb (every key visible; the no-mask launch is only the faster way to say so).
 *
 * Local layout on GPU p: (slots, heads, c, d) row-major with slots = 2 (zigzag: slot 0 holds
 * block p, slot 1 block 2P−1−p) or 1 (contiguous, c = N/P), so that every block is a plain
 * (1, heads, c, d) tensor for fs_cuda_prefill_run. L is (slots, n_q_heads, c) float32.
 *
 * Backward (fs_cuda_ring_backward): each GPU keeps Q, O, dO, L and a float32 dQ accumulator of its
 * rows; at each step it runs the backward kernel (fs_cuda_backward_run) of each visible pair,
 * adds the pair's dQ into its accumulator and the pair's dK, dV into the float32 dK, dV of the
 * held shard, which travel round the ring with K and V: K, V go ahead (sent at the start of the
 * step, as in the forward), dK, dV follow once the step has added to them and are waited for only
 * by the next step's first addition, after its first backward launch. After the last step one
 * more hop brings each shard's dK, dV home, rounded to the 16-bit type by the sender; that last
 * step runs by groups of KV heads (home_chunks), alternating between two compute streams, and
 * sends each group home as soon as it is done, so that the hops home overlap the later groups'
 * compute (measured: not reliably, docs/kernels-cuda.md 6b). The backward kernels write their
 * dQ, dK, dV per call (16-bit); a small add kernel (ring_add) sums them in float32.
 *
 * Trace (fs_cuda_ring_trace, lesson sizes): the forward once more, recording on each GPU what the
 * engine's `trace --ring` shows (src/engine/ring.h): the shard held at each step, read from a tag
 * of 8 int32 that travels with K and V in the same NCCL group (so a shard that went astray shows);
 * each step's send and receive (the tag sent, the tag received, the peers, the elements moved);
 * and, after each step, each row's merge: the step's pairs' partials are folded into one block
 * (L_blk, o_blk) and merged into a running state in float32, as the engine merges its blocks.
 * The partials carry L = m + ln ℓ, not m and ℓ apart, so a merge is recorded by L and by its
 * weights (o_new = w_old o_old + w_blk o_blk; in the engine's letters w_old = α ℓ_old / ℓ_new,
 * w_blk = β ℓ_blk / ℓ_new). The ring's own output still comes from its end merge.
 *
 * Backward trace (fs_cuda_ring_backward_trace, lesson sizes): the backward once more, with a second
 * tag travelling with the dK, dV accumulators, and after each step copies of the dQ accumulator and
 * of the held shard's dK, dV accumulators, so that the state the engine's `trace --ring --backward`
 * shows after each step, and every hop with what it carried, can be compared one by one.
 *
 * One host thread per GPU calls fs_cuda_ring_run (or fs_cuda_ring_backward) on its own
 * fs_cuda_ring_dev at the same time (NCCL's send and receive meet in the middle). Plain C; needs
 * nccl.h (build with NCCL=1).
 */
#ifndef FS_CUDA_RING_H
#define FS_CUDA_RING_H

#include <nccl.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/cuda/cuda_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FS_RING_MAX_DEV 8

typedef enum { FS_RING_CONTIG = 0, FS_RING_ZIGZAG } fs_ring_shard;

/* The whole problem (batch 1): Q (n_q_heads, n, d), K and V (n_kv_heads, n, d). */
typedef struct {
    int32_t n_dev;                    /* P, 1..FS_RING_MAX_DEV */
    int32_t n_q_heads, n_kv_heads, n, d;
    bool causal;
    fs_ring_shard shard;              /* n must be a multiple of P (contiguous) or 2P (zigzag) */
    float scale;
    fs_cuda_dtype dtype;
    int32_t version;                  /* the prefill version each pair runs (e.g. 31) */
    int32_t reserve_sms;              /* SMs the persistent prefill kernels leave free in the
                                         steps that have a transfer, so that NCCL's copy kernel
                                         runs beside them (0: none left; then the copy waits for
                                         a launch to end) */
    int32_t fault;                    /* test only, so that the checks must fail: 1 = the forward's
                                         last step's pairs are not run, 2 = the backward's, 3 = the
                                         forward's shards go to GPU p + 2 and come from p − 2 (the
                                         wrong source), 4 = the backward's dK, dV are zeroed before
                                         each hop but the home one (their sums are lost); 0
                                         otherwise */
    int32_t bwd_version;              /* the backward version each pair runs (e.g. 11); 0: 11 */
    int32_t home_chunks;              /* backward: groups of KV heads the last step runs and sends
                                         home one by one (1..n_kv_heads; 0: 4, or n_kv_heads when
                                         fewer) */
} fs_cuda_ring;

/* Slots a GPU holds (1 or 2), rows a slot holds, and the first global row of slot s of GPU p. */
int fs_cuda_ring_slots(const fs_cuda_ring *r);
int fs_cuda_ring_slot_rows(const fs_cuda_ring *r);
int fs_cuda_ring_slot_start(const fs_cuda_ring *r, int p, int slot);

/* What fs_cuda_ring_run does: the ring (compute and transfers, overlapped), the compute alone
 * (the same launches against the local K, V, no transfer), or the transfers alone. */
typedef enum { FS_RING_RUN_FULL = 0, FS_RING_RUN_COMPUTE, FS_RING_RUN_COMM } fs_ring_mode;

/* Milliseconds on one GPU, by CUDA events: step_ms[s], from the end of step s − 1's compute (or
 * the start) to the end of step s's; compute_ms[s] and comm_ms[s], from the first to the last
 * launch of step s and from the start to the end of its transfer; exposed_ms[s], how long the
 * transfer of step s outlasted step s's compute (step s + 1 waited that long; 0: hidden);
 * merge_ms; total_ms, from the start to the merge's end. */
typedef struct {
    float step_ms[FS_RING_MAX_DEV], compute_ms[FS_RING_MAX_DEV], comm_ms[FS_RING_MAX_DEV];
    float exposed_ms[FS_RING_MAX_DEV];
    float merge_ms, total_ms;
    int32_t pairs;                    /* prefill (backward: backward) launches run */
    float home_ms;                    /* backward: how long the ring went on after its last compute,
                                         waiting for dK, dV to come home (not hidden) */
    uint64_t clock_ns[3];             /* backward: the GPU's %globaltimer (ns) at the ring's start, at
                                         the end of this GPU's compute and at the end (its hops home
                                         landed); the GPUs of one host keep this clock in step, so
                                         these order events across GPUs, which CUDA events cannot */
} fs_ring_times;

typedef struct fs_cuda_ring_dev fs_cuda_ring_dev;

/* On the calling thread's current device (GPU p of the ring, comm its NCCL communicator of rank
 * p): streams, events, the second K, V buffers and the partials' memory. FS_ERR_SHAPE or
 * FS_ERR_ARG with why filled on a bad problem or a CUDA error. */
fs_status fs_cuda_ring_dev_init(const fs_cuda_ring *r, int p, ncclComm_t comm, fs_cuda_ring_dev **out, char *why,
                                size_t n);
void fs_cuda_ring_dev_free(fs_cuda_ring_dev *g);

/* Run the ring on GPU p: Q, K, V this GPU's shards (local layout, device), O (same layout as Q)
 * and L receive its rows of the output. K and V are only read. The ring starts after the work
 * already queued on the default stream, and returns after the device is done; times (may be
 * NULL) receives the step times. */
fs_status fs_cuda_ring_run(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V, void *O, float *L,
                           fs_ring_mode mode, fs_ring_times *times, char *why, size_t n);

/* The backward over the ring on GPU p. Q, K, V, O, dO (16-bit) and L (float32, the forward's
 * log-sum-exp, natural units) are this GPU's shards in the local layout, as fs_cuda_ring_run
 * takes and gives them; dQ (Q's layout), dK and dV (K's) receive this GPU's rows of the
 * gradients. Modes as fs_cuda_ring_run: FULL (the ring), COMPUTE (the same launches against the
 * local shard, no transfer; dK, dV are then not the gradients), COMM (the transfers alone).
 * Times (may be NULL): step_ms, compute_ms as the forward's; comm_ms[s], the transfers issued in
 * step s (K, V ahead, dK, dV after; in the last, from the start of the first hop home to the end
 * of the last, waits between the groups included); exposed_ms[s], how long step s's
 * compute waited for an arrival (K, V at its start, dK, dV before its first addition); home_ms;
 * merge_ms, the final conversion of dQ. The buffers the backward needs beyond the forward's are
 * allocated at the first call and kept. */
fs_status fs_cuda_ring_backward(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V, const void *O,
                                const void *dO, const float *L, void *dQ, void *dK, void *dV, fs_ring_mode mode,
                                fs_ring_times *times, char *why, size_t n);

/* What the forward did on one GPU, step by step (fs_cuda_ring_trace). A tag is 8 int32: [0] the
 * GPU whose shard it is, [1] its slots, [2] rows a slot, [3], [4] the first global row of each
 * slot. rows = slots · n_q_heads · c, in the local layout (slot, head, row). */
#define FS_RING_TAG 8
#define FS_RING_REC_HEAD 6            /* merged, L_old, L_blk, L_new, w_old, w_blk */
typedef struct {
    int32_t steps, rows, d;
    int32_t hold[FS_RING_MAX_DEV][FS_RING_TAG];   /* the tag of the K, V that step s's compute read */
    int32_t sent[FS_RING_MAX_DEV][FS_RING_TAG];   /* the tag of what step s sent (s < steps − 1) */
    int32_t got[FS_RING_MAX_DEV][FS_RING_TAG];    /* the tag of what step s received */
    int32_t to[FS_RING_MAX_DEV], from[FS_RING_MAX_DEV];   /* the peers of step s's send and receive */
    int64_t sent_elems[FS_RING_MAX_DEV];          /* K elements step s sent (as many of V) */
    /* Per step s and local row r, record s · rows + r of FS_RING_REC_HEAD + 3d floats: merged (1:
     * the step's block showed the row a key and was merged; 0: the state stayed), L_old, L_blk,
     * L_new (natural units, −∞: nothing yet), w_old, w_blk, then o_old, o_blk, o_new (d each). */
    float *rec;
} fs_ring_trace;

/* The forward on GPU p as fs_cuda_ring_run (FULL), recording tr (its rec allocated here; free it
 * with fs_ring_trace_free). For lesson sizes: n ≤ 4096 and n_q_heads · n ≤ 65536, else
 * FS_ERR_SHAPE. */
fs_status fs_cuda_ring_trace(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V, void *O, float *L,
                             fs_ring_trace *tr, char *why, size_t n);
void fs_ring_trace_free(fs_ring_trace *tr);

/* What the backward did on one GPU, step by step (fs_cuda_ring_backward_trace). Two tags travel:
 * one with K, V (as the forward's) and one with the dK, dV accumulators, so the shard whose
 * gradients a step added to is read as well as the shard whose K, V it read. rows = slots ·
 * n_q_heads · c (the local query rows), keys = slots · n_kv_heads · c (the held shard's rows),
 * both in the local layout (slot, head, row). Step P − 1's sends and receives are the hops home
 * (dK, dV alone). */
typedef struct {
    int32_t steps, rows, keys, d;
    int32_t hold[FS_RING_MAX_DEV][FS_RING_TAG];      /* the tag of the K, V step s read */
    int32_t acc[FS_RING_MAX_DEV][FS_RING_TAG];       /* the tag of the dK, dV step s added to */
    int32_t sent_kv[FS_RING_MAX_DEV][FS_RING_TAG];   /* the tags of the K, V and the dK, dV step s sent */
    int32_t sent_dkv[FS_RING_MAX_DEV][FS_RING_TAG];
    int32_t got_kv[FS_RING_MAX_DEV][FS_RING_TAG];    /* ... and received */
    int32_t got_dkv[FS_RING_MAX_DEV][FS_RING_TAG];
    int32_t to[FS_RING_MAX_DEV], from[FS_RING_MAX_DEV];
    int64_t kv_elems[FS_RING_MAX_DEV];               /* K elements step s sent (as many of V; 0 at the last) */
    int64_t dkv_elems[FS_RING_MAX_DEV];              /* dK elements step s sent (as many of dV) */
    /* After step s: the float32 dQ accumulator of the GPU's rows, dq + s · rows · d, and the held
     * shard's dK, dV accumulators, dk and dv + s · keys · d (d values a row). */
    float *dq, *dk, *dv;
} fs_ring_btrace;

/* The backward on GPU p as fs_cuda_ring_backward (FULL), recording tr (its arrays allocated here;
 * free them with fs_ring_btrace_free). Lesson sizes, as fs_cuda_ring_trace. */
fs_status fs_cuda_ring_backward_trace(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V, const void *O,
                                      const void *dO, const float *L, void *dQ, void *dK, void *dV, fs_ring_btrace *tr,
                                      char *why, size_t n);
void fs_ring_btrace_free(fs_ring_btrace *tr);

#ifdef __cplusplus
}
#endif

#endif
