/* cuda_trace_bwd.cu: the backward pass in float32 on the GPU, traced (flashstep trace --backward
 * --backend cuda), and the same code emulated on the CPU for machines without a GPU.
 *
 * The straightforward port of src/engine/backward.c, in three kernels:
 *   1. fwd_row, one thread per (query head, query row): the forward by online softmax over the KV
 *      tiles (the run's dropout on P V, ℓ summing P before dropout), then O, m, ℓ, L = m + ln ℓ
 *      and D = rowsum(dO ∘ O).
 *   2. dq_row, one thread per (query head, query row): for each KV tile in order, the tile's class
 *      and, when visited, the row's S, P = exp(S − L), dP, dS and Z (dropped visible cells), and
 *      its dQ contribution scale · dS K and dQ after it.
 *   3. dkv_key, one thread per (KV head, key): for each query head of the group and each Q tile
 *      in order, the key's dK contribution scale · dSᵀ Q and dV contribution Pdᵀ dO over the
 *      tile's rows, and dK, dV after it. It recomputes S, P, dP, dS cell by cell with the same
 *      function as dq_row (FlashAttention 2 splits its backward the same way).
 * A row meets its KV tiles in the same order in both loop orders of the engine, and a key its
 * (query head, Q tile) pairs too, so the running dQ, dK, dV are the same in both; one set of
 * kernels serves both orders and the host only emits the records in the chosen order as the
 * engine's events (LSE, DELTA, BTILE or BSKIP, BROW, BKEY, GRAD; backward.h says which fields).
 *
 * The per-thread bodies are __host__ __device__: fs_cuda_trace_emulated runs them by loops on
 * the CPU (no device touched) and converts the records with the same code, so the bookkeeping is
 * checked against the engine where there is nvcc and no GPU (test_cuda --host).
 *
 * Data flow: fs_run (float64) -> float32 copies (device or host) -> fwd_row -> dq_row, dkv_key
 * -> records -> fs_event array, compared with fs_run_exec's trace in tests/cuda.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "kernels/cuda/cuda_common.cuh"

extern "C" {
#include "engine/attn.h"
#include "engine/backward.h"
#include "engine/dropout.h"
#include "engine/trace.h"
}

/* Per (query head, row, KV tile) record of dq_row: class, skip reason, visible keys, then
 * S, P, dP, dS, Z (slots each; Z 1 where a visible cell is dropped), dQ's block, dQ after (d each). */
enum { RR_CLS = 0, RR_WHY, RR_VISIBLE, RR_VEC };
/* Per (query head, Q tile, key) record of dkv_key: dK's block, dK after (d each), dV's block,
 * dV after (d_v each). */

/* Lesson size: the records of one run stay under this many floats (256 MiB), as the forward's. */
#define FS_CUDA_TRACE_BWD_MAX_FLOATS (1L << 26)
/* Bounds on the run's numbers (scores, dP, gradients) beyond which float32 is refused. */
#define FS_CUDA_F32_LIMIT 1e30

struct bwd_args {
    int n_q_heads, n_kv_heads, n_q, n_kv, d, d_v;
    int Bq, Bk, n_qt, n_kt, slots;  /* slots = min(Bk, n_kv): a record's row length */
    float scale, softcap;
    bool is_tree;
    fs_cu_mask mask;
    bool drop;                      /* the run's dropout is on (p may be 0) */
    uint32_t key0, key1;            /* Philox key: the seed's two words */
    unsigned long long T;           /* dropped ⟺ Philox word < T = ⌈p · 2^32⌉ */
    float ks;                       /* 1/(1 − p) */
    const float *Q, *K, *V, *dO;    /* (Hq, n_q, d), (Hkv, n_kv, d), (Hkv, n_kv, d_v), (Hq, n_q, d_v) */
    float *O, *m, *l, *L, *D;       /* (Hq, n_q, d_v); (Hq, n_q) each */
    float *dQ, *dK, *dV;            /* (Hq, n_q, d), (Hkv, n_kv, d), (Hkv, n_kv, d_v) */
    float *rrec;                    /* (Hq, n_q, n_kt, rrec_len) */
    float *krec;                    /* (Hq, n_qt, n_kv, krec_len): key j of query head h's KV head */
    int rrec_len, krec_len;
};

__host__ __device__ static inline int imin(int x, int y) { return x < y ? x : y; }

/* Philox4x32-10 as dropout.c computes it (the same counters, key and threshold): is cell
 * (row i, key j) of query head h dropped? (batch 0) */
__host__ __device__ static bool dropped_at(const bwd_args &a, int h, int i, int j)
{
    uint32_t c[4] = {0u, (uint32_t)h, (uint32_t)i, (uint32_t)j >> 2}, k0 = a.key0, k1 = a.key1;
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[0] = n0;
        c[1] = (uint32_t)p1;
        c[2] = n2;
        c[3] = (uint32_t)p0;
    }
    return (unsigned long long)c[j & 3] < a.T;
}

/* s = scale · q·k, soft-capped (fs_attn_score), for query row i of head h and key j of kvh. */
__host__ __device__ static float score(const bwd_args &a, int h, int kvh, int i, int j)
{
    const float *q = a.Q + ((size_t)h * a.n_q + i) * a.d, *k = a.K + ((size_t)kvh * a.n_kv + j) * a.d;
    float dot = 0;
    for (int c = 0; c < a.d; c++) dot = fmaf(q[c], k[c], dot);
    float x = dot * a.scale;
    if (a.softcap > 0) x = a.softcap * tanhf(x / a.softcap);
    return x;
}

/* The soft-cap's factor on a score's gradient, 1 − (s/cap)² (1 without a cap). */
__host__ __device__ static float cap_slope(const bwd_args &a, float s)
{
    if (a.softcap <= 0) return 1.f;
    float t = s / a.softcap;
    return 1.f - t * t;
}

/* One cell of a visited tile, recomputed as backward.c's visit() does. */
struct bwd_cell {
    float S, P, dP, dS;
    bool vis, dropped;
};

__host__ __device__ static bwd_cell cell(const bwd_args &a, int h, int kvh, int i, int j, bool full, float L, float D)
{
    bwd_cell x;
    x.vis = full || fs_cu_visible(a.mask, i, j);
    x.S = x.vis ? score(a, h, kvh, i, j) : -INFINITY;
    x.P = x.vis && L > -INFINITY ? expf(x.S - L) : 0.f;
    const float *dout = a.dO + ((size_t)h * a.n_q + i) * a.d_v, *v = a.V + ((size_t)kvh * a.n_kv + j) * a.d_v;
    float dp = 0;
    for (int c = 0; c < a.d_v; c++) dp = fmaf(dout[c], v[c], dp);
    x.dropped = a.drop && dropped_at(a, h, i, j);
    if (a.drop) dp = x.dropped ? 0.f : dp * a.ks;   /* dP = Z ∘ (dO Vᵀ) / (1 − p) */
    x.dP = dp;
    x.dS = x.P == 0 ? 0.f : x.P * (dp - D);         /* no −0 where masked */
    return x;
}

/* Kernel 1's thread gid = (h, i): the forward (unnormalized form: its O equals the normalized
 * form's up to rounding, and the backward reads only O and L), then O, m, ℓ, L, D. */
__host__ __device__ static void fwd_row(const bwd_args &a, int gid)
{
    const int h = gid / a.n_q, i = gid % a.n_q;
    const int kvh = h / (a.n_q_heads / a.n_kv_heads);
    const int r0 = i / a.Bq * a.Bq, r1 = imin(r0 + a.Bq, a.n_q);
    float *o = a.O + (size_t)gid * a.d_v;
    float m = -INFINITY, l = 0;
    for (int c = 0; c < a.d_v; c++) o[c] = 0;
    for (int kt = 0; kt < a.n_kt; kt++) {
        const int c0 = kt * a.Bk, c1 = imin(c0 + a.Bk, a.n_kv);
        int why, cls = fs_cu_classify(a.mask, a.is_tree, r0, r1, c0, c1, &why);
        if (cls == FS_TILE_SKIPPED) continue;
        float m_blk = -INFINITY;
        for (int j = c0; j < c1; j++)
            if (cls == FS_TILE_FULL || fs_cu_visible(a.mask, i, j)) m_blk = fmaxf(m_blk, score(a, h, kvh, i, j));
        const float m_new = fmaxf(m, m_blk);
        if (m_new == -INFINITY) continue;   /* nothing visible yet: (−∞, 0, 0) stays */
        const float alpha = expf(m - m_new);
        for (int c = 0; c < a.d_v; c++) o[c] *= alpha;
        float sum = 0;
        for (int j = c0; j < c1; j++) {
            if (cls != FS_TILE_FULL && !fs_cu_visible(a.mask, i, j)) continue;
            float p = expf(score(a, h, kvh, i, j) - m_new);
            sum += p;                                        /* ℓ: P before dropout */
            if (a.drop && dropped_at(a, h, i, j)) continue;
            if (a.drop) p *= a.ks;
            const float *v = a.V + ((size_t)kvh * a.n_kv + j) * a.d_v;
            for (int c = 0; c < a.d_v; c++) o[c] = fmaf(p, v[c], o[c]);
        }
        l = alpha * l + sum;
        m = m_new;
    }
    const float *dout = a.dO + (size_t)gid * a.d_v;
    float D = 0;
    for (int c = 0; c < a.d_v; c++) {
        o[c] = l > 0 ? o[c] / l : 0.f;   /* a row that saw nothing stays 0 */
        D = fmaf(dout[c], o[c], D);
    }
    a.m[gid] = m;
    a.l[gid] = l;
    a.L[gid] = l > 0 ? m + logf(l) : -INFINITY;
    a.D[gid] = D;
}

/* Kernel 2's thread gid = (h, i): the row's part of every KV tile, and its dQ. */
__host__ __device__ static void dq_row(const bwd_args &a, int gid)
{
    const int h = gid / a.n_q, i = gid % a.n_q;
    const int kvh = h / (a.n_q_heads / a.n_kv_heads);
    const int r0 = i / a.Bq * a.Bq, r1 = imin(r0 + a.Bq, a.n_q);
    const float L = a.L[gid], D = a.D[gid];
    float *dq = a.dQ + (size_t)gid * a.d;
    for (int c = 0; c < a.d; c++) dq[c] = 0;
    for (int kt = 0; kt < a.n_kt; kt++) {
        const int c0 = kt * a.Bk, c1 = imin(c0 + a.Bk, a.n_kv), nc = c1 - c0;
        float *rec = a.rrec + ((size_t)gid * a.n_kt + kt) * a.rrec_len;
        float *S = rec + RR_VEC, *P = S + a.slots, *dP = P + a.slots, *dS = dP + a.slots, *Z = dS + a.slots;
        float *dq_blk = Z + a.slots, *dq_new = dq_blk + a.d;
        int why, cls = fs_cu_classify(a.mask, a.is_tree, r0, r1, c0, c1, &why);
        rec[RR_CLS] = (float)cls;
        rec[RR_WHY] = (float)why;
        if (cls == FS_TILE_SKIPPED) continue;   /* costs nothing */
        int visible = 0;
        for (int j = 0; j < nc; j++) {
            bwd_cell x = cell(a, h, kvh, i, c0 + j, cls == FS_TILE_FULL, L, D);
            S[j] = x.S;
            P[j] = x.P;
            dP[j] = x.dP;
            dS[j] = x.dS;
            Z[j] = x.vis && x.dropped ? 1.f : 0.f;
            visible += x.vis;
        }
        /* dQ_i += scale · dS K (a masked or underflowed weight contributes nothing) */
        for (int c = 0; c < a.d; c++) dq_blk[c] = 0;
        for (int j = 0; j < nc; j++) {
            if (P[j] == 0) continue;
            const float g = a.scale * dS[j] * cap_slope(a, S[j]);
            const float *k = a.K + ((size_t)kvh * a.n_kv + c0 + j) * a.d;
            for (int c = 0; c < a.d; c++) dq_blk[c] = fmaf(g, k[c], dq_blk[c]);
        }
        for (int c = 0; c < a.d; c++) dq_new[c] = dq[c] += dq_blk[c];
        rec[RR_VISIBLE] = (float)visible;
    }
}

/* Kernel 3's thread gid = (kvh, j): key j's part of every pair it belongs to, and its dK, dV. */
__host__ __device__ static void dkv_key(const bwd_args &a, int gid)
{
    const int kvh = gid / a.n_kv, j = gid % a.n_kv, g = a.n_q_heads / a.n_kv_heads;
    const int c0 = j / a.Bk * a.Bk, c1 = imin(c0 + a.Bk, a.n_kv);
    float *dk = a.dK + (size_t)gid * a.d, *dv = a.dV + (size_t)gid * a.d_v;
    for (int c = 0; c < a.d; c++) dk[c] = 0;
    for (int c = 0; c < a.d_v; c++) dv[c] = 0;
    for (int h = kvh * g; h < (kvh + 1) * g; h++)
        for (int qt = 0; qt < a.n_qt; qt++) {
            const int r0 = qt * a.Bq, r1 = imin(r0 + a.Bq, a.n_q);
            int why, cls = fs_cu_classify(a.mask, a.is_tree, r0, r1, c0, c1, &why);
            if (cls == FS_TILE_SKIPPED) continue;
            float *dk_blk = a.krec + (((size_t)h * a.n_qt + qt) * a.n_kv + j) * a.krec_len;
            float *dk_new = dk_blk + a.d, *dv_blk = dk_new + a.d, *dv_new = dv_blk + a.d_v;
            for (int c = 0; c < a.d; c++) dk_blk[c] = 0;
            for (int c = 0; c < a.d_v; c++) dv_blk[c] = 0;
            /* dK_j += scale · Σ_i dS_ij q_i;  dV_j += Σ_i Pd_ij dO_i, rows in order */
            for (int i = r0; i < r1; i++) {
                const size_t row = (size_t)h * a.n_q + i;
                bwd_cell x = cell(a, h, kvh, i, j, cls == FS_TILE_FULL, a.L[row], a.D[row]);
                if (x.P == 0) continue;
                const float gs = a.scale * x.dS * cap_slope(a, x.S);
                const float *q = a.Q + row * a.d, *dout = a.dO + row * a.d_v;
                for (int c = 0; c < a.d; c++) dk_blk[c] = fmaf(gs, q[c], dk_blk[c]);
                if (x.dropped) continue;   /* dropped: no dV (its dS still reaches dQ and dK) */
                const float pd = a.drop ? x.P * a.ks : x.P;   /* the weight the forward used */
                for (int c = 0; c < a.d_v; c++) dv_blk[c] = fmaf(pd, dout[c], dv_blk[c]);
            }
            for (int c = 0; c < a.d; c++) dk_new[c] = dk[c] += dk_blk[c];
            for (int c = 0; c < a.d_v; c++) dv_new[c] = dv[c] += dv_blk[c];
        }
}

__global__ void bwd_fwd_kernel(bwd_args a)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid < a.n_q_heads * a.n_q) fwd_row(a, gid);
}

__global__ void bwd_dq_kernel(bwd_args a)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid < a.n_q_heads * a.n_q) dq_row(a, gid);
}

__global__ void bwd_dkv_kernel(bwd_args a)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid < a.n_kv_heads * a.n_kv) dkv_key(a, gid);
}

/* ---- host side: buffers on the device or, emulated, in host memory ------------------------ */

/* The buffers of one run, freed together: device memory, or host vectors when emulating. */
struct run_bufs {
    bool host;
    std::vector<std::vector<float>> hf;
    std::vector<std::vector<uint64_t>> hb;
    std::vector<void *> dev;
    ~run_bufs() { for (void *x : dev) cudaFree(x); }
};

static fs_status say(fs_status st, char *why, size_t n, const char *msg)
{
    if (why && n) snprintf(why, n, "%s", msg);
    return st;
}

/* A float buffer of count numbers: the float32 rounding of x when given, else NaN everywhere
 * (so that a number the kernels did not write shows). */
static fs_status buf(run_bufs &b, size_t count, const double *x, float **dst, char *why, size_t n)
{
    std::vector<float> f(count ? count : 1, NAN);
    for (size_t i = 0; x && i < count; i++) f[i] = (float)x[i];
    if (b.host) {
        b.hf.push_back(std::move(f));
        *dst = b.hf.back().data();
        return FS_OK;
    }
    FS_CU_TRY(cudaMalloc((void **)dst, sizeof(float) * f.size()));
    b.dev.push_back(*dst);
    FS_CU_TRY(cudaMemcpy(*dst, f.data(), sizeof(float) * f.size(), cudaMemcpyHostToDevice));
    return FS_OK;
}

/* count floats of a buffer back into out. */
static fs_status fetch(const run_bufs &b, const float *src, size_t count, std::vector<float> &out, char *why,
                       size_t n)
{
    out.resize(count);
    if (b.host) memcpy(out.data(), src, sizeof(float) * count);
    else FS_CU_TRY(cudaMemcpy(out.data(), src, sizeof(float) * count, cudaMemcpyDeviceToHost));
    return FS_OK;
}

#define FS_TRY_ST(x)                  \
    do {                              \
        fs_status st_ = (x);          \
        if (st_ != FS_OK) return st_; \
    } while (0)

/* What the host keeps of a run: every buffer fetched. */
struct bwd_out {
    std::vector<float> O, m, l, L, D, dQ, dK, dV, dO, rrec, krec;
};

/* float32 holds the run's numbers? The backward's bounds (fs_backward_check_range) and the score's,
 * against FS_CUDA_F32_LIMIT. */
static fs_status check_f32(const fs_attn *at, const double *dO, char *why, size_t n)
{
    const size_t rows = (size_t)at->n_q_heads * at->n_q, keys = (size_t)at->n_kv_heads * at->n_kv;
    double A = dO ? 0 : 1, Vi = 0, Qi = 0, Ki = 0;
    for (size_t x = 0; dO && x < rows * at->d_v; x++) A = fmax(A, fabs(dO[x]));
    for (size_t x = 0; x < keys * at->d_v; x++) Vi = fmax(Vi, fabs(at->V[x]));
    for (size_t x = 0; x < rows * at->d; x++) Qi = fmax(Qi, fabs(at->Q[x]));
    for (size_t x = 0; x < keys * at->d; x++) Ki = fmax(Ki, fabs(at->K[x]));
    const double g = (double)(at->n_q_heads / at->n_kv_heads), sc = fabs(at->scale), B = 2.0 * at->d_v * A * Vi;
    const double bound[] = {sc * at->d * Qi * Ki, B, g * at->n_q * A, sc * B * Ki, sc * g * at->n_q * B * Qi};
    for (double x : bound)
        if (!(x <= FS_CUDA_F32_LIMIT))
            return say(FS_ERR_RANGE, why, n,
                       "the inputs are too large for the CUDA trace mode's float32 (a score, dP or gradient "
                       "could pass 1e30): scale them down, or trace with the engine");
    return FS_OK;
}

/* Runs the three kernels (or their emulation) and fetches everything into out. */
static fs_status bwd_run(const fs_run *r, bool host, bwd_out &out, char *why, size_t n)
{
    const fs_attn *at = &r->attn;
    const fs_tiling *t = &r->tiling;
    const size_t rows = (size_t)at->n_q_heads * at->n_q, keys = (size_t)at->n_kv_heads * at->n_kv;
    bwd_args a;
    memset(&a, 0, sizeof a);
    a.n_q_heads = at->n_q_heads;
    a.n_kv_heads = at->n_kv_heads;
    a.n_q = at->n_q;
    a.n_kv = at->n_kv;
    a.d = at->d;
    a.d_v = at->d_v;
    a.Bq = t->Bq;
    a.Bk = t->Bk;
    a.n_qt = (at->n_q + t->Bq - 1) / t->Bq;
    a.n_kt = (at->n_kv + t->Bk - 1) / t->Bk;
    a.slots = t->Bk < at->n_kv ? t->Bk : at->n_kv;
    a.rrec_len = RR_VEC + 5 * a.slots + 2 * at->d;
    a.krec_len = 2 * at->d + 2 * at->d_v;
    const double n_rrec = (double)rows * a.n_kt * a.rrec_len;
    const double n_krec = (double)at->n_q_heads * a.n_qt * at->n_kv * a.krec_len;
    if (n_rrec + n_krec > (double)FS_CUDA_TRACE_BWD_MAX_FLOATS)
        return say(FS_ERR_SHAPE, why, n, "problem too large for the CUDA trace mode (lesson sizes only)");
    a.scale = (float)at->scale;
    a.softcap = (float)at->softcap;
    a.is_tree = at->mask.is_tree;
    a.mask.kind = at->mask.kind;
    a.mask.offset = (int)fs_mask_query_pos(&at->mask, at->n_q, at->n_kv, 0);
    a.mask.window = at->mask.window;
    a.mask.words = at->mask.words_per_row;
    a.drop = t->dropout.on;
    a.key0 = (uint32_t)(t->dropout.seed & 0xFFFFFFFFu);
    a.key1 = (uint32_t)(t->dropout.seed >> 32);
    a.T = fs_dropout_threshold(t->dropout.p);
    a.ks = (float)fs_dropout_keep_scale(t->dropout.p);

    std::vector<double> ones;
    const double *dO = r->dO;
    if (!dO) {   /* dO = 1: the gradient of sum(O) */
        ones.assign(rows * at->d_v, 1.0);
        dO = ones.data();
    }
    run_bufs b;
    b.host = host;
    float *Q, *K, *V, *dOf;
    FS_TRY_ST(buf(b, rows * at->d, at->Q, &Q, why, n));
    FS_TRY_ST(buf(b, keys * at->d, at->K, &K, why, n));
    FS_TRY_ST(buf(b, keys * at->d_v, at->V, &V, why, n));
    FS_TRY_ST(buf(b, rows * at->d_v, dO, &dOf, why, n));
    a.Q = Q;
    a.K = K;
    a.V = V;
    a.dO = dOf;
    FS_TRY_ST(buf(b, rows * at->d_v, NULL, &a.O, why, n));
    FS_TRY_ST(buf(b, rows, NULL, &a.m, why, n));
    FS_TRY_ST(buf(b, rows, NULL, &a.l, why, n));
    FS_TRY_ST(buf(b, rows, NULL, &a.L, why, n));
    FS_TRY_ST(buf(b, rows, NULL, &a.D, why, n));
    FS_TRY_ST(buf(b, rows * at->d, NULL, &a.dQ, why, n));
    FS_TRY_ST(buf(b, keys * at->d, NULL, &a.dK, why, n));
    FS_TRY_ST(buf(b, keys * at->d_v, NULL, &a.dV, why, n));
    FS_TRY_ST(buf(b, (size_t)n_rrec, NULL, &a.rrec, why, n));
    FS_TRY_ST(buf(b, (size_t)n_krec, NULL, &a.krec, why, n));
    if (at->mask.kind == FS_MASK_BITS) {
        const size_t words = (size_t)at->n_q * at->mask.words_per_row;
        if (host) {
            b.hb.emplace_back(at->mask.bits, at->mask.bits + words);
            a.mask.bits = b.hb.back().data();
        } else {
            uint64_t *bits;
            FS_CU_TRY(cudaMalloc((void **)&bits, sizeof(uint64_t) * words));
            b.dev.push_back(bits);
            FS_CU_TRY(cudaMemcpy(bits, at->mask.bits, sizeof(uint64_t) * words, cudaMemcpyHostToDevice));
            a.mask.bits = bits;
        }
    }

    if (host) {   /* the same threads, one after another; kernel by kernel as on the device */
        for (int gid = 0; gid < (int)rows; gid++) fwd_row(a, gid);
        for (int gid = 0; gid < (int)rows; gid++) dq_row(a, gid);
        for (int gid = 0; gid < (int)keys; gid++) dkv_key(a, gid);
    } else {
        const int threads = 128, qb = (int)((rows + threads - 1) / threads), kb = (int)((keys + threads - 1) / threads);
        bwd_fwd_kernel<<<qb, threads>>>(a);
        FS_CU_LAUNCHED();
        bwd_dq_kernel<<<qb, threads>>>(a);
        FS_CU_LAUNCHED();
        bwd_dkv_kernel<<<kb, threads>>>(a);
        FS_CU_LAUNCHED();
        FS_CU_TRY(cudaDeviceSynchronize());
    }
    FS_TRY_ST(fetch(b, a.O, rows * at->d_v, out.O, why, n));
    FS_TRY_ST(fetch(b, a.m, rows, out.m, why, n));
    FS_TRY_ST(fetch(b, a.l, rows, out.l, why, n));
    FS_TRY_ST(fetch(b, a.L, rows, out.L, why, n));
    FS_TRY_ST(fetch(b, a.D, rows, out.D, why, n));
    FS_TRY_ST(fetch(b, a.dQ, rows * at->d, out.dQ, why, n));
    FS_TRY_ST(fetch(b, a.dK, keys * at->d, out.dK, why, n));
    FS_TRY_ST(fetch(b, a.dV, keys * at->d_v, out.dV, why, n));
    FS_TRY_ST(fetch(b, dOf, rows * at->d_v, out.dO, why, n));
    FS_TRY_ST(fetch(b, a.rrec, (size_t)n_rrec, out.rrec, why, n));
    FS_TRY_ST(fetch(b, a.krec, (size_t)n_krec, out.krec, why, n));
    return FS_OK;
}

/* ---- records -> the engine's events ------------------------------------------------------- */

/* The vectors of one event, pushed to the pool as doubles; offsets into *off[k]. */
static bool push_vecs(fs_trace *tr, fs_event *e, int64_t *off[], const float *v[], const int32_t len[], int count)
{
    std::vector<double> x;
    for (int k = 0; k < count; k++) {
        x.assign(v[k], v[k] + len[k]);
        if ((*off[k] = fs_trace_vec(tr, x.data(), len[k])) < 0) return false;
    }
    return fs_trace_push(tr, e) != NULL;
}

struct emitter {
    const fs_run *r;
    const bwd_out &o;
    fs_trace *tr;
    int n_qt, n_kt, slots, rrec_len, krec_len;
    std::vector<float> dq_prev, dk_prev, dv_prev;   /* the running gradients as emitted so far */
};

/* The events of pair (h, qt, kt): BTILE or BSKIP, then BROW per row and BKEY per key. */
static fs_status emit_pair(emitter &em, int h, int qt, int kt)
{
    const fs_attn *at = &em.r->attn;
    const fs_tiling *t = &em.r->tiling;
    fs_trace *tr = em.tr;
    const int kvh = fs_attn_kv_head(at, h), d = at->d, d_v = at->d_v;
    const int r0 = qt * t->Bq, r1 = r0 + t->Bq < at->n_q ? r0 + t->Bq : at->n_q;
    const int c0 = kt * t->Bk, c1 = c0 + t->Bk < at->n_kv ? c0 + t->Bk : at->n_kv, nc = c1 - c0;
    /* offsets in a row record's vectors: S at 0, then P, dP, dS, Z, dQ's block, dQ after */
    const int P_ = em.slots, dP_ = 2 * em.slots, dS_ = 3 * em.slots, Z_ = 4 * em.slots, dqb_ = 5 * em.slots;
    auto rrec = [&](int i) { return em.o.rrec.data() + (((size_t)h * at->n_q + i) * em.n_kt + kt) * em.rrec_len; };
    /* The class of the pair as the GPU saw it (every row of the tile wrote the same). */
    const fs_tile_class cls = (fs_tile_class)(int)rrec(r0)[RR_CLS];
    fs_event te = fs_event_pair(cls == FS_TILE_SKIPPED ? FS_EV_BSKIP : FS_EV_BTILE, h, kvh, qt, kt, r0, r1, c0, c1, cls);
    te.reason = (fs_skip_reason)(int)rrec(r0)[RR_WHY];
    if (t->dropout.on) {   /* the dropped visible cells, as the GPU decided them */
        std::vector<double> pairs(1, 0.0);
        pairs.clear();
        for (int i = r0; cls != FS_TILE_SKIPPED && i < r1; i++)
            for (int j = 0; j < nc; j++)
                if (rrec(i)[RR_VEC + Z_ + j] != 0) {
                    pairs.push_back(i);
                    pairs.push_back(c0 + j);
                }
        te.dropout = t->dropout.p;
        te.n_drop = (int32_t)(pairs.size() / 2);
        double none = 0;
        if ((te.drop = fs_trace_vec(tr, pairs.empty() ? &none : pairs.data(), (int32_t)pairs.size())) < 0)
            return FS_ERR_NOMEM;
    }
    if (!fs_trace_push(tr, &te)) return fs_trace_error(tr);
    if (cls == FS_TILE_SKIPPED) return FS_OK;

    for (int i = r0; i < r1; i++) {
        const float *rec = rrec(i), *vec = rec + RR_VEC;
        const size_t row = (size_t)h * at->n_q + i;
        float *dq_prev = em.dq_prev.data() + row * d;
        fs_event e = fs_event_in_pair(FS_EV_BROW, &te);
        e.row = i;
        e.visible = (int32_t)rec[RR_VISIBLE];
        e.x = em.o.L[row];
        e.m_new = em.o.D[row];
        e.n_s = nc;
        e.n_o = d;
        int64_t *off[] = {&e.s_row, &e.p_row, &e.dp_row, &e.ds_row, &e.o_old, &e.o_blk, &e.o_new};
        const float *v[] = {vec, vec + P_, vec + dP_, vec + dS_, dq_prev, vec + dqb_, vec + dqb_ + d};
        const int32_t len[] = {nc, nc, nc, nc, d, d, d};
        if (!push_vecs(tr, &e, off, v, len, 7)) return fs_trace_error(tr);
        memcpy(dq_prev, vec + dqb_ + d, sizeof(float) * d);
    }
    for (int j = c0; j < c1; j++) {
        const float *rec = em.o.krec.data() + (((size_t)h * em.n_qt + qt) * at->n_kv + j) * em.krec_len;
        const size_t key = (size_t)kvh * at->n_kv + j;
        float *dk_prev = em.dk_prev.data() + key * d, *dv_prev = em.dv_prev.data() + key * d_v;
        fs_event e = fs_event_in_pair(FS_EV_BKEY, &te);
        e.row = j;
        e.n_o = d;
        e.n_g = d_v;
        int64_t *off[] = {&e.o_old, &e.o_blk, &e.o_new, &e.g_old, &e.g_blk, &e.g_new};
        const float *v[] = {dk_prev, rec, rec + d, dv_prev, rec + 2 * d, rec + 2 * d + d_v};
        const int32_t len[] = {d, d, d, d_v, d_v, d_v};
        if (!push_vecs(tr, &e, off, v, len, 6)) return fs_trace_error(tr);
        memcpy(dk_prev, rec + d, sizeof(float) * d);
        memcpy(dv_prev, rec + 2 * d + d_v, sizeof(float) * d_v);
    }
    return FS_OK;
}

/* Every event of the run, in the engine's order (backward.h). */
static fs_status emit(const fs_run *r, const bwd_out &o, fs_trace *tr)
{
    const fs_attn *at = &r->attn;
    const fs_tiling *t = &r->tiling;
    const int n_q = at->n_q, n_kv = at->n_kv, d = at->d, d_v = at->d_v;
    const size_t rows = (size_t)at->n_q_heads * n_q, keys = (size_t)at->n_kv_heads * n_kv;
    emitter em = {r, o, tr, (n_q + t->Bq - 1) / t->Bq, (n_kv + t->Bk - 1) / t->Bk, t->Bk < n_kv ? t->Bk : n_kv, 0, 0,
                  std::vector<float>(rows * d, 0.f), std::vector<float>(keys * d, 0.f),
                  std::vector<float>(keys * d_v, 0.f)};
    em.rrec_len = RR_VEC + 5 * em.slots + 2 * d;
    em.krec_len = 2 * d + 2 * d_v;
    fs_status st = FS_OK;
    for (size_t x = 0; x < rows && st == FS_OK; x++) {   /* L as the forward kept it */
        fs_event e = fs_event_blank(FS_EV_LSE);
        e.head = (int32_t)(x / (size_t)n_q);
        e.kv_head = fs_attn_kv_head(at, e.head);
        e.row = (int32_t)(x % (size_t)n_q);
        e.x = o.L[x];
        if (!fs_trace_push(tr, &e)) st = fs_trace_error(tr);
    }
    for (size_t x = 0; x < rows && st == FS_OK; x++) {   /* D = rowsum(dO ∘ O) */
        fs_event e = fs_event_blank(FS_EV_DELTA);
        e.head = (int32_t)(x / (size_t)n_q);
        e.kv_head = fs_attn_kv_head(at, e.head);
        e.row = (int32_t)(x % (size_t)n_q);
        e.x = o.D[x];
        e.n_o = d_v;
        int64_t *off[] = {&e.o_blk, &e.o_new};
        const float *v[] = {o.dO.data() + x * d_v, o.O.data() + x * d_v};
        const int32_t len[] = {d_v, d_v};
        if (!push_vecs(tr, &e, off, v, len, 2)) st = fs_trace_error(tr);
    }
    const int g = at->n_q_heads / at->n_kv_heads;
    if (t->order == FS_ORDER_KV_OUTER) {
        for (int kvh = 0; kvh < at->n_kv_heads && st == FS_OK; kvh++)
            for (int kt = 0; kt < em.n_kt && st == FS_OK; kt++)
                for (int h = kvh * g; h < (kvh + 1) * g && st == FS_OK; h++)
                    for (int qt = 0; qt < em.n_qt && st == FS_OK; qt++) st = emit_pair(em, h, qt, kt);
    } else {
        for (int h = 0; h < at->n_q_heads && st == FS_OK; h++)
            for (int qt = 0; qt < em.n_qt && st == FS_OK; qt++)
                for (int kt = 0; kt < em.n_kt && st == FS_OK; kt++) st = emit_pair(em, h, qt, kt);
    }
    /* The final rows: dQ per query head, then dK and dV per KV head. */
    struct { int tensor; const std::vector<float> *v; size_t n_rows; int len, per_head; } grads[] = {
        {FS_GRAD_DQ, &o.dQ, rows, d, n_q}, {FS_GRAD_DK, &o.dK, keys, d, n_kv}, {FS_GRAD_DV, &o.dV, keys, d_v, n_kv}};
    for (auto &gr : grads)
        for (size_t x = 0; x < gr.n_rows && st == FS_OK; x++) {
            fs_event e = fs_event_blank(FS_EV_GRAD);
            e.tensor = gr.tensor;
            e.head = (int32_t)(x / (size_t)gr.per_head);
            e.kv_head = gr.tensor == FS_GRAD_DQ ? fs_attn_kv_head(at, e.head) : e.head;
            e.row = (int32_t)(x % (size_t)gr.per_head);
            e.n_o = gr.len;
            int64_t *off[] = {&e.o_new};
            const float *v[] = {gr.v->data() + x * gr.len};
            const int32_t len[] = {gr.len};
            if (!push_vecs(tr, &e, off, v, len, 1)) st = fs_trace_error(tr);
        }
    return st;
}

/* double copies of n floats, freshly allocated (NULL when out of memory). */
static double *widen(const std::vector<float> &v)
{
    double *x = (double *)malloc(sizeof(double) * (v.size() ? v.size() : 1));
    for (size_t i = 0; x && i < v.size(); i++) x[i] = v[i];
    return x;
}

/* fs_cuda_trace's FS_ALGO_BACKWARD (host false: on the device), and fs_cuda_trace_emulated. */
fs_status fs_cu_trace_backward(const fs_run *r, fs_result *res, fs_trace *tr, bool host, char *why, size_t n)
{
    if (res) memset(res, 0, sizeof *res);
    if (why && n) why[0] = '\0';
    if (!r || !res) return say(FS_ERR_ARG, why, n, "fs_cuda_trace: no run or no result");
    if (r->algo != FS_ALGO_BACKWARD)
        return say(FS_ERR_ARG, why, n, "the CPU emulation of the CUDA trace covers the backward pass only");
    if (!host && !fs_cuda_available(why, n)) return FS_ERR_ARG;
    const fs_attn *at = &r->attn;
    const fs_tiling *t = &r->tiling;
    fs_status st = fs_attn_check(at);
    if (st != FS_OK) return say(st, why, n, fs_status_str(st));
    if (!at->Q || !at->K || at->S)
        return say(FS_ERR_ARG, why, n, "the backward pass needs Q and K (given scores have no dQ, dK)");
    if (t->Bq < 1 || t->Bk < 1) return say(FS_ERR_TILE, why, n, fs_status_str(FS_ERR_TILE));
    if (t->pitfall != FS_PITFALL_NONE)
        return say(FS_ERR_ARG, why, n, "the pitfall variants run on the engine only, not on CUDA");
    if ((unsigned)t->order > FS_ORDER_KV_OUTER) return say(FS_ERR_ARG, why, n, fs_status_str(FS_ERR_ARG));
    if (t->dropout.on && fs_dropout_check(t->dropout.p) != FS_OK)
        return say(FS_ERR_ARG, why, n, "the dropout probability must be in [0, 1)");
    if ((st = fs_backward_check_range(at, r->dO, why, n)) != FS_OK) return st;
    if ((st = check_f32(at, r->dO, why, n)) != FS_OK) return st;

    bwd_out o;
    if ((st = bwd_run(r, host, o, why, n)) != FS_OK) return st;
    res->n_heads = at->n_q_heads;
    res->n_rows = at->n_q;
    res->n_cols = at->d_v;
    res->O = widen(o.O);
    res->m = widen(o.m);
    res->l = widen(o.l);
    res->L = widen(o.L);
    res->D = widen(o.D);
    res->dQ = widen(o.dQ);
    res->dK = widen(o.dK);
    res->dV = widen(o.dV);
    if (!res->O || !res->m || !res->l || !res->L || !res->D || !res->dQ || !res->dK || !res->dV) st = FS_ERR_NOMEM;
    else if (tr) st = emit(r, o, tr);
    if (st != FS_OK) {
        fs_result_free(res);
        return say(st, why, n, fs_status_str(st));
    }
    return FS_OK;
}

extern "C" fs_status fs_cuda_trace_emulated(const fs_run *r, fs_result *res, fs_trace *tr, char *why, size_t n)
{
    return fs_cu_trace_backward(r, res, tr, true, why, n);
}
