/* attn_prefill.cu: FlashAttention forward (prefill) on float16 / bfloat16, float32 accumulation.
 *
 * The same tiled algorithm as src/engine/tiled.c, at full size. Versions, one line each on what
 * changed (figures: docs/benchmarks.md, part two; how to run: bench/cuda/run.sh):
 *
 *   1  scalar: one thread per query row walks the keys one by one (000's online attention),
 *      q and o in registers, float32 arithmetic; no tensor cores. The readable baseline.
 *   2  tensor cores: a block of 4 warps owns a Q tile of Bq = 64 rows (16 per warp), K and V
 *      tiles of Bk = 64 keys go through shared memory (cp.async), S = Q Kᵀ and O += P V on
 *      mma.sync m16n8k16 with float32 accumulators; P stays in registers between the two
 *      products. Tiles are classified first: skipped tiles are never loaded, full tiles skip the
 *      element mask.
 *   3  Bq = 128 (8 warps) so each K/V tile loaded serves twice the rows, and the K/V tiles are
 *      double-buffered: the next tile's cp.async runs while this tile's products do.
 *   4  Bq = 128 on 4 warps, 32 rows (two 16-row tiles) per warp: every K and V fragment read
 *      from shared memory by ldmatrix feeds two mma instead of one, halving shared-memory
 *      traffic per product (the step FlashAttention-2 takes); double-buffered as in 3.
 *   5  version 3, with the row max taken on raw scores and the scale applied inside the
 *      exponent (one FFMA per score instead of a multiply and a subtract).
 *   6  version 5 with KV tiles of Bk = 32: the score accumulators halve, so 8 warps fit the
 *      128-register cap (2 blocks an SM) without spilling to local memory (ncu: 8.5 M spill
 *      requests in version 5 at d = 128).
 *   7  version 4 with the FFMA exponent and Bk = 32 (32 rows per warp, 4 warps, no spill).
 *   8  version 5, skipping the rescale of o (D/8 · 4 multiplies a thread) when no row of the
 *      warp found a new maximum in the tile: after the first tiles the maxima rarely move.
 *   9  version 8 with Bk = 128 at d = 64 (d = 128 keeps 64): at d = 64 each tile's products are
 *      half as long, so the per-tile softmax, rescale and barriers weigh twice as much.
 *
 *  10-35  Hopper only (sm_90a), in hopper_prefill.cu: wgmma, TMA with mbarriers, a producer
 *      warpgroup, overlap, ping-pong, stages, a polynomial exp2, three consumer warpgroups, the
 *      blocks longest-first across heads (17), persistent blocks (18), wider key tiles (19 at
 *      d = 128, 20 at d = 64), and on to 35 (hopper_prefill.cu lists each). They take causal,
 *      window and no mask, and d = 256 too; fs_cuda_prefill_run hands bitmask (tree) problems
 *      to version 9. Version 32 without a mask needs p->work (fs_cuda_prefill_workspace).
 *
 * Every version writes each row's log-sum-exp L to p->lse when it is not NULL (the backward's
 * input, attn_backward.cu).
 *
 * Layout (row-major): Q, O (batch, n_q_heads, n_q, d); K, V (batch, n_kv_heads, n_kv, d).
 * Query head h reads KV head h / (n_q_heads / n_kv_heads) (GQA).
 *
 * Online softmax in base 2 (003): scores are multiplied by scale · log2 e once, so every
 * exponential is one ex2 instruction; m is then in base-2 units, ℓ and o are unchanged.
 */
#include "kernels/cuda/cuda_common.cuh"

/* ---- Version 1: scalar ------------------------------------------------------------------- */

/* grid (ceil(n_q / 128), n_q_heads, batch), 128 threads; thread = query row. */
template <typename T, int D>
__global__ void __launch_bounds__(128) prefill_v1(prefill_params p, const T *__restrict__ Q,
                                                  const T *__restrict__ K, const T *__restrict__ V,
                                                  T *__restrict__ O)
{
    typedef fs_cu_type<T> ty;
    const int i = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, b = blockIdx.z;
    if (i >= p.n_q) return;
    const int kvh = h / (p.n_q_heads / p.n_kv_heads);
    const T *q = Q + (((size_t)b * p.n_q_heads + h) * p.n_q + i) * D;
    const T *Kh = K + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;
    const T *Vh = V + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;
    float qs[D], o[D];
#pragma unroll
    for (int c = 0; c < D; c++) {
        qs[c] = ty::to_f(q[c]) * p.scale2;
        o[c] = 0;
    }
    float m = -INFINITY, l = 0;
    int lo, hi;
    key_range(p, i, i + 1, &lo, &hi);
    for (int j = lo; j < hi; j++) {
        if (!fs_cu_visible(p.mask, i, j)) continue;
        const T *k = Kh + (size_t)j * D, *v = Vh + (size_t)j * D;
        float s = 0;
#pragma unroll
        for (int c = 0; c < D; c++) s = fmaf(qs[c], ty::to_f(k[c]), s);
        if (s > m) {                        /* a new maximum rescales what was summed */
            float alpha = exp2f(m - s);
            l *= alpha;
#pragma unroll
            for (int c = 0; c < D; c++) o[c] *= alpha;
            m = s;
        }
        float pj = exp2f(s - m);
        l += pj;
#pragma unroll
        for (int c = 0; c < D; c++) o[c] = fmaf(pj, ty::to_f(v[c]), o[c]);
    }
    T *out = O + (((size_t)b * p.n_q_heads + h) * p.n_q + i) * D;
    float inv = l > 0 ? 1.f / l : 0.f;
    if (p.lse) p.lse[((size_t)b * p.n_q_heads + h) * p.n_q + i] = lse_of(m, l);
#pragma unroll
    for (int c = 0; c < D; c++) out[c] = ty::from_f(o[c] * inv);
}

/* ---- Versions 2 and up: tensor cores ------------------------------------------------------- */

/* 64-bit mask words per row that a tile of BK keys spans (32 and 64: one; 128: two). */
template <int BK> struct tile_words { enum { N = BK > 64 ? BK / 64 : 1 }; };

/* Word i of row r's mask bits for the keys of tile kt, in the low bits (0 past n_kv). */
template <int BK>
__device__ __forceinline__ uint64_t tile_bits(const prefill_params &p, int r, int kt, int i)
{
    if (BK <= 64) {
        const uint64_t w = p.mask.bits[(size_t)r * p.mask.words + ((kt * BK) >> 6)];
        return BK == 64 ? w : (w >> ((kt * BK) & 63)) & ((1ull << (BK & 63)) - 1);
    }
    const int c = kt * BK + 64 * i;
    return c < p.n_kv ? p.mask.bits[(size_t)r * p.mask.words + (c >> 6)] : 0;
}

/* The tile class of KV tile kt for rows [r0, r1) (a block-wide vote for bitmasks: all threads
 * must call it). Keys past n_kv make a tile partial. */
template <int NT, int BK>
__device__ __forceinline__ int tile_class(const prefill_params &p, int r0, int r1, int kt)
{
    const int c0 = kt * BK, c1 = min(c0 + BK, p.n_kv);
    const bool edge = c1 - c0 < BK;
    if (p.mask.kind == FS_MASK_BITS) {
        bool any = false, all = true;
        for (int r = r0 + (int)threadIdx.x; r < r1; r += NT)
#pragma unroll
            for (int i = 0; i < tile_words<BK>::N; i++) {
                const int cnt = min(max(c1 - c0 - 64 * i, 0), min(64, BK));
                const uint64_t valid = cnt >= 64 ? ~0ull : (1ull << cnt) - 1;
                const uint64_t w = tile_bits<BK>(p, r, kt, i) & valid;
                any |= w != 0;
                all &= w == valid;
            }
        any = __syncthreads_or(any);
        all = __syncthreads_and(all);
        return !any ? FS_TILE_SKIPPED : (all && !edge) ? FS_TILE_FULL : FS_TILE_PARTIAL;
    }
    if (p.mask.kind == FS_MASK_NONE) return edge ? FS_TILE_PARTIAL : FS_TILE_FULL;
    /* causal / window: the caller only visits tiles inside key_range, so none is skipped */
    long p0 = (long)r0 + p.mask.offset, p1 = (long)r1 - 1 + p.mask.offset;
    bool full = (long)c1 - 1 <= p0;
    if (p.mask.kind == FS_MASK_WINDOW) full = full && c0 > p1 - p.mask.window;
    return (full && !edge) ? FS_TILE_FULL : FS_TILE_PARTIAL;
}

/* The first KV tile at or after kt (and before kt_hi) that is not skipped. */
template <int NT, int BK>
__device__ __forceinline__ int next_tile(const prefill_params &p, int r0, int r1, int kt, int kt_hi)
{
    if (p.mask.kind != FS_MASK_BITS) return kt;
    while (kt < kt_hi && tile_class<NT, BK>(p, r0, r1, kt) == FS_TILE_SKIPPED) kt++;
    return kt;
}

/* grid (ceil(n_q / Bq), n_q_heads, batch), NW warps; Bq = 16 · MT · NW rows, warp w owns rows
 * 16·MT·w .. 16·MT·(w + 1) − 1 of the tile, as MT row tiles of 16. Shared memory: Q tile (Bq, D), then STAGES × K tile (Bk, D),
 * then STAGES × V tile (Bk, D), rows padded by 8 elements so ldmatrix is free of bank conflicts.
 * Fragment layout of m16n8k16 (lane = 4g + t): accumulator c0,c1 at (row g, cols 2t, 2t+1),
 * c2,c3 at (row g + 8, same cols). */
template <typename T, int D, int NW, int MT, int STAGES, bool FUSE, int BK, bool LAZY>
__global__ void __launch_bounds__(NW * 32, (NW * MT == 8 ? 2 : 3))
prefill_mma(prefill_params p, const T *__restrict__ Q, const T *__restrict__ K,
            const T *__restrict__ V, T *__restrict__ O)
{
    constexpr int WR = 16 * MT, BQ = WR * NW, NT = NW * 32, LD = D + 8;
    extern __shared__ __align__(16) unsigned char smem[];
    T *sQ = reinterpret_cast<T *>(smem);
    T *sK = sQ + BQ * LD;
    T *sV = sK + STAGES * BK * LD;

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
    const int qt = gridDim.x - 1 - blockIdx.x;   /* the longest rows (causal) start first */
    const int h = blockIdx.y, b = blockIdx.z, kvh = h / (p.n_q_heads / p.n_kv_heads);
    const int r0 = qt * BQ, r1 = min(r0 + BQ, p.n_q);
    const T *Qg = Q + (((size_t)b * p.n_q_heads + h) * p.n_q + r0) * D;
    const T *Kg = K + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;
    const T *Vg = V + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;

    int lo, hi;
    key_range(p, r0, r1, &lo, &hi);
    const int kt_lo = lo / BK, kt_hi = (hi + BK - 1) / BK;

    /* this thread's rows: for m-tile mt, row g (x = 0) and row g + 8 (x = 1) */
    auto row_of = [&](int mt, int x) { return r0 + warp * WR + mt * 16 + g + 8 * x; };
    float oacc[MT][D / 8][4], m_run[MT][2], l_run[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        m_run[mt][0] = m_run[mt][1] = -INFINITY;
        l_run[mt][0] = l_run[mt][1] = 0;
#pragma unroll
        for (int i = 0; i < D / 8; i++) oacc[mt][i][0] = oacc[mt][i][1] = oacc[mt][i][2] = oacc[mt][i][3] = 0;
    }

    load_tile<T, D, LD, BQ, NT>(sQ, Qg, r1 - r0);
    int kt = next_tile<NT, BK>(p, r0, r1, kt_lo, kt_hi);
    if (kt < kt_hi) {
        load_tile<T, D, LD, BK, NT>(sK, Kg + (size_t)kt * BK * D, p.n_kv - kt * BK);
        load_tile<T, D, LD, BK, NT>(sV, Vg + (size_t)kt * BK * D, p.n_kv - kt * BK);
    }
    cp_async_commit();

    for (int stage = 0; kt < kt_hi; stage ^= (STAGES - 1)) {
        const int cls = tile_class<NT, BK>(p, r0, r1, kt);
        int kt_next = kt_hi;
        if (STAGES == 2) {
            /* prefetch the next visited tile into the other buffer while this one computes */
            kt_next = next_tile<NT, BK>(p, r0, r1, kt + 1, kt_hi);
            if (kt_next < kt_hi) {
                const int s2 = stage ^ 1;
                load_tile<T, D, LD, BK, NT>(sK + s2 * BK * LD, Kg + (size_t)kt_next * BK * D, p.n_kv - kt_next * BK);
                load_tile<T, D, LD, BK, NT>(sV + s2 * BK * LD, Vg + (size_t)kt_next * BK * D, p.n_kv - kt_next * BK);
            }
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const T *sKs = sK + stage * BK * LD, *sVs = sV + stage * BK * LD;

        /* S = Q Kᵀ for this warp's WR rows × BK keys: MT × BK/8 accumulators of 16 × 8; each K
         * fragment read from shared memory serves all MT row tiles */
        float sacc[MT][BK / 8][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int i = 0; i < BK / 8; i++) sacc[mt][i][0] = sacc[mt][i][1] = sacc[mt][i][2] = sacc[mt][i][3] = 0;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                ldsm_x4(a[mt], sQ + (warp * WR + mt * 16 + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8);
#pragma unroll
            for (int np = 0; np < BK / 16; np++) {
                uint32_t bk[4];
                ldsm_x4(bk, sKs + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + kk * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma16816<T>(sacc[mt][2 * np], a[mt], bk[0], bk[1]);
                    mma16816<T>(sacc[mt][2 * np + 1], a[mt], bk[2], bk[3]);
                }
            }
        }

#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            /* scale into base-2 units; the element mask only on partial tiles */
            float bm[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int nt = 0; nt < BK / 8; nt++) {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    /* FUSE keeps the raw score here and scales it inside the exponent's FFMA */
                    float s = FUSE ? sacc[mt][nt][e] : sacc[mt][nt][e] * p.scale2;
                    if (cls == FS_TILE_PARTIAL) {
                        const int jj = nt * 8 + 2 * t4 + (e & 1), j = kt * BK + jj;
                        const int pos = row_of(mt, e >> 1) + p.mask.offset;
                        bool vis = j < p.n_kv;
                        if (p.mask.kind == FS_MASK_CAUSAL || p.mask.kind == FS_MASK_WINDOW) vis = vis && j <= pos;
                        if (p.mask.kind == FS_MASK_WINDOW) vis = vis && j > pos - p.mask.window;
                        /* the mask word is read here, in partial bitmask tiles only, so that
                         * no register is held for it in the common path */
                        if (p.mask.kind == FS_MASK_BITS && vis) {
                            const int r = row_of(mt, e >> 1);   /* rows past n_q have no mask row */
                            vis = r < p.n_q && ((tile_bits<BK>(p, r, kt, jj >> 6) >> (jj & 63)) & 1u);
                        }
                        if (!vis) s = -INFINITY;
                    }
                    sacc[mt][nt][e] = s;
                }
                bm[0] = fmaxf(bm[0], fmaxf(sacc[mt][nt][0], sacc[mt][nt][1]));
                bm[1] = fmaxf(bm[1], fmaxf(sacc[mt][nt][2], sacc[mt][nt][3]));
            }
            float alpha[2], base[2], sum[2] = {0, 0};
#pragma unroll
            for (int x = 0; x < 2; x++) {
                /* the row's max is spread over the 4 lanes of a quad */
                bm[x] = fmaxf(bm[x], __shfl_xor_sync(0xffffffff, bm[x], 1));
                bm[x] = fmaxf(bm[x], __shfl_xor_sync(0xffffffff, bm[x], 2));
                if (FUSE) bm[x] *= p.scale2;   /* max commutes with a positive scale */
                const float mn = fmaxf(m_run[mt][x], bm[x]);
                base[x] = mn == -INFINITY ? 0.f : mn;
                alpha[x] = fast_exp2(m_run[mt][x] - base[x]);
                m_run[mt][x] = mn;
            }
#pragma unroll
            for (int nt = 0; nt < BK / 8; nt++) {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    sacc[mt][nt][e] = FUSE ? fast_exp2(fmaf(sacc[mt][nt][e], p.scale2, -base[e >> 1]))
                                           : fast_exp2(sacc[mt][nt][e] - base[e >> 1]);
                    sum[e >> 1] += sacc[mt][nt][e];
                }
            }
#pragma unroll
            for (int x = 0; x < 2; x++)   /* this lane's share of ℓ; the quad is summed at the end */
                l_run[mt][x] = alpha[x] * l_run[mt][x] + sum[x];
            /* LAZY: once a row's max settles, α = 1 and the rescale is skipped (a warp vote) */
            if (!LAZY || __any_sync(0xffffffff, alpha[0] != 1.f || alpha[1] != 1.f))
#pragma unroll
                for (int dt = 0; dt < D / 8; dt++) {
                    oacc[mt][dt][0] *= alpha[0];
                    oacc[mt][dt][1] *= alpha[0];
                    oacc[mt][dt][2] *= alpha[1];
                    oacc[mt][dt][3] *= alpha[1];
                }
        }

        /* O += P V: P is already in the A-fragment layout, V through ldmatrix.trans; each V
         * fragment serves all MT row tiles */
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint32_t a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                a[mt][0] = pack2<T>(sacc[mt][2 * kk][0], sacc[mt][2 * kk][1]);
                a[mt][1] = pack2<T>(sacc[mt][2 * kk][2], sacc[mt][2 * kk][3]);
                a[mt][2] = pack2<T>(sacc[mt][2 * kk + 1][0], sacc[mt][2 * kk + 1][1]);
                a[mt][3] = pack2<T>(sacc[mt][2 * kk + 1][2], sacc[mt][2 * kk + 1][3]);
            }
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) {
                uint32_t bv[4];
                ldsm_x4_t(bv, sVs + (kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3)) * LD + dp * 16 + ((lane >> 4) << 3));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma16816<T>(oacc[mt][2 * dp], a[mt], bv[0], bv[1]);
                    mma16816<T>(oacc[mt][2 * dp + 1], a[mt], bv[2], bv[3]);
                }
            }
        }
        __syncthreads();   /* everyone is done with this stage before it is refilled */
        if (STAGES == 1) {
            kt_next = next_tile<NT, BK>(p, r0, r1, kt + 1, kt_hi);
            if (kt_next < kt_hi) {
                load_tile<T, D, LD, BK, NT>(sK, Kg + (size_t)kt_next * BK * D, p.n_kv - kt_next * BK);
                load_tile<T, D, LD, BK, NT>(sV, Vg + (size_t)kt_next * BK * D, p.n_kv - kt_next * BK);
            }
            cp_async_commit();
        }
        kt = kt_next;
    }
    cp_async_wait<0>();

    /* ℓ = the quad's sum; O = o / ℓ (0 for a row that saw nothing) */
    T *Og = O + (((size_t)b * p.n_q_heads + h) * p.n_q) * D;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        float inv[2];
#pragma unroll
        for (int x = 0; x < 2; x++) {
            float l = l_run[mt][x];
            l += __shfl_xor_sync(0xffffffff, l, 1);
            l += __shfl_xor_sync(0xffffffff, l, 2);
            inv[x] = l > 0 ? 1.f / l : 0.f;
            if (p.lse && t4 == 0 && row_of(mt, x) < p.n_q)
                p.lse[((size_t)b * p.n_q_heads + h) * p.n_q + row_of(mt, x)] = lse_of(m_run[mt][x], l);
        }
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            const int col = dt * 8 + 2 * t4;
#pragma unroll
            for (int x = 0; x < 2; x++)
                if (row_of(mt, x) < p.n_q)
                    *reinterpret_cast<uint32_t *>(Og + (size_t)row_of(mt, x) * D + col) =
                        pack2<T>(oacc[mt][dt][2 * x] * inv[x], oacc[mt][dt][2 * x + 1] * inv[x]);
        }
    }
}

/* ---- Host side ------------------------------------------------------------------------------ */

static const char *version_lines[] = {
    "scalar: one thread per query row, key by key, float32 (no tensor cores)",
    "mma.sync m16n8k16, Bq=64 (4 warps), Bk=64, K/V via cp.async, one buffer",
    "Bq=128 (8 warps), K/V double-buffered",
    "Bq=128 on 4 warps of 32 rows: each K/V fragment read from shared memory feeds 2 row tiles",
    "version 3 with the scale folded into the exponent: exp2(s * scale log2e - m) as one FFMA",
    "version 5 with Bk=32: half the score registers, so the 128-register cap no longer spills",
    "version 4 with the FFMA exponent and Bk=32: 32 rows per warp without spilling",
    "version 5, skipping the o rescale when no row of the warp got a new maximum",
    "version 8 with Bk=128 at d=64 (d=128 keeps 64): fewer tiles, less per-tile overhead",
    "sm_90a: wgmma (warpgroup MMA) from 128B-swizzled shared memory, 2 warpgroups x 64 rows, Bk=128",
    "version 10 with TMA loads on mbarriers, 2 K/V stages, a producer warp and setmaxnreg",
    "version 11 with the softmax of tile j overlapping S_j+1 = QK^T and O += P_j V_j in each warpgroup",
    "version 12 with the two consumer warpgroups taking turns at the tensor cores (ping-pong)",
    "version 13 with 3 K/V stages (12 and 13 give a stage back later than 11 does)",
    "version 14 with every other 8-key chunk's exp2 as a degree-3 polynomial on the FMA pipe",
    "d=64: version 14 with 3 consumer warpgroups (Bq=192, 160 registers); d=128, 256: version 14",
    "version 14 with the blocks longest-first across heads (1-D grid, head groups sized to the L2)",
    "d=64: persistent blocks (one an SM) over pairs of query tiles of equal causal cost, Q double-buffered; else v17",
    "d=128: version 17 with key tiles of 176 (two stages); else v17",
    "d=64: version 17 with key tiles of 192 (three stages); else v17",
    "version 17 with the mask in a loop of its own, run only on partial tiles (full tiles test nothing)",
    "version 21 with O += P V as one m64nDk16 wgmma per 16 keys (d=128, 256), not D/64 of m64n64",
    "version 22 with each wgmma descriptor made as the tile's base plus a constant",
    "d=64: version 23 with key tiles of 192 (three stages); else v23",
    "version 18's persistent blocks with version 23's loop (d=64: tiles of 192, 3 stages; d=128: 2 stages); d=256: v23",
    "d=64: version 25 with every fourth 8-key chunk's exp2 by the polynomial on the FMA pipe; else v25",
    "d=128, 256: version 25 with one Q buffer, freed after a tile's last QK^T (d=128: 3 stages again); d=64: v26",
    "d=64 causal or window: version 23's kernel with version 26's quarter polynomial; else v27",
    "d=64 causal or window: version 18's persistent blocks with version 28's loop; else v28",
    "the fastest form per head size and mask (d=64: v23 causal, v26 else; d=128, 256: v27), lean causal mask",
    "version 30 with a lazy running max: m moves only when a tile's max exceeds it by 2^8, so o is rarely rescaled",
    "no mask: version 31 with the last round of query tiles cut into equal runs of key tiles for every SM, merged in a workspace; else v31",
    "version 31 with cuDNN's order in its persistent kernels: S, softmax, P V each waited for; the warpgroups take turns at the exponentials",
    "d=64: version 31's persistent blocks with cuDNN's key tiles of 128 (3 stages, 2 Q buffers), causal too; else v31",
    "d=64: version 34 where the keys are fewer than 4096, version 31 from 4096 on; else v31",
};

extern "C" int fs_cuda_prefill_versions(void) { return (int)(sizeof version_lines / sizeof *version_lines); }

extern "C" const char *fs_cuda_prefill_version_str(int v)
{
    return v >= 1 && v <= fs_cuda_prefill_versions() ? version_lines[v - 1] : "?";
}

template <typename T, int D, int NW, int MT, int STAGES, bool FUSE, int BK, bool LAZY = false>
static fs_status launch_mma(const fs_cuda_prefill *pp, const prefill_params &p, const void *Q,
                            const void *K, const void *V, void *O, char *why, size_t n)
{
    constexpr int BQ = 16 * MT * NW, LD = D + 8;
    const size_t smem = sizeof(T) * (size_t)LD * (BQ + 2 * STAGES * BK);
    auto kern = prefill_mma<T, D, NW, MT, STAGES, FUSE, BK, LAZY>;
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid((p.n_q + BQ - 1) / BQ, pp->n_q_heads, pp->batch);
    kern<<<grid, NW * 32, smem, fs_cu_stream(pp)>>>(p, (const T *)Q, (const T *)K, (const T *)V, (T *)O);
    FS_CU_LAUNCHED();
    return FS_OK;
}

template <typename T, int D>
static fs_status launch_d(const fs_cuda_prefill *pp, int version, const void *Q, const void *K,
                          const void *V, void *O, char *why, size_t n)
{
    prefill_params p = make_params(pp);
    switch (version) {
    case 1: {
        dim3 grid((p.n_q + 127) / 128, pp->n_q_heads, pp->batch);
        prefill_v1<T, D><<<grid, 128, 0, fs_cu_stream(pp)>>>(p, (const T *)Q, (const T *)K, (const T *)V, (T *)O);
        FS_CU_LAUNCHED();
        return FS_OK;
    }
    case 2: return launch_mma<T, D, 4, 1, 1, false, 64>(pp, p, Q, K, V, O, why, n);
    case 3: return launch_mma<T, D, 8, 1, 2, false, 64>(pp, p, Q, K, V, O, why, n);
    case 4: return launch_mma<T, D, 4, 2, 2, false, 64>(pp, p, Q, K, V, O, why, n);
    case 5: return launch_mma<T, D, 8, 1, 2, true, 64>(pp, p, Q, K, V, O, why, n);
    case 6: return launch_mma<T, D, 8, 1, 2, true, 32>(pp, p, Q, K, V, O, why, n);
    case 7: return launch_mma<T, D, 4, 2, 2, true, 32>(pp, p, Q, K, V, O, why, n);
    case 8: return launch_mma<T, D, 8, 1, 2, true, 64, true>(pp, p, Q, K, V, O, why, n);
    case 9: return launch_mma<T, D, 8, 1, 2, true, (D == 64 ? 128 : 64), true>(pp, p, Q, K, V, O, why, n);
    }
    if (version >= 10 && version <= fs_cuda_prefill_versions()) {
        /* the Hopper versions take no bitmask: the slower path (version 9) answers for it */
        if (pp->mask == FS_MASK_BITS) return launch_d<T, D>(pp, 9, Q, K, V, O, why, n);
        return fs_cu_hopper_prefill(pp, p, version, Q, K, V, O, why, n);
    }
    if (why && n) snprintf(why, n, "no prefill version %d (1..%d)", version, fs_cuda_prefill_versions());
    return FS_ERR_ARG;
}

extern "C" size_t fs_cuda_prefill_workspace(const fs_cuda_prefill *p, int version)
{
    return fs_cu_hopper_prefill_workspace(p, version);
}

extern "C" fs_status fs_cuda_prefill_run(const fs_cuda_prefill *p, int version, const void *Q,
                                         const void *K, const void *V, void *O, char *why, size_t n)
{
    if (p->batch < 1 || p->n_q_heads < 1 || p->n_kv_heads < 1 || p->n_q_heads % p->n_kv_heads ||
        p->n_q < 1 || p->n_kv < 1) {
        if (why && n) snprintf(why, n, "bad prefill shape");
        return FS_ERR_SHAPE;
    }
    if (!(p->scale > 0) || !isfinite(p->scale)) {
        if (why && n) snprintf(why, n, "the CUDA prefill kernels take a positive finite scale");
        return FS_ERR_ARG;
    }
    if (p->mask == FS_MASK_WINDOW && p->window < 1) {
        if (why && n) snprintf(why, n, "window must be >= 1");
        return FS_ERR_MASK;
    }
    if (p->mask == FS_MASK_BITS && (!p->bits || p->words_per_row < (p->n_kv + 63) / 64)) {
        if (why && n) snprintf(why, n, "bitmask missing or too short");
        return FS_ERR_MASK;
    }
    const bool bf = p->dtype == FS_CUDA_BF16;
    if (p->d == 256) {   /* the Hopper versions only, without a bitmask */
        if (version < 10 || version > fs_cuda_prefill_versions() || p->mask == FS_MASK_BITS) {
            if (why && n)
                snprintf(why, n, "d = 256 runs on prefill versions 10-%d (Hopper), without a bitmask",
                         fs_cuda_prefill_versions());
            return FS_ERR_ARG;
        }
        return fs_cu_hopper_prefill(p, make_params(p), version, Q, K, V, O, why, n);
    }
    if (p->d == 64)
        return bf ? launch_d<__nv_bfloat16, 64>(p, version, Q, K, V, O, why, n)
                  : launch_d<__half, 64>(p, version, Q, K, V, O, why, n);
    if (p->d == 128)
        return bf ? launch_d<__nv_bfloat16, 128>(p, version, Q, K, V, O, why, n)
                  : launch_d<__half, 128>(p, version, Q, K, V, O, why, n);
    if (why && n) snprintf(why, n, "the CUDA prefill kernels take d = 64 or 128 (256: versions 10 and up), not %d", p->d);
    return FS_ERR_ARG;
}
