/* ring.cu: ring (context-parallel) attention over the GPUs of one host (cuda_ring.h says what
 * runs and how the sequence is sharded). Per GPU: a compute stream that runs the prefill kernel
 * of each visible (query block, key block) pair, a transfer stream on which NCCL moves the K, V
 * shard to the next GPU while the previous GPU's arrives in the other buffer, and at the end one
 * merge of the partial (O, L) of each query block. Built only with NCCL=1 (module.mk); the float64
 * check and the timings are bench/cuda/bench_ring.cu's. The backward (fs_cuda_ring_backward) is
 * at the end of the file, with its own data-flow sketch, and after it the backward's trace.
 *
 * Data flow on GPU p at step s (src = (p − s) mod P, the GPU whose shard is held at step s):
 *
 *     transfer stream:  [wait: compute s−1 has read buffer (s+1) mod 2]
 *                       send held shard → p+1, receive p−1's → buffer (s+1) mod 2
 *     compute stream:   [wait: transfer s−1 has landed]  prefill(Q blocks of p, K, V blocks of src)
 *                       → partial (Oᵢ, Lᵢ) per visible pair
 *     after step P−1:   merge: L = log Σ e^{Lᵢ}, O = Σ e^{Lᵢ − L} Oᵢ per query block
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda/cuda_common.cuh"

extern "C" {
#include "kernels/cuda/cuda_ring.h"
}

/* Like FS_CU_TRY, for an NCCL call. */
#define FS_NC_TRY(call)                                                                         \
    do {                                                                                        \
        ncclResult_t fs_r_ = (call);                                                            \
        if (fs_r_ != ncclSuccess) {                                                             \
            if (why && n)                                                                       \
                snprintf(why, n, "%s:%d: %s failed: %s", __FILE__, __LINE__, #call,             \
                         ncclGetErrorString(fs_r_));                                            \
            return FS_ERR_ARG;                                                                  \
        }                                                                                       \
    } while (0)

/* Partials a query slot can collect: one per key block met, P · slots at most. */
#define RING_MAX_PART (2 * FS_RING_MAX_DEV)
/* Groups of KV heads the backward's last step can be cut into (fs_cuda_ring.home_chunks). */
#define RING_MAX_CHUNKS 32

struct fs_cuda_ring_dev {
    fs_cuda_ring r;
    int p, sms;
    ncclComm_t comm;
    cudaStream_t cs, ts;                 /* compute, transfer */
    cudaEvent_t start, c0[FS_RING_MAX_DEV], c1[FS_RING_MAX_DEV], t0[FS_RING_MAX_DEV], t1[FS_RING_MAX_DEV];
    cudaEvent_t merge0, merge1, ready;
    void *kv[2][2];                      /* [buffer][0: K, 1: V], each (slots, n_kv_heads, c, d) */
    int kmax;                            /* partials a slot can collect: P · slots (≤ RING_MAX_PART) */
    void *part_o;                        /* (slots, kmax, n_q_heads, c, d) 16-bit */
    float *part_l;                       /* (slots, kmax, n_q_heads, c) */
    /* the backward's, allocated at its first call (ring_bwd_alloc) */
    bool bwd;
    float *dkv[2][2];                    /* [buffer][0: dK, 1: dV], each (slots, n_kv_heads, c, d) float32:
                                            the travelling accumulators of the held shard */
    float *dq_acc;                       /* (slots, n_q_heads, c, d) float32 */
    cudaStream_t cb;                     /* a second compute stream: the last step's groups of heads
                                            alternate between cs and cb, so that one group's blocks
                                            fill the SMs that the previous group's last wave leaves */
    void *tq[2], *tk[2], *tv[2];         /* per compute stream: one pair's dQ (n_q_heads, c, d), dK, dV
                                            (n_kv_heads, c, d), 16-bit */
    void *home[2];                       /* dK, dV rounded for the hop home, (slots, n_kv_heads, c, d) 16-bit */
    void *work[2];                       /* per compute stream: fs_cuda_backward_workspace of one pair */
    cudaEvent_t fork, join;
    cudaEvent_t w0[FS_RING_MAX_DEV], w1[FS_RING_MAX_DEV], x0[FS_RING_MAX_DEV], x1[FS_RING_MAX_DEV];
    cudaEvent_t u0[FS_RING_MAX_DEV], u1[FS_RING_MAX_DEV], hc[RING_MAX_CHUNKS];
    cudaEvent_t h0, h1, cend, done;
    unsigned long long *clk;             /* [3]: %globaltimer at the start, the compute's end, the end */
};

extern "C" int fs_cuda_ring_slots(const fs_cuda_ring *r) { return r->shard == FS_RING_ZIGZAG ? 2 : 1; }

extern "C" int fs_cuda_ring_slot_rows(const fs_cuda_ring *r) { return r->n / (r->n_dev * fs_cuda_ring_slots(r)); }

/* The sequence block (of slot_rows rows) that slot `slot` of GPU p holds. */
static int ring_block(const fs_cuda_ring *r, int p, int slot)
{
    return r->shard == FS_RING_ZIGZAG && slot == 1 ? 2 * r->n_dev - 1 - p : p;
}

extern "C" int fs_cuda_ring_slot_start(const fs_cuda_ring *r, int p, int slot)
{
    return ring_block(r, p, slot) * fs_cuda_ring_slot_rows(r);
}

/* ---- the merge ------------------------------------------------------------------------------ */

struct merge_args {
    const void *O[RING_MAX_PART];   /* partial i: (rows, d) 16-bit */
    const float *L[RING_MAX_PART];  /* its log-sum-exp per row, natural units, −∞: saw nothing */
    int k;                          /* partials, 1..RING_MAX_PART */
};

/* One warp per row, two columns a lane at a time. O (rows, d), L (rows):
 *     L = Lmax + log Σᵢ e^{Lᵢ − Lmax},   O = Σᵢ e^{Lᵢ − L} Oᵢ  (float32, rounded once)
 * A row whose partials all saw nothing (Lmax = −∞) gets O = 0 and L = −∞: no NaN. */
template <typename T>
__global__ void ring_merge(merge_args a, long rows, int d, T *__restrict__ O, float *__restrict__ L)
{
    const long row = ((long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    float Lmax = -INFINITY;
#pragma unroll
    for (int i = 0; i < RING_MAX_PART; i++)
        if (i < a.k) Lmax = fmaxf(Lmax, a.L[i][row]);
    float w[RING_MAX_PART], sum = 0;
#pragma unroll
    for (int i = 0; i < RING_MAX_PART; i++) {
        w[i] = i < a.k && Lmax > -INFINITY ? expf(a.L[i][row] - Lmax) : 0.f;   /* e^{−∞} = 0 */
        sum += w[i];
    }
    const float inv = sum > 0 ? 1.f / sum : 0.f;
    for (int c = 2 * lane; c < d; c += 64) {
        float x = 0, y = 0;
#pragma unroll
        for (int i = 0; i < RING_MAX_PART; i++)
            if (i < a.k && w[i] > 0) {
                const T *o = (const T *)a.O[i] + row * d + c;
                x += w[i] * (float)o[0];
                y += w[i] * (float)o[1];
            }
        O[row * d + c] = (T)(x * inv);
        O[row * d + c + 1] = (T)(y * inv);
    }
    if (lane == 0) L[row] = sum > 0 ? Lmax + logf(sum) : -INFINITY;
}

/* ---- set-up --------------------------------------------------------------------------------- */

extern "C" fs_status fs_cuda_ring_dev_init(const fs_cuda_ring *r, int p, ncclComm_t comm, fs_cuda_ring_dev **out,
                                           char *why, size_t n)
{
    *out = NULL;
    const int P = r->n_dev, S = fs_cuda_ring_slots(r);
    if (P < 1 || P > FS_RING_MAX_DEV || p < 0 || p >= P) {
        if (why && n) snprintf(why, n, "ring: %d GPUs (1..%d), GPU %d", P, FS_RING_MAX_DEV, p);
        return FS_ERR_SHAPE;
    }
    if (r->n < 1 || r->n % (P * S) || r->n_q_heads < 1 || r->n_kv_heads < 1 || r->n_q_heads % r->n_kv_heads ||
        (r->d != 64 && r->d != 128 && r->d != 256)) {
        if (why && n)
            snprintf(why, n, "ring: n = %d must be a multiple of %d (%s sharding over %d GPUs), heads %d/%d, d = %d "
                     "(64, 128 or 256)", r->n, P * S, S == 2 ? "zigzag" : "contiguous", P, r->n_q_heads,
                     r->n_kv_heads, r->d);
        return FS_ERR_SHAPE;
    }
    fs_cuda_ring_dev *g = (fs_cuda_ring_dev *)calloc(1, sizeof *g);
    if (!g) {
        if (why && n) snprintf(why, n, "ring: out of host memory");
        return FS_ERR_NOMEM;
    }
    *out = g;   /* fs_cuda_ring_dev_free frees what was made even when a later step fails */
    g->r = *r;
    g->p = p;
    g->comm = comm;
    int dev, lo, hi;
    FS_CU_TRY(cudaGetDevice(&dev));
    FS_CU_TRY(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev));
    /* the transfers' stream gets the higher priority: when an SM frees, NCCL's blocks go first */
    FS_CU_TRY(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    FS_CU_TRY(cudaStreamCreateWithPriority(&g->cs, cudaStreamNonBlocking, lo));
    FS_CU_TRY(cudaStreamCreateWithPriority(&g->ts, cudaStreamNonBlocking, hi));
    FS_CU_TRY(cudaEventCreate(&g->start));
    FS_CU_TRY(cudaEventCreate(&g->merge0));
    FS_CU_TRY(cudaEventCreate(&g->merge1));
    FS_CU_TRY(cudaEventCreateWithFlags(&g->ready, cudaEventDisableTiming));
    for (int s = 0; s < P; s++) {
        FS_CU_TRY(cudaEventCreate(&g->c0[s]));
        FS_CU_TRY(cudaEventCreate(&g->c1[s]));
        FS_CU_TRY(cudaEventCreate(&g->t0[s]));
        FS_CU_TRY(cudaEventCreate(&g->t1[s]));
    }
    const size_t c = (size_t)fs_cuda_ring_slot_rows(r);
    const size_t kv_bytes = (size_t)S * r->n_kv_heads * c * r->d * 2;
    if (P > 1)
        for (int b = 0; b < 2; b++)
            for (int x = 0; x < 2; x++) FS_CU_TRY(cudaMalloc(&g->kv[b][x], kv_bytes));
    g->kmax = P * S;
    const size_t parts = (size_t)S * g->kmax * r->n_q_heads * c;
    FS_CU_TRY(cudaMalloc(&g->part_o, parts * r->d * 2));
    FS_CU_TRY(cudaMalloc((void **)&g->part_l, parts * sizeof(float)));
    return FS_OK;
}

extern "C" void fs_cuda_ring_dev_free(fs_cuda_ring_dev *g)
{
    if (!g) return;
    for (int b = 0; b < 2; b++)
        for (int x = 0; x < 2; x++) cudaFree(g->kv[b][x]);
    cudaFree(g->part_o);
    cudaFree(g->part_l);
    for (int b = 0; b < 2; b++)
        for (int x = 0; x < 2; x++) cudaFree(g->dkv[b][x]);
    cudaFree(g->dq_acc);
    cudaFree(g->clk);
    for (int i = 0; i < 2; i++) {
        cudaFree(g->tq[i]);
        cudaFree(g->tk[i]);
        cudaFree(g->tv[i]);
        cudaFree(g->work[i]);
        cudaFree(g->home[i]);
    }
    if (g->cb) cudaStreamDestroy(g->cb);
    cudaEvent_t *evs[] = {g->c0, g->c1, g->t0, g->t1, g->w0, g->w1, g->x0, g->x1, g->u0, g->u1};
    for (cudaEvent_t *e : evs)
        for (int s = 0; s < FS_RING_MAX_DEV; s++)
            if (e[s]) cudaEventDestroy(e[s]);
    for (int i = 0; i < RING_MAX_CHUNKS; i++)
        if (g->hc[i]) cudaEventDestroy(g->hc[i]);
    cudaEvent_t one[] = {g->h0, g->h1, g->cend, g->done, g->fork, g->join};
    for (cudaEvent_t e : one)
        if (e) cudaEventDestroy(e);
    if (g->start) cudaEventDestroy(g->start);
    if (g->merge0) cudaEventDestroy(g->merge0);
    if (g->merge1) cudaEventDestroy(g->merge1);
    if (g->ready) cudaEventDestroy(g->ready);
    if (g->cs) cudaStreamDestroy(g->cs);
    if (g->ts) cudaStreamDestroy(g->ts);
    free(g);
}

/* ---- the ring ------------------------------------------------------------------------------- */

/* Step s's transfer: the held shard (K, V) to GPU next, GPU prev's into (rk, rv); with a trace,
 * the held shard's tag travels beside them (tag → rtag); one NCCL group. */
static fs_status ring_transfer(fs_cuda_ring_dev *g, int next, int prev, const void *k, const void *v, void *rk,
                               void *rv, size_t count, const int32_t *tag, int32_t *rtag, char *why, size_t n)
{
    const ncclDataType_t t = g->r.dtype == FS_CUDA_BF16 ? ncclBfloat16 : ncclFloat16;
    FS_NC_TRY(ncclGroupStart());
    FS_NC_TRY(ncclSend(k, count, t, next, g->comm, g->ts));
    FS_NC_TRY(ncclSend(v, count, t, next, g->comm, g->ts));
    if (tag) FS_NC_TRY(ncclSend(tag, FS_RING_TAG, ncclInt32, next, g->comm, g->ts));
    FS_NC_TRY(ncclRecv(rk, count, t, prev, g->comm, g->ts));
    FS_NC_TRY(ncclRecv(rv, count, t, prev, g->comm, g->ts));
    if (tag) FS_NC_TRY(ncclRecv(rtag, FS_RING_TAG, ncclInt32, prev, g->comm, g->ts));
    FS_NC_TRY(ncclGroupEnd());
    return FS_OK;
}

/* ---- the trace (lesson sizes) ----------------------------------------------------------------
 *
 * With a trace, the forward also keeps, on the device: the tags (own, and one per K, V buffer),
 * the records of the tags held, sent and received per step, and a float32 running state (L, o)
 * per local row into which ring_step_merge folds each step's block, writing one record per row. */
struct ring_tdev {
    fs_ring_trace *tr;
    int32_t *tag;      /* [3][FS_RING_TAG]: own, buffer 0, buffer 1 */
    int32_t *recs;     /* [3][P][FS_RING_TAG]: held, sent, received at step s */
    float *runL;       /* (rows) */
    float *runO;       /* (rows, d) */
    float *rec;        /* (P, rows, FS_RING_REC_HEAD + 3d) */
};

/* One thread a local row r = (slot a, head, row): the step's partials of slot a, [i0, i1) of that
 * slot's list, merged into the step's block, which is merged into the running state:
 *     L_blk = log Σᵢ e^{Lᵢ},  o_blk = Σᵢ e^{Lᵢ − L_blk} Oᵢ
 *     L_new = log(e^{L_old} + e^{L_blk}),  w_old = e^{L_old − L_new},  w_blk = e^{L_blk − L_new}
 *     o_new = w_old o_old + w_blk o_blk
 * A block with no visible key (L_blk = −∞) leaves the state alone (merged 0); the first with one is
 * taken as it is (w_old = 0, w_blk = 1), as in the engine. rec: this step's records. */
template <typename T>
__global__ void ring_step_merge(const T *__restrict__ po, const float *__restrict__ pl, int kmax, long q_slot,
                                int rows_slot, int S, int d, int2 range0, int2 range1, float *runL, float *runO,
                                float *rec)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= S * rows_slot) return;
    const int a = r / rows_slot, rr = r % rows_slot;
    const int2 rg = a ? range1 : range0;
    float Lmax = -INFINITY, sum = 0;
    for (int i = rg.x; i < rg.y; i++) Lmax = fmaxf(Lmax, pl[(long)(a * kmax + i) * rows_slot + rr]);
    for (int i = rg.x; i < rg.y && Lmax > -INFINITY; i++) sum += expf(pl[(long)(a * kmax + i) * rows_slot + rr] - Lmax);
    const float L_blk = sum > 0 ? Lmax + logf(sum) : -INFINITY, L_old = runL[r];
    float *e = rec + (long)r * (FS_RING_REC_HEAD + 3 * d);
    float *o_old = e + FS_RING_REC_HEAD, *o_blk = o_old + d, *o_new = o_blk + d, *o = runO + (long)r * d;
    for (int c = 0; c < d; c++) {
        float x = 0;
        for (int i = rg.x; i < rg.y && L_blk > -INFINITY; i++) {
            const float w = expf(pl[(long)(a * kmax + i) * rows_slot + rr] - L_blk);
            if (w > 0) x += w * (float)po[((long)(a * kmax + i) * q_slot) + (long)rr * d + c];
        }
        o_blk[c] = x;
        o_old[c] = o[c];
    }
    float L_new = L_old, w_old = 1, w_blk = 0;
    if (L_blk > -INFINITY) {
        if (L_old == -INFINITY) {
            L_new = L_blk, w_old = 0, w_blk = 1;
        } else {
            const float Lm = fmaxf(L_old, L_blk);
            L_new = Lm + logf(expf(L_old - Lm) + expf(L_blk - Lm));
            w_old = expf(L_old - L_new), w_blk = expf(L_blk - L_new);
        }
    }
    for (int c = 0; c < d; c++) o[c] = o_new[c] = L_blk > -INFINITY ? w_old * o_old[c] + w_blk * o_blk[c] : o_old[c];
    runL[r] = L_new;
    e[0] = L_blk > -INFINITY ? 1.f : 0.f;
    e[1] = L_old, e[2] = L_blk, e[3] = L_new, e[4] = w_old, e[5] = w_blk;
}

__global__ void ring_trace_init(float *runL, float *runO, long rows, int d)
{
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < rows * d; i += (long)gridDim.x * blockDim.x) {
        runO[i] = 0;
        if (i < rows) runL[i] = -INFINITY;
    }
}

/* The forward (fs_cuda_ring_run), with a trace when td is not NULL (mode FULL then). */
static fs_status ring_forward(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V, void *O, float *L,
                              fs_ring_mode mode, fs_ring_times *times, ring_tdev *td, char *why, size_t n)
{
    const fs_cuda_ring *r = &g->r;
    const int P = r->n_dev, S = fs_cuda_ring_slots(r), p = g->p;
    /* the peers: p + 1 and p − 1, or with the test fault 3 p + 2 and p − 2 (the wrong source) */
    const int hop = r->fault == 3 ? 2 : 1, next = (p + hop) % P, prev = ((p - hop) % P + P) % P;
    const size_t c = (size_t)fs_cuda_ring_slot_rows(r);
    const size_t q_slot = (size_t)r->n_q_heads * c * r->d, kv_slot = (size_t)r->n_kv_heads * c * r->d;
    const size_t rows_slot = (size_t)r->n_q_heads * c;
    const bool compute = mode != FS_RING_RUN_COMM, transfer = mode != FS_RING_RUN_COMPUTE && P > 1;
    char *po = (char *)g->part_o;
    int parts[2] = {0, 0}, pairs = 0;

    /* the ring's streams do not wait for the default stream by themselves: wait for the caller's
     * work there (the inputs' copies, say) first */
    FS_CU_TRY(cudaEventRecord(g->ready, 0));
    FS_CU_TRY(cudaStreamWaitEvent(g->cs, g->ready, 0));
    FS_CU_TRY(cudaEventRecord(g->start, g->cs));
    FS_CU_TRY(cudaStreamWaitEvent(g->ts, g->start, 0));
    for (int s = 0; s < P; s++) {
        const int src = (p - s + P) % P;
        /* the shard held at step s: our own at step 0 (and always, computing alone) */
        const bool own = s == 0 || !transfer;
        const char *k = (const char *)(own ? K : g->kv[s % 2][0]), *v = (const char *)(own ? V : g->kv[s % 2][1]);
        /* the tag of the held shard and the records of step s (trace only) */
        int32_t *tag = td ? td->tag + (own ? 0 : 1 + s % 2) * FS_RING_TAG : NULL;
        int32_t *rec_hold = td ? td->recs + ((0 * P) + s) * FS_RING_TAG : NULL;
        int32_t *rec_sent = td ? td->recs + ((1 * P) + s) * FS_RING_TAG : NULL;
        int32_t *rec_got = td ? td->recs + ((2 * P) + s) * FS_RING_TAG : NULL;
        if (transfer && s < P - 1) {
            /* buffer (s+1) mod 2 was read by step s − 1's compute (from step 2 on) */
            if (s >= 2 && compute) FS_CU_TRY(cudaStreamWaitEvent(g->ts, g->c1[s - 1], 0));
            FS_CU_TRY(cudaEventRecord(g->t0[s], g->ts));
            int32_t *rtag = td ? td->tag + (1 + (s + 1) % 2) * FS_RING_TAG : NULL;
            if (td) {
                FS_CU_TRY(cudaMemcpyAsync(rec_sent, tag, FS_RING_TAG * 4, cudaMemcpyDeviceToDevice, g->ts));
                td->tr->to[s] = next, td->tr->from[s] = prev, td->tr->sent_elems[s] = (int64_t)(S * kv_slot);
            }
            fs_status st = ring_transfer(g, next, prev, k, v, g->kv[(s + 1) % 2][0], g->kv[(s + 1) % 2][1],
                                         (size_t)S * kv_slot, tag, rtag, why, n);
            if (st != FS_OK) return st;
            if (td) FS_CU_TRY(cudaMemcpyAsync(rec_got, rtag, FS_RING_TAG * 4, cudaMemcpyDeviceToDevice, g->ts));
            FS_CU_TRY(cudaEventRecord(g->t1[s], g->ts));
        }
        if (transfer && s >= 1) FS_CU_TRY(cudaStreamWaitEvent(g->cs, g->t1[s - 1], 0));
        FS_CU_TRY(cudaEventRecord(g->c0[s], g->cs));
        if (td) FS_CU_TRY(cudaMemcpyAsync(rec_hold, tag, FS_RING_TAG * 4, cudaMemcpyDeviceToDevice, g->cs));
        const int before[2] = {parts[0], parts[1]};
        const bool skip_step = r->fault == 1 && s == P - 1;   /* test only */
        for (int a = 0; compute && !skip_step && a < S; a++)
            for (int b = 0; b < S; b++) {
                const int qb = ring_block(r, p, a), kb = ring_block(r, src, b);
                if (r->causal && kb > qb) continue;   /* every key after every query: skipped */
                fs_cuda_prefill pp;
                memset(&pp, 0, sizeof pp);
                pp.batch = 1;
                pp.n_q_heads = r->n_q_heads;
                pp.n_kv_heads = r->n_kv_heads;
                pp.n_q = pp.n_kv = (int32_t)c;
                pp.d = r->d;
                /* query i of block qb sits at (qb − kb)·c + i in key block kb's positions; at
                 * offset ≥ c every key is visible and the no-mask launch says the same faster */
                const long offset = (long)(qb - kb) * (long)c;
                pp.mask = r->causal && offset < (long)c ? FS_MASK_CAUSAL : FS_MASK_NONE;
                pp.offset = (int32_t)offset;
                pp.scale = r->scale;
                pp.dtype = r->dtype;
                const int i = a * g->kmax + parts[a]++;
                pp.lse = g->part_l + (size_t)i * rows_slot;
                pp.stream = g->cs;
                /* SMs are left to NCCL only in the steps that have a transfer beside them (not
                 * the last); computing alone does the same, so the two times compare */
                pp.max_blocks = r->reserve_sms > 0 && s < P - 1 ? g->sms - r->reserve_sms : 0;
                fs_status st = fs_cuda_prefill_run(&pp, r->version, (const char *)Q + 2 * a * q_slot,
                                                   k + 2 * b * kv_slot, v + 2 * b * kv_slot,
                                                   po + 2 * (size_t)i * q_slot, why, n);
                if (st != FS_OK) return st;
                pairs++;
            }
        if (td) {   /* fold the step's partials into the running state, one record a row */
            const int rows = S * (int)rows_slot, d = r->d;
            float *rec = td->rec + (size_t)s * rows * (FS_RING_REC_HEAD + 3 * d);
            const int2 r0 = make_int2(before[0], parts[0]), r1 = make_int2(before[1], parts[1]);
            const unsigned blocks = (unsigned)((rows + 127) / 128);
            if (r->dtype == FS_CUDA_BF16)
                ring_step_merge<__nv_bfloat16><<<blocks, 128, 0, g->cs>>>((const __nv_bfloat16 *)po, g->part_l, g->kmax,
                                                                         (long)q_slot, (int)rows_slot, S, d, r0, r1,
                                                                         td->runL, td->runO, rec);
            else
                ring_step_merge<__half><<<blocks, 128, 0, g->cs>>>((const __half *)po, g->part_l, g->kmax, (long)q_slot,
                                                                  (int)rows_slot, S, d, r0, r1, td->runL, td->runO, rec);
            FS_CU_LAUNCHED();
        }
        FS_CU_TRY(cudaEventRecord(g->c1[s], g->cs));
    }
    FS_CU_TRY(cudaEventRecord(g->merge0, g->cs));
    for (int a = 0; compute && a < S; a++) {
        merge_args m;
        memset(&m, 0, sizeof m);
        m.k = parts[a];
        for (int i = 0; i < parts[a]; i++) {
            m.O[i] = po + 2 * (size_t)(a * g->kmax + i) * q_slot;
            m.L[i] = g->part_l + (size_t)(a * g->kmax + i) * rows_slot;
        }
        if (m.k == 0) {   /* a ring of one GPU with the test fault: nothing to merge */
            if (why && n) snprintf(why, n, "ring: query slot %d met no key block", a);
            return FS_ERR_ARG;
        }
        const unsigned blocks = (unsigned)((rows_slot * 32 + 255) / 256);
        if (r->dtype == FS_CUDA_BF16)
            ring_merge<__nv_bfloat16><<<blocks, 256, 0, g->cs>>>(m, (long)rows_slot, r->d,
                                                                 (__nv_bfloat16 *)O + a * q_slot, L + a * rows_slot);
        else
            ring_merge<__half><<<blocks, 256, 0, g->cs>>>(m, (long)rows_slot, r->d, (__half *)O + a * q_slot,
                                                          L + a * rows_slot);
        FS_CU_LAUNCHED();
    }
    FS_CU_TRY(cudaEventRecord(g->merge1, g->cs));
    FS_CU_TRY(cudaStreamSynchronize(g->cs));
    FS_CU_TRY(cudaStreamSynchronize(g->ts));
    if (times) {
        memset(times, 0, sizeof *times);
        times->pairs = pairs;
        for (int s = 0; s < P; s++) {
            FS_CU_TRY(cudaEventElapsedTime(&times->step_ms[s], s ? g->c1[s - 1] : g->start, g->c1[s]));
            FS_CU_TRY(cudaEventElapsedTime(&times->compute_ms[s], g->c0[s], g->c1[s]));
            if (transfer && s < P - 1) {
                FS_CU_TRY(cudaEventElapsedTime(&times->comm_ms[s], g->t0[s], g->t1[s]));
                /* how long the transfer outlasted the step's compute: step s + 1 waited that long */
                float x = 0;
                if (compute) FS_CU_TRY(cudaEventElapsedTime(&x, g->c1[s], g->t1[s]));
                times->exposed_ms[s] = x > 0 ? x : 0;
            }
        }
        FS_CU_TRY(cudaEventElapsedTime(&times->merge_ms, g->merge0, g->merge1));
        FS_CU_TRY(cudaEventElapsedTime(&times->total_ms, g->start, g->merge1));
    }
    return FS_OK;
}

extern "C" fs_status fs_cuda_ring_run(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V, void *O,
                                      float *L, fs_ring_mode mode, fs_ring_times *times, char *why, size_t n)
{
    return ring_forward(g, Q, K, V, O, L, mode, times, NULL, why, n);
}

extern "C" void fs_ring_trace_free(fs_ring_trace *tr)
{
    if (!tr) return;
    free(tr->rec);
    tr->rec = NULL;
}

/* GPU p's own shard as a tag (cuda_ring.h: the GPU, its slots, rows a slot, each slot's first row). */
static void ring_own_tag(const fs_cuda_ring_dev *g, int32_t tag[FS_RING_TAG])
{
    const int S = fs_cuda_ring_slots(&g->r);
    tag[0] = g->p, tag[1] = S, tag[2] = fs_cuda_ring_slot_rows(&g->r);
    for (int a = 0; a < S; a++) tag[3 + a] = fs_cuda_ring_slot_start(&g->r, g->p, a);
}

static fs_status ring_trace_run(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V, void *O, float *L,
                                fs_ring_trace *tr, ring_tdev *td, char *why, size_t n)
{
    const fs_cuda_ring *r = &g->r;
    const int P = r->n_dev, S = fs_cuda_ring_slots(r), c = fs_cuda_ring_slot_rows(r);
    const long rows = (long)S * r->n_q_heads * c, per = FS_RING_REC_HEAD + 3 * r->d;
    tr->steps = P;
    tr->rows = (int32_t)rows;
    tr->d = r->d;
    tr->rec = (float *)calloc((size_t)P * rows * per, sizeof(float));
    if (!tr->rec) {
        if (why && n) snprintf(why, n, "ring trace: out of host memory");
        return FS_ERR_NOMEM;
    }
    td->tr = tr;
    FS_CU_TRY(cudaMalloc((void **)&td->tag, 3 * FS_RING_TAG * sizeof(int32_t)));
    FS_CU_TRY(cudaMalloc((void **)&td->recs, 3 * (size_t)P * FS_RING_TAG * sizeof(int32_t)));
    FS_CU_TRY(cudaMalloc((void **)&td->runL, rows * sizeof(float)));
    FS_CU_TRY(cudaMalloc((void **)&td->runO, rows * r->d * sizeof(float)));
    FS_CU_TRY(cudaMalloc((void **)&td->rec, (size_t)P * rows * per * sizeof(float)));
    /* our shard's tag; the buffers' tags poisoned (−1), so a receive that never landed shows */
    int32_t tags[3][FS_RING_TAG];
    memset(tags, 0xff, sizeof tags);
    ring_own_tag(g, tags[0]);
    FS_CU_TRY(cudaMemcpy(td->tag, tags, sizeof tags, cudaMemcpyHostToDevice));
    FS_CU_TRY(cudaMemset(td->recs, 0xff, 3 * (size_t)P * FS_RING_TAG * sizeof(int32_t)));
    FS_CU_TRY(cudaMemset(td->rec, 0xff, (size_t)P * rows * per * sizeof(float)));   /* NaN */
    ring_trace_init<<<64, 256>>>(td->runL, td->runO, rows, r->d);
    FS_CU_LAUNCHED();
    for (int s = 0; s < P; s++) tr->to[s] = tr->from[s] = -1, tr->sent_elems[s] = 0;
    fs_status st = ring_forward(g, Q, K, V, O, L, FS_RING_RUN_FULL, NULL, td, why, n);
    if (st != FS_OK) return st;
    int32_t recs[3][FS_RING_MAX_DEV][FS_RING_TAG];
    FS_CU_TRY(cudaMemcpy(recs, td->recs, 3 * (size_t)P * FS_RING_TAG * sizeof(int32_t), cudaMemcpyDeviceToHost));
    /* the device holds [3][P][FS_RING_TAG]: unpacked by P */
    const int32_t *flat = &recs[0][0][0];
    for (int s = 0; s < P; s++)
        for (int k = 0; k < FS_RING_TAG; k++) {
            tr->hold[s][k] = flat[(0 * P + s) * FS_RING_TAG + k];
            tr->sent[s][k] = flat[(1 * P + s) * FS_RING_TAG + k];
            tr->got[s][k] = flat[(2 * P + s) * FS_RING_TAG + k];
        }
    FS_CU_TRY(cudaMemcpy(tr->rec, td->rec, (size_t)P * rows * per * sizeof(float), cudaMemcpyDeviceToHost));
    return FS_OK;
}

extern "C" fs_status fs_cuda_ring_trace(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V, void *O,
                                        float *L, fs_ring_trace *tr, char *why, size_t n)
{
    memset(tr, 0, sizeof *tr);
    const fs_cuda_ring *r = &g->r;
    if (r->n > 4096 || (long)r->n_q_heads * r->n > 65536) {
        if (why && n) snprintf(why, n, "ring trace: lesson sizes only (n = %d ≤ 4096, heads · n = %ld ≤ 65536)", r->n,
                                (long)r->n_q_heads * r->n);
        return FS_ERR_SHAPE;
    }
    ring_tdev td;
    memset(&td, 0, sizeof td);
    const fs_status st = ring_trace_run(g, Q, K, V, O, L, tr, &td, why, n);
    cudaFree(td.tag);
    cudaFree(td.recs);
    cudaFree(td.runL);
    cudaFree(td.runO);
    cudaFree(td.rec);
    if (st != FS_OK) fs_ring_trace_free(tr);
    return st;
}

/* ---- the backward --------------------------------------------------------------------------
 *
 * On GPU p at step s (src = (p − s) mod P; acc = the float32 dK, dV of shard src, which sit in
 * buffer s mod 2 of dkv; at step 0 our own shard's, zeroed):
 *
 *     transfer stream:  send K, V held → p+1, receive p−1's → kv buffer (s+1) mod 2      (s < P−1)
 *                       [wait: step s's compute has finished adding into acc]
 *                       send acc → p+1, receive p−1's → dkv buffer (s+1) mod 2          (s < P−1)
 *     compute stream:   [wait: K, V of step s landed]
 *                       per visible pair (qb, kb): backward → dQᵢ, dKᵢ, dVᵢ (16-bit, one pair's)
 *                           dQ_acc[qb] += dQᵢ
 *                           [before the step's first use of acc: wait for acc to have landed]
 *                           acc[kb] += dKᵢ, dVᵢ
 *     last step:        the same, one group of KV heads after another, the groups alternating
 *                       between two compute streams (cs, cb: a group's first blocks start while
 *                       the previous group's last wave drains, so cutting the step costs no extra
 *                       tails); after each group its rows of acc are rounded to 16 bits (home) and
 *                       sent to p+1, whose home they are, while p−1 sends ours into dK, dV: the
 *                       hop home overlaps the next groups
 *     at the end:       dQ = dQ_acc rounded; [wait for the hops home]
 *
 * dK, dV of step s are needed at p+1 only for step s+1's first addition, which comes after that
 * step's first backward launch, so their transfer hides behind it. The backward kernels overwrite
 * their outputs at every call (fs_cuda_backward_run: dQ through its own float32 accumulator,
 * dK, dV from registers, all rounded to 16 bits), so the ring sums the pairs with ring_add in
 * float32: each pair's share is rounded once to 16 bits before it is added. */

/* acc += x, 4 elements a thread (x 16-bit; n a multiple of 4, both 8-byte aligned) */
template <typename T>
__global__ void ring_add(size_t n4, const T *__restrict__ x, float *__restrict__ acc)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        const uint2 raw = reinterpret_cast<const uint2 *>(x)[i];
        T v[4];
        memcpy(v, &raw, sizeof raw);
        float4 a = reinterpret_cast<float4 *>(acc)[i];
        a.x += (float)v[0];
        a.y += (float)v[1];
        a.z += (float)v[2];
        a.w += (float)v[3];
        reinterpret_cast<float4 *>(acc)[i] = a;
    }
}

/* y = acc rounded to the 16-bit type, 4 elements a thread */
template <typename T>
__global__ void ring_round(size_t n4, const float *__restrict__ acc, T *__restrict__ y)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        const float4 a = reinterpret_cast<const float4 *>(acc)[i];
        T v[4] = {(T)a.x, (T)a.y, (T)a.z, (T)a.w};
        uint2 raw;
        memcpy(&raw, v, sizeof raw);
        reinterpret_cast<uint2 *>(y)[i] = raw;
    }
}

/* *out = %globaltimer (ns): one thread, queued where the moment is to be read */
__global__ void ring_clock(unsigned long long *out)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    *out = t;
}

static unsigned ring_blocks(size_t n4) { return (unsigned)std::min<size_t>((n4 + 255) / 256, 4096); }

/* acc[0..count) += x[0..count) on stream st */
static fs_status ring_add_run(fs_cuda_dtype dt, size_t count, const void *x, float *acc, cudaStream_t st, char *why,
                              size_t n)
{
    const size_t n4 = count / 4;
    if (dt == FS_CUDA_BF16)
        ring_add<__nv_bfloat16><<<ring_blocks(n4), 256, 0, st>>>(n4, (const __nv_bfloat16 *)x, acc);
    else
        ring_add<__half><<<ring_blocks(n4), 256, 0, st>>>(n4, (const __half *)x, acc);
    FS_CU_LAUNCHED();
    return FS_OK;
}

/* y[0..count) = acc[0..count) rounded, on stream st */
static fs_status ring_round_run(fs_cuda_dtype dt, size_t count, const float *acc, void *y, cudaStream_t st,
                                char *why, size_t n)
{
    const size_t n4 = count / 4;
    if (dt == FS_CUDA_BF16)
        ring_round<__nv_bfloat16><<<ring_blocks(n4), 256, 0, st>>>(n4, acc, (__nv_bfloat16 *)y);
    else
        ring_round<__half><<<ring_blocks(n4), 256, 0, st>>>(n4, acc, (__half *)y);
    FS_CU_LAUNCHED();
    return FS_OK;
}

/* The backward's buffers and events, at its first call. */
static fs_status ring_bwd_alloc(fs_cuda_ring_dev *g, char *why, size_t n)
{
    if (g->bwd) return FS_OK;
    const fs_cuda_ring *r = &g->r;
    const int P = r->n_dev, S = fs_cuda_ring_slots(r);
    const size_t c = (size_t)fs_cuda_ring_slot_rows(r);
    const size_t q_slot = (size_t)r->n_q_heads * c * r->d, kv_slot = (size_t)r->n_kv_heads * c * r->d;
    for (int b = 0; b < (P > 1 ? 2 : 1); b++)
        for (int x = 0; x < 2; x++) FS_CU_TRY(cudaMalloc((void **)&g->dkv[b][x], S * kv_slot * sizeof(float)));
    FS_CU_TRY(cudaMalloc((void **)&g->dq_acc, S * q_slot * sizeof(float)));
    for (int i = 0; i < 2; i++) {
        FS_CU_TRY(cudaMalloc(&g->tq[i], q_slot * 2));
        FS_CU_TRY(cudaMalloc(&g->tk[i], kv_slot * 2));
        FS_CU_TRY(cudaMalloc(&g->tv[i], kv_slot * 2));
    }
    if (P > 1)
        for (int x = 0; x < 2; x++) FS_CU_TRY(cudaMalloc(&g->home[x], S * kv_slot * 2));
    fs_cuda_prefill pp;
    memset(&pp, 0, sizeof pp);
    pp.batch = 1;
    pp.n_q_heads = r->n_q_heads;
    pp.n_kv_heads = r->n_kv_heads;
    pp.n_q = pp.n_kv = (int32_t)c;
    pp.d = r->d;
    pp.dtype = r->dtype;
    for (int i = 0; i < 2; i++) FS_CU_TRY(cudaMalloc(&g->work[i], fs_cuda_backward_workspace(&pp)));
    int lo, hi;
    FS_CU_TRY(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    FS_CU_TRY(cudaStreamCreateWithPriority(&g->cb, cudaStreamNonBlocking, lo));
    for (int s = 0; s < P; s++) {
        cudaEvent_t *e[] = {&g->w0[s], &g->w1[s], &g->x0[s], &g->x1[s], &g->u0[s], &g->u1[s]};
        for (cudaEvent_t *x : e) FS_CU_TRY(cudaEventCreate(x));
    }
    for (int i = 0; i < RING_MAX_CHUNKS; i++) FS_CU_TRY(cudaEventCreateWithFlags(&g->hc[i], cudaEventDisableTiming));
    cudaEvent_t *one[] = {&g->h0, &g->h1, &g->cend, &g->done};
    for (cudaEvent_t *x : one) FS_CU_TRY(cudaEventCreate(x));
    FS_CU_TRY(cudaEventCreateWithFlags(&g->fork, cudaEventDisableTiming));
    FS_CU_TRY(cudaEventCreateWithFlags(&g->join, cudaEventDisableTiming));
    FS_CU_TRY(cudaMalloc((void **)&g->clk, 3 * sizeof(unsigned long long)));
    g->bwd = true;
    return FS_OK;
}

/* One NCCL group: each of the k buffers send[i] (count[i] elements of type t) to GPU p + 1, and
 * GPU p − 1's into recv[i]; with a trace, a tag beside them (tag → rtag). */
static fs_status ring_swap(fs_cuda_ring_dev *g, int k, const void *const *send, void *const *recv, const size_t *count,
                           ncclDataType_t t, const int32_t *tag, int32_t *rtag, char *why, size_t n)
{
    const int P = g->r.n_dev, next = (g->p + 1) % P, prev = (g->p + P - 1) % P;
    FS_NC_TRY(ncclGroupStart());
    for (int i = 0; i < k; i++) FS_NC_TRY(ncclSend(send[i], count[i], t, next, g->comm, g->ts));
    if (tag) FS_NC_TRY(ncclSend(tag, FS_RING_TAG, ncclInt32, next, g->comm, g->ts));
    for (int i = 0; i < k; i++) FS_NC_TRY(ncclRecv(recv[i], count[i], t, prev, g->comm, g->ts));
    if (tag) FS_NC_TRY(ncclRecv(rtag, FS_RING_TAG, ncclInt32, prev, g->comm, g->ts));
    FS_NC_TRY(ncclGroupEnd());
    return FS_OK;
}

/* With the backward's trace (lesson sizes), on the device: the tags (own; one per K, V buffer;
 * one per dK, dV buffer), the records of the tags per step, and the accumulators after each step. */
struct ring_btdev {
    fs_ring_btrace *tr;
    int32_t *tag;      /* [5][FS_RING_TAG]: own, K, V buffers 0 and 1, dK, dV buffers 0 and 1 */
    int32_t *recs;     /* [6][P][FS_RING_TAG]: hold, acc, sent_kv, sent_dkv, got_kv, got_dkv at step s */
    float *dq, *dk, *dv;   /* (P, rows, d), (P, keys, d), (P, keys, d) */
};

/* The backward (fs_cuda_ring_backward), with a trace when bt is not NULL (mode FULL then). */
static fs_status ring_backward(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V, const void *O,
                               const void *dO, const float *L, void *dQ, void *dK, void *dV, fs_ring_mode mode,
                               fs_ring_times *times, ring_btdev *bt, char *why, size_t n)
{
    const fs_cuda_ring *r = &g->r;
    const int P = r->n_dev, S = fs_cuda_ring_slots(r), p = g->p, Hkv = r->n_kv_heads, G = r->n_q_heads / Hkv;
    const int version = r->bwd_version > 0 ? r->bwd_version : 11;
    const int chunks = std::min(Hkv, std::min(RING_MAX_CHUNKS, r->home_chunks > 0 ? r->home_chunks : 4));
    const size_t c = (size_t)fs_cuda_ring_slot_rows(r), cd = c * r->d;
    const size_t q_slot = (size_t)r->n_q_heads * cd, kv_slot = (size_t)Hkv * cd, rows_slot = (size_t)r->n_q_heads * c;
    const bool compute = mode != FS_RING_RUN_COMM, transfer = mode != FS_RING_RUN_COMPUTE && P > 1;
    const ncclDataType_t t16 = r->dtype == FS_CUDA_BF16 ? ncclBfloat16 : ncclFloat16;
    fs_status st = ring_bwd_alloc(g, why, n);
    if (st != FS_OK) return st;
    int pairs = 0;
    bool waited_kv[FS_RING_MAX_DEV] = {false}, waited_acc[FS_RING_MAX_DEV] = {false};

    FS_CU_TRY(cudaEventRecord(g->ready, 0));   /* after the caller's work on the default stream */
    FS_CU_TRY(cudaStreamWaitEvent(g->cs, g->ready, 0));
    FS_CU_TRY(cudaEventRecord(g->start, g->cs));
    if (times) {   /* the GPUs' common clock at the start (its end stamps are below) */
        ring_clock<<<1, 1, 0, g->cs>>>(g->clk);
        FS_CU_LAUNCHED();
    }
    FS_CU_TRY(cudaStreamWaitEvent(g->ts, g->start, 0));
    if (compute) {
        FS_CU_TRY(cudaMemsetAsync(g->dq_acc, 0, S * q_slot * sizeof(float), g->cs));
        for (int x = 0; x < 2; x++) FS_CU_TRY(cudaMemsetAsync(g->dkv[0][x], 0, S * kv_slot * sizeof(float), g->cs));
    }
    for (int s = 0; s < P; s++) {
        const int src = (p - s + P) % P;
        const bool own = s == 0 || !transfer, last = s == P - 1;
        const char *k = (const char *)(own ? K : g->kv[s % 2][0]), *v = (const char *)(own ? V : g->kv[s % 2][1]);
        float *acc_k = g->dkv[transfer ? s % 2 : 0][0], *acc_v = g->dkv[transfer ? s % 2 : 0][1];
        /* trace only: the tags of the held K, V and of acc, and this step's records of them */
        int32_t *tag_kv = bt ? bt->tag + (own ? 0 : 1 + s % 2) * FS_RING_TAG : NULL;
        int32_t *tag_acc = bt ? bt->tag + (3 + s % 2) * FS_RING_TAG : NULL;
        auto brec = [&](int what) { return bt ? bt->recs + ((size_t)what * P + s) * FS_RING_TAG : nullptr; };
        if (transfer && !last) {
            /* K, V ahead; kv buffer (s+1) mod 2 was last read by step s − 1, which the transfer
             * stream waited for before step s − 1's dK, dV went out */
            FS_CU_TRY(cudaEventRecord(g->t0[s], g->ts));
            int32_t *rtag = bt ? bt->tag + (1 + (s + 1) % 2) * FS_RING_TAG : NULL;
            if (bt) {
                FS_CU_TRY(cudaMemcpyAsync(brec(2), tag_kv, FS_RING_TAG * 4, cudaMemcpyDeviceToDevice, g->ts));
                bt->tr->to[s] = (p + 1) % P, bt->tr->from[s] = (p + P - 1) % P;
                bt->tr->kv_elems[s] = (int64_t)(S * kv_slot);
            }
            st = ring_transfer(g, (p + 1) % P, (p + P - 1) % P, k, v, g->kv[(s + 1) % 2][0], g->kv[(s + 1) % 2][1],
                               (size_t)S * kv_slot, tag_kv, rtag, why, n);
            if (st != FS_OK) return st;
            if (bt) FS_CU_TRY(cudaMemcpyAsync(brec(4), rtag, FS_RING_TAG * 4, cudaMemcpyDeviceToDevice, g->ts));
            FS_CU_TRY(cudaEventRecord(g->t1[s], g->ts));
        }
        if (transfer && s >= 1 && compute) {   /* K, V of step s landed */
            FS_CU_TRY(cudaEventRecord(g->w0[s], g->cs));
            FS_CU_TRY(cudaStreamWaitEvent(g->cs, g->t1[s - 1], 0));
            FS_CU_TRY(cudaEventRecord(g->w1[s], g->cs));
            waited_kv[s] = true;
        }
        /* before the step's first use of acc on stream w (0: cs, 1: cb): acc (sent by p − 1 at step
         * s − 1) landed; the wait on cs is the one timed */
        bool waited_cb = false;
        auto acc_landed = [&](int w) -> fs_status {
            if (!transfer || s == 0) return FS_OK;
            if (w == 1) {
                if (!waited_cb) FS_CU_TRY(cudaStreamWaitEvent(g->cb, g->u1[s - 1], 0));
                waited_cb = true;
                return FS_OK;
            }
            if (waited_acc[s]) return FS_OK;
            FS_CU_TRY(cudaEventRecord(g->x0[s], g->cs));
            FS_CU_TRY(cudaStreamWaitEvent(g->cs, g->u1[s - 1], 0));
            FS_CU_TRY(cudaEventRecord(g->x1[s], g->cs));
            waited_acc[s] = true;
            return FS_OK;
        };
        FS_CU_TRY(cudaEventRecord(g->c0[s], g->cs));
        if (bt) FS_CU_TRY(cudaMemcpyAsync(brec(0), tag_kv, FS_RING_TAG * 4, cudaMemcpyDeviceToDevice, g->cs));
        if (last && compute) {   /* cb starts where cs is: K, V landed, dQ_acc zeroed */
            FS_CU_TRY(cudaEventRecord(g->fork, g->cs));
            FS_CU_TRY(cudaStreamWaitEvent(g->cb, g->fork, 0));
        }
        const bool skip_step = r->fault == 2 && last;   /* test only */
        const int nch = last ? chunks : 1;
        for (int ch = 0; ch < nch; ch++) {
            /* KV heads [h0, h1) and their query heads [h0·G, h1·G) */
            const int h0 = Hkv * ch / nch, h1 = Hkv * (ch + 1) / nch, hn = h1 - h0;
            const int w = last ? ch % 2 : 0;   /* the compute stream of this group */
            cudaStream_t cs = w ? g->cb : g->cs;
            for (int a = 0; compute && !skip_step && a < S; a++)
                for (int b = 0; b < S; b++) {
                    const int qb = ring_block(r, p, a), kb = ring_block(r, src, b);
                    if (r->causal && kb > qb) continue;   /* every key after every query: skipped */
                    fs_cuda_prefill pp;
                    memset(&pp, 0, sizeof pp);
                    pp.batch = 1;
                    pp.n_q_heads = hn * G;
                    pp.n_kv_heads = hn;
                    pp.n_q = pp.n_kv = (int32_t)c;
                    pp.d = r->d;
                    const long offset = (long)(qb - kb) * (long)c;   /* as the forward's */
                    pp.mask = r->causal && offset < (long)c ? FS_MASK_CAUSAL : FS_MASK_NONE;
                    pp.offset = (int32_t)offset;
                    pp.scale = r->scale;
                    pp.dtype = r->dtype;
                    pp.lse = (float *)L + a * rows_slot + (size_t)h0 * G * c;
                    pp.stream = cs;
                    const size_t qo = a * q_slot + (size_t)h0 * G * cd, ko = b * kv_slot + (size_t)h0 * cd;
                    st = fs_cuda_backward_run(&pp, version, (const char *)Q + 2 * qo, k + 2 * ko, v + 2 * ko,
                                              (const char *)O + 2 * qo, (const char *)dO + 2 * qo, g->tq[w], g->tk[w],
                                              g->tv[w], g->work[w], why, n);
                    if (st != FS_OK) return st;
                    pairs++;
                    const size_t nq = (size_t)hn * G * cd, nk = (size_t)hn * cd;
                    if ((st = ring_add_run(r->dtype, nq, g->tq[w], g->dq_acc + qo, cs, why, n)) != FS_OK) return st;
                    if ((st = acc_landed(w)) != FS_OK) return st;
                    if ((st = ring_add_run(r->dtype, nk, g->tk[w], acc_k + ko, cs, why, n)) != FS_OK) return st;
                    if ((st = ring_add_run(r->dtype, nk, g->tv[w], acc_v + ko, cs, why, n)) != FS_OK) return st;
                }
            if (!last) continue;
            /* this group of heads is done: round its dK, dV (home buffers, or dK, dV themselves
             * when nothing travels) and send them home */
            void *send[4], *recv[4];
            size_t count[4];
            int kk = 0;
            if (compute && (st = acc_landed(w)) != FS_OK) return st;
            for (int b = 0; b < S; b++) {
                const size_t ko = b * kv_slot + (size_t)h0 * cd, nk = (size_t)hn * cd;
                char *yk = (char *)(transfer ? g->home[0] : dK) + 2 * ko, *yv = (char *)(transfer ? g->home[1] : dV) + 2 * ko;
                if (compute) {
                    if ((st = ring_round_run(r->dtype, nk, acc_k + ko, yk, cs, why, n)) != FS_OK) return st;
                    if ((st = ring_round_run(r->dtype, nk, acc_v + ko, yv, cs, why, n)) != FS_OK) return st;
                }
                send[kk] = yk, recv[kk] = (char *)dK + 2 * ko, count[kk++] = nk;
                send[kk] = yv, recv[kk] = (char *)dV + 2 * ko, count[kk++] = nk;
            }
            if (transfer) {
                FS_CU_TRY(cudaEventRecord(g->hc[ch], cs));
                if (compute) FS_CU_TRY(cudaStreamWaitEvent(g->ts, g->hc[ch], 0));
                if (ch == 0) FS_CU_TRY(cudaEventRecord(g->h0, g->ts));   /* the first hop home starts */
                /* trace: the tag of acc goes with the first group, and lands in the records */
                const bool tagged = bt && ch == 0;
                if (tagged) {
                    FS_CU_TRY(cudaMemcpyAsync(brec(3), tag_acc, FS_RING_TAG * 4, cudaMemcpyDeviceToDevice, g->ts));
                    bt->tr->to[s] = (p + 1) % P, bt->tr->from[s] = (p + P - 1) % P;
                }
                if (bt)
                    for (int i = 0; i < kk; i += 2) bt->tr->dkv_elems[s] += (int64_t)count[i];
                if ((st = ring_swap(g, kk, send, recv, count, t16, tagged ? tag_acc : NULL, tagged ? brec(5) : NULL,
                                    why, n)) != FS_OK)
                    return st;
            }
        }
        if (last && compute) {   /* cs waits for cb's groups */
            FS_CU_TRY(cudaEventRecord(g->join, g->cb));
            FS_CU_TRY(cudaStreamWaitEvent(g->cs, g->join, 0));
        }
        if (bt) {   /* after the step: its tag of acc, dQ_acc and acc (acc landed: waited for above) */
            const fs_ring_btrace *tr = bt->tr;
            const size_t qn = (size_t)tr->rows * r->d, kn = (size_t)tr->keys * r->d;
            if ((st = acc_landed(0)) != FS_OK) return st;
            FS_CU_TRY(cudaMemcpyAsync(brec(1), tag_acc, FS_RING_TAG * 4, cudaMemcpyDeviceToDevice, g->cs));
            FS_CU_TRY(cudaMemcpyAsync(bt->dq + s * qn, g->dq_acc, qn * 4, cudaMemcpyDeviceToDevice, g->cs));
            FS_CU_TRY(cudaMemcpyAsync(bt->dk + s * kn, acc_k, kn * 4, cudaMemcpyDeviceToDevice, g->cs));
            FS_CU_TRY(cudaMemcpyAsync(bt->dv + s * kn, acc_v, kn * 4, cudaMemcpyDeviceToDevice, g->cs));
        }
        FS_CU_TRY(cudaEventRecord(g->c1[s], g->cs));
        if (transfer && !last) {
            /* dK, dV of the held shard, added to in step s, follow K, V to p + 1 */
            if (compute) FS_CU_TRY(cudaStreamWaitEvent(g->ts, g->c1[s], 0));
            FS_CU_TRY(cudaEventRecord(g->u0[s], g->ts));
            if (r->fault == 4) {   /* test only: the sums so far are lost */
                FS_CU_TRY(cudaMemsetAsync(acc_k, 0, S * kv_slot * sizeof(float), g->ts));
                FS_CU_TRY(cudaMemsetAsync(acc_v, 0, S * kv_slot * sizeof(float), g->ts));
            }
            int32_t *rtag = bt ? bt->tag + (3 + (s + 1) % 2) * FS_RING_TAG : NULL;
            if (bt) {
                FS_CU_TRY(cudaMemcpyAsync(brec(3), tag_acc, FS_RING_TAG * 4, cudaMemcpyDeviceToDevice, g->ts));
                bt->tr->dkv_elems[s] = (int64_t)(S * kv_slot);
            }
            const void *send[2] = {acc_k, acc_v};
            void *recv[2] = {g->dkv[(s + 1) % 2][0], g->dkv[(s + 1) % 2][1]};
            const size_t count[2] = {S * kv_slot, S * kv_slot};
            if ((st = ring_swap(g, 2, send, recv, count, ncclFloat32, tag_acc, rtag, why, n)) != FS_OK) return st;
            if (bt) FS_CU_TRY(cudaMemcpyAsync(brec(5), rtag, FS_RING_TAG * 4, cudaMemcpyDeviceToDevice, g->ts));
            FS_CU_TRY(cudaEventRecord(g->u1[s], g->ts));
        }
    }
    if (compute && (st = ring_round_run(r->dtype, S * q_slot, g->dq_acc, dQ, g->cs, why, n)) != FS_OK) return st;
    if (times) {
        ring_clock<<<1, 1, 0, g->cs>>>(g->clk + 1);
        FS_CU_LAUNCHED();
    }
    FS_CU_TRY(cudaEventRecord(g->cend, g->cs));
    if (transfer) {   /* the hops home */
        FS_CU_TRY(cudaEventRecord(g->h1, g->ts));
        FS_CU_TRY(cudaStreamWaitEvent(g->cs, g->h1, 0));
    }
    if (times) {
        ring_clock<<<1, 1, 0, g->cs>>>(g->clk + 2);
        FS_CU_LAUNCHED();
    }
    FS_CU_TRY(cudaEventRecord(g->done, g->cs));
    FS_CU_TRY(cudaStreamSynchronize(g->cs));
    FS_CU_TRY(cudaStreamSynchronize(g->cb));
    FS_CU_TRY(cudaStreamSynchronize(g->ts));
    if (times) {
        memset(times, 0, sizeof *times);
        times->pairs = pairs;
        for (int s = 0; s < P; s++) {
            FS_CU_TRY(cudaEventElapsedTime(&times->step_ms[s], s ? g->c1[s - 1] : g->start, g->c1[s]));
            FS_CU_TRY(cudaEventElapsedTime(&times->compute_ms[s], g->c0[s], g->c1[s]));
            float x = 0, y = 0;
            if (transfer && s < P - 1) {
                FS_CU_TRY(cudaEventElapsedTime(&x, g->t0[s], g->t1[s]));
                FS_CU_TRY(cudaEventElapsedTime(&y, g->u0[s], g->u1[s]));
            } else if (transfer) {
                FS_CU_TRY(cudaEventElapsedTime(&x, g->h0, g->h1));
            }
            times->comm_ms[s] = x + y;
            x = y = 0;
            if (waited_kv[s]) FS_CU_TRY(cudaEventElapsedTime(&x, g->w0[s], g->w1[s]));
            if (waited_acc[s]) FS_CU_TRY(cudaEventElapsedTime(&y, g->x0[s], g->x1[s]));
            times->exposed_ms[s] = x + y;
        }
        FS_CU_TRY(cudaEventElapsedTime(&times->merge_ms, g->c1[P - 1], g->cend));
        FS_CU_TRY(cudaEventElapsedTime(&times->home_ms, g->cend, g->done));
        FS_CU_TRY(cudaEventElapsedTime(&times->total_ms, g->start, g->done));
        FS_CU_TRY(cudaMemcpy(times->clock_ns, g->clk, sizeof times->clock_ns, cudaMemcpyDeviceToHost));
    }
    return FS_OK;
}

extern "C" fs_status fs_cuda_ring_backward(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V,
                                           const void *O, const void *dO, const float *L, void *dQ, void *dK, void *dV,
                                           fs_ring_mode mode, fs_ring_times *times, char *why, size_t n)
{
    return ring_backward(g, Q, K, V, O, dO, L, dQ, dK, dV, mode, times, NULL, why, n);
}

extern "C" void fs_ring_btrace_free(fs_ring_btrace *tr)
{
    if (!tr) return;
    free(tr->dq);
    free(tr->dk);
    free(tr->dv);
    tr->dq = tr->dk = tr->dv = NULL;
}

static fs_status ring_btrace_run(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V, const void *O,
                                 const void *dO, const float *L, void *dQ, void *dK, void *dV, fs_ring_btrace *tr,
                                 ring_btdev *bt, char *why, size_t n)
{
    const fs_cuda_ring *r = &g->r;
    const int P = r->n_dev, S = fs_cuda_ring_slots(r), c = fs_cuda_ring_slot_rows(r);
    tr->steps = P;
    tr->rows = S * r->n_q_heads * c;
    tr->keys = S * r->n_kv_heads * c;
    tr->d = r->d;
    const size_t qn = (size_t)P * tr->rows * r->d, kn = (size_t)P * tr->keys * r->d;
    tr->dq = (float *)malloc(qn * sizeof(float));
    tr->dk = (float *)malloc(kn * sizeof(float));
    tr->dv = (float *)malloc(kn * sizeof(float));
    if (!tr->dq || !tr->dk || !tr->dv) {
        if (why && n) snprintf(why, n, "ring backward trace: out of host memory");
        return FS_ERR_NOMEM;
    }
    bt->tr = tr;
    FS_CU_TRY(cudaMalloc((void **)&bt->tag, 5 * FS_RING_TAG * sizeof(int32_t)));
    FS_CU_TRY(cudaMalloc((void **)&bt->recs, 6 * (size_t)P * FS_RING_TAG * sizeof(int32_t)));
    FS_CU_TRY(cudaMalloc((void **)&bt->dq, qn * sizeof(float)));
    FS_CU_TRY(cudaMalloc((void **)&bt->dk, kn * sizeof(float)));
    FS_CU_TRY(cudaMalloc((void **)&bt->dv, kn * sizeof(float)));
    /* our shard's tag, for its K, V and (at step 0) its dK, dV; the other buffers' tags and every
     * record poisoned (−1, NaN), so a receive or a copy that never happened shows */
    int32_t tags[5][FS_RING_TAG];
    memset(tags, 0xff, sizeof tags);
    ring_own_tag(g, tags[0]);
    memcpy(tags[3], tags[0], sizeof tags[0]);
    FS_CU_TRY(cudaMemcpy(bt->tag, tags, sizeof tags, cudaMemcpyHostToDevice));
    FS_CU_TRY(cudaMemset(bt->recs, 0xff, 6 * (size_t)P * FS_RING_TAG * sizeof(int32_t)));
    FS_CU_TRY(cudaMemset(bt->dq, 0xff, qn * sizeof(float)));
    FS_CU_TRY(cudaMemset(bt->dk, 0xff, kn * sizeof(float)));
    FS_CU_TRY(cudaMemset(bt->dv, 0xff, kn * sizeof(float)));
    for (int s = 0; s < P; s++) tr->to[s] = tr->from[s] = -1;
    fs_status st = ring_backward(g, Q, K, V, O, dO, L, dQ, dK, dV, FS_RING_RUN_FULL, NULL, bt, why, n);
    if (st != FS_OK) return st;
    std::vector<int32_t> recs(6 * (size_t)P * FS_RING_TAG);
    FS_CU_TRY(cudaMemcpy(recs.data(), bt->recs, recs.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    int32_t(*dst[6])[FS_RING_TAG] = {tr->hold, tr->acc, tr->sent_kv, tr->sent_dkv, tr->got_kv, tr->got_dkv};
    for (int w = 0; w < 6; w++)
        for (int s = 0; s < P; s++) memcpy(dst[w][s], &recs[((size_t)w * P + s) * FS_RING_TAG], FS_RING_TAG * 4);
    FS_CU_TRY(cudaMemcpy(tr->dq, bt->dq, qn * sizeof(float), cudaMemcpyDeviceToHost));
    FS_CU_TRY(cudaMemcpy(tr->dk, bt->dk, kn * sizeof(float), cudaMemcpyDeviceToHost));
    FS_CU_TRY(cudaMemcpy(tr->dv, bt->dv, kn * sizeof(float), cudaMemcpyDeviceToHost));
    return FS_OK;
}

extern "C" fs_status fs_cuda_ring_backward_trace(fs_cuda_ring_dev *g, const void *Q, const void *K, const void *V,
                                                 const void *O, const void *dO, const float *L, void *dQ, void *dK,
                                                 void *dV, fs_ring_btrace *tr, char *why, size_t n)
{
    memset(tr, 0, sizeof *tr);
    const fs_cuda_ring *r = &g->r;
    if (r->n > 4096 || (long)r->n_q_heads * r->n > 65536) {
        if (why && n)
            snprintf(why, n, "ring backward trace: lesson sizes only (n = %d ≤ 4096, heads · n = %ld ≤ 65536)", r->n,
                     (long)r->n_q_heads * r->n);
        return FS_ERR_SHAPE;
    }
    ring_btdev bt;
    memset(&bt, 0, sizeof bt);
    const fs_status st = ring_btrace_run(g, Q, K, V, O, dO, L, dQ, dK, dV, tr, &bt, why, n);
    cudaFree(bt.tag);
    cudaFree(bt.recs);
    cudaFree(bt.dq);
    cudaFree(bt.dk);
    cudaFree(bt.dv);
    if (st != FS_OK) fs_ring_btrace_free(tr);
    return st;
}
