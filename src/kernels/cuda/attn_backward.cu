/* attn_backward.cu: FlashAttention's backward pass by recomputation (001 §Forward Pass vs.
 * Backward Pass, 004 §The backward pass), float16 / bfloat16 inputs on mma.sync tensor cores,
 * float32 accumulation.
 *
 * The forward keeps only each row's log-sum-exp L = m + ln ℓ (fs_cuda_prefill.lse). Given dO:
 *   D = rowsum(dO ∘ O)                                    (bwd_pre, one warp a row)
 *   for each K/V tile (one block), for each Q tile that can see it:
 *     S = scale·Q Kᵀ (masked), P = exp(S − L)             (recomputed, never stored)
 *     dV += Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP − D)
 *     dK += scale·dSᵀ Q,  dQ += scale·dS K
 * in FlashAttention-2's K/V-outer order: a block finishes its K/V tile's dK and dV in
 * registers; dQ is summed across blocks in a float32 workspace by atomic adds and converted to
 * the 16-bit type at the end (bwd_dq). GQA: a block walks every query head of its KV head's
 * group, so dK and dV are summed over the group without atomics.
 *
 * Versions:
 *   1  8 warps, a K/V tile of 128 keys (16 a warp), Q tiles of 64 rows, double-buffered by
 *      cp.async; dQ added element by element (atomicAdd on float).
 *   2  version 1 with dQ added two elements at a time (the float2 atomicAdd of sm_90; sm_80
 *      keeps version 1's): half the atomic instructions, which are as many as the MMA ones.
 *   3  version 2 with four at a time (float4): lanes 2u and 2u+1 swap one pair by a shuffle so
 *      that each holds four consecutive columns of one row.
 *   4+ Hopper only (wgmma, TMA, warp specialization): hopper_backward.cu says what each adds.
 * Each warp computes Sᵀ and dPᵀ for its 16 keys × 64 queries, so
 * Pᵀ and dSᵀ are A fragments straight from the accumulators (the forward's register trick);
 * dSᵀ goes through shared memory once for dQ = dS K. Masks: none, causal, sliding window.
 * Layout as the forward: Q, O, dO, dQ (batch, n_q_heads, n_q, d); K, V, dK, dV (batch,
 * n_kv_heads, n_kv, d); L (batch, n_q_heads, n_q).
 */
#include "kernels/cuda/cuda_common.cuh"

/* D = rowsum(dO ∘ O) per row (float32), and the dQ accumulator zeroed. One warp per row. */
template <typename T, int D>
__global__ void bwd_pre(int rows, const T *__restrict__ O, const T *__restrict__ dO, float *__restrict__ Dv,
                        float *__restrict__ dq_acc)
{
    typedef fs_cu_type<T> ty;
    const int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (r >= rows) return;
    float s = 0;
    for (int c = lane; c < D; c += 32) {
        s += ty::to_f(O[(size_t)r * D + c]) * ty::to_f(dO[(size_t)r * D + c]);
        dq_acc[(size_t)r * D + c] = 0;
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if (lane == 0) Dv[r] = s;
}

/* dQ = scale · dq_acc in the 16-bit type. */
template <typename T>
__global__ void bwd_dq(size_t n, float scale, const float *__restrict__ acc, T *__restrict__ dQ)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dQ[i] = fs_cu_type<T>::from_f(acc[i] * scale);
}

/* mma.sync fragment loads (lane = 4g + t, as attn_prefill.cu):
 *   a_frag:    A (16 × 16) from row-major [m][k] storage
 *   a_frag_t:  A (16 × 16) from transposed [k][m] storage
 *   b_nk:      B for two 8-column tiles (n0..n0+15) from [n][k] storage
 *   b_kn:      the same from [k][n] storage */
__device__ __forceinline__ void a_frag(uint32_t a[4], const void *s, int ld, int m0, int k0, int lane)
{
    ldsm_x4(a, (const char *)s + 2 * ((m0 + (lane & 15)) * ld + k0 + (lane >> 4) * 8));
}
__device__ __forceinline__ void a_frag_t(uint32_t a[4], const void *s, int ld, int m0, int k0, int lane)
{
    const int i = lane >> 3, r = lane & 7;
    ldsm_x4_t(a, (const char *)s + 2 * ((k0 + r + ((i >> 1) << 3)) * ld + m0 + ((i & 1) << 3)));
}
__device__ __forceinline__ void b_nk(uint32_t b[4], const void *s, int ld, int n0, int k0, int lane)
{
    ldsm_x4(b, (const char *)s + 2 * ((n0 + (lane & 7) + ((lane >> 4) << 3)) * ld + k0 + ((lane >> 3) & 1) * 8));
}
__device__ __forceinline__ void b_kn(uint32_t b[4], const void *s, int ld, int k0, int n0, int lane)
{
    ldsm_x4_t(b, (const char *)s + 2 * ((k0 + (lane & 7) + (((lane >> 3) & 1) << 3)) * ld + n0 + ((lane >> 4) << 3)));
}

/* Is query row i (position i + offset) allowed to see key j? (none / causal / window) */
__device__ __forceinline__ bool bwd_visible(const prefill_params &p, int i, int j)
{
    const int pos = i + p.mask.offset;
    if (p.mask.kind == FS_MASK_CAUSAL) return j <= pos;
    if (p.mask.kind == FS_MASK_WINDOW) return j <= pos && j > pos - p.mask.window;
    return true;
}

/* grid (ceil(n_kv / BKV), n_kv_heads, batch), NW warps, BKV = 16 · NW keys (16 a warp).
 * Shared (16-bit, rows padded to LD = D + 8): K, V (BKV rows), 2 stages × Q and dO (BQ = 64
 * rows), dSᵀ (BKV × (BQ + 8)); float: 2 stages × L (base 2) and D. */
template <typename T, int D, int NW, int VEC>
__global__ void __launch_bounds__(NW * 32, 1)
bwd_main(prefill_params p, const T *__restrict__ Q, const T *__restrict__ K, const T *__restrict__ V,
         const T *__restrict__ dO, const float *__restrict__ lse, const float *__restrict__ Dv,
         float *__restrict__ dq_acc, T *__restrict__ dK, T *__restrict__ dV)
{
    constexpr int BKV = 16 * NW, BQ = 64, NT = NW * 32, LD = D + 8, LDS = BQ + 8;
    constexpr int CW = D * 4 / NW;   /* d columns of dQ per warp in the dQ step */
    extern __shared__ __align__(16) unsigned char smem[];
    T *sK = reinterpret_cast<T *>(smem), *sV = sK + BKV * LD, *sQ = sV + BKV * LD, *sdO = sQ + 2 * BQ * LD;
    T *sdS = sdO + 2 * BQ * LD;
    float *sL = reinterpret_cast<float *>(sdS + BKV * LDS), *sD = sL + 2 * BQ;

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int kvh = blockIdx.y, b = blockIdx.z, G = p.n_q_heads / p.n_kv_heads;
    const int c0 = blockIdx.x * BKV, c1 = min(c0 + BKV, p.n_kv), kw0 = warp * 16;
    const size_t kvbase = ((size_t)b * p.n_kv_heads + kvh) * p.n_kv;

    /* the Q tiles that can see keys [c0, c1) */
    int qt_lo = 0, qt_hi = (p.n_q + BQ - 1) / BQ;
    if (p.mask.kind == FS_MASK_CAUSAL || p.mask.kind == FS_MASK_WINDOW)
        qt_lo = (int)max(0L, ((long)c0 - p.mask.offset) / BQ);
    if (p.mask.kind == FS_MASK_WINDOW)
        qt_hi = (int)min((long)qt_hi, max(0L, ((long)c1 - 1 + p.mask.window - 1 - p.mask.offset) / BQ + 1));
    const int per_head = max(0, qt_hi - qt_lo), total = G * per_head;

    float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[i][e] = dv[i][e] = 0;

    load_tile<T, D, LD, BKV, NT>(sK, K + (kvbase + c0) * D, p.n_kv - c0);
    load_tile<T, D, LD, BKV, NT>(sV, V + (kvbase + c0) * D, p.n_kv - c0);
    /* Q, dO, L, D of work item w (query head h, Q tile qt) into stage st */
    auto load_item = [&](int w, int st) {
        const int h = kvh * G + w / per_head, qt = qt_lo + w % per_head, r0 = qt * BQ;
        const size_t qbase = ((size_t)b * p.n_q_heads + h) * p.n_q;
        load_tile<T, D, LD, BQ, NT>(sQ + st * BQ * LD, Q + (qbase + r0) * D, p.n_q - r0);
        load_tile<T, D, LD, BQ, NT>(sdO + st * BQ * LD, dO + (qbase + r0) * D, p.n_q - r0);
        for (int i = threadIdx.x; i < BQ; i += NT) {
            const int r = r0 + i;
            const float L = r < p.n_q ? lse[qbase + r] : -INFINITY;
            sL[st * BQ + i] = L == -INFINITY ? INFINITY : L * FS_LOG2E;   /* a row that sees nothing: P = 0 */
            sD[st * BQ + i] = r < p.n_q ? Dv[qbase + r] : 0.f;
        }
    };
    if (total > 0) load_item(0, 0);
    cp_async_commit();

    for (int w = 0, st = 0; w < total; w++, st ^= 1) {
        if (w + 1 < total) load_item(w + 1, st ^ 1);
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();
        const int h = kvh * G + w / per_head, r0 = (qt_lo + w % per_head) * BQ;
        const T *tQ = sQ + st * BQ * LD, *tdO = sdO + st * BQ * LD;
        const float *tL = sL + st * BQ, *tD = sD + st * BQ;
        /* does every (query, key) pair of this warp's 16 keys × 64 queries need no mask? */
        bool full = c1 - c0 == BKV;
        if (p.mask.kind != FS_MASK_NONE) {
            const int k_lo = c0 + kw0, k_hi = min(c0 + kw0 + 15, p.n_kv - 1), q_lo = r0, q_hi = r0 + BQ - 1;
            full = full && bwd_visible(p, q_lo, k_hi) && bwd_visible(p, q_hi, k_hi) &&
                   bwd_visible(p, q_lo, k_lo) && bwd_visible(p, q_hi, k_lo);
        }

        /* Sᵀ = K_w Qᵀ and dPᵀ = V_w dOᵀ: 16 keys × 64 queries each */
        float st_[BQ / 8][4], dp[BQ / 8][4];
#pragma unroll
        for (int i = 0; i < BQ / 8; i++)
#pragma unroll
            for (int e = 0; e < 4; e++) st_[i][e] = dp[i][e] = 0;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t ak[4], av[4];
            a_frag(ak, sK, LD, kw0, kk * 16, lane);
            a_frag(av, sV, LD, kw0, kk * 16, lane);
#pragma unroll
            for (int np = 0; np < BQ / 16; np++) {
                uint32_t bq[4], bo[4];
                b_nk(bq, tQ, LD, np * 16, kk * 16, lane);
                b_nk(bo, tdO, LD, np * 16, kk * 16, lane);
                mma16816<T>(st_[2 * np], ak, bq[0], bq[1]);
                mma16816<T>(st_[2 * np + 1], ak, bq[2], bq[3]);
                mma16816<T>(dp[2 * np], av, bo[0], bo[1]);
                mma16816<T>(dp[2 * np + 1], av, bo[2], bo[3]);
            }
        }
        /* Pᵀ = 2^(s·scale·log2e − L2) and dSᵀ = Pᵀ ∘ (dPᵀ − D), in place */
#pragma unroll
        for (int i = 0; i < BQ / 8; i++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int q = 8 * i + 2 * t4 + (e & 1), j = c0 + kw0 + g + 8 * (e >> 1);
                float pv = fast_exp2(fmaf(st_[i][e], p.scale2, -tL[q]));
                if (!full && (j >= p.n_kv || r0 + q >= p.n_q || !bwd_visible(p, r0 + q, j))) pv = 0.f;
                st_[i][e] = pv;
                dp[i][e] = pv * (dp[i][e] - tD[q]);
            }
        /* dV += Pᵀ dO and dK += dSᵀ Q (scale applied at the end) */
#pragma unroll
        for (int kk = 0; kk < BQ / 16; kk++) {
            uint32_t ap[4], ad[4];
            ap[0] = pack2<T>(st_[2 * kk][0], st_[2 * kk][1]);
            ap[1] = pack2<T>(st_[2 * kk][2], st_[2 * kk][3]);
            ap[2] = pack2<T>(st_[2 * kk + 1][0], st_[2 * kk + 1][1]);
            ap[3] = pack2<T>(st_[2 * kk + 1][2], st_[2 * kk + 1][3]);
            ad[0] = pack2<T>(dp[2 * kk][0], dp[2 * kk][1]);
            ad[1] = pack2<T>(dp[2 * kk][2], dp[2 * kk][3]);
            ad[2] = pack2<T>(dp[2 * kk + 1][0], dp[2 * kk + 1][1]);
            ad[3] = pack2<T>(dp[2 * kk + 1][2], dp[2 * kk + 1][3]);
            /* dSᵀ to shared memory for dQ = dS K (keys kw0 + g (+8), queries 16kk + 2t4 (+8)) */
            *reinterpret_cast<uint32_t *>(sdS + (kw0 + g) * LDS + 16 * kk + 2 * t4) = ad[0];
            *reinterpret_cast<uint32_t *>(sdS + (kw0 + g + 8) * LDS + 16 * kk + 2 * t4) = ad[1];
            *reinterpret_cast<uint32_t *>(sdS + (kw0 + g) * LDS + 16 * kk + 8 + 2 * t4) = ad[2];
            *reinterpret_cast<uint32_t *>(sdS + (kw0 + g + 8) * LDS + 16 * kk + 8 + 2 * t4) = ad[3];
#pragma unroll
            for (int dp2 = 0; dp2 < D / 16; dp2++) {
                uint32_t bo[4], bq[4];
                b_kn(bo, tdO, LD, kk * 16, dp2 * 16, lane);
                b_kn(bq, tQ, LD, kk * 16, dp2 * 16, lane);
                mma16816<T>(dv[2 * dp2], ap, bo[0], bo[1]);
                mma16816<T>(dv[2 * dp2 + 1], ap, bo[2], bo[3]);
                mma16816<T>(dk[2 * dp2], ad, bq[0], bq[1]);
                mma16816<T>(dk[2 * dp2 + 1], ad, bq[2], bq[3]);
            }
        }
        __syncthreads();   /* dSᵀ complete */

        /* dQ[q rows 16·(warp mod 4) .., d columns CW·(warp / 4) ..] += dS K, added to the
         * float32 accumulator (scale applied by bwd_dq) */
        {
            const int qm = 16 * (warp & 3), n0 = CW * (warp >> 2);
            float acc[CW / 8][4];
#pragma unroll
            for (int i = 0; i < CW / 8; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0;
#pragma unroll
            for (int kk = 0; kk < BKV / 16; kk++) {
                uint32_t a[4];
                a_frag_t(a, sdS, LDS, qm, kk * 16, lane);
#pragma unroll
                for (int np = 0; np < CW / 16; np++) {
                    uint32_t bk[4];
                    b_kn(bk, sK, LD, kk * 16, n0 + np * 16, lane);
                    mma16816<T>(acc[2 * np], a, bk[0], bk[1]);
                    mma16816<T>(acc[2 * np + 1], a, bk[2], bk[3]);
                }
            }
            float *dq = dq_acc + (((size_t)b * p.n_q_heads + h) * p.n_q + r0) * D;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
            if (VEC == 4) {
                /* even lanes add row g, columns 2t..2t+3; odd lanes row g + 8, columns 2t−2..2t+1 */
                const bool even = (t4 & 1) == 0;
#pragma unroll
                for (int i = 0; i < CW / 8; i++) {
                    const float s0 = even ? acc[i][2] : acc[i][0], s1 = even ? acc[i][3] : acc[i][1];
                    const float r0v = __shfl_xor_sync(0xffffffff, s0, 1), r1v = __shfl_xor_sync(0xffffffff, s1, 1);
                    const int q = qm + g + (even ? 0 : 8), col = n0 + 8 * i + 2 * (t4 & ~1);
                    const float4 v = even ? make_float4(acc[i][0], acc[i][1], r0v, r1v)
                                          : make_float4(r0v, r1v, acc[i][2], acc[i][3]);
                    if (r0 + q < p.n_q) atomicAdd(reinterpret_cast<float4 *>(dq + (size_t)q * D + col), v);
                }
            } else
#endif
#pragma unroll
            for (int i = 0; i < CW / 8; i++)
#pragma unroll
                for (int x = 0; x < 2; x++) {
                    const int q = qm + g + 8 * x;
                    if (r0 + q < p.n_q) {
                        float *a2 = dq + (size_t)q * D + n0 + 8 * i + 2 * t4;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
                        if (VEC == 2) {
                            atomicAdd(reinterpret_cast<float2 *>(a2), make_float2(acc[i][2 * x], acc[i][2 * x + 1]));
                            continue;
                        }
#endif
                        atomicAdd(a2, acc[i][2 * x]);
                        atomicAdd(a2 + 1, acc[i][2 * x + 1]);
                    }
                }
        }
        __syncthreads();   /* this stage and dSᵀ are free again */
    }
    cp_async_wait<0>();

    /* dK = scale · Σ dSᵀ Q, dV = Σ Pᵀ dO, this warp's 16 keys */
    const float scale = p.scale2 / FS_LOG2E;
#pragma unroll
    for (int i = 0; i < D / 8; i++)
#pragma unroll
        for (int x = 0; x < 2; x++) {
            const int j = c0 + kw0 + g + 8 * x;
            if (j < p.n_kv) {
                const size_t off = (kvbase + j) * D + 8 * i + 2 * t4;
                *reinterpret_cast<uint32_t *>(dK + off) = pack2<T>(dk[i][2 * x] * scale, dk[i][2 * x + 1] * scale);
                *reinterpret_cast<uint32_t *>(dV + off) = pack2<T>(dv[i][2 * x], dv[i][2 * x + 1]);
            }
        }
}

/* ---- Host side ------------------------------------------------------------------------------ */

/* The largest workspace any version needs (versions 1-3: dQ's accumulator and D; 4 and up:
 * theirs, padded to whole Q tiles). */
extern "C" size_t fs_cuda_backward_workspace(const fs_cuda_prefill *p)
{
    const size_t rows = (size_t)p->batch * p->n_q_heads * p->n_q;
    return std::max(sizeof(float) * rows * (p->d + 1), fs_cu_hopper_backward_workspace(p));
}

static const char *bwd_lines[] = {
    "mma.sync, K/V-outer (128 keys, 8 warps), Q tiles of 64 double-buffered, dQ by float atomics",
    "version 1 with dQ added as float2 atomics (sm_90)",
    "version 2 with float4 atomics (a shuffle pairs the lanes)",
    "Hopper: wgmma, TMA ring, producer warp + 2 consumer warpgroups; dQ by bulk reduce-add",
    "version 4 with dQ by red.global.add.v2 from registers (no staging)",
    "version 4 with two dQ staging buffers (the reduce's read is not waited for)",
    "version 6 with the blocks longest first (causal, window) in L2-sized head groups",
    "version 6 with dQ one item behind (d=128): the warpgroups no longer meet every tile",
    "version 8 with three stages at d=64 (d=128: version 8)",
    "d=64: version 8's lagged dQ, the warpgroups taking turns (one reduce a tile); d=128: version 8",
    "d=64: version 8 with items of 128 queries (m64n128 scores); d=128: version 8",
    "version 11 (d=64), 8 (d=128) with descriptors by addition; d=128: dV, dK as m64n128",
    "version 12 with each block's walk begun at its own share of the Q tiles (no mask)",
};

extern "C" int fs_cuda_backward_versions(void) { return (int)(sizeof bwd_lines / sizeof *bwd_lines); }

extern "C" const char *fs_cuda_backward_version_str(int v)
{
    return v >= 1 && v <= fs_cuda_backward_versions() ? bwd_lines[v - 1] : "?";
}

template <typename T, int D>
static fs_status bwd_launch(const fs_cuda_prefill *pp, int version, const void *Q, const void *K, const void *V, const void *O,
                            const void *dO, void *dQ, void *dK, void *dV, void *work, char *why, size_t n)
{
    constexpr int NW = 8, BKV = 16 * NW, BQ = 64, LD = D + 8, LDS = BQ + 8;
    prefill_params p = make_params(pp);
    const int rows = pp->batch * pp->n_q_heads * pp->n_q;
    float *dq_acc = (float *)work, *Dv = dq_acc + (size_t)rows * D;
    cudaStream_t stream = (cudaStream_t)pp->stream;   /* NULL: the default stream */
    bwd_pre<T, D><<<(rows + 7) / 8, 256, 0, stream>>>(rows, (const T *)O, (const T *)dO, Dv, dq_acc);
    FS_CU_LAUNCHED();
    const size_t smem = sizeof(T) * ((size_t)2 * BKV * LD + 4 * BQ * LD + BKV * LDS) + sizeof(float) * 4 * BQ;
    auto kern = version == 1 ? bwd_main<T, D, NW, 1> : version == 2 ? bwd_main<T, D, NW, 2> : bwd_main<T, D, NW, 4>;
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid((pp->n_kv + BKV - 1) / BKV, pp->n_kv_heads, pp->batch);
    kern<<<grid, NW * 32, smem, stream>>>(p, (const T *)Q, (const T *)K, (const T *)V, (const T *)dO, pp->lse, Dv, dq_acc,
                                  (T *)dK, (T *)dV);
    FS_CU_LAUNCHED();
    const size_t nq = (size_t)rows * D;
    bwd_dq<T><<<(unsigned)std::min<size_t>((nq + 255) / 256, 4096), 256, 0, stream>>>(nq, pp->scale, dq_acc, (T *)dQ);
    FS_CU_LAUNCHED();
    return FS_OK;
}

extern "C" fs_status fs_cuda_backward_run(const fs_cuda_prefill *p, int version, const void *Q, const void *K, const void *V,
                                          const void *O, const void *dO, void *dQ, void *dK, void *dV,
                                          void *work, char *why, size_t n)
{
    if (p->batch < 1 || p->n_q_heads < 1 || p->n_kv_heads < 1 || p->n_q_heads % p->n_kv_heads ||
        p->n_q < 1 || p->n_kv < 1) {
        if (why && n) snprintf(why, n, "bad backward shape");
        return FS_ERR_SHAPE;
    }
    if (!(p->scale > 0) || !isfinite(p->scale) || !p->lse) {
        if (why && n) snprintf(why, n, "the CUDA backward takes a positive finite scale and the forward's L (lse)");
        return FS_ERR_ARG;
    }
    if (p->mask == FS_MASK_BITS || (p->mask == FS_MASK_WINDOW && p->window < 1)) {
        if (why && n) snprintf(why, n, "the CUDA backward takes no mask, causal or a window >= 1 (no bitmask)");
        return FS_ERR_MASK;
    }
    if (version < 1 || version > fs_cuda_backward_versions()) {
        if (why && n) snprintf(why, n, "no backward version %d (1..%d)", version, fs_cuda_backward_versions());
        return FS_ERR_ARG;
    }
    if (version >= 4) return fs_cu_hopper_backward(p, version, Q, K, V, O, dO, dQ, dK, dV, work, why, n);
    const bool bf = p->dtype == FS_CUDA_BF16;
    if (p->d == 64)
        return bf ? bwd_launch<__nv_bfloat16, 64>(p, version, Q, K, V, O, dO, dQ, dK, dV, work, why, n)
                  : bwd_launch<__half, 64>(p, version, Q, K, V, O, dO, dQ, dK, dV, work, why, n);
    if (p->d == 128)
        return bf ? bwd_launch<__nv_bfloat16, 128>(p, version, Q, K, V, O, dO, dQ, dK, dV, work, why, n)
                  : bwd_launch<__half, 128>(p, version, Q, K, V, O, dO, dQ, dK, dV, work, why, n);
    if (why && n) snprintf(why, n, "the CUDA backward takes d = 64 or 128, not %d", p->d);
    return FS_ERR_ARG;
}
