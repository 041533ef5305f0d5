/* bench_ring.cu: check, then time, the ring attention of src/kernels/cuda/ring.cu on the GPUs of
 * this host (one host thread a GPU, NCCL between them).
 *
 *   bench_ring [--check] [--time] [--seed N] [--gpus P] [--version V] [--sizes 64,128,...]
 *              [--reps N] [--reserve R] [--sweep-reserve 0,1,2,4] [--ctas C] [--dtype f16|bf16]
 *              [--d 64|128] [--no-check-big]
 *   bench_ring --tiny    one check shape, float16, causal and not (for compute-sanitizer)
 *   bench_ring --backward [--bwd-version V] [--home-chunks C] [--check] [--time] [--tiny] ...
 *                        the ring's backward instead (fs_cuda_ring_backward), checked and timed
 *   bench_ring --trace [--backward] [--count N] [--gpus P]
 *                        the GPUs' trace of lesson-size rings against the engine's (below); with
 *                        --backward, the backward's
 *   (no option: --check --time)
 *
 * Check: fresh random inputs (seed printed; --seed replays), d = 64 and 128, float16 and
 * bfloat16, causal (zigzag) and not (contiguous), GQA, shard lengths that are and are not
 * multiples of the 128-row tiles; the gathered O and L against the engine's float64 fs_reference
 * on the same rounded inputs (‖O − ref‖ / ‖ref‖ ≤ 3e-3 float16, 1e-2 bfloat16; |L − ref| ≤ 1e-3 ·
 * max(1, |ref|)), the output poisoned (NaN) before each run, and against the single-GPU kernel
 * (the same version on the whole problem on GPU 0; ‖ring − one‖ / ‖one‖ within the same
 * tolerance). Self-tests then run the ring with its last step left out and with its shards
 * sent to GPU p + 2 (fs_cuda_ring.fault 1 and 3) and must see the check fail. Timing starts only
 * when every check passed.
 *
 * Time (N = --sizes × 1024, 16 heads, d = 128 unless --d, batch 1, float16 unless --dtype; causal zigzag
 * and not causal contiguous): the single-GPU version on the whole problem on GPU 0, then the
 * ring three ways (the ring itself; the compute alone, the same launches without a transfer; the
 * transfers alone), --reps timed runs each after one warm-up, medians. End to end is the slowest
 * GPU's time from its first launch to its merge's end (CUDA events). Hidden share of the
 * transfers = 1 − exposed / transfers alone, exposed being the time by which each step's transfer
 * outlasted that step's compute (the next step waited that long; from the events, the largest
 * over the GPUs); the estimate from the totals, 1 − max(0, ring − compute alone) / transfers
 * alone, is printed beside it (diff_hidden). Speedup = single / ring;
 * scaling efficiency = speedup / P. Inputs come from a hash of each element's global index, so
 * the shards are exactly the rows of the single-GPU problem, and at N ≤ 128k the ring's O is
 * also compared with the single-GPU O (--no-check-big skips that). --sweep-reserve first times
 * the ring at N = 128k for each count of SMs left to NCCL and keeps the fastest per mask. --ctas C
 * adds a second set of communicators whose kernels take at most C blocks (ncclConfig_t.maxCTAs):
 * the sweep then runs with both sets, and each size is timed with both (each with its fastest
 * count of SMs left), RESULT lines marked nccl_ctas=0 (NCCL's choice) or C.
 * Lines starting with RESULT are the measurements.
 *
 * --backward: the same shapes of check, N = 1024, 1000 and 768 (4/4, 3/1 and 2/1 heads), with dO
 * drawn too: the ring's forward gives O and L, the ring's backward dQ, dK, dV, which are gathered
 * and compared with the engine's float64 fs_backward_dense (‖x − ref‖ / ‖ref‖ for each of dQ, dK,
 * dV, same tolerances) and with the single-GPU backward on the whole problem (forward --version
 * with L, then backward --bwd-version, default 11: at d = 128 version 8's kernel, the fastest
 * there; at d = 64 version 11). The self-test leaves the backward's last step out
 * (fs_cuda_ring.fault = 2). Timing: the single-GPU backward on the whole problem against the
 * ring's backward, compute alone and transfers alone as above; exposed = the time the slowest
 * GPU's compute waited for K, V or for dK, dV, plus how long its hops home went on after its
 * compute ended (home_ms), from the events; hidden = 1 − exposed / transfers alone (hidden_min:
 * with the largest such wait over the GPUs, where a faster GPU also waits for the slower one's
 * last hop). At N ≤ 64k the ring's dQ,
 * dK, dV are compared with the single GPU's. RESULT ringbwd lines.
 *
 * --trace: lesson-size problems (lessons/ring_01's n = 8 over the GPUs, contiguous and zigzag,
 * both 16-bit types; then --count fresh random ones, n ≤ 40, d 1-8 padded to 64 with zeros, GQA,
 * causal and not) through the engine's fs_ring_forward and the GPUs' fs_cuda_ring_trace, both
 * turned into HOLD, RMERGE, SEND, RECV and OUT events and compared one by one (the section "the
 * trace against the engine's" below says how); the last step left out and the shards from the
 * wrong GPU (faults 1 and 3) must each make the comparison fail. --trace --backward: the same
 * for the backward (lessons/ring_05's problem, dO = 1, then random ones with dO drawn): the engine's
 * fs_ring_backward and the GPUs' fs_cuda_ring_backward_trace from the same forward O and L, both
 * turned into HOLD, the state after each step (BROW: a row's dQ; BKEY: a key's dK, dV), SEND, RECV
 * and GRAD events ("the backward's trace" below); the last step left out and dK, dV lost at each
 * hop (faults 2 and 4) must each make it fail.
 *
 * The backward's timings also read the GPUs' common clock (%globaltimer) at the end of each GPU's
 * compute and at its end: home_all_ms (how long the hops home went on after the last GPU's compute
 * ended), cend_spread_ms (how far apart the GPUs' compute ended), done_spread_ms (how far apart their
 * ends were: they end on one exchange, so this bounds the clocks' disagreement), waits_max_ms (the
 * largest wait in steps over the GPUs) and hidden_all = 1 − (waits_max + home_all) / transfers alone.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <functional>
#include <thread>
#include <vector>

extern "C" {
#include "engine/attn.h"
#include "engine/backward.h"
#include "engine/reference.h"
#include "engine/ring.h"
#include "engine/trace.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_ring.h"
}

#define CU(call)                                                                                \
    do {                                                                                        \
        cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(2);                                                                            \
        }                                                                                       \
    } while (0)

#define NC(call)                                                                                \
    do {                                                                                        \
        ncclResult_t r_ = (call);                                                               \
        if (r_ != ncclSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
            exit(2);                                                                            \
        }                                                                                       \
    } while (0)

#define FS(call)                                                                                \
    do {                                                                                        \
        fs_status s_ = (call);                                                                  \
        if (s_ != FS_OK) {                                                                      \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, fs_status_str(s_), why_); \
            exit(2);                                                                            \
        }                                                                                       \
    } while (0)

static int g_P = 0, g_version = 31, g_fail = 0, g_bwd_version = 11, g_chunks = 0;
/* the communicators: NCCL's defaults, and (--ctas C) ones whose kernels take at most C blocks
 * (ncclConfig_t.maxCTAs); g_use is the set the next shards are built with */
static std::vector<ncclComm_t> g_comms, g_comms_capped;
static std::vector<ncclComm_t> *g_use = &g_comms;

/* ---- random numbers (splitmix64) and 16-bit values ------------------------------------------ */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint16_t to16(float f, fs_cuda_dtype dt)
{
    return dt == FS_CUDA_F16 ? ((__half_raw)__float2half_rn(f)).x : ((__nv_bfloat16_raw)__float2bfloat16_rn(f)).x;
}
static double from16(uint16_t b, fs_cuda_dtype dt)
{
    if (dt == FS_CUDA_F16) {
        __half_raw r;
        r.x = b;
        return __half2float(__half(r));
    }
    __nv_bfloat16_raw r;
    r.x = b;
    return __bfloat162float(__nv_bfloat16(r));
}
static const char *dt_str(fs_cuda_dtype dt) { return dt == FS_CUDA_F16 ? "f16" : "bf16"; }
static double tol_of(fs_cuda_dtype dt) { return dt == FS_CUDA_F16 ? 3e-3 : 1e-2; }

/* Run f(p) on one host thread per GPU (each thread's current device is p) and wait for all. */
static void on_each_gpu(const std::function<void(int)> &f)
{
    std::vector<std::thread> th;
    for (int p = 0; p < g_P; p++)
        th.emplace_back([&f, p] {
            CU(cudaSetDevice(p));
            f(p);
        });
    for (auto &t : th) t.join();
}

/* A problem's shards on every GPU: Q, K, V, O (local layout of cuda_ring.h), L, the ring state. */
struct shards {
    fs_cuda_ring r;
    std::vector<void *> Q, K, V, O;
    std::vector<void *> dO, dQ, dK, dV;   /* the backward's (alloc_bwd) */
    std::vector<float *> L;
    std::vector<fs_cuda_ring_dev *> g;
    size_t q_elems, kv_elems, rows;   /* per GPU */

    explicit shards(const fs_cuda_ring &ring) : r(ring)
    {
        const size_t c = fs_cuda_ring_slot_rows(&r), S = fs_cuda_ring_slots(&r);
        q_elems = S * r.n_q_heads * c * r.d;
        kv_elems = S * r.n_kv_heads * c * r.d;
        rows = S * r.n_q_heads * c;
        Q.resize(g_P);
        K.resize(g_P);
        V.resize(g_P);
        O.resize(g_P);
        L.resize(g_P);
        g.resize(g_P);
        for (int p = 0; p < g_P; p++) {
            CU(cudaSetDevice(p));
            CU(cudaMalloc(&Q[p], q_elems * 2));
            CU(cudaMalloc(&K[p], kv_elems * 2));
            CU(cudaMalloc(&V[p], kv_elems * 2));
            CU(cudaMalloc(&O[p], q_elems * 2));
            CU(cudaMalloc((void **)&L[p], rows * sizeof(float)));
            char why_[256] = "";
            FS(fs_cuda_ring_dev_init(&r, p, (*g_use)[p], &g[p], why_, sizeof why_));
        }
    }
    /* dO, dQ (Q's layout), dK, dV (K's) on every GPU, for the backward */
    void alloc_bwd()
    {
        dO.assign(g_P, NULL);
        dQ.assign(g_P, NULL);
        dK.assign(g_P, NULL);
        dV.assign(g_P, NULL);
        for (int p = 0; p < g_P; p++) {
            CU(cudaSetDevice(p));
            CU(cudaMalloc(&dO[p], q_elems * 2));
            CU(cudaMalloc(&dQ[p], q_elems * 2));
            CU(cudaMalloc(&dK[p], kv_elems * 2));
            CU(cudaMalloc(&dV[p], kv_elems * 2));
        }
    }
    ~shards()
    {
        for (int p = 0; p < g_P; p++) {
            cudaSetDevice(p);
            if (!dO.empty()) {
                cudaFree(dO[p]);
                cudaFree(dQ[p]);
                cudaFree(dK[p]);
                cudaFree(dV[p]);
            }
            cudaFree(Q[p]);
            cudaFree(K[p]);
            cudaFree(V[p]);
            cudaFree(O[p]);
            cudaFree(L[p]);
            fs_cuda_ring_dev_free(g[p]);
        }
    }
    /* Global row i of head h ↔ local (slot, h, row) on GPU p: the element offset of row i of head
     * h of an (heads, n, d) tensor in GPU p's layout, or −1 when GPU p does not hold row i. */
    long local_row(int p, int heads, int h, int i) const
    {
        const int c = fs_cuda_ring_slot_rows(&r);
        for (int a = 0; a < fs_cuda_ring_slots(&r); a++) {
            const int s0 = fs_cuda_ring_slot_start(&r, p, a);
            if (i >= s0 && i < s0 + c) return ((long)a * heads + h) * c + (i - s0);
        }
        return -1;
    }
    /* Run the ring on every GPU at once in mode m; times[p] gets GPU p's times. */
    void run(fs_ring_mode m, std::vector<fs_ring_times> *times)
    {
        if (times) times->resize(g_P);
        on_each_gpu([&](int p) {
            char why_[256] = "";
            FS(fs_cuda_ring_run(g[p], Q[p], K[p], V[p], O[p], L[p], m, times ? &(*times)[p] : NULL, why_,
                                sizeof why_));
        });
    }
    /* The backward on every GPU at once in mode m (the forward's O and L, dO filled). */
    void run_bwd(fs_ring_mode m, std::vector<fs_ring_times> *times)
    {
        if (times) times->resize(g_P);
        on_each_gpu([&](int p) {
            char why_[256] = "";
            FS(fs_cuda_ring_backward(g[p], Q[p], K[p], V[p], O[p], dO[p], L[p], dQ[p], dK[p], dV[p], m,
                                     times ? &(*times)[p] : NULL, why_, sizeof why_));
        });
    }
};

/* ---- the check ------------------------------------------------------------------------------ */

/* ‖x − ref‖ / ‖ref‖; +inf when any x is NaN or inf (an unwritten or broken output). */
static double rel_err(const std::vector<double> &x, const std::vector<double> &ref)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < x.size(); i++) {
        if (!isfinite(x[i])) return INFINITY;
        num += (x[i] - ref[i]) * (x[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return sqrt(num) / (den > 0 ? sqrt(den) : 1.0);
}

/* The ring problem every check and timing builds: N positions, Hq query heads over Hkv KV heads,
 * zigzag sharding when causal, contiguous otherwise, prefill version g_version, reserve SMs left
 * to NCCL. */
/* The engine's view of a host problem (N queries and keys, heads Hq over Hkv, head size d): the
 * float64 side of every check. The scale stays fs_attn_make's 1/√d unless the caller sets it. */
static fs_attn host_attn(int N, int Hq, int Hkv, int d, const std::vector<double> &Q, const std::vector<double> &K,
                         const std::vector<double> &V, bool causal)
{
    fs_attn a = fs_attn_make(N, N, d, d);
    a.n_q_heads = Hq;
    a.n_kv_heads = Hkv;
    a.Q = Q.data();
    a.K = K.data();
    a.V = V.data();
    a.mask.kind = causal ? FS_MASK_CAUSAL : FS_MASK_NONE;
    return a;
}

static fs_cuda_ring ring_of(int N, int Hq, int Hkv, int d, bool causal, fs_cuda_dtype dt, int reserve)
{
    fs_cuda_ring r;
    memset(&r, 0, sizeof r);
    r.n_dev = g_P;
    r.n_q_heads = Hq;
    r.n_kv_heads = Hkv;
    r.n = N;
    r.d = d;
    r.causal = causal;
    r.shard = causal ? FS_RING_ZIGZAG : FS_RING_CONTIG;
    r.scale = (float)fs_attn_default_scale(d);
    r.dtype = dt;
    r.version = g_version;
    r.reserve_sms = reserve;
    return r;
}

/* Check the ring on one problem against float64 and the single-GPU kernel; returns true when it
 * passes. fault: fs_cuda_ring.fault (the self-test). */
static bool check_ring(uint64_t *rng, int N, int Hq, int Hkv, int d, bool causal, fs_cuda_dtype dt, int fault,
                       double *err_out)
{
    fs_cuda_ring r = ring_of(N, Hq, Hkv, d, causal, dt, 4);
    r.fault = fault;
    const size_t nQ = (size_t)Hq * N * d, nK = (size_t)Hkv * N * d;
    std::vector<uint16_t> Qb(nQ), Kb(nK), Vb(nK);
    std::vector<double> Q(nQ), K(nK), V(nK), ref(nQ), m(Hq * (size_t)N), l(Hq * (size_t)N);
    auto fill = [&](std::vector<uint16_t> &b, std::vector<double> &x, double lo, double hi) {
        for (size_t i = 0; i < b.size(); i++) {
            b[i] = to16((float)(lo + (hi - lo) * (double)(rng_next(rng) >> 11) * 0x1.0p-53), dt);
            x[i] = from16(b[i], dt);
        }
    };
    fill(Qb, Q, -2, 2);
    fill(Kb, K, -2, 2);
    fill(Vb, V, -1, 1);
    fs_attn a = host_attn(N, Hq, Hkv, d, Q, K, V, causal);
    if (fs_reference(&a, ref.data(), m.data(), l.data()) != FS_OK) exit(2);

    shards sh(r);
    const int c = fs_cuda_ring_slot_rows(&r), S = fs_cuda_ring_slots(&r);
    for (int p = 0; p < g_P; p++) {   /* scatter the rows to their GPUs */
        CU(cudaSetDevice(p));
        std::vector<uint16_t> q(sh.q_elems), k(sh.kv_elems), v(sh.kv_elems);
        for (int s = 0; s < S; s++) {
            const int s0 = fs_cuda_ring_slot_start(&r, p, s);
            for (int h = 0; h < Hq; h++)
                memcpy(&q[(((size_t)s * Hq + h) * c) * d], &Qb[((size_t)h * N + s0) * d], (size_t)c * d * 2);
            for (int h = 0; h < Hkv; h++) {
                memcpy(&k[(((size_t)s * Hkv + h) * c) * d], &Kb[((size_t)h * N + s0) * d], (size_t)c * d * 2);
                memcpy(&v[(((size_t)s * Hkv + h) * c) * d], &Vb[((size_t)h * N + s0) * d], (size_t)c * d * 2);
            }
        }
        CU(cudaMemcpy(sh.Q[p], q.data(), q.size() * 2, cudaMemcpyHostToDevice));
        CU(cudaMemcpy(sh.K[p], k.data(), k.size() * 2, cudaMemcpyHostToDevice));
        CU(cudaMemcpy(sh.V[p], v.data(), v.size() * 2, cudaMemcpyHostToDevice));
        CU(cudaMemset(sh.O[p], 0xff, sh.q_elems * 2));   /* NaN in both 16-bit types */
        CU(cudaMemset(sh.L[p], 0xff, sh.rows * sizeof(float)));
    }
    std::vector<fs_ring_times> t;
    sh.run(FS_RING_RUN_FULL, &t);
    /* gather */
    std::vector<double> O(nQ, NAN), L(Hq * (size_t)N, NAN);
    for (int p = 0; p < g_P; p++) {
        CU(cudaSetDevice(p));
        std::vector<uint16_t> o(sh.q_elems);
        std::vector<float> lp(sh.rows);
        CU(cudaMemcpy(o.data(), sh.O[p], o.size() * 2, cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(lp.data(), sh.L[p], lp.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < N; i++) {
                const long lr = sh.local_row(p, Hq, h, i);
                if (lr < 0) continue;
                for (int j = 0; j < d; j++) O[((size_t)h * N + i) * d + j] = from16(o[(size_t)lr * d + j], dt);
                L[(size_t)h * N + i] = lp[lr];
            }
    }
    const double e = rel_err(O, ref);
    double le = 0;
    for (size_t i = 0; i < L.size(); i++) {
        const double rl = l[i] > 0 ? m[i] + log(l[i]) : -INFINITY;
        if (rl == -INFINITY) { if (L[i] != -INFINITY) le = INFINITY; continue; }
        if (!isfinite(L[i])) { le = INFINITY; continue; }
        le = std::max(le, fabs(L[i] - rl) / std::max(1.0, fabs(rl)));
    }
    /* the single-GPU kernel on the whole problem, GPU 0 */
    CU(cudaSetDevice(0));
    void *dQ, *dK, *dV, *dO;
    CU(cudaMalloc(&dQ, nQ * 2));
    CU(cudaMalloc(&dK, nK * 2));
    CU(cudaMalloc(&dV, nK * 2));
    CU(cudaMalloc(&dO, nQ * 2));
    CU(cudaMemcpy(dQ, Qb.data(), nQ * 2, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dK, Kb.data(), nK * 2, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dV, Vb.data(), nK * 2, cudaMemcpyHostToDevice));
    CU(cudaMemset(dO, 0xff, nQ * 2));
    fs_cuda_prefill pp;
    memset(&pp, 0, sizeof pp);
    pp.batch = 1;
    pp.n_q_heads = Hq;
    pp.n_kv_heads = Hkv;
    pp.n_q = pp.n_kv = N;
    pp.d = d;
    pp.mask = causal ? FS_MASK_CAUSAL : FS_MASK_NONE;
    pp.scale = r.scale;
    pp.dtype = dt;
    char why_[256] = "";
    FS(fs_cuda_prefill_run(&pp, g_version, dQ, dK, dV, dO, why_, sizeof why_));
    CU(cudaDeviceSynchronize());
    std::vector<uint16_t> o1(nQ);
    CU(cudaMemcpy(o1.data(), dO, nQ * 2, cudaMemcpyDeviceToHost));
    std::vector<double> O1(nQ);
    for (size_t i = 0; i < nQ; i++) O1[i] = from16(o1[i], dt);
    const double e1 = rel_err(O1, ref), e_one = rel_err(O, O1);
    cudaFree(dQ);
    cudaFree(dK);
    cudaFree(dV);
    cudaFree(dO);
    const bool ok = e <= tol_of(dt) && le <= 1e-3 && e_one <= tol_of(dt);
    if (!fault)
        printf("%s ring P=%d v%d %-4s d=%-3d H=%d/%d N=%-5d %-6s %-6s c=%-4d pairs=%d rel.err %.2e (tol %.0e) "
               "L err %.1e; one GPU %.2e; ring vs one GPU %.2e\n",
               ok ? "ok  " : "FAIL", g_P, g_version, dt_str(dt), d, Hq, Hkv, N, causal ? "causal" : "none",
               causal ? "zigzag" : "contig", c, t[0].pairs, e, tol_of(dt), le, e1, e_one);
    if (err_out) *err_out = std::max(e, e_one);
    return ok;
}

static void run_checks(uint64_t *rng, bool tiny)
{
    struct {
        int N, Hq, Hkv, d;
    } shapes[] = {
        {2048, 2, 2, 128},   /* shards of 256 and 512 rows: whole tiles */
        {1000, 3, 1, 128},   /* GQA 3/1, shards of 125 and 250: ragged tiles */
        {1536, 2, 1, 64},    /* d = 64, GQA 2/1 */
    };
    for (auto dt : {FS_CUDA_F16, FS_CUDA_BF16})
        for (auto &s : shapes)
            for (bool causal : {false, true}) {
                if (tiny && (dt != FS_CUDA_F16 || &s != shapes)) continue;
                const int mult = g_P * (causal ? 2 : 1);
                const int N = s.N / mult * mult;
                if (!check_ring(rng, N, s.Hq, s.Hkv, s.d, causal, dt, 0, NULL)) g_fail++;
            }
    /* self-test: the ring without its last step must fail the check */
    if (g_P > 1 && !tiny)
        for (int fault : {1, 3})
            for (bool causal : {false, true}) {
                double e;
                const bool passed = check_ring(rng, 1024, 2, 2, 128, causal, FS_CUDA_F16, fault, &e);
                printf("%s self-test: the ring %s %s the check (%s, rel.err %.2e)\n", passed ? "FAIL" : "ok  ",
                       fault == 1 ? "without its last step" : "with its shards from GPU p - 2",
                       passed ? "passes" : "fails", causal ? "causal" : "not causal", e);
                if (passed) g_fail++;
            }
}

/* ---- the backward's check ------------------------------------------------------------------- */

/* Gather GPU p's rows of an (heads, N, d) tensor held in the local layout into x (global layout). */
static void gather(const shards &sh, const std::vector<void *> &dev, int heads, std::vector<double> &x)
{
    const fs_cuda_ring &r = sh.r;
    const int N = r.n, d = r.d;
    const size_t per = (size_t)fs_cuda_ring_slots(&r) * heads * fs_cuda_ring_slot_rows(&r) * d;
    x.assign((size_t)heads * N * d, NAN);
    for (int p = 0; p < g_P; p++) {
        CU(cudaSetDevice(p));
        std::vector<uint16_t> b(per);
        CU(cudaMemcpy(b.data(), dev[p], per * 2, cudaMemcpyDeviceToHost));
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < N; i++) {
                const long lr = sh.local_row(p, heads, h, i);
                if (lr < 0) continue;
                for (int j = 0; j < d; j++) x[((size_t)h * N + i) * d + j] = from16(b[(size_t)lr * d + j], r.dtype);
            }
    }
}

/* Scatter the rows of an (heads, N, d) 16-bit tensor to the GPUs' local layout. */
static void scatter(const shards &sh, const std::vector<uint16_t> &x, int heads, std::vector<void *> &dev)
{
    const fs_cuda_ring &r = sh.r;
    const int N = r.n, d = r.d, c = fs_cuda_ring_slot_rows(&r), S = fs_cuda_ring_slots(&r);
    for (int p = 0; p < g_P; p++) {
        CU(cudaSetDevice(p));
        std::vector<uint16_t> b((size_t)S * heads * c * d);
        for (int s = 0; s < S; s++) {
            const int s0 = fs_cuda_ring_slot_start(&r, p, s);
            for (int h = 0; h < heads; h++)
                memcpy(&b[(((size_t)s * heads + h) * c) * d], &x[((size_t)h * N + s0) * d], (size_t)c * d * 2);
        }
        CU(cudaMemcpy(dev[p], b.data(), b.size() * 2, cudaMemcpyHostToDevice));
    }
}

/* Gather the GPUs' L (local (slot, head, row), float32) into L (global (heads, n)). */
static void gather_L(const shards &sh, int heads, std::vector<double> &L)
{
    const int n = sh.r.n;
    L.assign((size_t)heads * n, NAN);
    for (int p = 0; p < g_P; p++) {
        CU(cudaSetDevice(p));
        std::vector<float> lp(sh.rows);
        CU(cudaMemcpy(lp.data(), sh.L[p], lp.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < n; i++) {
                const long lr = sh.local_row(p, heads, h, i);
                if (lr >= 0) L[(size_t)h * n + i] = lp[lr];
            }
    }
}

/* Lesson-size inputs of rows of d values: given, or drawn uniformly from [lo, hi) with rng; each
 * rounded to the 16-bit type into b (rows padded with zeros to D) and, as rounded, into x. */
static void lesson_fill(uint64_t *rng, std::vector<double> &x, std::vector<uint16_t> &b, const double *given, double lo,
                        double hi, int d, int D, fs_cuda_dtype dt)
{
    for (size_t i = 0; i < x.size(); i++) {
        const double u = given ? given[i] : lo + (hi - lo) * (double)(rng_next(rng) >> 11) * 0x1.0p-53;
        const size_t row = i / d, j = i % d;
        b[row * D + j] = to16((float)u, dt);
        x[i] = from16(b[row * D + j], dt);
    }
}

/* The ring's backward on one problem: the ring's forward for O and L, then its backward; dQ, dK,
 * dV gathered and compared with the engine's float64 fs_backward_dense and with the single-GPU
 * backward on the whole problem (GPU 0: prefill version g_version with L, then backward version
 * g_bwd_version). fault: fs_cuda_ring.fault (2: the self-test). Returns true when every error is
 * within tolerance. */
static bool check_ring_bwd(uint64_t *rng, int N, int Hq, int Hkv, int d, bool causal, fs_cuda_dtype dt, int fault,
                           double *err_out)
{
    fs_cuda_ring r = ring_of(N, Hq, Hkv, d, causal, dt, 0);
    r.bwd_version = g_bwd_version;
    r.home_chunks = g_chunks;
    r.fault = fault;
    const size_t nQ = (size_t)Hq * N * d, nK = (size_t)Hkv * N * d;
    std::vector<uint16_t> Qb(nQ), Kb(nK), Vb(nK), Gb(nQ);
    std::vector<double> Q(nQ), K(nK), V(nK), G(nQ), rQ(nQ), rK(nK), rV(nK);
    auto fill = [&](std::vector<uint16_t> &b, std::vector<double> &x, double lo, double hi) {
        for (size_t i = 0; i < b.size(); i++) {
            b[i] = to16((float)(lo + (hi - lo) * (double)(rng_next(rng) >> 11) * 0x1.0p-53), dt);
            x[i] = from16(b[i], dt);
        }
    };
    fill(Qb, Q, -2, 2);
    fill(Kb, K, -2, 2);
    fill(Vb, V, -1, 1);
    fill(Gb, G, -1, 1);
    fs_attn a = host_attn(N, Hq, Hkv, d, Q, K, V, causal);
    a.scale = (double)r.scale;   /* the scale the kernels use, rounded to float */
    const fs_status rs = fs_backward_dense(&a, G.data(), rQ.data(), rK.data(), rV.data());
    if (rs != FS_OK) {
        fprintf(stderr, "bench_ring: fs_backward_dense: %s\n", fs_status_str(rs));
        exit(2);
    }

    shards sh(r);
    sh.alloc_bwd();
    scatter(sh, Qb, Hq, sh.Q);
    scatter(sh, Kb, Hkv, sh.K);
    scatter(sh, Vb, Hkv, sh.V);
    scatter(sh, Gb, Hq, sh.dO);
    for (int p = 0; p < g_P; p++) {   /* NaN in both 16-bit types: an unwritten row shows */
        CU(cudaSetDevice(p));
        CU(cudaMemset(sh.dQ[p], 0xff, sh.q_elems * 2));
        CU(cudaMemset(sh.dK[p], 0xff, sh.kv_elems * 2));
        CU(cudaMemset(sh.dV[p], 0xff, sh.kv_elems * 2));
    }
    sh.run(FS_RING_RUN_FULL, NULL);   /* O and L (fault 2 leaves the forward whole) */
    std::vector<fs_ring_times> t;
    sh.run_bwd(FS_RING_RUN_FULL, &t);
    std::vector<double> gQ, gK, gV;
    gather(sh, sh.dQ, Hq, gQ);
    gather(sh, sh.dK, Hkv, gK);
    gather(sh, sh.dV, Hkv, gV);
    const double eq = rel_err(gQ, rQ), ek = rel_err(gK, rK), ev = rel_err(gV, rV);

    /* the single-GPU forward and backward on the whole problem, GPU 0 */
    CU(cudaSetDevice(0));
    void *d_[9];
    const size_t sz[9] = {nQ, nK, nK, nQ, nQ, nQ, nK, nK, 0};   /* Q K V O dO dQ dK dV work */
    for (int i = 0; i < 8; i++) CU(cudaMalloc(&d_[i], sz[i] * 2));
    float *Ld;
    CU(cudaMalloc((void **)&Ld, (size_t)Hq * N * sizeof(float)));
    CU(cudaMemcpy(d_[0], Qb.data(), nQ * 2, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(d_[1], Kb.data(), nK * 2, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(d_[2], Vb.data(), nK * 2, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(d_[4], Gb.data(), nQ * 2, cudaMemcpyHostToDevice));
    fs_cuda_prefill pp;
    memset(&pp, 0, sizeof pp);
    pp.batch = 1;
    pp.n_q_heads = Hq;
    pp.n_kv_heads = Hkv;
    pp.n_q = pp.n_kv = N;
    pp.d = d;
    pp.mask = causal ? FS_MASK_CAUSAL : FS_MASK_NONE;
    pp.scale = r.scale;
    pp.dtype = dt;
    pp.lse = Ld;
    CU(cudaMalloc(&d_[8], fs_cuda_backward_workspace(&pp)));
    char why_[256] = "";
    FS(fs_cuda_prefill_run(&pp, g_version, d_[0], d_[1], d_[2], d_[3], why_, sizeof why_));
    FS(fs_cuda_backward_run(&pp, g_bwd_version, d_[0], d_[1], d_[2], d_[3], d_[4], d_[5], d_[6], d_[7], d_[8], why_,
                            sizeof why_));
    CU(cudaDeviceSynchronize());
    std::vector<double> oQ(nQ), oK(nK), oV(nK);
    for (int i = 0; i < 3; i++) {
        std::vector<double> &o = i == 0 ? oQ : i == 1 ? oK : oV;
        std::vector<uint16_t> b(o.size());
        CU(cudaMemcpy(b.data(), d_[5 + i], b.size() * 2, cudaMemcpyDeviceToHost));
        for (size_t j = 0; j < b.size(); j++) o[j] = from16(b[j], dt);
    }
    for (int i = 0; i < 9; i++) cudaFree(d_[i]);
    cudaFree(Ld);
    const double e1 = std::max(rel_err(oQ, rQ), std::max(rel_err(oK, rK), rel_err(oV, rV)));
    const double e_one = std::max(rel_err(gQ, oQ), std::max(rel_err(gK, oK), rel_err(gV, oV)));
    const double tol = tol_of(dt);
    const bool ok = eq <= tol && ek <= tol && ev <= tol && e_one <= tol;
    if (!fault)
        printf("%s ring backward P=%d v%d/bwd v%d %-4s d=%-3d H=%d/%d N=%-5d %-6s %-6s c=%-4d launches=%d "
               "rel.err dQ %.2e dK %.2e dV %.2e (tol %.0e); one GPU %.2e; ring vs one GPU %.2e\n",
               ok ? "ok  " : "FAIL", g_P, g_version, g_bwd_version, dt_str(dt), d, Hq, Hkv, N, causal ? "causal" : "none",
               causal ? "zigzag" : "contig", fs_cuda_ring_slot_rows(&r), t[0].pairs, eq, ek, ev, tol, e1, e_one);
    if (err_out) *err_out = std::max(std::max(eq, ek), std::max(ev, e_one));
    return ok;
}

static void run_checks_bwd(uint64_t *rng, bool tiny)
{
    struct {
        int N, Hq, Hkv, d;
    } shapes[] = {
        {1024, 4, 4, 128},   /* shards of 128 and 256 rows: whole tiles; 4 head groups go home */
        {1000, 3, 1, 128},   /* GQA 3/1, shards of 125 and 250 rows: ragged tiles */
        {768, 2, 1, 64},     /* d = 64, GQA 2/1 */
    };
    for (auto dt : {FS_CUDA_F16, FS_CUDA_BF16})
        for (auto &s : shapes)
            for (bool causal : {false, true}) {
                if (tiny && (dt != FS_CUDA_F16 || &s != shapes)) continue;
                const int mult = g_P * (causal ? 2 : 1);
                const int N = s.N / mult * mult;
                if (!check_ring_bwd(rng, N, s.Hq, s.Hkv, s.d, causal, dt, 0, NULL)) g_fail++;
            }
    /* self-test: the backward without its last step must fail the check */
    if (!tiny)
        for (bool causal : {false, true}) {
            double e;
            const bool passed = check_ring_bwd(rng, 512, 2, 2, 128, causal, FS_CUDA_F16, 2, &e);
            printf("%s self-test: the ring's backward without its last step %s the check (%s, rel.err %.2e)\n",
                   passed ? "FAIL" : "ok  ", passed ? "passes" : "fails", causal ? "causal" : "not causal", e);
            if (passed) g_fail++;
        }
}

/* ---- the trace against the engine's (--trace) ------------------------------------------------
 *
 * A lesson-size problem runs through the engine's ring (fs_ring_forward, float64, with its trace)
 * and through the GPUs' (fs_cuda_ring_trace). Both are turned into the same list of ring events,
 * in the engine's order: per step t, per device p, HOLD (the shard and its positions) and one
 * RMERGE per row that saw a key; after steps t < P − 1 every device's SEND, then every RECV; at
 * the end one OUT per row. The engine's tile events have no counterpart: inside a step the GPU
 * runs its prefill kernel, whose tiles are its own. A merge is compared by its log-sum-exps
 * (L = m + ln ℓ: the GPU's partials carry L, not m and ℓ apart) and weights, w_old = α ℓ_old /
 * ℓ_new and w_blk = β ℓ_blk / ℓ_new, and by o_old, o_blk, o_new. The GPU's head size is padded
 * to 64 with zeros (Q, K and V), which leaves every score and the first d columns of every o
 * as they are. */

/* Where a ring event happened and what it moved, as both sides record it (forward and backward). */
struct ring_place {
    fs_event_kind kind;
    int device = -1, t = -1, shard = -1, a = -1, b = -1, head = -1, pos = -1, tensor = -1;
    long long bytes = -1;
    std::vector<int> positions;   /* HOLD */
};

struct rev : ring_place {   /* one forward ring event */
    double L_old = 0, L_blk = 0, L_new = 0, w_old = 0, w_blk = 0;   /* RMERGE; OUT: L_new */
    std::vector<double> o_old, o_blk, o_new;           /* RMERGE; OUT: o_new */
};

static double lse_of(double m, double l) { return l > 0 && m > -INFINITY ? m + log(l) : -INFINITY; }

/* The global positions a tag names (empty for a tag that never came). */
static std::vector<int> tag_positions(const int32_t *tag)
{
    std::vector<int> x;
    if (tag[1] < 1 || tag[1] > 2 || tag[2] < 1) return x;
    for (int s = 0; s < tag[1]; s++)
        for (int i = 0; i < tag[2]; i++) x.push_back(tag[3 + s] + i);
    return x;
}

/* Write "event k (kind, device, step): ..." into why; returns false (a difference). */
static bool differ(char *why, size_t n, size_t k, const ring_place &e, const char *fmt, ...)
{
    int o = snprintf(why, n, "event %zu (%s, device %d, step %d): ", k, fs_event_kind_str(e.kind), e.device, e.t);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + o, n - o, fmt, ap);
    va_end(ap);
    return false;
}

/* Event k of the engine (e) and of the GPUs (g) at the same place, moving the same things; false
 * with why at the first field that differs. */
static bool same_place(size_t k, const ring_place &e, const ring_place &g, char *why, size_t n)
{
    if (e.kind != g.kind) return differ(why, n, k, e, "the GPU's is a %s", fs_event_kind_str(g.kind));
    if (e.device != g.device || e.t != g.t) return differ(why, n, k, e, "the GPU's is device %d, step %d", g.device, g.t);
    if (e.shard != g.shard) return differ(why, n, k, e, "shard %d, the GPU's %d", e.shard, g.shard);
    if (e.a != g.a || e.b != g.b)
        return differ(why, n, k, e, "from %d to %d, the GPU's from %d to %d", e.a, e.b, g.a, g.b);
    if (e.tensor != g.tensor) return differ(why, n, k, e, "tensor %d, the GPU's %d", e.tensor, g.tensor);
    if (e.bytes != g.bytes) return differ(why, n, k, e, "%lld bytes, the GPU's %lld", e.bytes, g.bytes);
    if (e.head != g.head || e.pos != g.pos)
        return differ(why, n, k, e, "head %d pos %d, the GPU's head %d pos %d", e.head, e.pos, g.head, g.pos);
    if (e.positions != g.positions)
        return differ(why, n, k, e, "the held positions differ (%zu against the GPU's %zu)", e.positions.size(),
                      g.positions.size());
    return true;
}

/* After the events both lists have: false with why when one list is longer. */
template <typename Ev>
static bool same_count(const std::vector<Ev> &E, const std::vector<Ev> &G, char *why, size_t n)
{
    if (E.size() == G.size()) return true;
    const size_t k = std::min(E.size(), G.size());
    const Ev &x = k < E.size() ? E[k] : G[k];
    snprintf(why, n, "the engine has %zu events, the GPUs %zu; the first unmatched: %s of %s (device %d, step %d)",
             E.size(), G.size(), fs_event_kind_str(x.kind), k < E.size() ? "the engine" : "the GPUs", x.device, x.t);
    return false;
}

/* The engine's trace, reduced to the ring's events. */
static std::vector<rev> engine_events(const fs_trace *tr, int d)
{
    std::vector<rev> v;
    auto vec = [&](int64_t off, int k) {
        const double *x = fs_trace_at(tr, off);
        return x ? std::vector<double>(x, x + k) : std::vector<double>();
    };
    for (int64_t k = 0; k < tr->n; k++) {
        const fs_event *e = &tr->ev[k];
        rev r;
        r.kind = e->kind;
        switch (e->kind) {
        case FS_EV_HOLD: {
            r.device = e->device, r.t = e->ring_step, r.shard = e->shard;
            const double *x = fs_trace_at(tr, e->s_row);
            for (int j = 0; j < e->n_s; j++) r.positions.push_back((int)x[j]);
        } break;
        case FS_EV_SEND:
        case FS_EV_RECV:
            r.device = e->device, r.t = e->ring_step, r.shard = e->shard, r.a = e->a, r.b = e->b;
            r.bytes = e->bytes;
            break;
        case FS_EV_RMERGE:
            r.device = e->device, r.t = e->ring_step, r.shard = e->shard, r.head = e->head, r.pos = e->pos;
            r.L_old = lse_of(e->m_old, e->l_old);
            r.L_blk = lse_of(e->m_blk, e->l_blk);
            r.L_new = lse_of(e->m_new, e->l_new);
            r.w_old = e->alpha * e->l_old / e->l_new;
            r.w_blk = e->beta * e->l_blk / e->l_new;
            r.o_old = vec(e->o_old, d), r.o_blk = vec(e->o_blk, d), r.o_new = vec(e->o_new, d);
            break;
        case FS_EV_OUT:
            r.head = e->head, r.pos = e->row;
            r.L_new = lse_of(e->m_new, e->l_new);
            r.o_new = vec(e->o_new, d);
            break;
        default: continue;
        }
        v.push_back(r);
    }
    return v;
}

/* The GPUs' records turned into the same events. T[p]: GPU p's trace; O, L: the ring's output
 * gathered (global (Hq, n, d) and (Hq, n)); a: the engine's problem (its d, and the bytes of a hop
 * in its float64 convention, from the rows the GPU moved). */
static std::vector<rev> gpu_events(const fs_cuda_ring &r, const std::vector<fs_ring_trace> &T, const fs_attn &a,
                                   const std::vector<double> &O, const std::vector<double> &L)
{
    std::vector<rev> v;
    const int P = r.n_dev, S = fs_cuda_ring_slots(&r), c = fs_cuda_ring_slot_rows(&r), Hq = r.n_q_heads;
    const int d = a.d, per = FS_RING_REC_HEAD + 3 * r.d;
    auto hop_bytes = [&](int64_t elems) {
        const int rows = (int)(elems / ((int64_t)r.n_kv_heads * r.d));
        return (long long)fs_ring_shard_bytes(&a, rows, false, false);
    };
    for (int t = 0; t < P; t++) {
        for (int p = 0; p < P; p++) {
            const fs_ring_trace &tr = T[p];
            rev h;
            h.kind = FS_EV_HOLD, h.device = p, h.t = t, h.shard = tr.hold[t][0], h.positions = tag_positions(tr.hold[t]);
            v.push_back(h);
            for (int hd = 0; hd < Hq; hd++)
                for (int s = 0; s < S; s++)
                    for (int i = 0; i < c; i++) {
                        const float *e = tr.rec + ((size_t)t * tr.rows + ((size_t)s * Hq + hd) * c + i) * per;
                        if (e[0] != 1.f) continue;   /* 0: nothing visible, no merge; NaN: never written */
                        rev m;
                        m.kind = FS_EV_RMERGE, m.device = p, m.t = t, m.shard = tr.hold[t][0], m.head = hd;
                        m.pos = fs_cuda_ring_slot_start(&r, p, s) + i;
                        m.L_old = e[1], m.L_blk = e[2], m.L_new = e[3], m.w_old = e[4], m.w_blk = e[5];
                        const float *o = e + FS_RING_REC_HEAD;
                        m.o_old.assign(o, o + d), m.o_blk.assign(o + r.d, o + r.d + d), m.o_new.assign(o + 2 * r.d, o + 2 * r.d + d);
                        v.push_back(m);
                    }
        }
        if (t == P - 1) continue;
        for (int p = 0; p < P; p++) {
            rev e;
            e.kind = FS_EV_SEND, e.device = p, e.t = t, e.shard = T[p].sent[t][0], e.a = p, e.b = T[p].to[t];
            e.bytes = hop_bytes(T[p].sent_elems[t]);
            v.push_back(e);
        }
        for (int k = 0; k < P; k++) {   /* in the engine's order: the receiver of device k's send */
            const int q = (k + 1) % P;
            rev e;
            e.kind = FS_EV_RECV, e.device = q, e.t = t, e.shard = T[q].got[t][0], e.a = T[q].from[t], e.b = q;
            e.bytes = hop_bytes(T[q].sent_elems[t]);
            v.push_back(e);
        }
    }
    const int n = r.n;
    for (int hd = 0; hd < Hq; hd++)
        for (int i = 0; i < n; i++) {
            rev e;
            e.kind = FS_EV_OUT, e.head = hd, e.pos = i;
            e.L_new = L[(size_t)hd * n + i];
            e.o_new.assign(&O[((size_t)hd * n + i) * r.d], &O[((size_t)hd * n + i) * r.d] + d);
            v.push_back(e);
        }
    return v;
}

struct trace_tol {
    double L, w, o;   /* |L − ref| ≤ L · max(1, |ref|); |w − ref| ≤ w; |o − ref| ≤ o · max(1, |ref|) */
};

/* Compare the two lists event by event; false at the first difference, described in why. worst:
 * the largest error of each kind over the tolerance (L, w, o), when they all match. */
static bool compare_events(const std::vector<rev> &E, const std::vector<rev> &G, const trace_tol &tol, double worst[3],
                           char *why, size_t n)
{
    worst[0] = worst[1] = worst[2] = 0;
    auto near = [&](double x, double y, double t, bool rel, int w) {
        if (y == -INFINITY || x == -INFINITY) return x == y;
        if (!isfinite(x) || !isfinite(y)) return false;
        const double lim = t * (rel ? std::max(1.0, fabs(y)) : 1.0), err = fabs(x - y);
        worst[w] = std::max(worst[w], err / lim);
        return err <= lim;
    };
    for (size_t k = 0; k < E.size() && k < G.size(); k++) {
        const rev &e = E[k], &g = G[k];
        if (!same_place(k, e, g, why, n)) return false;
        const double Ls[3][2] = {{e.L_old, g.L_old}, {e.L_blk, g.L_blk}, {e.L_new, g.L_new}};
        const char *Ln[3] = {"L_old", "L_blk", "L_new"};
        for (int i = 0; i < 3; i++)
            if (!near(Ls[i][1], Ls[i][0], tol.L, true, 0))
                return differ(why, n, k, e, "pos %d %s %.6g, the GPU's %.6g", e.pos, Ln[i], Ls[i][0], Ls[i][1]);
        if (e.kind == FS_EV_RMERGE) {
            if (!near(g.w_old, e.w_old, tol.w, false, 1))
                return differ(why, n, k, e, "pos %d w_old %.6g, the GPU's %.6g", e.pos, e.w_old, g.w_old);
            if (!near(g.w_blk, e.w_blk, tol.w, false, 1))
                return differ(why, n, k, e, "pos %d w_blk %.6g, the GPU's %.6g", e.pos, e.w_blk, g.w_blk);
        }
        const std::vector<double> *os[3][2] = {{&e.o_old, &g.o_old}, {&e.o_blk, &g.o_blk}, {&e.o_new, &g.o_new}};
        const char *on[3] = {"o_old", "o_blk", "o_new"};
        for (int i = 0; i < 3; i++) {
            if (os[i][0]->size() != os[i][1]->size())
                return differ(why, n, k, e, "%s has %zu values, the GPU's %zu", on[i], os[i][0]->size(), os[i][1]->size());
            for (size_t j = 0; j < os[i][0]->size(); j++)
                if (!near((*os[i][1])[j], (*os[i][0])[j], tol.o, true, 2))
                    return differ(why, n, k, e, "pos %d %s[%zu] %.6g, the GPU's %.6g", e.pos, on[i], j, (*os[i][0])[j],
                                  (*os[i][1])[j]);
        }
    }
    return same_count(E, G, why, n);
}

/* One lesson-size problem through both rings: n positions, Hq/Hkv heads, head size d (padded to 64
 * on the GPU), the given scale, causal or not, zigzag or contiguous, Bq = Bk = B in the engine;
 * Q, K, V given (rounded here to the 16-bit type) or, when NULL, drawn from rng. fault: 0, or
 * fs_cuda_ring.fault (1: the last step's pairs left out, 3: the wrong source GPU). Returns true
 * when the traces match; prints one line (and the first difference). */
static bool trace_case(uint64_t *rng, const char *name, int n, int Hq, int Hkv, int d, double scale, bool causal,
                       bool zigzag, int B, fs_cuda_dtype dt, const double *Qin, const double *Kin, const double *Vin,
                       int fault)
{
    const int D = 64;   /* the GPU's head size: d padded with zeros */
    fs_cuda_ring r = ring_of(n, Hq, Hkv, D, causal, dt, 0);
    r.shard = zigzag ? FS_RING_ZIGZAG : FS_RING_CONTIG;
    r.scale = (float)scale;
    r.fault = fault;
    /* inputs, rounded to the 16-bit type; the engine runs on the rounded values */
    std::vector<double> Q((size_t)Hq * n * d), K((size_t)Hkv * n * d), V((size_t)Hkv * n * d);
    std::vector<uint16_t> Qb((size_t)Hq * n * D, 0), Kb((size_t)Hkv * n * D, 0), Vb((size_t)Hkv * n * D, 0);
    auto fill = [&](std::vector<double> &x, std::vector<uint16_t> &b, const double *given, double lo, double hi) {
        lesson_fill(rng, x, b, given, lo, hi, d, D, dt);
    };
    fill(Q, Qb, Qin, -2, 2);
    fill(K, Kb, Kin, -2, 2);
    fill(V, Vb, Vin, -1, 1);
    fs_attn a = host_attn(n, Hq, Hkv, d, Q, K, V, causal);
    a.scale = (double)r.scale;   /* the scale the GPU uses, rounded to float */
    fs_ring g = fs_ring_default();
    g.P = g_P;
    g.sharding = zigzag ? FS_SHARD_ZIGZAG : FS_SHARD_CONTIGUOUS;
    g.tiling.Bq = g.tiling.Bk = B;
    std::vector<double> Oe((size_t)Hq * n * d);
    fs_trace et;
    fs_trace_init(&et);
    const fs_status es = fs_ring_forward(&a, &g, Oe.data(), NULL, NULL, &et);
    if (es != FS_OK) {
        fprintf(stderr, "bench_ring: fs_ring_forward (%s): %s\n", name, fs_status_str(es));
        exit(2);
    }
    const std::vector<rev> E = engine_events(&et, d);
    fs_trace_free(&et);

    shards sh(r);
    scatter(sh, Qb, Hq, sh.Q);
    scatter(sh, Kb, Hkv, sh.K);
    scatter(sh, Vb, Hkv, sh.V);
    for (int p = 0; p < g_P; p++) {
        CU(cudaSetDevice(p));
        CU(cudaMemset(sh.O[p], 0xff, sh.q_elems * 2));
        CU(cudaMemset(sh.L[p], 0xff, sh.rows * sizeof(float)));
    }
    std::vector<fs_ring_trace> T(g_P);
    on_each_gpu([&](int p) {
        char why_[256] = "";
        FS(fs_cuda_ring_trace(sh.g[p], sh.Q[p], sh.K[p], sh.V[p], sh.O[p], sh.L[p], &T[p], why_, sizeof why_));
    });
    std::vector<double> O, L;
    gather(sh, sh.O, Hq, O);
    gather_L(sh, Hq, L);
    const std::vector<rev> G = gpu_events(r, T, a, O, L);
    for (auto &t : T) fs_ring_trace_free(&t);
    const trace_tol tol = dt == FS_CUDA_F16 ? trace_tol{1e-3, 4e-3, 4e-3} : trace_tol{1e-3, 4e-3, 2.5e-2};
    double worst[3];
    char why[512] = "";
    const bool ok = compare_events(E, G, tol, worst, why, sizeof why);
    size_t counts[FS_EV_COUNT] = {0};
    for (const rev &e : E) counts[e.kind]++;
    if (!fault)
        printf("%s trace P=%d %-20s %-4s n=%-3d H=%d/%d d=%d %-6s %-6s B=%d: %zu events (hold %zu, rmerge %zu, send "
               "%zu, recv %zu, out %zu)%s; worst/tol L %.2f w %.2f o %.2f\n",
               ok ? "ok  " : "FAIL", g_P, name, dt_str(dt), n, Hq, Hkv, d, causal ? "causal" : "none",
               zigzag ? "zigzag" : "contig", B, E.size(), counts[FS_EV_HOLD], counts[FS_EV_RMERGE], counts[FS_EV_SEND],
               counts[FS_EV_RECV], counts[FS_EV_OUT], ok ? "" : " differ", worst[0], worst[1], worst[2]);
    if (!ok) printf("     %s (seed printed above)\n", why);
    return ok;
}

/* ---- the backward's trace against the engine's (--trace --backward) -----------------------------
 *
 * The same problem through the engine's fs_ring_backward (float64, with its trace) and the GPUs'
 * fs_cuda_ring_backward_trace, both given the GPUs' forward O and L (so the two backward passes
 * start from the same numbers) and the same dO. Both become one list, in the engine's order: per
 * step t, per device p, HOLD (the K, V shard and its positions), then the device's state after
 * the step: one BROW per query row it owns (dQ so far) and one BKEY per key of the shard whose
 * gradients it added to (dK and dV so far; on the GPU that shard is read from the tag travelling
 * with dK, dV, not from the one with K, V); after each step every device's SEND, then every RECV,
 * with what they carry (K, V, dK, dV; the hops home, dK, dV) and their bytes; at the end one GRAD
 * per row of dQ, dK and dV. The engine's BTILE, BROW and BKEY events inside a step are replayed
 * into that state; its LSE and DELTA events have no counterpart (L is the forward's, given to
 * both; D is computed inside the GPU's backward kernel). */

struct brev : ring_place {     /* one backward ring event */
    std::vector<double> x, y;   /* BROW: dQ; BKEY: dK, dV; GRAD: the row */
};

/* The engine's trace of fs_ring_backward, reduced to the ring's events. */
static std::vector<brev> engine_bwd_events(const fs_trace *tr, const fs_attn &a, const fs_ring &g)
{
    const int n = a.n_q, d = a.d, Hq = a.n_q_heads, Hkv = a.n_kv_heads;
    std::vector<double> dq((size_t)Hq * n * d, 0), dk((size_t)Hkv * n * d, 0), dv((size_t)Hkv * n * d, 0);
    std::vector<brev> v;
    std::vector<int32_t> own(n);
    brev cur;   /* the HOLD whose step is being replayed (device −1: none) */
    auto row = [&](const std::vector<double> &x, int h, int i) {
        const auto at = x.begin() + ((size_t)h * n + i) * d;
        return std::vector<double>(at, at + d);
    };
    auto flush = [&]() {   /* the state after device cur.device's step cur.t */
        if (cur.device < 0) return;
        const int nq = fs_ring_positions(&g, n, cur.device, own.data());
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < nq; i++) {
                brev e;
                e.kind = FS_EV_BROW, e.device = cur.device, e.t = cur.t, e.shard = cur.shard, e.head = h, e.pos = own[i];
                e.x = row(dq, h, own[i]);
                v.push_back(e);
            }
        for (int h = 0; h < Hkv; h++)
            for (int j : cur.positions) {
                brev e;
                e.kind = FS_EV_BKEY, e.device = cur.device, e.t = cur.t, e.shard = cur.shard, e.head = h, e.pos = j;
                e.x = row(dk, h, j), e.y = row(dv, h, j);
                v.push_back(e);
            }
        cur.device = -1;
    };
    auto put = [&](std::vector<double> &x, int h, int i, int64_t off) {
        const double *y = fs_trace_at(tr, off);
        if (y) memcpy(&x[((size_t)h * n + i) * d], y, sizeof(double) * d);
    };
    for (int64_t k = 0; k < tr->n; k++) {
        const fs_event *e = &tr->ev[k];
        switch (e->kind) {
        case FS_EV_HOLD: {
            flush();
            cur = brev();
            cur.kind = FS_EV_HOLD, cur.device = e->device, cur.t = e->ring_step, cur.shard = e->shard;
            const double *x = fs_trace_at(tr, e->s_row);
            for (int j = 0; j < e->n_s; j++) cur.positions.push_back((int)x[j]);
            v.push_back(cur);
        } break;
        case FS_EV_BROW: put(dq, e->head, e->pos, e->o_new); break;
        case FS_EV_BKEY:
            put(dk, e->kv_head, e->pos, e->o_new);
            put(dv, e->kv_head, e->pos, e->g_new);
            break;
        case FS_EV_SEND:
        case FS_EV_RECV: {
            flush();
            if (e->a == e->b) break;   /* one device (P = 1): its shard "goes home" to itself; nothing moves */
            brev r;
            r.kind = e->kind, r.device = e->device, r.t = e->ring_step, r.shard = e->shard, r.a = e->a, r.b = e->b;
            r.tensor = e->tensor, r.bytes = e->bytes;
            v.push_back(r);
        } break;
        case FS_EV_GRAD: {
            flush();
            brev r;
            r.kind = FS_EV_GRAD, r.tensor = e->tensor, r.head = e->tensor == FS_GRAD_DQ ? e->head : e->kv_head;
            r.pos = e->row;
            const double *x = fs_trace_at(tr, e->o_new);
            if (x) r.x = std::vector<double>(x, x + e->n_o);
            v.push_back(r);
        } break;
        default: break;
        }
    }
    flush();
    return v;
}

/* The GPUs' records turned into the same events. dQ, dK, dV: the gradients gathered (global
 * (heads, n, D)); a: the engine's problem (its d, and the bytes of a hop in its convention). */
static std::vector<brev> gpu_bwd_events(const fs_cuda_ring &r, const std::vector<fs_ring_btrace> &T, const fs_attn &a,
                                        const std::vector<double> &dQ, const std::vector<double> &dK,
                                        const std::vector<double> &dV)
{
    std::vector<brev> v;
    const int P = r.n_dev, S = fs_cuda_ring_slots(&r), c = fs_cuda_ring_slot_rows(&r), Hq = r.n_q_heads;
    const int Hkv = r.n_kv_heads, D = r.d, d = a.d, n = r.n;
    auto bytes = [&](int64_t elems, bool last) {
        const int rows = (int)(elems / ((int64_t)Hkv * D));
        return (long long)fs_ring_shard_bytes(&a, rows, true, last);
    };
    for (int t = 0; t < P; t++) {
        for (int p = 0; p < P; p++) {
            const fs_ring_btrace &tr = T[p];
            brev h;
            h.kind = FS_EV_HOLD, h.device = p, h.t = t, h.shard = tr.hold[t][0], h.positions = tag_positions(tr.hold[t]);
            v.push_back(h);
            for (int hd = 0; hd < Hq; hd++)
                for (int s = 0; s < S; s++)
                    for (int i = 0; i < c; i++) {
                        const float *x = tr.dq + ((size_t)t * tr.rows + ((size_t)s * Hq + hd) * c + i) * D;
                        brev e;
                        e.kind = FS_EV_BROW, e.device = p, e.t = t, e.shard = tr.hold[t][0], e.head = hd;
                        e.pos = fs_cuda_ring_slot_start(&r, p, s) + i;
                        e.x.assign(x, x + d);
                        v.push_back(e);
                    }
            /* the keys of the shard whose dK, dV this step added to, by the tag that came with them */
            const int32_t *acc = tr.acc[t];
            const int slots = acc[1] >= 1 && acc[1] <= 2 && acc[2] == c ? acc[1] : 0;
            for (int hd = 0; hd < Hkv; hd++)
                for (int s = 0; s < slots; s++)
                    for (int i = 0; i < c; i++) {
                        const size_t o = ((size_t)t * tr.keys + ((size_t)s * Hkv + hd) * c + i) * D;
                        brev e;
                        e.kind = FS_EV_BKEY, e.device = p, e.t = t, e.shard = acc[0], e.head = hd, e.pos = acc[3 + s] + i;
                        e.x.assign(tr.dk + o, tr.dk + o + d), e.y.assign(tr.dv + o, tr.dv + o + d);
                        v.push_back(e);
                    }
        }
        const bool last = t == P - 1;
        if (P == 1) break;   /* nothing moves */
        /* one SEND a device: K, V, dK, dV (their tags must agree: else shard −2), or at the last
         * step the hop home, dK, dV alone */
        for (int p = 0; p < P; p++) {
            const fs_ring_btrace &tr = T[p];
            brev e;
            e.kind = FS_EV_SEND, e.device = p, e.t = t, e.a = p, e.b = tr.to[t], e.tensor = last ? 2 : 1;
            e.shard = last || tr.sent_kv[t][0] == tr.sent_dkv[t][0] ? tr.sent_dkv[t][0] : -2;
            e.bytes = last || tr.kv_elems[t] == tr.dkv_elems[t] ? bytes(tr.dkv_elems[t], last) : -1;
            v.push_back(e);
        }
        for (int k = 0; k < P; k++) {   /* in the engine's order: the receiver of device k's send */
            const int q = (k + 1) % P;
            const fs_ring_btrace &tr = T[q];
            brev e;
            e.kind = FS_EV_RECV, e.device = q, e.t = t, e.a = tr.from[t], e.b = q, e.tensor = last ? 2 : 1;
            e.shard = last || tr.got_kv[t][0] == tr.got_dkv[t][0] ? tr.got_dkv[t][0] : -2;
            e.bytes = bytes(T[k].dkv_elems[t], last);   /* what the sender moved */
            v.push_back(e);
        }
    }
    const std::vector<double> *g[3] = {&dQ, &dK, &dV};
    for (int w = 0; w < 3; w++)
        for (int hd = 0; hd < (w ? Hkv : Hq); hd++)
            for (int i = 0; i < n; i++) {
                brev e;
                e.kind = FS_EV_GRAD, e.tensor = w, e.head = hd, e.pos = i;
                const auto x = g[w]->begin() + ((size_t)hd * n + i) * D;
                e.x.assign(x, x + d);
                v.push_back(e);
            }
    return v;
}

/* Compare the two lists event by event; false at the first difference, described in why. worst:
 * the largest error over its tolerance (|x − ref| ≤ tol · max(1, |ref|)), when they all match. */
static bool compare_bwd_events(const std::vector<brev> &E, const std::vector<brev> &G, double tol, double *worst,
                               char *why, size_t n)
{
    *worst = 0;
    for (size_t k = 0; k < E.size() && k < G.size(); k++) {
        const brev &e = E[k], &g = G[k];
        if (!same_place(k, e, g, why, n)) return false;
        const std::vector<double> *xs[2][2] = {{&e.x, &g.x}, {&e.y, &g.y}};
        for (int i = 0; i < 2; i++) {
            const char *name = e.kind == FS_EV_BKEY ? (i ? "dV" : "dK") : e.kind == FS_EV_BROW ? "dQ" : "value";
            if (xs[i][0]->size() != xs[i][1]->size())
                return differ(why, n, k, e, "%s has %zu values, the GPU's %zu", name, xs[i][0]->size(), xs[i][1]->size());
            for (size_t j = 0; j < xs[i][0]->size(); j++) {
                const double ref = (*xs[i][0])[j], x = (*xs[i][1])[j], lim = tol * std::max(1.0, fabs(ref));
                if (!isfinite(x) || fabs(x - ref) > lim)
                    return differ(why, n, k, e, "head %d pos %d %s[%zu] %.6g, the GPU's %.6g", e.head, e.pos, name, j, ref, x);
                *worst = std::max(*worst, fabs(x - ref) / lim);
            }
        }
    }
    return same_count(E, G, why, n);
}

/* One lesson-size problem through both backward rings, as trace_case; dOin NULL: dO drawn from rng.
 * fault: 0, or fs_cuda_ring.fault (2: the last step's pairs left out, 4: dK, dV lost at each hop). */
static bool trace_bwd_case(uint64_t *rng, const char *name, int n, int Hq, int Hkv, int d, double scale, bool causal,
                           bool zigzag, int B, fs_cuda_dtype dt, const double *Qin, const double *Kin, const double *Vin,
                           const double *dOin, int fault)
{
    const int D = 64;   /* the GPU's head size: d padded with zeros */
    fs_cuda_ring r = ring_of(n, Hq, Hkv, D, causal, dt, 0);
    r.shard = zigzag ? FS_RING_ZIGZAG : FS_RING_CONTIG;
    r.scale = (float)scale;
    r.bwd_version = g_bwd_version;
    r.home_chunks = g_chunks;
    r.fault = fault;
    std::vector<double> Q((size_t)Hq * n * d), K((size_t)Hkv * n * d), V((size_t)Hkv * n * d), G((size_t)Hq * n * d);
    std::vector<uint16_t> Qb((size_t)Hq * n * D, 0), Kb((size_t)Hkv * n * D, 0), Vb((size_t)Hkv * n * D, 0),
        Gb((size_t)Hq * n * D, 0);
    auto fill = [&](std::vector<double> &x, std::vector<uint16_t> &b, const double *given, double lo, double hi) {
        lesson_fill(rng, x, b, given, lo, hi, d, D, dt);
    };
    fill(Q, Qb, Qin, -2, 2);
    fill(K, Kb, Kin, -2, 2);
    fill(V, Vb, Vin, -1, 1);
    fill(G, Gb, dOin, -1, 1);

    /* the GPUs' forward, then their backward with its trace */
    shards sh(r);
    sh.alloc_bwd();
    scatter(sh, Qb, Hq, sh.Q);
    scatter(sh, Kb, Hkv, sh.K);
    scatter(sh, Vb, Hkv, sh.V);
    scatter(sh, Gb, Hq, sh.dO);
    for (int p = 0; p < g_P; p++) {
        CU(cudaSetDevice(p));
        CU(cudaMemset(sh.dQ[p], 0xff, sh.q_elems * 2));
        CU(cudaMemset(sh.dK[p], 0xff, sh.kv_elems * 2));
        CU(cudaMemset(sh.dV[p], 0xff, sh.kv_elems * 2));
    }
    sh.run(FS_RING_RUN_FULL, NULL);
    std::vector<fs_ring_btrace> T(g_P);
    on_each_gpu([&](int p) {
        char why_[256] = "";
        FS(fs_cuda_ring_backward_trace(sh.g[p], sh.Q[p], sh.K[p], sh.V[p], sh.O[p], sh.dO[p], sh.L[p], sh.dQ[p],
                                       sh.dK[p], sh.dV[p], &T[p], why_, sizeof why_));
    });
    std::vector<double> O, L, gQ, gK, gV;
    gather(sh, sh.O, Hq, O);
    gather(sh, sh.dQ, Hq, gQ);
    gather(sh, sh.dK, Hkv, gK);
    gather(sh, sh.dV, Hkv, gV);
    gather_L(sh, Hq, L);

    /* the engine's backward ring on the same inputs, from the GPUs' O (its first d columns) and L */
    fs_attn a = host_attn(n, Hq, Hkv, d, Q, K, V, causal);
    a.scale = (double)r.scale;
    std::vector<double> Od((size_t)Hq * n * d);
    for (size_t i = 0; i < (size_t)Hq * n; i++)
        for (int j = 0; j < d; j++) Od[i * d + j] = O[i * D + j];
    fs_ring g = fs_ring_default();
    g.P = g_P;
    g.sharding = zigzag ? FS_SHARD_ZIGZAG : FS_SHARD_CONTIGUOUS;
    g.tiling.Bq = g.tiling.Bk = B;
    std::vector<double> eQ((size_t)Hq * n * d), eK((size_t)Hkv * n * d), eV((size_t)Hkv * n * d);
    fs_trace et;
    fs_trace_init(&et);
    const fs_status es = fs_ring_backward(&a, &g, Od.data(), L.data(), G.data(), eQ.data(), eK.data(), eV.data(), NULL,
                                          &et);
    if (es != FS_OK) {
        fprintf(stderr, "bench_ring: fs_ring_backward (%s): %s\n", name, fs_status_str(es));
        exit(2);
    }
    const std::vector<brev> E = engine_bwd_events(&et, a, g);
    fs_trace_free(&et);
    const std::vector<brev> Gv = gpu_bwd_events(r, T, a, gQ, gK, gV);
    for (auto &t : T) fs_ring_btrace_free(&t);
    const double tol = dt == FS_CUDA_F16 ? 4e-3 : 3e-2;
    double worst = 0;
    char why[512] = "";
    const bool ok = compare_bwd_events(E, Gv, tol, &worst, why, sizeof why);
    size_t counts[FS_EV_COUNT] = {0};
    for (const brev &e : E) counts[e.kind]++;
    if (!fault)
        printf("%s btrace P=%d %-20s %-4s n=%-3d H=%d/%d d=%d %-6s %-6s B=%d: %zu events (hold %zu, brow %zu, bkey %zu, "
               "send %zu, recv %zu, grad %zu)%s; worst/tol %.2f\n",
               ok ? "ok  " : "FAIL", g_P, name, dt_str(dt), n, Hq, Hkv, d, causal ? "causal" : "none",
               zigzag ? "zigzag" : "contig", B, E.size(), counts[FS_EV_HOLD], counts[FS_EV_BROW], counts[FS_EV_BKEY],
               counts[FS_EV_SEND], counts[FS_EV_RECV], counts[FS_EV_GRAD], ok ? "" : " differ", worst);
    if (!ok) printf("     %s (seed printed above)\n", why);
    return ok;
}

/* lessons/ring_01_four_devices_causal_n8.lesson's problem: n = 8, d = 2, scale 1, causal */
static const double ring01_Q[16] = {1, 0, 0, 1, 1, 1, 0.5, -0.5, 1, -1, 0, 0.5, -0.5, 1, 1, 0.5};
static const double ring01_K[16] = {1, 0, 0, 1, 0.5, 0.5, -1, 0, 0, -1, 1, 1, 0.5, 0, 0, 0.5};
static const double ring01_V[16] = {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 1, -1, -1, 1, 0.5, 0.5};

static void run_bwd_traces(uint64_t *rng, int count);

static void run_traces(uint64_t *rng, int count, bool backward)
{
    if (backward) {
        run_bwd_traces(rng, count);
        return;
    }
    const int P = g_P;
    /* the lesson's problem, as the lesson shards it (contiguous) and zigzag, in both 16-bit types */
    for (auto dt : {FS_CUDA_F16, FS_CUDA_BF16})
        for (bool zz : {false, true})
            if (8 % (zz ? 2 * P : P) == 0)
                if (!trace_case(rng, "ring_01", 8, 1, 1, 2, 1.0, true, zz, 2, dt, ring01_Q, ring01_K, ring01_V, 0)) g_fail++;
    /* fresh random lesson-size problems */
    const int heads[][2] = {{1, 1}, {2, 1}, {2, 2}, {4, 2}, {3, 3}};
    for (int k = 0; k < count; k++) {
        const bool zz = k % 2 == 1, causal = k % 4 < 2;
        const int mult = zz ? 2 * P : P;
        const int n = mult * (1 + (int)(rng_next(rng) % (40 / mult)));
        const int d = 1 + (int)(rng_next(rng) % 8), B = 1 + (int)(rng_next(rng) % 4);
        const int *h = heads[rng_next(rng) % 5];
        const fs_cuda_dtype dt = k % 8 < 4 ? FS_CUDA_F16 : FS_CUDA_BF16;
        char name[32];
        snprintf(name, sizeof name, "random %d", k);
        if (!trace_case(rng, name, n, h[0], h[1], d, fs_attn_default_scale(d), causal, zz, B, dt, NULL, NULL, NULL, 0))
            g_fail++;
    }
    /* self-tests: a planted fault must make the comparison fail */
    if (P > 1) {
        struct {
            int fault;
            const char *what;
        } faults[] = {{1, "the last step's pairs left out"}, {3, "the shards from GPU p - 2 (the wrong source)"}};
        for (auto &f : faults)
            for (bool zz : {false, true}) {
                if (8 % (zz ? 2 * P : P)) continue;
                const bool passed = trace_case(rng, "ring_01", 8, 1, 1, 2, 1.0, true, zz, 2, FS_CUDA_F16, ring01_Q,
                                               ring01_K, ring01_V, f.fault);
                printf("%s self-test: the trace with %s %s the comparison (%s)\n", passed ? "FAIL" : "ok  ", f.what,
                       passed ? "passes" : "fails", zz ? "zigzag" : "contiguous");
                if (passed) g_fail++;
            }
    }
}

/* The backward's traces: lessons/ring_05_backward's problem (ring_01's Q, K, V, dO = 1), as the
 * lesson shards it (contiguous) and zigzag, both 16-bit types; fresh random ones; two self-tests. */
static void run_bwd_traces(uint64_t *rng, int count)
{
    const int P = g_P;
    const std::vector<double> ones(16, 1.0);
    for (auto dt : {FS_CUDA_F16, FS_CUDA_BF16})
        for (bool zz : {false, true})
            if (8 % (zz ? 2 * P : P) == 0)
                if (!trace_bwd_case(rng, "ring_05", 8, 1, 1, 2, 1.0, true, zz, 2, dt, ring01_Q, ring01_K, ring01_V,
                                    ones.data(), 0))
                    g_fail++;
    const int heads[][2] = {{1, 1}, {2, 1}, {2, 2}, {4, 2}, {3, 3}};
    for (int k = 0; k < count; k++) {
        const bool zz = k % 2 == 1, causal = k % 4 < 2;
        const int mult = zz ? 2 * P : P;
        const int n = mult * (1 + (int)(rng_next(rng) % (40 / mult)));
        const int d = 1 + (int)(rng_next(rng) % 8), B = 1 + (int)(rng_next(rng) % 4);
        const int *h = heads[rng_next(rng) % 5];
        const fs_cuda_dtype dt = k % 8 < 4 ? FS_CUDA_F16 : FS_CUDA_BF16;
        char name[32];
        snprintf(name, sizeof name, "random %d", k);
        if (!trace_bwd_case(rng, name, n, h[0], h[1], d, fs_attn_default_scale(d), causal, zz, B, dt, NULL, NULL, NULL,
                            NULL, 0))
            g_fail++;
    }
    if (P > 1) {
        struct {
            int fault;
            const char *what;
        } faults[] = {{2, "the last step's pairs left out"}, {4, "dK, dV zeroed before each hop"}};
        for (auto &f : faults)
            for (bool zz : {false, true}) {
                if (8 % (zz ? 2 * P : P)) continue;
                const bool passed = trace_bwd_case(rng, "ring_05", 8, 1, 1, 2, 1.0, true, zz, 2, FS_CUDA_F16, ring01_Q,
                                                   ring01_K, ring01_V, ones.data(), f.fault);
                printf("%s self-test: the backward's trace with %s %s the comparison (%s)\n", passed ? "FAIL" : "ok  ",
                       f.what, passed ? "passes" : "fails", zz ? "zigzag" : "contiguous");
                if (passed) g_fail++;
            }
    }
}

/* ---- timing --------------------------------------------------------------------------------- */

/* Element (slot, h, i, j) of a GPU's shard = element (h, start[slot] + i, j) of the whole (H, N, d)
 * tensor, valued by a hash of that global index and seed in [lo, hi). */
template <typename T>
__global__ void fill_hash(T *x, int S, int H, int c, int d, int N, int start0, int start1, uint64_t seed, float lo,
                          float hi)
{
    const size_t total = (size_t)S * H * c * d;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
        const int j = (int)(e % d);
        const size_t row = e / d;
        const int i = (int)(row % c), h = (int)(row / c % H), s = (int)(row / c / H);
        const uint64_t g = ((uint64_t)h * N + (uint64_t)(s ? start1 : start0) + i) * d + j;
        uint64_t z = seed + g * 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        x[e] = (T)(lo + (hi - lo) * (float)(z >> 40) * 0x1.0p-24f);
    }
}

static void fill_dev(void *x, fs_cuda_dtype dt, int S, int H, int c, int d, int N, int s0, int s1, uint64_t seed,
                     float lo, float hi)
{
    if (dt == FS_CUDA_F16)
        fill_hash<__half><<<1024, 256>>>((__half *)x, S, H, c, d, N, s0, s1, seed, lo, hi);
    else
        fill_hash<__nv_bfloat16><<<1024, 256>>>((__nv_bfloat16 *)x, S, H, c, d, N, s0, s1, seed, lo, hi);
    CU(cudaGetLastError());
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct single_run {
    double ms;
    std::vector<uint16_t> O;   /* kept at small N for the comparison */
};

/* The single-GPU version on the whole problem on GPU 0, median of reps after one warm-up. */
static single_run time_single(int N, int H, int d, bool causal, fs_cuda_dtype dt, int reps, uint64_t seed, bool keep)
{
    CU(cudaSetDevice(0));
    const size_t ne = (size_t)H * N * d;
    void *Q, *K, *V, *O;
    float *L;
    CU(cudaMalloc(&Q, ne * 2));
    CU(cudaMalloc(&K, ne * 2));
    CU(cudaMalloc(&V, ne * 2));
    CU(cudaMalloc(&O, ne * 2));
    CU(cudaMalloc((void **)&L, (size_t)H * N * sizeof(float)));
    fill_dev(Q, dt, 1, H, N, d, N, 0, 0, seed + 1, -2, 2);
    fill_dev(K, dt, 1, H, N, d, N, 0, 0, seed + 2, -2, 2);
    fill_dev(V, dt, 1, H, N, d, N, 0, 0, seed + 3, -1, 1);
    fs_cuda_prefill pp;
    memset(&pp, 0, sizeof pp);
    pp.batch = 1;
    pp.n_q_heads = pp.n_kv_heads = H;
    pp.n_q = pp.n_kv = N;
    pp.d = d;
    pp.mask = causal ? FS_MASK_CAUSAL : FS_MASK_NONE;
    pp.scale = (float)fs_attn_default_scale(d);
    pp.dtype = dt;
    pp.lse = L;   /* as the ring's kernels, and a training forward, do */
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    std::vector<double> ms;
    for (int k = 0; k <= reps; k++) {
        char why_[256] = "";
        CU(cudaEventRecord(e0));
        FS(fs_cuda_prefill_run(&pp, g_version, Q, K, V, O, why_, sizeof why_));
        CU(cudaEventRecord(e1));
        CU(cudaEventSynchronize(e1));
        float t;
        CU(cudaEventElapsedTime(&t, e0, e1));
        if (k) ms.push_back(t);
    }
    single_run s;
    s.ms = median(ms);
    if (keep) {
        s.O.resize(ne);
        CU(cudaMemcpy(s.O.data(), O, ne * 2, cudaMemcpyDeviceToHost));
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(Q);
    cudaFree(K);
    cudaFree(V);
    cudaFree(O);
    cudaFree(L);
    return s;
}

struct ring_run {
    double full, compute, comm, merge;   /* medians, ms: the slowest GPU's end to end */
    double exposed, in_ring;             /* medians of the largest over GPUs: transfer time not
                                            hidden, and the transfers' own time inside the ring */
    std::vector<double> step;            /* medians of the slowest GPU's step times */
    double wall;                         /* host clock around the ring runs, median */
    int pairs;
};

static double now_ms()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* Time the ring on sh (inputs filled) in mode m: median over reps of the slowest GPU's total. */
static void time_mode(shards &sh, fs_ring_mode m, int reps, double *total, std::vector<double> *step, double *merge,
                      double *wall, int *pairs, double *exposed = NULL, double *in_ring = NULL)
{
    std::vector<double> tot, mer, w, ex, ir;
    std::vector<std::vector<double>> st(g_P);
    for (int k = 0; k <= reps; k++) {
        std::vector<fs_ring_times> t;
        const double t0 = now_ms();
        sh.run(m, &t);
        const double t1 = now_ms();
        if (!k) continue;   /* warm-up */
        int slow = 0;
        for (int p = 1; p < g_P; p++)
            if (t[p].total_ms > t[slow].total_ms) slow = p;
        tot.push_back(t[slow].total_ms);
        mer.push_back(t[slow].merge_ms);
        w.push_back(t1 - t0);
        for (int s = 0; s < g_P; s++) st[s].push_back(t[slow].step_ms[s]);
        double e = 0, c = 0;
        for (int p = 0; p < g_P; p++) {
            double ep = 0, cp = 0;
            for (int s = 0; s < g_P; s++) ep += t[p].exposed_ms[s], cp += t[p].comm_ms[s];
            e = std::max(e, ep);
            c = std::max(c, cp);
        }
        ex.push_back(e);
        ir.push_back(c);
        if (pairs) *pairs = t[0].pairs;
    }
    *total = median(tot);
    if (exposed) *exposed = median(ex);
    if (in_ring) *in_ring = median(ir);
    if (merge) *merge = median(mer);
    if (wall) *wall = median(w);
    if (step) {
        step->clear();
        for (int s = 0; s < g_P; s++) step->push_back(median(st[s]));
    }
}

static void fill_shards(shards &sh, uint64_t seed)
{
    const fs_cuda_ring &r = sh.r;
    const int c = fs_cuda_ring_slot_rows(&r), S = fs_cuda_ring_slots(&r);
    for (int p = 0; p < g_P; p++) {
        CU(cudaSetDevice(p));
        const int s0 = fs_cuda_ring_slot_start(&r, p, 0), s1 = S > 1 ? fs_cuda_ring_slot_start(&r, p, 1) : 0;
        fill_dev(sh.Q[p], r.dtype, S, r.n_q_heads, c, r.d, r.n, s0, s1, seed + 1, -2, 2);
        fill_dev(sh.K[p], r.dtype, S, r.n_kv_heads, c, r.d, r.n, s0, s1, seed + 2, -2, 2);
        fill_dev(sh.V[p], r.dtype, S, r.n_kv_heads, c, r.d, r.n, s0, s1, seed + 3, -1, 1);
        CU(cudaDeviceSynchronize());
    }
}

/* ‖ring x − single x‖ / ‖single x‖ over a whole (heads, N, d) tensor, the ring's shards dev
 * gathered (x: O, or the backward's dQ, dK, dV). */
static double compare_single(shards &sh, const std::vector<void *> &dev, int H, const std::vector<uint16_t> &X1)
{
    const fs_cuda_ring &r = sh.r;
    const int N = r.n, d = r.d;
    const size_t per = (size_t)fs_cuda_ring_slots(&r) * H * fs_cuda_ring_slot_rows(&r) * d;
    double num = 0, den = 0;
    for (int p = 0; p < g_P; p++) {
        CU(cudaSetDevice(p));
        std::vector<uint16_t> o(per);
        CU(cudaMemcpy(o.data(), dev[p], o.size() * 2, cudaMemcpyDeviceToHost));
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++) {
                const long lr = sh.local_row(p, H, h, i);
                if (lr < 0) continue;
                for (int j = 0; j < d; j++) {
                    const double x = from16(o[(size_t)lr * d + j], r.dtype), y = from16(X1[((size_t)h * N + i) * d + j], r.dtype);
                    if (!isfinite(x)) return INFINITY;
                    num += (x - y) * (x - y);
                    den += y * y;
                }
            }
    }
    return sqrt(num) / (den > 0 ? sqrt(den) : 1);
}
static double compare_single(shards &sh, const std::vector<uint16_t> &O1)
{
    return compare_single(sh, sh.O, sh.r.n_q_heads, O1);
}

/* ---- the backward's timing ------------------------------------------------------------------ */

struct single_bwd {
    double ms;
    std::vector<uint16_t> dQ, dK, dV;   /* kept at small N for the comparison */
};

/* The single-GPU backward on the whole problem on GPU 0: the forward (g_version, with L) once,
 * then backward version g_bwd_version, median of reps after one warm-up. Inputs from the same
 * hash as the ring's shards (dO: seed + 4). */
static single_bwd time_single_bwd(int N, int H, int d, bool causal, fs_cuda_dtype dt, int reps, uint64_t seed, bool keep)
{
    CU(cudaSetDevice(0));
    const size_t ne = (size_t)H * N * d;
    void *x[8], *work;   /* Q K V O dO dQ dK dV */
    for (int i = 0; i < 8; i++) CU(cudaMalloc(&x[i], ne * 2));
    float *L;
    CU(cudaMalloc((void **)&L, (size_t)H * N * sizeof(float)));
    fill_dev(x[0], dt, 1, H, N, d, N, 0, 0, seed + 1, -2, 2);
    fill_dev(x[1], dt, 1, H, N, d, N, 0, 0, seed + 2, -2, 2);
    fill_dev(x[2], dt, 1, H, N, d, N, 0, 0, seed + 3, -1, 1);
    fill_dev(x[4], dt, 1, H, N, d, N, 0, 0, seed + 4, -1, 1);
    fs_cuda_prefill pp;
    memset(&pp, 0, sizeof pp);
    pp.batch = 1;
    pp.n_q_heads = pp.n_kv_heads = H;
    pp.n_q = pp.n_kv = N;
    pp.d = d;
    pp.mask = causal ? FS_MASK_CAUSAL : FS_MASK_NONE;
    pp.scale = (float)fs_attn_default_scale(d);
    pp.dtype = dt;
    pp.lse = L;
    CU(cudaMalloc(&work, fs_cuda_backward_workspace(&pp)));
    char why_[256] = "";
    FS(fs_cuda_prefill_run(&pp, g_version, x[0], x[1], x[2], x[3], why_, sizeof why_));
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    std::vector<double> ms;
    for (int k = 0; k <= reps; k++) {
        CU(cudaEventRecord(e0));
        FS(fs_cuda_backward_run(&pp, g_bwd_version, x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], work, why_,
                                sizeof why_));
        CU(cudaEventRecord(e1));
        CU(cudaEventSynchronize(e1));
        float t;
        CU(cudaEventElapsedTime(&t, e0, e1));
        if (k) ms.push_back(t);
    }
    single_bwd s;
    s.ms = median(ms);
    if (keep) {
        std::vector<uint16_t> *o[3] = {&s.dQ, &s.dK, &s.dV};
        for (int i = 0; i < 3; i++) {
            o[i]->resize(ne);
            CU(cudaMemcpy(o[i]->data(), x[5 + i], ne * 2, cudaMemcpyDeviceToHost));
        }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    for (int i = 0; i < 8; i++) cudaFree(x[i]);
    cudaFree(L);
    cudaFree(work);
    return s;
}

/* What the GPUs' common clock (fs_ring_times.clock_ns) says about the end of a backward ring, ms:
 * how long the hops home went on after the last GPU's compute ended (the part of the end no
 * compute hid), how far apart the GPUs' compute ended, and how far apart their ends were (they end
 * on the same last exchange, so this bounds how far the clocks disagree); the largest wait in
 * steps over the GPUs (CUDA events, each GPU's own). */
struct bwd_clock {
    double home_all = 0, cend_spread = 0, done_spread = 0, waits_max = 0;
};

/* The ring's backward in mode m, reps times after one warm-up: medians of the slowest GPU's total,
 * of the time it waited for transfers (its steps' waits + its hops home after its compute: the
 * time the transfers added to the ring's), of the largest such time over the GPUs (a faster GPU
 * also waits there for the slower one's last hop), of the transfers' own time inside the ring
 * (largest over GPUs), the slowest GPU's step times, and of the clock's figures (bwd_clock). */
static void time_bwd_mode(shards &sh, fs_ring_mode m, int reps, double *total, double *exposed, double *exposed_max,
                          double *home, double *in_ring, std::vector<double> *step, bwd_clock *clk = NULL)
{
    std::vector<double> tot, ex, exm, ho, ir, ha, cs, ds, wm;
    std::vector<std::vector<double>> st(g_P);
    for (int k = 0; k <= reps; k++) {
        std::vector<fs_ring_times> t;
        sh.run_bwd(m, &t);
        if (!k) continue;
        int slow = 0;
        for (int p = 1; p < g_P; p++)
            if (t[p].total_ms > t[slow].total_ms) slow = p;
        tot.push_back(t[slow].total_ms);
        for (int s = 0; s < g_P; s++) st[s].push_back(t[slow].step_ms[s]);
        double e = 0, em = 0, c = 0;
        for (int p = 0; p < g_P; p++) {
            double ep = t[p].home_ms, cp = 0;
            for (int s = 0; s < g_P; s++) ep += t[p].exposed_ms[s], cp += t[p].comm_ms[s];
            if (p == slow) e = ep;
            em = std::max(em, ep);
            c = std::max(c, cp);
        }
        ex.push_back(e);
        exm.push_back(em);
        ir.push_back(c);
        ho.push_back(t[slow].home_ms);
        uint64_t c_lo = UINT64_MAX, c_hi = 0, d_lo = UINT64_MAX, d_hi = 0;
        double w = 0;
        for (int p = 0; p < g_P; p++) {
            c_lo = std::min(c_lo, t[p].clock_ns[1]), c_hi = std::max(c_hi, t[p].clock_ns[1]);
            d_lo = std::min(d_lo, t[p].clock_ns[2]), d_hi = std::max(d_hi, t[p].clock_ns[2]);
            double wp = 0;
            for (int s = 0; s < g_P; s++) wp += t[p].exposed_ms[s];
            w = std::max(w, wp);
        }
        ha.push_back(d_hi > c_hi ? (double)(d_hi - c_hi) * 1e-6 : 0.0);
        cs.push_back((double)(c_hi - c_lo) * 1e-6);
        ds.push_back((double)(d_hi - d_lo) * 1e-6);
        wm.push_back(w);
    }
    *total = median(tot);
    if (exposed) *exposed = median(ex);
    if (exposed_max) *exposed_max = median(exm);
    if (home) *home = median(ho);
    if (in_ring) *in_ring = median(ir);
    if (step) {
        step->clear();
        for (int s = 0; s < g_P; s++) step->push_back(median(st[s]));
    }
    if (clk) clk->home_all = median(ha), clk->cend_spread = median(cs), clk->done_spread = median(ds), clk->waits_max = median(wm);
}

static void time_backward(const std::vector<int> &sizes, int reps, int reserve, fs_cuda_dtype dt, int d, uint64_t seed,
                          int check_upto)
{
    const int H = 16;
    for (int kN : sizes)
        for (int ci = 0; ci < 2; ci++) {
            const bool causal = ci == 1;
            const int N = kN * 1024;
            const bool keep = kN <= check_upto;
            const int rp = kN >= 256 ? std::max(2, reps / 2) : reps;
            single_bwd one = time_single_bwd(N, H, d, causal, dt, rp, seed, keep);
            fs_cuda_ring r = ring_of(N, H, H, d, causal, dt, reserve);
            r.bwd_version = g_bwd_version;
            r.home_chunks = g_chunks;
            shards sh(r);
            sh.alloc_bwd();
            fill_shards(sh, seed);
            const int c = fs_cuda_ring_slot_rows(&r), S = fs_cuda_ring_slots(&r);
            for (int p = 0; p < g_P; p++) {
                CU(cudaSetDevice(p));
                const int s0 = fs_cuda_ring_slot_start(&r, p, 0), s1 = S > 1 ? fs_cuda_ring_slot_start(&r, p, 1) : 0;
                fill_dev(sh.dO[p], dt, S, H, c, d, N, s0, s1, seed + 4, -1, 1);
                CU(cudaDeviceSynchronize());
            }
            sh.run(FS_RING_RUN_FULL, NULL);   /* O and L */
            double full, exposed, exposed_max, home, in_ring, compute, comm;
            std::vector<double> steps;
            bwd_clock clk;
            time_bwd_mode(sh, FS_RING_RUN_FULL, rp, &full, &exposed, &exposed_max, &home, &in_ring, &steps, &clk);
            double cq = NAN, ck = NAN, cv = NAN;
            if (keep) {
                cq = compare_single(sh, sh.dQ, H, one.dQ);
                ck = compare_single(sh, sh.dK, H, one.dK);
                cv = compare_single(sh, sh.dV, H, one.dV);
            }
            time_bwd_mode(sh, FS_RING_RUN_COMPUTE, rp, &compute, NULL, NULL, NULL, NULL, NULL);
            time_bwd_mode(sh, FS_RING_RUN_COMM, rp, &comm, NULL, NULL, NULL, NULL, NULL);
            /* hidden: 1 − (time the slowest GPU's compute waited for transfers + its hops home after
             * its compute) / transfers alone, from the ring's own events; hidden_min: the same with
             * the largest wait over the GPUs */
            const double hidden = comm > 0 ? 1 - exposed / comm : 1;
            const double hidden_min = comm > 0 ? 1 - exposed_max / comm : 1;
            /* hidden_all: by the common clock, what the transfers added after every GPU's compute
             * ended (the hops home) plus the largest wait in steps, over the transfers alone */
            const double hidden_all = comm > 0 ? 1 - (clk.waits_max + clk.home_all) / comm : 1;
            const double diff_hidden = comm > 0 ? 1 - std::max(0.0, full - compute) / comm : 1;
            const double flops = 2.5 * 4.0 * H * (double)N * N * d * (causal ? 0.5 : 1.0);
            char st[256] = "";
            for (int s = 0; s < g_P; s++) snprintf(st + strlen(st), sizeof st - strlen(st), "%s%.3f", s ? "," : "", steps[s]);
            const double cmp = std::max(cq, std::max(ck, cv));
            printf("RESULT ringbwd mask=%s shard=%s N=%d H=%d d=%d dt=%s P=%d fwd_v=%d bwd_v=%d home_chunks=%d "
                   "single_ms=%.3f ring_ms=%.3f compute_ms=%.3f comm_ms=%.3f comm_in_ring_ms=%.3f exposed_ms=%.3f "
                   "exposed_max_ms=%.3f home_ms=%.3f step_ms=%s hidden=%.3f hidden_min=%.3f diff_hidden=%.3f "
                   "home_all_ms=%.3f cend_spread_ms=%.3f done_spread_ms=%.3f waits_max_ms=%.3f hidden_all=%.3f "
                   "speedup=%.3f eff=%.3f single_tflops=%.1f ring_tflops=%.1f ring_vs_one=%.2e\n",
                   causal ? "causal" : "none", causal ? "zigzag" : "contig", N, H, d, dt_str(dt), g_P, g_version,
                   g_bwd_version, g_chunks > 0 ? g_chunks : 4, one.ms, full, compute, comm, in_ring, exposed,
                   exposed_max, home, st, hidden, hidden_min, diff_hidden, clk.home_all, clk.cend_spread, clk.done_spread,
                   clk.waits_max, hidden_all, one.ms / full, one.ms / full / g_P, flops / one.ms * 1e-9, flops / full * 1e-9,
                   cmp);
            fflush(stdout);
            if (keep && !(cmp <= tol_of(dt))) {
                printf("FAIL ring backward against one GPU at N = %d (%s): %.2e\n", N, causal ? "causal" : "none", cmp);
                g_fail++;
            }
        }
}

int main(int argc, char **argv)
{
    bool check = false, timing = false, check_big = true, tiny = false, backward = false, trace = false;
    int count = 24, d = 128, ctas = 0;
    uint64_t seed = (uint64_t)time(NULL) * 2654435761u;
    std::vector<int> sizes = {64, 128, 256, 512}, sweep;
    int reps = 5, reserve = 4, P = 0;
    fs_cuda_dtype dt = FS_CUDA_F16;
    auto ints = [](const char *s) {
        std::vector<int> v;
        for (const char *q = s; *q;) {
            v.push_back(atoi(q));
            while (*q && *q != ',') q++;
            if (*q) q++;
        }
        return v;
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *nx = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--check")) check = true;
        else if (!strcmp(a, "--time")) timing = true;
        else if (!strcmp(a, "--no-check-big")) check_big = false;
        else if (!strcmp(a, "--tiny")) tiny = check = true;
        else if (!strcmp(a, "--backward")) backward = true;
        else if (!strcmp(a, "--trace")) trace = true;
        else if (!strcmp(a, "--count") && nx) count = atoi(argv[++i]);
        else if (!strcmp(a, "--d") && nx) d = atoi(argv[++i]);
        else if (!strcmp(a, "--ctas") && nx) ctas = atoi(argv[++i]);
        else if (!strcmp(a, "--bwd-version") && nx) g_bwd_version = atoi(argv[++i]);
        else if (!strcmp(a, "--home-chunks") && nx) g_chunks = atoi(argv[++i]);
        else if (!strcmp(a, "--seed") && nx) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--gpus") && nx) P = atoi(argv[++i]);
        else if (!strcmp(a, "--version") && nx) g_version = atoi(argv[++i]);
        else if (!strcmp(a, "--sizes") && nx) sizes = ints(argv[++i]);
        else if (!strcmp(a, "--reps") && nx) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--reserve") && nx) reserve = atoi(argv[++i]);
        else if (!strcmp(a, "--sweep-reserve") && nx) sweep = ints(argv[++i]);
        else if (!strcmp(a, "--dtype") && nx) dt = !strcmp(argv[++i], "bf16") ? FS_CUDA_BF16 : FS_CUDA_F16;
        else {
            fprintf(stderr, "usage: %s [--check] [--time] [--seed N] [--gpus P] [--version V] [--sizes 64,128,...] "
                            "[--reps N] [--reserve R] [--sweep-reserve 0,2,4] [--dtype f16|bf16] [--d 64|128] [--ctas C]\n"
                            "       [--no-check-big] [--tiny]\n"
                            "       [--backward [--bwd-version V] [--home-chunks C]]\n"
                            "       [--trace [--backward] [--count N]]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!check && !timing) check = timing = true;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("bench_ring: no CUDA device found (%s)\n", cudaGetErrorString(cudaGetLastError()));
        return 2;
    }
    g_P = P > 0 ? std::min(P, ndev) : ndev;
    if (g_P > FS_RING_MAX_DEV) g_P = FS_RING_MAX_DEV;
    int nccl_version = 0;
    NC(ncclGetVersion(&nccl_version));
    printf("bench_ring: %d GPU(s), prefill version %d (%s), NCCL %d, seed %llu\n", g_P, g_version,
           fs_cuda_prefill_version_str(g_version), nccl_version, (unsigned long long)seed);
    for (int p = 0; p < g_P; p++) {
        cudaDeviceProp pr;
        CU(cudaGetDeviceProperties(&pr, p));
        printf("  GPU %d: %s, %d SMs\n", p, pr.name, pr.multiProcessorCount);
        for (int q = 0; q < g_P; q++) {
            int ok = 0;
            if (q != p) CU(cudaDeviceCanAccessPeer(&ok, p, q));
            if (q != p) printf("    peer access %d -> %d: %s\n", p, q, ok ? "yes" : "no");
        }
    }
    g_comms.resize(g_P);
    NC(ncclCommInitAll(g_comms.data(), g_P, NULL));
    if (ctas > 0) {   /* a second set whose kernels take at most ctas blocks */
        ncclUniqueId id;
        NC(ncclGetUniqueId(&id));
        g_comms_capped.resize(g_P);
        NC(ncclGroupStart());
        for (int p = 0; p < g_P; p++) {
            CU(cudaSetDevice(p));
            ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
            cfg.minCTAs = 1;
            cfg.maxCTAs = ctas;
            NC(ncclCommInitRankConfig(&g_comms_capped[p], g_P, id, p, &cfg));
        }
        NC(ncclGroupEnd());
    }
    uint64_t rng = seed;
    auto destroy = [&] {
        for (int p = 0; p < g_P; p++) ncclCommDestroy(g_comms[p]);
        for (ncclComm_t c : g_comms_capped) ncclCommDestroy(c);
    };

    if (trace) {
        run_traces(&rng, count, backward);
        if (g_fail) printf("%d trace comparison(s) FAILED (seed %llu)\n", g_fail, (unsigned long long)seed);
        else printf("Every GPU trace matches the engine's (P = %d, seed %llu).\n", g_P, (unsigned long long)seed);
        destroy();
        return g_fail ? 1 : 0;
    }

    if (backward) {
        printf("backward: version %d (%s), home chunks %d\n", g_bwd_version, fs_cuda_backward_version_str(g_bwd_version),
               g_chunks > 0 ? g_chunks : 4);
        if (check) {
            run_checks_bwd(&rng, tiny);
            if (g_fail) {
                printf("%d check(s) FAILED (seed %llu); no timing\n", g_fail, (unsigned long long)seed);
                return 1;
            }
            printf("All ring backward checks match (seed %llu).%s\n", (unsigned long long)seed,
                   timing ? " Starting timings." : "");
        }
        if (timing) time_backward(sizes, reps, reserve, dt, d, seed, check_big ? 64 : 0);
        destroy();
        return g_fail ? 1 : 0;
    }
    if (check) {
        run_checks(&rng, tiny);
        if (g_fail) {
            printf("%d check(s) FAILED (seed %llu); no timing\n", g_fail, (unsigned long long)seed);
            return 1;
        }
        printf("All ring checks match (seed %llu).%s\n", (unsigned long long)seed, timing ? " Starting timings." : "");
    }
    if (timing) {
        const int H = 16;
        /* per mask (ci) and communicator set (k: 0 NCCL's defaults, 1 capped at ctas blocks), the SMs
         * left to NCCL: the fastest of the sweep at 128k */
        int best_reserve[2][2] = {{reserve, reserve}, {reserve, reserve}}, best_ctas[2] = {0, 0};
        for (int ci = 0; ci < 2 && !sweep.empty(); ci++) {   /* SMs left to NCCL (and NCCL's blocks), at N = 128k */
            const bool causal = ci == 1;
            const int N = 128 * 1024;
            double best = INFINITY;
            for (int cap : {0, ctas}) {
                g_use = cap > 0 ? &g_comms_capped : &g_comms;
                double best_k = INFINITY;
                for (int rs : sweep) {
                    shards sh(ring_of(N, H, H, d, causal, dt, rs));
                    fill_shards(sh, seed);
                    double t, ex, ir, cm;
                    time_mode(sh, FS_RING_RUN_FULL, 3, &t, NULL, NULL, NULL, NULL, &ex, &ir);
                    time_mode(sh, FS_RING_RUN_COMM, 3, &cm, NULL, NULL, NULL, NULL);
                    printf("RESULT sweep mask=%s N=%d d=%d dt=%s nccl_ctas=%d reserve=%d ring_ms=%.3f comm_in_ring_ms=%.3f "
                           "exposed_ms=%.3f comm_alone_ms=%.3f\n",
                           causal ? "causal" : "none", N, d, dt_str(dt), cap, rs, t, ir, ex, cm);
                    if (t < best) best = t, best_ctas[ci] = cap;
                    if (t < best_k) best_k = t, best_reserve[ci][cap > 0] = rs;
                }
                if (ctas == 0) break;   /* no capped set: the defaults only */
            }
            printf("sweep: %s: %d SMs for NCCL with its default blocks, %d with at most %d blocks; the faster at 128k: "
                   "%s\n", causal ? "causal" : "not causal", best_reserve[ci][0], best_reserve[ci][1], ctas,
                   best_ctas[ci] ? "capped" : "the defaults");
        }
        for (int kN : sizes)
            for (int ci = 0; ci < 2; ci++) {
                const bool causal = ci == 1;
                const int N = kN * 1024;
                const bool keep = check_big && kN <= 128;
                const int rp = kN >= 256 ? std::max(2, reps / 2) : reps;
                single_run one = time_single(N, H, d, causal, dt, rp, seed, keep);
                /* the ring with NCCL's default communicators, then (--ctas) with the capped ones: a
                 * choice made at 128k need not hold at other sizes, so both are timed at each */
                for (int k = 0; k < (ctas > 0 ? 2 : 1); k++) {
                    g_use = k ? &g_comms_capped : &g_comms;
                    shards sh(ring_of(N, H, H, d, causal, dt, best_reserve[ci][k]));
                    fill_shards(sh, seed);
                    ring_run rr;
                    time_mode(sh, FS_RING_RUN_FULL, rp, &rr.full, &rr.step, &rr.merge, &rr.wall, &rr.pairs, &rr.exposed,
                              &rr.in_ring);
                    const double cmp = keep ? compare_single(sh, one.O) : NAN;
                    time_mode(sh, FS_RING_RUN_COMPUTE, rp, &rr.compute, NULL, NULL, NULL, NULL);
                    time_mode(sh, FS_RING_RUN_COMM, rp, &rr.comm, NULL, NULL, NULL, NULL);
                    /* hidden: from the events, the transfer time that step s + 1 did not wait for;
                     * diff_hidden: the estimate from the totals, 1 − (ring − compute alone) / transfers
                     * alone, which is only as good as the run-to-run spread of the compute */
                    const double hidden = rr.comm > 0 ? 1 - rr.exposed / rr.comm : 1;
                    const double diff_hidden = rr.comm > 0 ? 1 - std::max(0.0, rr.full - rr.compute) / rr.comm : 1;
                    const double flops = 4.0 * H * (double)N * N * d * (causal ? 0.5 : 1.0);
                    const double bytes = 2.0 * 2 * H * (double)(N / g_P) * d;   /* K and V of one shard */
                    const double comm_step = rr.comm / std::max(1, g_P - 1);
                    char steps[256] = "";
                    for (int s = 0; s < g_P; s++)
                        snprintf(steps + strlen(steps), sizeof steps - strlen(steps), "%s%.3f", s ? "," : "", rr.step[s]);
                    printf("RESULT ring mask=%s shard=%s N=%d H=%d d=%d dt=%s P=%d v=%d reserve=%d nccl_ctas=%d pairs=%d single_ms=%.3f "
                           "ring_ms=%.3f wall_ms=%.3f compute_ms=%.3f comm_ms=%.3f comm_in_ring_ms=%.3f exposed_ms=%.3f "
                           "merge_ms=%.3f step_ms=%s hidden=%.3f diff_hidden=%.3f "
                           "speedup=%.3f eff=%.3f single_tflops=%.1f ring_tflops=%.1f comm_GBps=%.1f ring_vs_one=%.2e\n",
                           causal ? "causal" : "none", causal ? "zigzag" : "contig", N, H, d, dt_str(dt), g_P, g_version,
                           best_reserve[ci][k], k ? ctas : 0, rr.pairs, one.ms, rr.full, rr.wall, rr.compute, rr.comm, rr.in_ring,
                           rr.exposed, rr.merge, steps, hidden, diff_hidden, one.ms / rr.full, one.ms / rr.full / g_P, flops / one.ms * 1e-9, flops / rr.full * 1e-9,
                           comm_step > 0 ? bytes / comm_step * 1e-6 : 0.0, cmp);
                    fflush(stdout);
                    if (keep && !(cmp <= tol_of(dt))) {
                        printf("FAIL ring against one GPU at N = %d (%s): %.2e\n", N, causal ? "causal" : "none", cmp);
                        g_fail++;
                    }
                }
            }
    }
    destroy();
    return g_fail ? 1 : 0;
}
