/* cuda_trace.cu: the float32 reference kernel, traced, and the backend's availability check.
 *
 * This is the straightforward port of the lesson's tiled algorithm (src/engine/tiled.c) to the
 * GPU: one thread owns one query row of one head and walks the KV tiles in order, folding each
 * visited tile into its running (m, ℓ, o) exactly as row_update does. On lesson-sized inputs it
 * also writes, for every (row, KV tile), the tile's class and the row's statistics after the
 * tile (m_old, m_blk, m_new, ℓ_old, ℓ_blk, ℓ_new, α, β), its scores s and weights P̃, and its o.
 * The host then turns those records into the engine's TILE / SKIP / ROW / OUT events, in the
 * engine's loop order (Q outer or KV outer: a row meets its KV tiles in the same order in both,
 * so one kernel serves both orders and only the emission order differs), with the plain-C code
 * the WebGPU trace uses too (src/kernels/records/records.h, which also fixes the record layout).
 *
 * Data flow: fs_run (float64, host) -> float32 copies on the device -> trace_kernel -> records
 * -> fs_records_events -> fs_event array (host), compared event by event with fs_run_exec's
 * trace in tests/cuda.
 * fs_cuda_trace hands the backward pass (FS_ALGO_BACKWARD) to cuda_trace_bwd.cu.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "kernels/cuda/cuda_common.cuh"

extern "C" {
#include "engine/attn.h"
#include "engine/trace.h"
#include "kernels/records/records.h"
}

/* Lesson size: the records of one run stay under this many floats (256 MiB). */
#define FS_CUDA_TRACE_MAX_FLOATS (1L << 26)

struct trace_args {
    int n_q_heads, n_kv_heads, n_q, n_kv, d, d_v;
    int Bq, Bk, n_kt, rec_len;
    float scale, softcap;
    bool exp2, normalized, is_tree;
    fs_cu_mask mask;
    const float *Q, *K, *V, *S;  /* S may be NULL: then Q, K */
    float *O;                    /* (n_q_heads, n_q, d_v): the running o, then the output */
    float *m, *l;                /* (n_q_heads, n_q) */
    float *rec;                  /* (n_q_heads, n_q, n_kt, rec_len) */
};

__device__ static float fs_ex(float x, bool e2) { return e2 ? exp2f(x) : expf(x); }

/* One thread per (head h, query row i). Shapes: see trace_args. */
__global__ void trace_kernel(trace_args a)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= a.n_q_heads * a.n_q) return;
    const int h = gid / a.n_q, i = gid % a.n_q;
    const int kvh = h / (a.n_q_heads / a.n_kv_heads);
    const int qt = i / a.Bq, r0 = qt * a.Bq, r1 = min(r0 + a.Bq, a.n_q);
    const float *q = a.Q ? a.Q + ((size_t)h * a.n_q + i) * a.d : NULL;
    const float *K = a.K ? a.K + (size_t)kvh * a.n_kv * a.d : NULL;
    const float *V = a.V + (size_t)kvh * a.n_kv * a.d_v;
    float *o = a.O + ((size_t)h * a.n_q + i) * a.d_v;
    float m = -INFINITY, l = 0;
    for (int c = 0; c < a.d_v; c++) o[c] = 0;

    for (int kt = 0; kt < a.n_kt; kt++) {
        const int c0 = kt * a.Bk, c1 = min(c0 + a.Bk, a.n_kv), nc = c1 - c0;
        float *rec = a.rec + (((size_t)h * a.n_q + i) * a.n_kt + kt) * a.rec_len;
        float *s = rec + FS_REC_STATS, *P = s + a.Bk, *o_rec = P + a.Bk;
        int why, cls = fs_cu_classify(a.mask, a.is_tree, r0, r1, c0, c1, &why);
        rec[FS_REC_CLS] = (float)cls;
        rec[FS_REC_WHY] = (float)why;
        if (cls == FS_TILE_SKIPPED) continue;   /* costs nothing */

        /* s = scale · q·k (or the given score), soft-capped, masked only in partial tiles */
        float m_blk = -INFINITY;
        int visible = 0;
        for (int j = 0; j < nc; j++) {
            float x;
            if (cls == FS_TILE_PARTIAL && !fs_cu_visible(a.mask, i, c0 + j)) {
                x = -INFINITY;
            } else {
                if (a.S) {
                    x = a.S[((size_t)h * a.n_q + i) * a.n_kv + c0 + j];
                    if (x != -INFINITY) x *= a.scale;
                } else {
                    const float *k = K + (size_t)(c0 + j) * a.d;
                    float dot = 0;
                    for (int c = 0; c < a.d; c++) dot = fmaf(q[c], k[c], dot);
                    x = dot * a.scale;
                }
                if (a.softcap > 0 && x != -INFINITY) x = a.softcap * tanhf(x / a.softcap);
                if (a.exp2) x *= FS_LOG2E;
            }
            s[j] = x;
            if (x != -INFINITY) {
                visible++;
                m_blk = fmaxf(m_blk, x);
            }
        }
        /* P̃ = exp(s − m_blk), ℓ_blk = Σ P̃ (0 where masked, all 0 when nothing is visible) */
        float l_blk = 0;
        for (int j = 0; j < nc; j++) {
            P[j] = (m_blk == -INFINITY || s[j] == -INFINITY) ? 0.f : fs_ex(s[j] - m_blk, a.exp2);
            l_blk += P[j];
        }
        const float m_old = m, l_old = l, m_new = fmaxf(m_old, m_blk);
        float alpha = 1, beta = 0, l_new = l_old;
        if (m_new != -INFINITY) {
            alpha = fs_ex(m_old - m_new, a.exp2);   /* 0 on the first visible key */
            beta = fs_ex(m_blk - m_new, a.exp2);    /* 0 when the tile shows nothing */
            if (a.normalized) {
                /* o_new = (α ℓ_old o_old + β P̃ V) / ℓ_new */
                l_new = alpha * l_old + beta * l_blk;
                for (int c = 0; c < a.d_v; c++) {
                    float pv = 0;
                    for (int j = 0; j < nc; j++)
                        if (P[j] != 0) pv = fmaf(P[j], V[(size_t)(c0 + j) * a.d_v + c], pv);
                    o[c] = (alpha * l_old * o[c] + beta * pv) / l_new;
                }
            } else {
                /* P = exp(s − m_new);  ℓ_new = α ℓ_old + Σ P;  o_new = α o_old + P V */
                float sum = 0;
                for (int j = 0; j < nc; j++)
                    if (s[j] != -INFINITY) sum += fs_ex(s[j] - m_new, a.exp2);
                for (int c = 0; c < a.d_v; c++) {
                    float pv = 0;
                    for (int j = 0; j < nc; j++)
                        if (s[j] != -INFINITY)
                            pv = fmaf(fs_ex(s[j] - m_new, a.exp2), V[(size_t)(c0 + j) * a.d_v + c], pv);
                    o[c] = alpha * o[c] + pv;
                }
                l_new = alpha * l_old + sum;
            }
        }
        m = m_new;
        l = l_new;
        rec[FS_REC_VISIBLE] = (float)visible;
        rec[FS_REC_M_OLD] = m_old;
        rec[FS_REC_M_BLK] = m_blk;
        rec[FS_REC_M_NEW] = m_new;
        rec[FS_REC_L_OLD] = l_old;
        rec[FS_REC_L_BLK] = l_blk;
        rec[FS_REC_L_NEW] = l_new;
        rec[FS_REC_ALPHA] = alpha;
        rec[FS_REC_BETA] = beta;
        for (int c = 0; c < a.d_v; c++) o_rec[c] = o[c];
    }
    /* The unnormalized form divides by ℓ once, at the end (a row that saw nothing stays 0). */
    if (!a.normalized)
        for (int c = 0; c < a.d_v; c++) o[c] = l > 0 ? o[c] / l : 0.f;
    a.m[(size_t)h * a.n_q + i] = m;
    a.l[(size_t)h * a.n_q + i] = l;
}

extern "C" bool fs_cuda_available(char *why, size_t n)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorInsufficientDriver) {
        if (why && n)
            snprintf(why, n, "no usable CUDA driver: none is installed, or it is older than the CUDA %d.%d "
                             "runtime this program was built with", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
        return false;
    }
    if (e != cudaSuccess) {
        if (why && n) snprintf(why, n, "no usable CUDA device: %s", cudaGetErrorString(e));
        return false;
    }
    if (count < 1) {
        if (why && n) snprintf(why, n, "no CUDA device found");
        return false;
    }
    if (why && n) why[0] = '\0';
    return true;
}

/* Device buffers of one traced run, freed together. */
struct dev_bufs {
    std::vector<void *> p;
    ~dev_bufs() { for (void *x : p) cudaFree(x); }
};

static fs_status upload(dev_bufs &b, const double *x, size_t count, float **dst, char *why, size_t n)
{
    *dst = NULL;
    if (!x) return FS_OK;
    std::vector<float> f(count);
    for (size_t i = 0; i < count; i++) f[i] = (float)x[i];
    FS_CU_TRY(cudaMalloc((void **)dst, sizeof(float) * (count ? count : 1)));
    b.p.push_back(*dst);
    FS_CU_TRY(cudaMemcpy(*dst, f.data(), sizeof(float) * count, cudaMemcpyHostToDevice));
    return FS_OK;
}

#define FS_TRY_ST(x)                       \
    do {                                   \
        fs_status st_ = (x);               \
        if (st_ != FS_OK) return st_;      \
    } while (0)

static fs_status say(fs_status st, char *why, size_t n, const char *msg)
{
    if (why && n) snprintf(why, n, "%s", msg);
    return st;
}

/* What the kernel wrote, copied to the host: the records, O and each row's final m and ℓ. */
struct host_records {
    std::vector<float> rec, O, m, l;
};

/* Runs the kernel and fills res; what it wrote goes to out (host). */
static fs_status trace_run(const fs_attn *at, const fs_tiling *t, fs_result *res, host_records &out,
                           char *why, size_t n)
{
    const int Bk_slots = fs_records_slots(at, t);
    const int n_kt = fs_records_n_kt(at, t);
    const int rec_len = (int)fs_records_len(at, t);
    const size_t rows = (size_t)at->n_q_heads * at->n_q;
    if ((double)rows * n_kt * rec_len > (double)FS_CUDA_TRACE_MAX_FLOATS)
        return say(FS_ERR_SHAPE, why, n, "problem too large for the CUDA trace mode (lesson sizes only)");

    dev_bufs b;
    trace_args a;
    memset(&a, 0, sizeof a);
    a.n_q_heads = at->n_q_heads;
    a.n_kv_heads = at->n_kv_heads;
    a.n_q = at->n_q;
    a.n_kv = at->n_kv;
    a.d = at->d;
    a.d_v = at->d_v;
    a.Bq = t->Bq;
    a.Bk = Bk_slots;  /* = t->Bk, or n_kv when one tile holds every key */
    a.n_kt = n_kt;
    a.rec_len = rec_len;
    a.scale = (float)at->scale;
    a.softcap = (float)at->softcap;
    a.exp2 = t->exp2;
    a.normalized = t->form == FS_FORM_NORMALIZED;
    a.is_tree = at->mask.is_tree;
    a.mask.kind = at->mask.kind;
    a.mask.offset = (int)fs_mask_query_pos(&at->mask, at->n_q, at->n_kv, 0);
    a.mask.window = at->mask.window;
    a.mask.words = at->mask.words_per_row;

    float *Q, *K, *V, *S;
    FS_TRY_ST(upload(b, at->S ? NULL : at->Q, (size_t)at->n_q_heads * at->n_q * at->d, &Q, why, n));
    FS_TRY_ST(upload(b, at->S ? NULL : at->K, (size_t)at->n_kv_heads * at->n_kv * at->d, &K, why, n));
    FS_TRY_ST(upload(b, at->V, (size_t)at->n_kv_heads * at->n_kv * at->d_v, &V, why, n));
    FS_TRY_ST(upload(b, at->S, rows * at->n_kv, &S, why, n));
    a.Q = Q; a.K = K; a.V = V; a.S = S;
    if (at->mask.kind == FS_MASK_BITS) {
        uint64_t *bits;
        size_t words = (size_t)at->n_q * at->mask.words_per_row;
        FS_CU_TRY(cudaMalloc((void **)&bits, sizeof(uint64_t) * words));
        b.p.push_back(bits);
        FS_CU_TRY(cudaMemcpy(bits, at->mask.bits, sizeof(uint64_t) * words, cudaMemcpyHostToDevice));
        a.mask.bits = bits;
    }
    size_t n_rec = rows * n_kt * rec_len;
    FS_CU_TRY(cudaMalloc((void **)&a.O, sizeof(float) * rows * at->d_v));
    b.p.push_back(a.O);
    FS_CU_TRY(cudaMalloc((void **)&a.m, sizeof(float) * rows));
    b.p.push_back(a.m);
    FS_CU_TRY(cudaMalloc((void **)&a.l, sizeof(float) * rows));
    b.p.push_back(a.l);
    FS_CU_TRY(cudaMalloc((void **)&a.rec, sizeof(float) * n_rec));
    b.p.push_back(a.rec);
    FS_CU_TRY(cudaMemset(a.rec, 0xff, sizeof(float) * n_rec));  /* NaN: unwritten shows */

    int threads = 128, blocks = (int)((rows + threads - 1) / threads);
    trace_kernel<<<blocks, threads>>>(a);
    FS_CU_LAUNCHED();
    FS_CU_TRY(cudaDeviceSynchronize());

    std::vector<float> &O = out.O, &m = out.m, &l = out.l;
    O.resize(rows * at->d_v);
    m.resize(rows);
    l.resize(rows);
    out.rec.resize(n_rec);
    FS_CU_TRY(cudaMemcpy(O.data(), a.O, sizeof(float) * O.size(), cudaMemcpyDeviceToHost));
    FS_CU_TRY(cudaMemcpy(m.data(), a.m, sizeof(float) * rows, cudaMemcpyDeviceToHost));
    FS_CU_TRY(cudaMemcpy(l.data(), a.l, sizeof(float) * rows, cudaMemcpyDeviceToHost));
    FS_CU_TRY(cudaMemcpy(out.rec.data(), a.rec, sizeof(float) * n_rec, cudaMemcpyDeviceToHost));

    res->n_heads = at->n_q_heads;
    res->n_rows = at->n_q;
    res->n_cols = at->d_v;
    res->O = (double *)malloc(sizeof(double) * rows * at->d_v);
    res->m = (double *)malloc(sizeof(double) * rows);
    res->l = (double *)malloc(sizeof(double) * rows);
    if (!res->O || !res->m || !res->l) return say(FS_ERR_NOMEM, why, n, fs_status_str(FS_ERR_NOMEM));
    for (size_t x = 0; x < O.size(); x++) res->O[x] = O[x];
    for (size_t r = 0; r < rows; r++) {
        res->m[r] = t->exp2 ? (double)m[r] / 1.4426950408889634 : (double)m[r];
        res->l[r] = l[r];
    }
    return FS_OK;
}

/* The backward pass (cuda_trace_bwd.cu): on the device when host is false, else emulated. */
fs_status fs_cu_trace_backward(const fs_run *r, fs_result *res, fs_trace *tr, bool host, char *why, size_t n);

extern "C" fs_status fs_cuda_trace(const fs_run *r, fs_result *res, fs_trace *tr, char *why, size_t n)
{
    if (r && r->algo == FS_ALGO_BACKWARD) return fs_cu_trace_backward(r, res, tr, false, why, n);
    if (res) memset(res, 0, sizeof *res);
    if (why && n) why[0] = '\0';
    if (!r || !res) return say(FS_ERR_ARG, why, n, "fs_cuda_trace: no run or no result");
    if (r->algo != FS_ALGO_TILED && r->algo != FS_ALGO_QUERY)
        return say(FS_ERR_ARG, why, n, "the CUDA backend traces the tiled, query and backward algorithms only");
    if (!fs_cuda_available(why, n)) return FS_ERR_ARG;
    const fs_attn *at = &r->attn;
    fs_status st = fs_attn_check(at);
    if (st != FS_OK) return say(st, why, n, fs_status_str(st));

    fs_tiling t = r->tiling;
    if (r->algo == FS_ALGO_QUERY) {   /* 000's walk: one query, one key per tile */
        fs_tiling q = fs_tiling_default();
        q.Bq = q.Bk = 1;
        q.form = r->tiling.form;
        q.exp2 = r->tiling.exp2;
        t = q;
    }
    if (t.Bq < 1 || t.Bk < 1) return say(FS_ERR_TILE, why, n, fs_status_str(FS_ERR_TILE));
    if (t.pitfall != FS_PITFALL_NONE)
        return say(FS_ERR_ARG, why, n, "the pitfall variants run on the engine only, not on CUDA");
    /* the traced forward is float32 without dropout: refuse rather than trace another algorithm */
    if (r->lowp)
        return say(FS_ERR_ARG, why, n, "the low-precision (--fp8) forward runs on the engine only, not on CUDA");
    if (t.dropout.on)
        return say(FS_ERR_ARG, why, n, "the traced CUDA forward has no dropout (the engine's has; so has --backward)");
    if ((unsigned)t.form > FS_FORM_UNNORMALIZED || (unsigned)t.order > FS_ORDER_KV_OUTER)
        return say(FS_ERR_ARG, why, n, fs_status_str(FS_ERR_ARG));

    host_records out;
    st = trace_run(at, &t, res, out, why, n);
    if (st != FS_OK) {
        fs_result_free(res);
        return st;
    }
    if (!tr) return FS_OK;

    /* the records into events: the same code as the WebGPU trace's (records.h) */
    const fs_records recs = {out.rec.data(), fs_records_n_kt(at, &t), (int32_t)fs_records_len(at, &t),
                             fs_records_slots(at, &t), out.O.data(), out.m.data(), out.l.data(), 1};
    st = fs_records_events(at, &t, &recs, tr);
    if (st != FS_OK) {
        fs_result_free(res);
        return say(st, why, n, fs_status_str(st));
    }
    return FS_OK;
}
