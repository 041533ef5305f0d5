/* attn_decode.cu: FlashDecoding (split-KV) for one new query row per head and a long KV cache.
 *
 * The engine's fs_decode at full size: phase 1 cuts the cached keys into contiguous splits and
 * computes each split's partial (m, ℓ, o) independently (o unnormalized, m in base-2 units);
 * phase 2 merges the partials of a row (decode.h's merge, sequential over the splits):
 *     m = max m_s,  c_s = 2^(m_s − m),  ℓ = Σ c_s ℓ_s,  O = Σ c_s o_s / ℓ
 * Decode reads every K and V byte once and does little arithmetic on it: it is bound by memory
 * bandwidth, so the aim is to read the cache once, in wide coalesced loads, from enough blocks.
 *
 * Versions (figures: docs/benchmarks.md, part two):
 *   1  one block per (batch, query head) reads the whole cache, no split: the query heads of a
 *      GQA group each re-read their shared KV head, and batch × heads blocks underfill the GPU.
 *   2  split-KV: one block per (batch, KV head, split) serves every query head of the group, so
 *      each K/V byte is read once, and enough splits are made to fill the GPU; then the merge.
 *   3  the chunk's K and V rows go to shared memory by cp.async, double-buffered (64 keys a
 *      chunk): the next chunk's loads are all in flight while this chunk is scored and summed,
 *      where version 2 issued one 16-byte load per thread at a time; and the split count is
 *      chosen so that every block runs in one wave (no half-empty tail wave).
 *   4  version 3 with three shared-memory stages: two chunks in flight during each chunk's math.
 *   5  chunks of 32 keys in four stages: three chunks in flight per block, same shared memory.
 *   6  chunks of 32 keys in three stages: less shared memory, so one more block per SM.
 *   7  tensor cores: the G query heads of a KV head are the rows of a 16-row mma tile, S = Q Kᵀ
 *      and O += P V on mma.sync; the 4 warps take 16 keys each of every 64-key tile and merge
 *      their states at the end. Same double-buffered cp.async pipeline as version 3.
 *   8  version 7 in one launch: the last block of each (batch, KV head) to finish, found with an
 *      atomic counter, merges the partials (no merge kernel); four times version 7's splits, so
 *      each SM slot runs about four blocks and a slow block no longer sets the end. Measured
 *      (H100, run 8 of 2026-11-23): 1–5 % slower than version 7 (2.62–2.69 TB/s against 2.71–2.75).
 *   9  Hopper only (hopper_decode.cu): version 7's arithmetic with the tiles brought in by the
 *      TMA, a producer warp and a ring of mbarrier stages, so that more tiles are in flight;
 *      merged by decode_merge as in version 7. Measured (H100, 2026-11-23, run 9 and the
 *      exploratory calls before it, 3 stages at d = 128): 2.91-2.98 TB/s, 97-100 % of the device
 *      copy, 8-10 % faster than version 7.
 *  10 Hopper only (hopper_decode.cu): version 9 reading a paged cache (vLLM's pool and block
 *      table, fs_cuda_decode's page fields): each TMA box follows the table. Splits are whole
 *      64-key tiles, so a tile never straddles a page boundary it does not own.
 *  11-14 Hopper only (hopper_decode.cu): versions 9 and 10 with the merge in the split kernel's
 *      launch (11, 12) or launched as its programmatic dependent (13, 14). The paged versions
 *      read vLLM's pool or the head-major one (fs_cuda_decode's head_major).
 *  15, 16 Hopper only: versions 13 and 14 with each warp's step over the rows a group of at most
 *      8 query heads fills (rows 8-15 of the mma tile are zero; their work is left out).
 *  17-20 Hopper only: 18 brings a small page's whole rows in one box; 20 a whole page of every KV
 *      head a stage, a block serving every KV head (hopper_decode.cu says why); 17 and 19, their
 *      contiguous siblings, are version 15.
 *
 * The decode over an e4m3 KV cache (fs_cuda_decode_fp8_run) has versions of its own, numbered
 * apart: see "The e4m3 KV cache" below.
 *
 * Layout: Q, O (batch, n_q_heads, d); K, V (batch, n_kv_heads, n_kv, d), row-major.
 * Within a block (128 threads), a key row is read by d/8 threads, 16 bytes each; a chunk of 128
 * keys is scored (S into shared memory), folded into the running (m, ℓ) per query head, then
 * P V is accumulated by each thread for its 8 dimensions over its share of the chunk's keys.
 */
#include "kernels/cuda/decode_common.cuh"

#define DEC_THREADS 128
#define DEC_CHUNK 128

/* 8 consecutive 16-bit values as floats */
template <typename T> __device__ __forceinline__ void load8(const T *p, float f[8])
{
    uint4 u = __ldg(reinterpret_cast<const uint4 *>(p));
    const typename fs_cu_type<T>::T2 *h = reinterpret_cast<const typename fs_cu_type<T>::T2 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 x = fs_cu_type<T>::unpack(h[i]);
        f[2 * i] = x.x;
        f[2 * i + 1] = x.y;
    }
}

/* grid (splits, n_kv_heads · (group / G), batch). The block serves G query heads that share one
 * KV head, over keys [split · split_len, +split_len). Writes per (batch, query head, split):
 * m (base 2), ℓ, and o (d, unnormalized) into part. */
template <typename T, int D, int G>
__global__ void __launch_bounds__(DEC_THREADS) decode_split(decode_params p, const T *__restrict__ Q,
                                                           const T *__restrict__ K,
                                                           const T *__restrict__ V,
                                                           float *__restrict__ part)
{
    constexpr int TPK = D / 8;                  /* threads per key row */
    constexpr int KPP = DEC_THREADS / TPK;      /* keys per pass */
    __shared__ float sS[G][DEC_CHUNK];          /* scores, then weights P */
    __shared__ float sM[G], sL[G], sAlpha[G];
    __shared__ float sRed[KPP][G][D];

    const int tid = threadIdx.x, kg = tid / TPK, dim = (tid % TPK) * 8;
    const int split = blockIdx.x, b = blockIdx.z;
    const int group = p.n_q_heads / p.n_kv_heads, per_kv = group / G;
    const int kvh = blockIdx.y / per_kv, h0 = kvh * group + (blockIdx.y % per_kv) * G;
    const int j0 = split * p.split_len, j1 = min(j0 + p.split_len, p.n_kv);
    const T *Kh = K + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;
    const T *Vh = V + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;

    float q[G][8], acc[G][8];
#pragma unroll
    for (int g = 0; g < G; g++) {
        load8<T>(Q + ((size_t)b * p.n_q_heads + h0 + g) * D + dim, q[g]);
#pragma unroll
        for (int c = 0; c < 8; c++) {
            q[g][c] *= p.scale2;
            acc[g][c] = 0;
        }
    }
    if (tid < G) {
        sM[tid] = -INFINITY;
        sL[tid] = 0;
    }

    for (int c0 = j0; c0 < j1; c0 += DEC_CHUNK) {
        /* S = q Kᵀ for the chunk: d/8 threads per key, reduced by shuffles */
#pragma unroll 4
        for (int jj = kg; jj < DEC_CHUNK; jj += KPP) {
            const int j = c0 + jj;
            float k[8], s[G];
            if (j < j1) load8<T>(Kh + (size_t)j * D + dim, k);
            else
#pragma unroll
                for (int c = 0; c < 8; c++) k[c] = 0;
#pragma unroll
            for (int g = 0; g < G; g++) {
                s[g] = 0;
#pragma unroll
                for (int c = 0; c < 8; c++) s[g] = fmaf(q[g][c], k[c], s[g]);
#pragma unroll
                for (int o = TPK / 2; o > 0; o >>= 1) s[g] += __shfl_xor_sync(0xffffffff, s[g], o);
            }
            if (tid % TPK == 0)
#pragma unroll
                for (int g = 0; g < G; g++) sS[g][jj] = j < j1 ? s[g] : -INFINITY;
        }
        __syncthreads();
        /* online softmax over the chunk, one warp per query head */
        for (int g = tid / 32; g < G; g += DEC_THREADS / 32) {
            const int lane = tid & 31;
            float mx = -INFINITY;
            for (int jj = lane; jj < DEC_CHUNK; jj += 32) mx = fmaxf(mx, sS[g][jj]);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
            const float m_old = sM[g], m_new = fmaxf(m_old, mx);
            const float base = m_new == -INFINITY ? 0.f : m_new;
            float sum = 0;
            for (int jj = lane; jj < DEC_CHUNK; jj += 32) {
                float pj = exp2f(sS[g][jj] - base);
                sS[g][jj] = pj;
                sum += pj;
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
            __syncwarp();   /* every lane has read sM, sL before lane 0 rewrites them */
            if (lane == 0) {
                const float alpha = exp2f(m_old - base);
                sAlpha[g] = alpha;
                sL[g] = alpha * sL[g] + sum;
                sM[g] = m_new;
            }
        }
        __syncthreads();
        /* o = α o + P V over this thread's keys of the chunk and its 8 dimensions */
#pragma unroll
        for (int g = 0; g < G; g++) {
            const float a = sAlpha[g];
#pragma unroll
            for (int c = 0; c < 8; c++) acc[g][c] *= a;
        }
#pragma unroll 4
        for (int jj = kg; jj < DEC_CHUNK; jj += KPP) {
            const int j = c0 + jj;
            if (j >= j1) break;
            float v[8];
            load8<T>(Vh + (size_t)j * D + dim, v);
#pragma unroll
            for (int g = 0; g < G; g++) {
                const float pj = sS[g][jj];
#pragma unroll
                for (int c = 0; c < 8; c++) acc[g][c] = fmaf(pj, v[c], acc[g][c]);
            }
        }
        __syncthreads();   /* sS is rewritten by the next chunk */
    }

    /* sum the KPP key groups' o, then write the split's partial */
#pragma unroll
    for (int g = 0; g < G; g++)
#pragma unroll
        for (int c = 0; c < 8; c++) sRed[kg][g][dim + c] = acc[g][c];
    __syncthreads();
    for (int x = tid; x < G * D; x += DEC_THREADS) {
        const int g = x / D, c = x % D;
        float o = 0;
#pragma unroll
        for (int r = 0; r < KPP; r++) o += sRed[r][g][c];
        float *dst = part + (((size_t)b * p.n_q_heads + h0 + g) * p.splits + split) * (D + 2);
        dst[2 + c] = o;
        if (c == 0) {
            dst[0] = sM[g];
            dst[1] = sL[g];
        }
    }
}

/* 8 consecutive 16-bit values (16 bytes, already loaded) as floats */
template <typename T> __device__ __forceinline__ void cvt8(uint4 u, float f[8])
{
    const typename fs_cu_type<T>::T2 *h = reinterpret_cast<const typename fs_cu_type<T>::T2 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 x = fs_cu_type<T>::unpack(h[i]);
        f[2 * i] = x.x;
        f[2 * i + 1] = x.y;
    }
}

/* Versions 3 to 6. Same grid and output as decode_split. Dynamic shared memory: K and V chunks
 * of CH keys, STAGES each (STAGES · 2 · CH · D 16-bit values), then the scores (G, CH); after the
 * loop the K/V area is reused for the cross-group reduction (KPP, G, D) floats. */
template <typename T, int D, int G, int STAGES, int CH>
__global__ void __launch_bounds__(DEC_THREADS) decode_split_async(decode_params p, const T *__restrict__ Q,
                                                                 const T *__restrict__ K,
                                                                 const T *__restrict__ V,
                                                                 float *__restrict__ part)
{
    constexpr int TPK = D / 8, KPP = DEC_THREADS / TPK, RC = D / 8, PL = CH / 32;  /* PL: per lane */
    extern __shared__ __align__(16) unsigned char smem[];
    T *sK = reinterpret_cast<T *>(smem);
    T *sV = sK + STAGES * CH * D;
    float *sS = reinterpret_cast<float *>(sV + STAGES * CH * D);
    float *sRed = reinterpret_cast<float *>(smem);   /* after the loop only */
    __shared__ float sM[G], sL[G], sAlpha[G];

    const int tid = threadIdx.x, kg = tid / TPK, dim = (tid % TPK) * 8;
    const int split = blockIdx.x, b = blockIdx.z;
    const int group = p.n_q_heads / p.n_kv_heads, per_kv = group / G;
    const int kvh = blockIdx.y / per_kv, h0 = kvh * group + (blockIdx.y % per_kv) * G;
    const int j0 = split * p.split_len, j1 = min(j0 + p.split_len, p.n_kv);
    const T *Kh = K + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;
    const T *Vh = V + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;

    float q[G][8], acc[G][8];
#pragma unroll
    for (int g = 0; g < G; g++) {
        load8<T>(Q + ((size_t)b * p.n_q_heads + h0 + g) * D + dim, q[g]);
#pragma unroll
        for (int c = 0; c < 8; c++) {
            q[g][c] *= p.scale2;
            acc[g][c] = 0;
        }
    }
    if (tid < G) {
        sM[tid] = -INFINITY;
        sL[tid] = 0;
    }
    /* rows past the split's end are zero-filled and masked out of the scores */
    auto load_chunk = [&](int stage, int c0) {
#pragma unroll
        for (int c = tid; c < CH * RC; c += DEC_THREADS) {
            const int r = c / RC, col = (c % RC) * 8, j = c0 + r;
            const bool ok = j < j1;
            const size_t src = (size_t)(ok ? j : j0) * D + col;
            cp_async16(sK + (stage * CH + r) * D + col, Kh + src, ok);
            cp_async16(sV + (stage * CH + r) * D + col, Vh + src, ok);
        }
    };
    /* the first STAGES − 1 chunks in flight before the loop */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (j0 + s * CH < j1) load_chunk(s, j0 + s * CH);
        cp_async_commit();
    }

    int stage = 0;
    for (int c0 = j0; c0 < j1; c0 += CH, stage = stage + 1 == STAGES ? 0 : stage + 1) {
        /* chunk c0 + (STAGES − 1)·CH goes into the stage freed by the previous iteration */
        const int ahead = c0 + (STAGES - 1) * CH, s_ahead = (stage + STAGES - 1) % STAGES;
        if (ahead < j1) load_chunk(s_ahead, ahead);
        cp_async_commit();
        cp_async_wait<STAGES - 1>();
        __syncthreads();
        const T *kS = sK + stage * CH * D, *vS = sV + stage * CH * D;
        /* S = q Kᵀ for the chunk's keys: d/8 threads per key, reduced by shuffles */
#pragma unroll
        for (int jj = kg; jj < CH; jj += KPP) {
            float k[8], s[G];
            cvt8<T>(*reinterpret_cast<const uint4 *>(kS + jj * D + dim), k);
#pragma unroll
            for (int g = 0; g < G; g++) {
                s[g] = 0;
#pragma unroll
                for (int c = 0; c < 8; c++) s[g] = fmaf(q[g][c], k[c], s[g]);
#pragma unroll
                for (int o = TPK / 2; o > 0; o >>= 1) s[g] += __shfl_xor_sync(0xffffffff, s[g], o);
            }
            if (tid % TPK == 0)
#pragma unroll
                for (int g = 0; g < G; g++) sS[g * CH + jj] = c0 + jj < j1 ? s[g] : -INFINITY;
        }
        __syncthreads();
        /* online softmax over the chunk, one warp per query head */
        for (int g = tid / 32; g < G; g += DEC_THREADS / 32) {
            const int lane = tid & 31;
            float x[PL], mx = -INFINITY, sum = 0;
#pragma unroll
            for (int i = 0; i < PL; i++) {
                x[i] = sS[g * CH + lane + 32 * i];
                mx = fmaxf(mx, x[i]);
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
            const float m_old = sM[g], m_new = fmaxf(m_old, mx);
            const float base = m_new == -INFINITY ? 0.f : m_new;
#pragma unroll
            for (int i = 0; i < PL; i++) {
                const float pi = exp2f(x[i] - base);
                sS[g * CH + lane + 32 * i] = pi;
                sum += pi;
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
            __syncwarp();   /* every lane has read sM before lane 0 rewrites it */
            if (lane == 0) {
                const float alpha = exp2f(m_old - base);
                sAlpha[g] = alpha;
                sL[g] = alpha * sL[g] + sum;
                sM[g] = m_new;
            }
        }
        __syncthreads();
        /* o = α o + P V over this thread's keys of the chunk and its 8 dimensions */
#pragma unroll
        for (int g = 0; g < G; g++) {
            const float a = sAlpha[g];
#pragma unroll
            for (int c = 0; c < 8; c++) acc[g][c] *= a;
        }
#pragma unroll
        for (int jj = kg; jj < CH; jj += KPP) {
            float v[8];
            cvt8<T>(*reinterpret_cast<const uint4 *>(vS + jj * D + dim), v);
#pragma unroll
            for (int g = 0; g < G; g++) {
                const float pj = sS[g * CH + jj];
#pragma unroll
                for (int c = 0; c < 8; c++) acc[g][c] = fmaf(pj, v[c], acc[g][c]);
            }
        }
        __syncthreads();   /* this stage and sS are rewritten next */
    }
    cp_async_wait<0>();
    __syncthreads();

    /* sum the KPP key groups' o, then write the split's partial */
#pragma unroll
    for (int g = 0; g < G; g++)
#pragma unroll
        for (int c = 0; c < 8; c++) sRed[(kg * G + g) * D + dim + c] = acc[g][c];
    __syncthreads();
    for (int x = tid; x < G * D; x += DEC_THREADS) {
        const int g = x / D, c = x % D;
        float o = 0;
#pragma unroll
        for (int r = 0; r < KPP; r++) o += sRed[(r * G + g) * D + c];
        float *dst = part + (((size_t)b * p.n_q_heads + h0 + g) * p.splits + split) * (D + 2);
        dst[2 + c] = o;
        if (c == 0) {
            dst[0] = sM[g];
            dst[1] = sL[g];
        }
    }
}

template <typename T, int D, int G, int STAGES, int CH> static size_t dec3_smem()
{
    size_t kv = sizeof(T) * STAGES * 2 * CH * D + sizeof(float) * G * CH;
    size_t red = sizeof(float) * (DEC_THREADS / (D / 8)) * G * D;
    return kv > red ? kv : red;
}

/* Version 7: tensor cores. grid (splits, n_kv_heads, batch), 4 warps. The G query heads that
 * share a KV head are the rows of one 16-row tile (rows ≥ G are zero and thrown away), so
 * S = Q Kᵀ and O += P V run on mma.sync like the prefill kernels. Each 64-key tile is cut
 * between the 4 warps, 16 keys each; every warp keeps its own running (m, ℓ, o) over its keys
 * (a split inside the block), and the 4 states are merged at the end with decode.h's merge.
 * The arithmetic per key drops about tenfold against versions 2 to 6, whose score dot
 * products and shuffles kept the issue slots about half busy (ncu, run 3). */
template <typename T, int D, bool FUSE>
__global__ void __launch_bounds__(DEC_THREADS) decode_mma(decode_params p, const T *__restrict__ Q,
                                                         const T *__restrict__ K,
                                                         const T *__restrict__ V,
                                                         float *__restrict__ part,
                                                         unsigned *__restrict__ done, T *__restrict__ Out)
{
    constexpr int LD = D + 8, BKD = 64, NT = DEC_THREADS;
    extern __shared__ __align__(16) unsigned char smem[];
    T *sQ = reinterpret_cast<T *>(smem);   /* (16, LD) */
    T *sK = sQ + 16 * LD;                    /* 2 stages of (64, LD) */
    T *sV = sK + 2 * BKD * LD;
    /* after the loop: the 4 warps' states (dec_merge_floats<D>() floats) */

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int G = p.n_q_heads / p.n_kv_heads;
    const int j0 = split * p.split_len, j1 = min(j0 + p.split_len, p.n_kv);
    const T *Qg = Q + ((size_t)b * p.n_q_heads + (size_t)kvh * G) * D;
    const T *Kh = K + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;
    const T *Vh = V + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;

    load_tile<T, D, LD, 16, NT>(sQ, Qg, G);
    if (j0 < j1) {
        load_tile<T, D, LD, BKD, NT>(sK, Kh + (size_t)j0 * D, j1 - j0);
        load_tile<T, D, LD, BKD, NT>(sV, Vh + (size_t)j0 * D, j1 - j0);
    }
    cp_async_commit();

    float oacc[D / 8][4], m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < D / 8; i++) oacc[i][0] = oacc[i][1] = oacc[i][2] = oacc[i][3] = 0;
    uint32_t qf[D / 16][4];
    int stage = 0;
    for (int c0 = j0; c0 < j1; c0 += BKD, stage ^= 1) {
        if (c0 + BKD < j1) {
            load_tile<T, D, LD, BKD, NT>(sK + (stage ^ 1) * BKD * LD, Kh + (size_t)(c0 + BKD) * D, j1 - c0 - BKD);
            load_tile<T, D, LD, BKD, NT>(sV + (stage ^ 1) * BKD * LD, Vh + (size_t)(c0 + BKD) * D, j1 - c0 - BKD);
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();
        if (c0 == j0)   /* the queries' A fragments stay in registers for the whole split */
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) ldsm_x4(qf[kk], sQ + (lane & 15) * LD + kk * 16 + (lane >> 4) * 8);

        const T *kS = sK + (stage * BKD + warp * 16) * LD, *vS = sV + (stage * BKD + warp * 16) * LD;
        dec_warp_tile<T, D>(
            p.scale2, qf, [&](int kk) { return kS + ((lane & 7) + ((lane >> 4) << 3)) * LD + kk * 16 + ((lane >> 3) & 1) * 8; },
            [&](int dp) { return vS + ((lane & 7) + (((lane >> 3) & 1) << 3)) * LD + dp * 16 + ((lane >> 4) << 3); },
            c0 + warp * 16, j1, t4, m_run, l_run, oacc);
        __syncthreads();   /* this stage is refilled next */
    }
    cp_async_wait<0>();
    __syncthreads();

    /* the 4 warps' states to shared memory, then merged row by row into the split's partial */
    dec_warp_state_out<D>(reinterpret_cast<float *>(smem), warp, g, t4, m_run, l_run, oacc);
    __syncthreads();
    dec_partial_out<D>(p, reinterpret_cast<float *>(smem), tid, G, b, kvh, split, part);
    if constexpr (FUSE) {
        /* Version 8: the last block of this (batch, KV head) to finish merges the splits'
         * partials, so there is no second launch */
        dec_last_merge<T, D, NT>(p, part, done, Out, tid, G, b, kvh, [] { __syncthreads(); });
    }
}

template <typename T, int D> static size_t dec7_smem()
{
    size_t tiles = sizeof(T) * (16 + 2 * 2 * 64) * (size_t)(D + 8);
    size_t merge = sizeof(float) * dec_merge_floats<D>();
    return tiles > merge ? tiles : merge;
}

/* grid (n_q_heads, batch), D threads: merge the splits of one row (sequential, as in decode.h). */
template <typename T, int D>
__global__ void decode_merge(decode_params p, const float *__restrict__ part, T *__restrict__ O)
{
    dec_merge_col<T, D>(p, part, O, blockIdx.x, blockIdx.y, threadIdx.x);
}

/* ---- The e4m3 KV cache (fs_cuda_decode_fp8_run) ----------------------------------------------
 *
 * A serving engine's FP8 cache: K and V stored as e4m3 bytes with descales (one pair per KV head,
 * or per page and KV head in a paged pool), Q and O float16. The cache is half the bytes of a
 * float16 one, so a decode bound by memory may take about half the time.
 *
 *  e4m3 version 1: split-KV over a contiguous cache on mma.sync, as version 7, but with no
 *     shared memory in the loop: each warp loads its own 16 keys of K and V (4 KB at d = 128)
 *     straight into registers, one step ahead, and converts them there: an e4m3 byte s eeee mmm
 *     moved into float16's fields (s eeeee mmmmmmmmmm, the exponent bias left at e4m3's) is
 *     float16 for 2^-8 times its value, exactly (subnormals too), in one byte permute and one
 *     and-or a pair. The 2^8 and K's descale go into the softmax scale, V's descale and 2^8
 *     multiply the output once.
 *     The fragment layouts are chosen so that each thread's bytes are contiguous: the d of the
 *     score's dot product is permuted (Q's fragment the same way), the keys of P V are taken in
 *     the order a thread's four rows come, and the output columns of P V are permuted and put
 *     back when the partial is written (d = n · D/8 + n-tile).
 *  e4m3 versions 3 and 4: versions 1 and 2 with two steps' loads in flight instead of one (8 KiB
 *     a warp at d = 128: more bytes in flight for the same occupancy, about 230 registers).
 *  e4m3 version 2: version 1 on a paged pool (vLLM's layout or the head-major one) with one pair of
 *     descales per page and KV head: the split's table entries and scales are staged in shared
 *     memory first; a warp's 16 keys lie in one page (pages of 16, 32 or multiples of 64 keys),
 *     so each step takes its page's K descale into the score scale, and the running o is kept
 *     in units of the current page's V descale (rescaled by α · s_old / s_new, one multiply as
 *     before).
 *  e4m3 versions 5-8 (Hopper only, hopper_decode.cu): versions 1 and 2's step with decode
 *     version 9's loads, a producer warp's TMA copies into a ring of stages; 7 and 8 also with
 *     the hardware's conversion of the bytes; 9 and 10: 7 and 8 with decode version 13's merge;
 *     11 and 12: 9 and 10 with decode version 15's step (the rows a group fills alone) and six
 *     stages at d = 128.
 * The step itself (kv8_warp_step, the Q fragments and the warps' states) is in decode_common.cuh.
 */

/* W consecutive 32-bit words from global memory p (16-byte aligned when W ≥ 4, 8-byte when 2). */
template <int W> __device__ __forceinline__ void ldg_words(uint32_t (&w)[W], const uint8_t *p)
{
    if constexpr (W % 4 == 0) {
#pragma unroll
        for (int i = 0; i < W / 4; i++) {
            const uint4 u = __ldg(reinterpret_cast<const uint4 *>(p) + i);
            w[4 * i] = u.x; w[4 * i + 1] = u.y; w[4 * i + 2] = u.z; w[4 * i + 3] = u.w;
        }
    } else {
        static_assert(W == 2, "2 or a multiple of 4 words");
        const uint2 u = __ldg(reinterpret_cast<const uint2 *>(p));
        w[0] = u.x; w[1] = u.y;
    }
}

/* Where key j of the split lives: contiguous rows, or through the staged table (paged). */
struct kv8_where {
    const uint8_t *K, *V;     /* contiguous: this (batch, KV head)'s rows; paged: the pools */
    const int32_t *sTab;      /* paged: the split's pages, from block j0 / P on; NULL: contiguous */
    int P, blk0, row_stride;  /* page size, the split's first block, bytes between a page's slots */
    size_t page_stride;       /* paged: bytes between pages (P · n_kv_heads · d in either layout) */
    __device__ __forceinline__ size_t row(int j) const
    {
        if (!sTab) return (size_t)j * D_of();
        return (size_t)sTab[j / P - blk0] * page_stride + (size_t)(j % P) * row_stride;
    }
    int d;
    __device__ __forceinline__ int D_of() const { return d; }
};

/* Load the 16 keys from kb on (rows past j1 − 1 read row j1 − 1: finite, weighted by 0). The 16
 * keys lie in kb's page, so the table is read and the page's row found once (a division by the
 * page size), and the thread's six rows are that row plus whole slots. */
template <int D>
__device__ __forceinline__ void kv8_load(kv8_regs<D> &r, const kv8_where &w, int kb, int j1, int g, int t4)
{
    const int r0 = 4 * (g >> 1) + (g & 1);
    const size_t base = w.row(kb);
#pragma unroll
    for (int nt = 0; nt < 2; nt++) {
        const int j = min(kb + r0 + 2 * nt, j1 - 1);
        ldg_words<D / 16>(r.k[nt], w.K + base + (size_t)(j - kb) * w.row_stride + t4 * (D / 4));
    }
#pragma unroll
    for (int x = 0; x < 4; x++) {
        const int j = min(kb + 4 * t4 + x, j1 - 1);
        ldg_words<D / 32>(r.v[x], w.V + base + (size_t)(j - kb) * w.row_stride + g * (D / 8));
    }
}

/* grid (splits, n_kv_heads, batch), 4 warps. PAGED: e4m3 versions 2 and 4, else 1 and 3; AHEAD:
 * the steps whose loads are in flight while one is computed (1: versions 1, 2; 2: versions 3, 4).
 * scales: (batch, n_kv_heads, 2) or (n_pages, n_kv_heads, 2). Writes the split's partial as
 * version 7 does. */
template <int D, bool PAGED, int AHEAD>
__global__ void __launch_bounds__(DEC_THREADS) decode_kv8(decode_params p, const __half *__restrict__ Q,
                                                         const uint8_t *__restrict__ K, const uint8_t *__restrict__ V,
                                                         const float *__restrict__ scales, float *__restrict__ part)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int G = p.n_q_heads / p.n_kv_heads;
    const int len = PAGED && p.seq_lens ? min(p.seq_lens[b], p.n_kv) : p.n_kv;   /* as the Hopper versions: never past n_kv */
    const int j0 = split * p.split_len, j1 = min(j0 + p.split_len, len);

    kv8_where where;
    where.d = D;
    float sk = 1, sv = 1;
    int32_t *sTab = reinterpret_cast<int32_t *>(smem);
    float *sSc = reinterpret_cast<float *>(smem) + (PAGED ? (p.split_len + p.page_size - 1) / p.page_size + 1 : 0);
    if constexpr (PAGED) {
        where.K = K;
        where.V = V;
        where.sTab = sTab;
        where.P = p.page_size;
        where.blk0 = j0 / p.page_size;
        /* vLLM's pools: a slot holds every KV head; head-major: a page holds each head's slots */
        where.row_stride = p.head_major ? D : p.n_kv_heads * D;
        where.page_stride = (size_t)p.page_size * p.n_kv_heads * D;
        const int nb = j1 > j0 ? (j1 - 1) / p.page_size - where.blk0 + 1 : 0;
        for (int i = tid; i < nb; i += DEC_THREADS) {
            const int page = p.block_table[(size_t)b * p.blocks_per_seq + where.blk0 + i];
            sTab[i] = page;
            sSc[2 * i] = scales[((size_t)page * p.n_kv_heads + kvh) * 2];
            sSc[2 * i + 1] = scales[((size_t)page * p.n_kv_heads + kvh) * 2 + 1];
        }
        /* offset the base to this head: within each slot, or within each page */
        where.K += (size_t)kvh * D * (p.head_major ? p.page_size : 1);
        where.V += (size_t)kvh * D * (p.head_major ? p.page_size : 1);
        __syncthreads();
    } else {
        where.K = K + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;
        where.V = V + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;
        where.sTab = nullptr;
        where.P = 1;
        where.blk0 = 0;
        where.row_stride = D;
        where.page_stride = 0;
        sk = scales[((size_t)b * p.n_kv_heads + kvh) * 2];
        sv = scales[((size_t)b * p.n_kv_heads + kvh) * 2 + 1];
    }

    uint32_t qf[D / 16][4];
    kv8_q_frags<D>(qf, Q + ((size_t)b * p.n_q_heads + (size_t)kvh * G) * D, G, g, t4);

    float oacc[D / 8][4], m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < D / 8; i++) oacc[i][0] = oacc[i][1] = oacc[i][2] = oacc[i][3] = 0;
    const float sc2_head = p.scale2 * 256.f;
    float sv_cur = sv;
    int kb = j0 + 16 * warp;
    kv8_regs<D> cur, next, next2;
    if (kb < j1) kv8_load<D>(next, where, kb, j1, g, t4);
    if (AHEAD == 2 && kb + 64 < j1) kv8_load<D>(next2, where, kb + 64, j1, g, t4);
    for (; kb < j1; kb += 64) {
        cur = next;
        if constexpr (AHEAD == 2) {   /* two steps ahead */
            next = next2;
            if (kb + 128 < j1) kv8_load<D>(next2, where, kb + 128, j1, g, t4);
        } else {                      /* one step ahead */
            if (kb + 64 < j1) kv8_load<D>(next, where, kb + 64, j1, g, t4);
        }
        float sc2 = sc2_head * sk, rescale = 1.f;
        if constexpr (PAGED) {
            const int i = kb / p.page_size - where.blk0;
            const float s_new = sSc[2 * i + 1];
            sc2 = sc2_head * sSc[2 * i];
            rescale = sv_cur / s_new;
            sv_cur = s_new;
        }
        kv8_warp_step<D>(sc2, rescale, qf, cur, kb, j1, t4, m_run, l_run, oacc);
    }
    __syncthreads();   /* the staged table is read no more: the merge reuses the memory */

    /* the 4 warps' states, then the split's partial */
    kv8_state_out<D>(reinterpret_cast<float *>(smem), warp, g, t4, sv_cur * 256.f, m_run, l_run, oacc);
    __syncthreads();
    dec_partial_out<D>(p, reinterpret_cast<const float *>(smem), tid, G, b, kvh, split, part);
}

/* Shared memory of decode_kv8: the merge's, or the staged table and scales if larger. */
template <int D> static size_t kv8_smem(const decode_params &p, bool paged)
{
    size_t merge = sizeof(float) * dec_merge_floats<D>();
    size_t stage = paged ? sizeof(float) * 3 * (size_t)((p.split_len + p.page_size - 1) / p.page_size + 2) : 0;
    return merge > stage ? merge : stage;
}

/* ---- Host side ------------------------------------------------------------------------------ */

static const char *decode_lines[] = {
    "one block per (batch, query head) over the whole cache: no split, GQA heads re-read K/V",
    "split-KV: one block per (batch, KV head, split) for all G query heads of the group, then merge",
    "K/V chunks through shared memory by cp.async, double-buffered; splits sized to one wave",
    "version 3 with three stages: two chunks in flight while one is computed",
    "chunks of 32 keys, four stages: three chunks in flight, same shared memory as version 3",
    "chunks of 32 keys, three stages: less shared memory, one more block on each SM",
    "tensor cores: the group's query heads are the rows of an mma tile; 4 warps split each K/V tile",
    "version 7 in one launch: the last block of each KV head merges; four blocks per slot",
    "Hopper: version 7's math, tiles by TMA into a ring of mbarrier stages filled by a producer warp",
    "Hopper, paged cache: version 9 with each TMA box following the block table (vLLM's pool layout)",
    "Hopper: version 9 in one launch: the last block of each KV head merges the splits",
    "Hopper, paged cache: version 10 in one launch: the last block of each KV head merges the splits",
    "Hopper: version 9 with the merge launched while the splits run (programmatic dependent launch)",
    "Hopper, paged cache: version 10 with version 13's merge (programmatic dependent launch)",
    "Hopper: version 13 stepping over the rows a group of at most 8 query heads fills, not all 16",
    "Hopper, paged cache: version 14 stepping over the rows the group fills",
    "Hopper: version 15 (whole-row boxes, version 18's change, were slower on a contiguous cache)",
    "Hopper, paged cache: version 16 with one TMA box of a page's whole rows when a page is under 64 keys",
    "Hopper: version 15 (the contiguous sibling of version 20)",
    "Hopper, paged cache: a block for every KV head, a whole page of them a stage (pages of 16; 32 at d = 64)",
};

/* the versions that merge in the split kernel's launch, with one counter per (batch, KV head) */
static bool dec_fused(int v) { return v == 8 || v == 11 || v == 12; }

extern "C" int fs_cuda_decode_versions(void) { return (int)(sizeof decode_lines / sizeof *decode_lines); }

extern "C" const char *fs_cuda_decode_version_str(int v)
{
    return v >= 1 && v <= fs_cuda_decode_versions() ? decode_lines[v - 1] : "?";
}

extern "C" bool fs_cuda_decode_version_paged(int v) { return v == 10 || v == 12 || v == 14 || v == 16 || v == 18 || v == 20; }

/* Query heads per block: the whole group in version 2 when it is 1, 2, 4 or 8. */
static int heads_per_block(const fs_cuda_decode *p, int version)
{
    int group = p->n_q_heads / p->n_kv_heads;
    if (version == 1) return 1;
    if (version >= 7) return group;   /* up to 16: checked before launch */
    return (group == 1 || group == 2 || group == 4 || group == 8) ? group : 1;
}

/* Shared-memory stages and keys per chunk, by version: 3: 2 × 64, 4: 3 × 64, 5: 4 × 32,
 * 6: 3 × 32. The pair is one number, 10 · stages + chunk / 32, for the switches below. */
static int dec_shape(int version)
{
    switch (version) {
    case 4: return 32;
    case 5: return 41;
    case 6: return 31;
    default: return 22;
    }
}

/* Blocks of versions 3 and up that fit on one SM at once (registers and shared memory decide). */
template <int D, int G, int STAGES, int CH> static int dec3_occupancy()
{
    auto kern = decode_split_async<__half, D, G, STAGES, CH>;   /* both 16-bit types take the same room */
    const size_t smem = dec3_smem<__half, D, G, STAGES, CH>();
    int n = 0;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kern, DEC_THREADS, smem) != cudaSuccess)
        return 1;
    return n < 1 ? 1 : n;
}

template <int STAGES, int CH> static int dec3_blocks_per_sm_s(const fs_cuda_decode *p)
{
    const int G = heads_per_block(p, 3);
    if (p->d == 64)
        return G == 1 ? dec3_occupancy<64, 1, STAGES, CH>() : G == 2 ? dec3_occupancy<64, 2, STAGES, CH>()
             : G == 4 ? dec3_occupancy<64, 4, STAGES, CH>() : dec3_occupancy<64, 8, STAGES, CH>();
    return G == 1 ? dec3_occupancy<128, 1, STAGES, CH>() : G == 2 ? dec3_occupancy<128, 2, STAGES, CH>()
         : G == 4 ? dec3_occupancy<128, 4, STAGES, CH>() : dec3_occupancy<128, 8, STAGES, CH>();
}

template <int D> static int dec7_occupancy()
{
    auto kern = decode_mma<__half, D, false>;
    const size_t smem = dec7_smem<__half, D>();
    int n = 0;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kern, DEC_THREADS, smem) != cudaSuccess)
        return 1;
    return n < 1 ? 1 : n;
}

static int dec3_blocks_per_sm(const fs_cuda_decode *p, int version)
{
    if (version >= 9) return fs_cu_hopper_decode_blocks_per_sm(p);
    if (version >= 7) return p->d == 64 ? dec7_occupancy<64>() : dec7_occupancy<128>();
    switch (dec_shape(version)) {
    case 32: return dec3_blocks_per_sm_s<3, 64>(p);
    case 41: return dec3_blocks_per_sm_s<4, 32>(p);
    case 31: return dec3_blocks_per_sm_s<3, 32>(p);
    default: return dec3_blocks_per_sm_s<2, 64>(p);
    }
}

static int split_count(const fs_cuda_decode *p, int version)
{
    if (version == 1) return 1;
    if (p->splits > 0) return p->splits < p->n_kv ? p->splits : p->n_kv;
    int sms = 132, dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    long blocks = (long)p->batch * p->n_q_heads / heads_per_block(p, version);
    /* version 20's page kernel: a block for every KV head of a sequence */
    const int page = version == 20 ? fs_cu_hopper_decode_page_per_sm(p, version) : 0;
    if (page > 0) blocks = p->batch;
    if (version >= 3) {
        /* as many splits as fill every SM's slots once: one wave, no tail */
        long slots = (long)sms * (page > 0 ? page : dec3_blocks_per_sm(p, version)), s = slots / blocks;
        if (version == 8) s = 4 * slots / blocks;   /* four waves: a slow block is made up by others */
        long most = (p->n_kv + 256 - 1) / 256;   /* ≥ 256 keys a split */
        if (s > most) s = most;
        return s < 1 ? 1 : (int)s;
    }
    long want = (4L * sms + blocks - 1) / blocks;              /* about 4 blocks per SM */
    long most = (p->n_kv + 4 * DEC_CHUNK - 1) / (4 * DEC_CHUNK); /* at least 4 chunks a split */
    if (want > most) want = most;
    return want < 1 ? 1 : (int)want;
}

/* the partials (batch, n_q_heads, splits, d + 2), then for version 8 one counter per
 * (batch, KV head) */
extern "C" int fs_cuda_decode_splits(const fs_cuda_decode *p, int version) { return split_count(p, version); }

extern "C" size_t fs_cuda_decode_workspace(const fs_cuda_decode *p, int version)
{
    return sizeof(float) * (size_t)p->batch * p->n_q_heads * split_count(p, version) * (p->d + 2) +
           (dec_fused(version) ? sizeof(unsigned) * (size_t)p->batch * p->n_kv_heads : 0);
}

template <typename T, int D, int G>
static fs_status launch_g(const fs_cuda_decode *pp, int version, decode_params p, const void *Q,
                          const void *K, const void *V, void *O, float *work, char *why, size_t n)
{
    dim3 grid(p.splits, pp->n_q_heads / G, pp->batch);
    if (version >= 3) {
        size_t smem;
        void (*kern)(decode_params, const T *, const T *, const T *, float *);
        switch (dec_shape(version)) {
        case 32: smem = dec3_smem<T, D, G, 3, 64>(); kern = decode_split_async<T, D, G, 3, 64>; break;
        case 41: smem = dec3_smem<T, D, G, 4, 32>(); kern = decode_split_async<T, D, G, 4, 32>; break;
        case 31: smem = dec3_smem<T, D, G, 3, 32>(); kern = decode_split_async<T, D, G, 3, 32>; break;
        default: smem = dec3_smem<T, D, G, 2, 64>(); kern = decode_split_async<T, D, G, 2, 64>; break;
        }
        FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        kern<<<grid, DEC_THREADS, smem>>>(p, (const T *)Q, (const T *)K, (const T *)V, work);
    } else {
        decode_split<T, D, G><<<grid, DEC_THREADS>>>(p, (const T *)Q, (const T *)K, (const T *)V, work);
    }
    FS_CU_LAUNCHED();
    decode_merge<T, D><<<dim3(pp->n_q_heads, pp->batch), D>>>(p, work, (T *)O);
    FS_CU_LAUNCHED();
    return FS_OK;
}

/* The kernels' parameters for problem pp and version (its split count chosen, or pp's). */
static decode_params dec_params(const fs_cuda_decode *pp, int version)
{
    decode_params p;
    p.n_q_heads = pp->n_q_heads;
    p.n_kv_heads = pp->n_kv_heads;
    p.n_kv = pp->n_kv;
    p.splits = split_count(pp, version);
    p.split_len = (pp->n_kv + p.splits - 1) / p.splits;
    p.scale2 = pp->scale * FS_LOG2E;
    p.page_size = pp->page_size;
    p.blocks_per_seq = pp->blocks_per_seq;
    p.block_table = pp->block_table;
    p.seq_lens = pp->seq_lens;
    p.head_major = pp->head_major;
    if (pp->page_size > 0) p.split_len = (p.split_len + 63) / 64 * 64;   /* whole 64-key tiles */
    return p;
}

/* Why versions 7 and up refuse pp, or NULL. */
static const char *dec7_refusal(const fs_cuda_decode *pp)
{
    return pp->n_q_heads / pp->n_kv_heads > 16 || !(pp->scale > 0)
               ? "take at most 16 query heads per KV head and a positive scale" : NULL;
}

template <typename T, int D>
static fs_status launch_dec(const fs_cuda_decode *pp, int version, const void *Q, const void *K,
                            const void *V, void *O, float *work, char *why, size_t n)
{
    const decode_params p = dec_params(pp, version);
    if (version >= 7) {
        if (dec7_refusal(pp)) {
            if (why && n) snprintf(why, n, "decode versions 7 to %d %s", fs_cuda_decode_versions(), dec7_refusal(pp));
            return FS_ERR_ARG;
        }
        if (version >= 13) return fs_cu_hopper_decode_pdl(pp, p, version, Q, K, V, work, O, why, n);
        if (version >= 9) {
            /* 11, 12: the counters follow the partials, zeroed here (the workspace may hold
             * anything); the merging block puts each back to zero */
            unsigned *done = nullptr;
            if (dec_fused(version)) {
                done = reinterpret_cast<unsigned *>(work + (size_t)pp->batch * pp->n_q_heads * p.splits * (D + 2));
                FS_CU_TRY(cudaMemsetAsync(done, 0, sizeof(unsigned) * (size_t)pp->batch * pp->n_kv_heads));
            }
            fs_status st = fs_cu_hopper_decode_split(pp, p, Q, K, V, work, done, O, why, n);
            if (st != FS_OK || done) return st;
            decode_merge<T, D><<<dim3(pp->n_q_heads, pp->batch), D>>>(p, work, (T *)O);
            FS_CU_LAUNCHED();
            return FS_OK;
        }
        const size_t smem = dec7_smem<T, D>();
        const dim3 grid(p.splits, pp->n_kv_heads, pp->batch);
        if (version == 8) {
            /* the counters follow the partials; zeroed here (the workspace may hold anything),
             * and each is put back to zero by the block that merges */
            unsigned *done = reinterpret_cast<unsigned *>(work + (size_t)pp->batch * pp->n_q_heads * p.splits * (D + 2));
            FS_CU_TRY(cudaMemsetAsync(done, 0, sizeof(unsigned) * (size_t)pp->batch * pp->n_kv_heads));
            auto kern = decode_mma<T, D, true>;
            FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            kern<<<grid, DEC_THREADS, smem>>>(p, (const T *)Q, (const T *)K, (const T *)V, work, done, (T *)O);
            FS_CU_LAUNCHED();
            return FS_OK;
        }
        auto kern = decode_mma<T, D, false>;
        FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        kern<<<grid, DEC_THREADS, smem>>>(p, (const T *)Q, (const T *)K, (const T *)V, work, nullptr, nullptr);
        FS_CU_LAUNCHED();
        decode_merge<T, D><<<dim3(pp->n_q_heads, pp->batch), D>>>(p, work, (T *)O);
        FS_CU_LAUNCHED();
        return FS_OK;
    }
    switch (heads_per_block(pp, version)) {
    case 1: return launch_g<T, D, 1>(pp, version, p, Q, K, V, O, work, why, n);
    case 2: return launch_g<T, D, 2>(pp, version, p, Q, K, V, O, work, why, n);
    case 4: return launch_g<T, D, 4>(pp, version, p, Q, K, V, O, work, why, n);
    default: return launch_g<T, D, 8>(pp, version, p, Q, K, V, O, work, why, n);
    }
}

/* Why fs_cuda_decode_run refuses p for version (FS_OK: it does not). */
static fs_status decode_refusal(const fs_cuda_decode *p, int version, char *why, size_t n)
{
    if (p->batch < 1 || p->n_q_heads < 1 || p->n_kv_heads < 1 || p->n_q_heads % p->n_kv_heads ||
        p->n_kv < 1) {
        if (why && n) snprintf(why, n, "bad decode shape");
        return FS_ERR_SHAPE;
    }
    if (version < 1 || version > fs_cuda_decode_versions()) {
        if (why && n) snprintf(why, n, "no decode version %d (1..%d)", version, fs_cuda_decode_versions());
        return FS_ERR_ARG;
    }
    if (fs_cuda_decode_version_paged(version) != (p->page_size > 0)) {
        if (why && n)
            snprintf(why, n, p->page_size > 0 ? "decode version %d reads a contiguous cache, not a paged one (page_size %d)"
                                              : "decode version %d reads a paged cache: set page_size, n_pages, "
                                                "blocks_per_seq and block_table", version, p->page_size);
        return FS_ERR_ARG;
    }
    if (p->page_size > 0) {
        const int P = p->page_size;
        if (!(P == 16 || P == 32 || P % 64 == 0) || p->n_pages < 1 || !p->block_table ||
            (long)p->blocks_per_seq * P < p->n_kv) {
            if (why && n) snprintf(why, n, "paged decode: page_size must be 16, 32 or a multiple of 64 (got %d), "
                                           "n_pages ≥ 1, a block table given and blocks_per_seq · page_size ≥ n_kv", P);
            return FS_ERR_ARG;
        }
    }
    if (p->d != 64 && p->d != 128) {
        if (why && n) snprintf(why, n, "the CUDA decode kernels take d = 64 or 128, not %d", p->d);
        return FS_ERR_ARG;
    }
    return FS_OK;
}

extern "C" fs_status fs_cuda_decode_run(const fs_cuda_decode *p, int version, const void *Q,
                                        const void *K, const void *V, void *O, void *work,
                                        char *why, size_t n)
{
    fs_status st = decode_refusal(p, version, why, n);
    if (st != FS_OK) return st;
    const bool bf = p->dtype == FS_CUDA_BF16;
    float *w = (float *)work;
    if (p->d == 64)
        return bf ? launch_dec<__nv_bfloat16, 64>(p, version, Q, K, V, O, w, why, n)
                  : launch_dec<__half, 64>(p, version, Q, K, V, O, w, why, n);
    return bf ? launch_dec<__nv_bfloat16, 128>(p, version, Q, K, V, O, w, why, n)
              : launch_dec<__half, 128>(p, version, Q, K, V, O, w, why, n);
}

/* A planned decode: the problem with its split count fixed, and for versions 13 to 20 (e4m3-cache
 * versions 5 to 16) the host's half of the launches (hopper_decode.cu's plan: the tensor maps, the
 * kernel's attribute). */
struct fs_cuda_decode_plan {
    fs_cuda_decode p;
    int version;
    const void *K, *V;
    void *work;
    hopper_pdl_plan *hopper;   /* NULL: p is run by fs_cuda_decode_run (fs_cuda_decode_fp8_run) */
    bool e4m3;                 /* an e4m3 cache (fs_cuda_decode_fp8_plan_make), its descales: */
    const float *kv_scales;
    decode_params q;           /* e4m3-cache versions 5-8: the merge's, launched after the plan's split */
    bool merge_after;
    cudaGraphExec_t graph;     /* fs_cuda_decode_plan_graph: the run's launches for Q = gQ and O = gO */
    const void *gQ;
    void *gO;
};

/* A new plan for p (its split count `splits`), version, the cache K, V and the workspace; NULL,
 * with why, when out of host memory. */
static fs_cuda_decode_plan *plan_new(const fs_cuda_decode *p, int splits, int version, const void *K, const void *V,
                                     void *work, char *why, size_t n)
{
    fs_cuda_decode_plan *pl = (fs_cuda_decode_plan *)calloc(1, sizeof *pl);
    if (!pl) {
        if (why && n) snprintf(why, n, "out of host memory for a decode plan");
        return NULL;
    }
    pl->p = *p;
    pl->p.splits = splits;   /* no occupancy query at each run */
    pl->version = version;
    pl->K = K;
    pl->V = V;
    pl->work = work;
    return pl;
}

extern "C" fs_status fs_cuda_decode_plan_make(const fs_cuda_decode *p, int version, const void *K, const void *V,
                                              void *work, fs_cuda_decode_plan **out, char *why, size_t n)
{
    *out = NULL;
    fs_status st = decode_refusal(p, version, why, n);
    if (st != FS_OK) return st;
    if (version >= 7 && dec7_refusal(p)) {
        if (why && n) snprintf(why, n, "decode versions 7 to %d %s", fs_cuda_decode_versions(), dec7_refusal(p));
        return FS_ERR_ARG;
    }
    fs_cuda_decode_plan *pl = plan_new(p, split_count(p, version), version, K, V, work, why, n);
    if (!pl) return FS_ERR_NOMEM;
    if (version >= 13 &&
        (st = fs_cu_hopper_decode_pdl_plan(&pl->p, dec_params(&pl->p, version), version, K, V, (float *)work, &pl->hopper,
                                           why, n)) != FS_OK) {
        free(pl);
        return st;
    }
    *out = pl;
    return FS_OK;
}

static fs_status kv8_merge(const fs_cuda_decode *p, const decode_params &q, float *w, void *O, char *why, size_t n);

extern "C" fs_status fs_cuda_decode_plan_run(const fs_cuda_decode_plan *pl, const void *Q, void *O, char *why, size_t n)
{
    if (pl->graph && Q == pl->gQ && O == pl->gO) {   /* one launch of the captured graph */
        FS_CU_TRY(cudaGraphLaunch(pl->graph, 0));
        return FS_OK;
    }
    if (pl->hopper) {
        fs_status st = fs_cu_hopper_decode_pdl_run(pl->hopper, Q, O, 0, why, n);
        if (st == FS_OK && pl->merge_after) st = kv8_merge(&pl->p, pl->q, (float *)pl->work, O, why, n);
        return st;
    }
    if (pl->e4m3) return fs_cuda_decode_fp8_run(&pl->p, pl->version, Q, pl->K, pl->V, pl->kv_scales, O, pl->work, why, n);
    return fs_cuda_decode_run(&pl->p, pl->version, Q, pl->K, pl->V, O, pl->work, why, n);
}

extern "C" bool fs_cuda_decode_plan_graphs(const fs_cuda_decode_plan *pl)
{
    return pl && pl->hopper && !pl->merge_after;
}

extern "C" fs_status fs_cuda_decode_plan_graph(fs_cuda_decode_plan *pl, const void *Q, void *O, char *why, size_t n)
{
    if (!fs_cuda_decode_plan_graphs(pl)) {
        if (why && n)
            snprintf(why, n, "a decode graph takes a plan of versions 13 to %d (e4m3 cache: 9 to %d)", fs_cuda_decode_versions(),
                     fs_cuda_decode_fp8_versions());
        return FS_ERR_ARG;
    }
    cudaStream_t s;
    FS_CU_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    fs_status st = FS_OK;
    if (e == cudaSuccess) {
        st = fs_cu_hopper_decode_pdl_run(pl->hopper, Q, O, s, why, n);
        const cudaError_t e2 = cudaStreamEndCapture(s, &g);   /* ended whatever the launches said */
        if (st == FS_OK) e = e2;
    }
    cudaGraphExec_t x = NULL;
    if (e == cudaSuccess && st == FS_OK) e = cudaGraphInstantiate(&x, g, 0);
    if (g) cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    if (st != FS_OK) return st;
    if (e != cudaSuccess) {
        if (why && n) snprintf(why, n, "capturing the decode into a graph failed: %s", cudaGetErrorString(e));
        return FS_ERR_ARG;
    }
    if (pl->graph) cudaGraphExecDestroy(pl->graph);
    pl->graph = x;
    pl->gQ = Q;
    pl->gO = O;
    return FS_OK;
}

extern "C" void fs_cuda_decode_plan_free(fs_cuda_decode_plan *pl)
{
    if (!pl) return;
    if (pl->graph) cudaGraphExecDestroy(pl->graph);
    fs_cu_hopper_decode_pdl_free(pl->hopper);
    free(pl);
}

/* ---- Host side of the e4m3 KV cache --------------------------------------------------------- */

static const char *decode_fp8_lines[] = {
    "e4m3 cache: split-KV on mma.sync, each warp's 16 keys loaded to registers one step ahead, "
    "converted there; descales in the score scale and the output",
    "e4m3 cache, paged: version 1 through the block table, the split's pages and per-page descales "
    "staged in shared memory",
    "version 1 with two steps' loads in flight (8 KiB a warp at d = 128)",
    "version 2 with two steps' loads in flight",
    "Hopper: version 1's step with decode version 9's loads: a producer warp's TMA copies into a ring of stages",
    "Hopper, paged: version 5 with each box following the block table, the pages' descales beside the stage",
    "version 5 with the bytes converted by the hardware (cvt.rn.f16x2.e4m3x2), exactly, one instruction a pair",
    "version 6 with the hardware's conversion",
    "version 7 with decode version 13's merge: launched while the splits run (programmatic dependent launch)",
    "version 8 with decode version 13's merge",
    "version 9 stepping over the rows a group of at most 8 query heads fills, not all 16 (decode version 15's step); "
    "six stages at d = 128",
    "version 10 stepping over the rows the group fills; six stages at d = 128",
    "version 11 (one V descale a head: nothing for version 14's change to do)",
    "version 12 with o kept in units of the largest V descale so far: a page's P scaled down to it, "
    "o rescaled only when that grows",
    "version 11 (no pages: nothing for version 16's change to do)",
    "version 14 with a whole page a stage, every KV head's rows in 8 KiB boxes, a block for every KV head "
    "(a warp each; pages of 16 or 32, 2, 4 or 8 KV heads; else version 14)",
    "version 11 with tiles of 128 keys read as 64 rows of two keys, two boxes of half rows a tensor (the even keys, "
    "the odd), as the float16 decode's ring reads its rows (keys a multiple of 128, groups of at most 8; else version 11)",
};

extern "C" bool fs_cuda_decode_fp8_version_paged(int v) { return v % 2 == 0; }

extern "C" int fs_cuda_decode_fp8_versions(void) { return (int)(sizeof decode_fp8_lines / sizeof *decode_fp8_lines); }

extern "C" const char *fs_cuda_decode_fp8_version_str(int v)
{
    return v >= 1 && v <= fs_cuda_decode_fp8_versions() ? decode_fp8_lines[v - 1] : "?";
}

template <int D, bool PAGED, int AHEAD> static int kv8_occupancy(const decode_params &p)
{
    auto kern = decode_kv8<D, PAGED, AHEAD>;
    const size_t smem = kv8_smem<D>(p, PAGED);
    int n = 0;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kern, DEC_THREADS, smem) != cudaSuccess)
        return 1;
    return n < 1 ? 1 : n;
}

/* The launch parameters: splits to fill every SM's slots once (as versions 3 and up), at least
 * 256 keys each, whole 64-key tiles (128-key ones for version 17). */
static decode_params kv8_params(const fs_cuda_decode *pp, int version)
{
    decode_params p;
    memset(&p, 0, sizeof p);
    p.n_q_heads = pp->n_q_heads;
    p.n_kv_heads = pp->n_kv_heads;
    p.n_kv = pp->n_kv;
    p.scale2 = pp->scale * FS_LOG2E;
    p.page_size = version % 2 == 0 ? pp->page_size : 0;
    p.blocks_per_seq = pp->blocks_per_seq;
    p.block_table = pp->block_table;
    p.seq_lens = pp->seq_lens;
    p.head_major = pp->head_major;
    if (pp->splits > 0) {
        p.splits = pp->splits < pp->n_kv ? pp->splits : pp->n_kv;
    } else {
        int sms = 132, dev = 0;
        if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        decode_params q = p;
        q.split_len = 256;   /* the staging room of a typical split, for the occupancy */
        q.page_size = p.page_size > 0 ? p.page_size : 16;
        int per_sm = 0;
        long blocks = (long)pp->batch * pp->n_kv_heads;
        if (version >= 5) {   /* Hopper (hopper_decode.cu); version 16's page kernel: a block for every KV head */
            const int page = fs_cu_hopper_kv8_page_per_sm(pp, version);
            per_sm = page > 0 ? page : fs_cu_hopper_kv8_blocks_per_sm(pp->d, version, pp->n_q_heads / pp->n_kv_heads);
            if (page > 0) blocks = pp->batch;
        } else switch (version * 1000 + pp->d) {
        case 1064: per_sm = kv8_occupancy<64, false, 1>(q); break;
        case 2064: per_sm = kv8_occupancy<64, true, 1>(q); break;
        case 3064: per_sm = kv8_occupancy<64, false, 2>(q); break;
        case 4064: per_sm = kv8_occupancy<64, true, 2>(q); break;
        case 1128: per_sm = kv8_occupancy<128, false, 1>(q); break;
        case 2128: per_sm = kv8_occupancy<128, true, 1>(q); break;
        case 3128: per_sm = kv8_occupancy<128, false, 2>(q); break;
        default: per_sm = kv8_occupancy<128, true, 2>(q); break;
        }
        long s = (long)sms * per_sm / blocks;
        long most = (pp->n_kv + 256 - 1) / 256;
        if (s > most) s = most;
        p.splits = s < 1 ? 1 : (int)s;
    }
    const int tile = version == 17 ? 128 : 64;
    p.split_len = (pp->n_kv + p.splits - 1) / p.splits;
    p.split_len = (p.split_len + tile - 1) / tile * tile;
    p.splits = (pp->n_kv + p.split_len - 1) / p.split_len;   /* no empty split at the end */
    return p;
}

extern "C" int fs_cuda_decode_fp8_splits(const fs_cuda_decode *p, int version) { return kv8_params(p, version).splits; }

extern "C" size_t fs_cuda_decode_fp8_workspace(const fs_cuda_decode *p, int version)
{
    const decode_params q = kv8_params(p, version);
    return sizeof(float) * (size_t)p->batch * p->n_q_heads * q.splits * (p->d + 2);
}

template <int D, bool PAGED, int AHEAD>
static fs_status kv8_launch(const fs_cuda_decode *pp, const decode_params &p, const void *Q, const void *K8,
                            const void *V8, const float *scales, void *O, float *work, char *why, size_t n)
{
    auto kern = decode_kv8<D, PAGED, AHEAD>;
    const size_t smem = kv8_smem<D>(p, PAGED);
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kern<<<dim3(p.splits, pp->n_kv_heads, pp->batch), DEC_THREADS, smem>>>(
        p, (const __half *)Q, (const uint8_t *)K8, (const uint8_t *)V8, scales, work);
    FS_CU_LAUNCHED();
    decode_merge<__half, D><<<dim3(pp->n_q_heads, pp->batch), D>>>(p, work, (__half *)O);
    FS_CU_LAUNCHED();
    return FS_OK;
}

/* Why fs_cuda_decode_fp8_run refuses p for version (FS_OK: it does not). */
static fs_status kv8_refusal(const fs_cuda_decode *p, int version, const float *kv_scales, char *why, size_t n)
{
    if (p->batch < 1 || p->n_q_heads < 1 || p->n_kv_heads < 1 || p->n_q_heads % p->n_kv_heads || p->n_kv < 1 ||
        p->n_q_heads / p->n_kv_heads > 16) {
        if (why && n) snprintf(why, n, "bad decode shape (the e4m3 cache takes at most 16 query heads per KV head)");
        return FS_ERR_SHAPE;
    }
    if (version < 1 || version > fs_cuda_decode_fp8_versions()) {
        if (why && n) snprintf(why, n, "no e4m3-cache decode version %d (1..%d)", version, fs_cuda_decode_fp8_versions());
        return FS_ERR_ARG;
    }
    if (p->dtype != FS_CUDA_F16 || !kv_scales || !(p->scale > 0) || (p->d != 64 && p->d != 128)) {
        if (why && n) snprintf(why, n, "the e4m3-cache decode takes float16 Q and O, descales, a positive scale and "
                                       "d = 64 or 128");
        return FS_ERR_ARG;
    }
    const bool paged = fs_cuda_decode_fp8_version_paged(version);
    if (paged != (p->page_size > 0)) {
        if (why && n) snprintf(why, n, paged ? "e4m3-cache version %d reads a paged cache: set page_size, n_pages, "
                                               "blocks_per_seq and block_table"
                                             : "e4m3-cache version %d reads a contiguous cache, not a paged one", version);
        return FS_ERR_ARG;
    }
    if (paged) {
        const int P = p->page_size;
        if (!(P == 16 || P == 32 || P % 64 == 0) || p->n_pages < 1 || !p->block_table ||
            (long)p->blocks_per_seq * P < p->n_kv) {
            if (why && n) snprintf(why, n, "paged decode: page_size must be 16, 32 or a multiple of 64 (got %d), "
                                           "n_pages ≥ 1, a block table given and blocks_per_seq · page_size ≥ n_kv", P);
            return FS_ERR_ARG;
        }
    }
    return FS_OK;
}

/* The merge kernel of e4m3-cache versions 5-8 into O (float16). */
static fs_status kv8_merge(const fs_cuda_decode *p, const decode_params &q, float *w, void *O, char *why, size_t n)
{
    if (p->d == 64) decode_merge<__half, 64><<<dim3(p->n_q_heads, p->batch), 64>>>(q, w, (__half *)O);
    else decode_merge<__half, 128><<<dim3(p->n_q_heads, p->batch), 128>>>(q, w, (__half *)O);
    FS_CU_LAUNCHED();
    return FS_OK;
}

extern "C" fs_status fs_cuda_decode_fp8_run(const fs_cuda_decode *p, int version, const void *Q, const void *K8,
                                            const void *V8, const float *kv_scales, void *O, void *work, char *why,
                                            size_t n)
{
    fs_status st = kv8_refusal(p, version, kv_scales, why, n);
    if (st != FS_OK) return st;
    const decode_params q = kv8_params(p, version);
    float *w = (float *)work;
    if (version >= 5) {   /* Hopper (hopper_decode.cu): the split kernel there, the merge here (9-16: there) */
        st = fs_cu_hopper_decode_kv8(p, q, version, Q, K8, V8, kv_scales, w, O, why, n);
        if (st != FS_OK || version >= 9) return st;
        return kv8_merge(p, q, w, O, why, n);
    }
    switch (version * 1000 + p->d) {
    case 1064: return kv8_launch<64, false, 1>(p, q, Q, K8, V8, kv_scales, O, w, why, n);
    case 2064: return kv8_launch<64, true, 1>(p, q, Q, K8, V8, kv_scales, O, w, why, n);
    case 3064: return kv8_launch<64, false, 2>(p, q, Q, K8, V8, kv_scales, O, w, why, n);
    case 4064: return kv8_launch<64, true, 2>(p, q, Q, K8, V8, kv_scales, O, w, why, n);
    case 1128: return kv8_launch<128, false, 1>(p, q, Q, K8, V8, kv_scales, O, w, why, n);
    case 2128: return kv8_launch<128, true, 1>(p, q, Q, K8, V8, kv_scales, O, w, why, n);
    case 3128: return kv8_launch<128, false, 2>(p, q, Q, K8, V8, kv_scales, O, w, why, n);
    default: return kv8_launch<128, true, 2>(p, q, Q, K8, V8, kv_scales, O, w, why, n);
    }
}

extern "C" fs_status fs_cuda_decode_fp8_plan_make(const fs_cuda_decode *p, int version, const void *K8, const void *V8,
                                                  const float *kv_scales, void *work, fs_cuda_decode_plan **out,
                                                  char *why, size_t n)
{
    *out = NULL;
    fs_status st = kv8_refusal(p, version, kv_scales, why, n);
    if (st != FS_OK) return st;
    fs_cuda_decode_plan *pl = plan_new(p, kv8_params(p, version).splits, version, K8, V8, work, why, n);
    if (!pl) return FS_ERR_NOMEM;
    pl->e4m3 = true;
    pl->kv_scales = kv_scales;
    pl->q = kv8_params(&pl->p, version);
    pl->merge_after = version >= 5 && version <= 8;
    if (version >= 5 && (st = fs_cu_hopper_decode_kv8_plan(&pl->p, pl->q, version, K8, V8, kv_scales, (float *)work,
                                                           &pl->hopper, why, n)) != FS_OK) {
        free(pl);
        return st;
    }
    *out = pl;
    return FS_OK;
}
