/* hopper_backward.cu: backward versions 4 and up, built for Hopper only (sm_90a), written with
 * the primitives of hopper_common.cuh. attn_backward.cu (versions 1-3, mma.sync) dispatches here.
 *
 * The same recomputation as versions 1-3 (001 §Forward Pass vs. Backward Pass, 004 §The
 * backward pass), in FlashAttention-2's K/V-outer order: a block keeps one K/V tile of
 * Bk = 128 keys resident and walks every Q tile (Bq = 64 rows) that can see it, of every query
 * head of its KV head's group (GQA: dK and dV summed over the group without atomics):
 *   Sᵀ = K Qᵀ,  Pᵀ = exp(scale·Sᵀ − L),  dPᵀ = V dOᵀ,  dSᵀ = Pᵀ ∘ (dPᵀ − D)
 *   dV += Pᵀ dO,  dK += dSᵀ Q,  dQ += dS K
 * Scores are computed transposed (keys as rows) so that Pᵀ and dSᵀ come out of the tensor cores
 * in the register layout that the next products take as their A operand: dV and dK never
 * leave registers until the end, and only dSᵀ goes through shared memory, for dQ.
 *
 *   4  wgmma and warp specialization. A producer warpgroup (one thread of it issues every copy)
 *      streams Q, dO, L and D tiles through a ring of 2 stages by TMA, each stage completing on an mbarrier; two consumer warpgroups
 *      (64 keys each, 240 registers a thread against the producer's 24) compute the five
 *      products as wgmma: Sᵀ and dPᵀ from shared memory on both sides, dV and dK with A (Pᵀ,
 *      dSᵀ) from registers, dQ = dS K from shared memory with both operands read transposed.
 *      Each warpgroup's dQ tile (64 rows × 64 columns: at d = 128 the warpgroups split the
 *      columns, at d = 64 the keys) is staged in shared memory and added to the float32
 *      accumulator in global memory by one bulk reduce-add of the copy engine (atomic in L2,
 *      one instruction for 16 KiB).
 *   5  version 4 with dQ added by each thread from its registers (red.global.add.v2.f32, 32
 *      a thread a tile) instead of the staged bulk reduce: the other way to accumulate dQ,
 *      kept to measure one against the other.
 *   6  version 4 with two dQ staging buffers a warpgroup, so the thread that issues the bulk
 *      reduce no longer waits, before the next tile, for the copy to have read its source.
 *   7  version 6 with the blocks in longest-first order under a causal or window mask: in
 *      versions 4-6 a block's key tile is numbered fastest, so the long blocks (the first key
 *      tiles, seen by every later query) and the short ones come mixed in every wave and the
 *      last wave holds long ones. Here the grid is one dimension: KV heads in groups whose
 *      Q and dO (the streamed tiles) fit 16 MiB of L2, and inside a group key tile 0 of every
 *      head, then key tile 1 of every head, and so on (prefill version 17's idea, mirrored).
 *      Measured: no gain (−13 to +4 % against version 6, within one kernel's spread but for
 *      N = 16 384 not causal, where the order is version 6's and only the grid is 1-D).
 *   8  version 6 with dQ one item behind, at d = 128. There each warpgroup's dQ columns need
 *      both warpgroups' dSᵀ, and in versions 4-7 the two meet at a barrier every tile, so they
 *      run in step: both issue their products at once, then both compute exponentials while
 *      the tensor cores wait. Here a warpgroup announces its dSᵀ of item w on an mbarrier and
 *      goes on to dQ of item w − 1, whose dSᵀ both wrote long before; a second mbarrier frees a
 *      dSᵀ buffer once both have read it. The warpgroups drift apart, and one's exponentials
 *      overlap the other's products. At d = 64 (dQ split by keys: no warpgroup waits for the
 *      other) it is version 6. Measured: +3 to +5 % at N = 16 384; at N = 4096 within the
 *      spread of one kernel timed twice (up to 12 %, docs/benchmarks.md).
 *   9  version 8 with a ring of three stages at d = 64, where a tile's products are half as
 *      long and the next Q, dO, L and D have less time to arrive (at d = 128 two stages and the
 *      buffers above fill 226 of the 227 KiB: version 8). Measured: −4 to +2 %, no gain.
 *  10  at d = 64, version 8's lagged dQ with the warpgroups taking turns: item u's dQ is
 *      computed by warpgroup u mod 2 alone over all 128 keys (both dSᵀ halves, announced on
 *      the mbarriers) and added by one bulk reduce, where in versions 4-9 each warpgroup adds
 *      its own 64 keys' share: half the reduce traffic into L2 for the same products. At
 *      d = 128, version 8. Measured at d = 64: +4 to +7 % without a mask, −1 to −3 % causal.
 *  11  at d = 64, version 8 with items of 128 queries: Sᵀ and dPᵀ are m64n128 products (half the
 *      instructions, waits and ring hand-overs per query), dV and dK take 8 k-steps, and
 *      warpgroup c computes dQ of queries 64c.. over all 128 keys (one reduce each, lagged on
 *      the mbarriers as in version 8). Its tiles of 128 queries leave room for one dQ staging
 *      block a warpgroup only (version 4's wait). At d = 128, version 8. Measured at d = 64:
 *      +20 % on every row against version 8, causal and not.
 *  12  version 11 (d = 64) and version 8 (d = 128) with fewer instructions around the same
 *      products: every matrix descriptor is built once an item (sw128_lo) and reached by one
 *      addition (sw128_at), where versions 4-11 mask, shift and or it again for every wgmma; at
 *      d = 128 dV += Pᵀ dO and dK += dSᵀ Q are m64n128 products (wgmma_rs_tn: one instruction for
 *      both column blocks, half as many); L and D are read two rows at a time (float2). Under ncu
 *      version 8 executed 1.53x cuDNN's warp instructions at N = 16 384, d = 128, 1.42x its HGMMA,
 *      and the surplus was address and descriptor arithmetic (section 4b of kernels-cuda.md).
 *      Measured: a fifth fewer warp instructions at N = 16 384, d = 128 (3.74 G against 4.69 G);
 *      timed in turn with version 8's kernel, 1.00-1.03x its speed at d = 128; level at d = 64.
 *  13  version 12 with, without a mask, each block's walk over the items begun at its own share
 *      of them (block kb at item kb · total / n_kb, wrapping round). The blocks of a head start
 *      together and walked the Q tiles in the same order, so at N = 16 384 up to 128 of them
 *      reduced their dQ into the same tile of the accumulator at once (atomic adds in L2); here
 *      they reduce into tiles spread over the head. Under a causal mask each block already begins
 *      at its own diagonal tile, and the order is version 12's. Measured: no gain at N = 16 384
 *      (0.99x version 12), 1-3 % slower at d = 128, N = 4096 with either mask (its code, as the
 *      causal blocks do not rotate); 2-3 % faster at d = 64 with either mask, which is the
 *      compiler's scheduling of that code, not the rotation: the same code with the rotation a
 *      zero the compiler cannot see was 18 % slower there, causal.
 *
 * D = rowsum(dO ∘ O) and L in base 2 are written by a pre-pass (hbwd_pre) into arrays padded
 * to whole items (a padded row has L = +∞, so P = 0 there), which lets the producer copy a
 * tile's 64 values as one TMA box (make_rows_map_f32). The dQ accumulator is laid out by tiles,
 * [batch·head][Q tile][D/64][64 rows][64 columns] with the column's 8-float chunk XOR the row
 * mod 8 (so the consumers' staging stores fall in different banks); hbwd_dq turns it into dQ.
 *
 * Accumulator layout (m64n64, f32), warp w of the warpgroup, lane = 4g + t: element 4i + e holds
 * row 16w + g + 8·(e >> 1), column 8i + 2t + (e & 1). Rows are keys here, columns queries.
 */
#include "kernels/cuda/hopper_common.cuh"

namespace {

constexpr int BKV = 128;

/* How a version adds its dQ tile to the accumulator. */
enum dq_mode { DQ_BULK = 0, DQ_RED = 1 };

/* D, L (base 2, +∞ for a row that sees nothing or a padded row) into the padded arrays, one warp
 * a padded row; rows (batch · n_q_heads) × npad. */
template <typename T, int D>
__global__ void hbwd_pre(int bh_rows, int n_q, int npad, const T *__restrict__ O, const T *__restrict__ dO,
                         const float *__restrict__ lse, float *__restrict__ Lp, float *__restrict__ Dp)
{
    typedef fs_cu_type<T> ty;
    const int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (r >= bh_rows * npad) return;
    const int bh = r / npad, i = r % npad;
    float s = 0;
    if (i < n_q) {
        const size_t row = (size_t)bh * n_q + i;
        for (int c = lane; c < D; c += 32) s += ty::to_f(O[row * D + c]) * ty::to_f(dO[row * D + c]);
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if (lane == 0) {
        const float L = i < n_q ? lse[(size_t)bh * n_q + i] : -INFINITY;
        Lp[r] = L == -INFINITY ? INFINITY : L * FS_LOG2E;
        Dp[r] = s;
    }
}

/* Offset (floats) of dQ accumulator element (row rr, column cc) inside one 64 × 64 block. */
__host__ __device__ __forceinline__ int acc_off(int rr, int cc) { return rr * 64 + (cc ^ ((rr & 7) << 3)); }

/* dQ = scale · accumulator, 8 columns a thread. */
template <typename T, int D>
__global__ void hbwd_dq(int bh_rows, int n_q, int nqt, float scale, const float *__restrict__ acc, T *__restrict__ dQ)
{
    const size_t total = (size_t)bh_rows * n_q * (D / 8);
    for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < total; u += (size_t)gridDim.x * blockDim.x) {
        const int c = (int)(u % (D / 8)) * 8;
        const size_t row = u / (D / 8);
        const int bh = (int)(row / n_q), i = (int)(row % n_q), qt = i / 64, rr = i % 64;
        const float *a = acc + (((size_t)bh * nqt + qt) * (D / 64) + c / 64) * 4096 + acc_off(rr, c & 63);
        const float4 x = *reinterpret_cast<const float4 *>(a), y = *reinterpret_cast<const float4 *>(a + 4);
        uint4 o;
        o.x = pack2<T>(x.x * scale, x.y * scale);
        o.y = pack2<T>(x.z * scale, x.w * scale);
        o.z = pack2<T>(y.x * scale, y.y * scale);
        o.w = pack2<T>(y.z * scale, y.w * scale);
        *reinterpret_cast<uint4 *>(dQ + row * D + c) = o;
    }
}

/* Is query row i (position i + offset) allowed to see key j? (none / causal / window) */
__device__ __forceinline__ bool hb_visible(const prefill_params &p, int i, int j)
{
    const int pos = i + p.mask.offset;
    if (p.mask.kind == FS_MASK_CAUSAL) return j <= pos;
    if (p.mask.kind == FS_MASK_WINDOW) return j <= pos && j > pos - p.mask.window;
    return true;
}

/* Does every pair of keys [k0, k0 + 64) × queries [r0, r0 + BQ) exist and see each other? */
template <int BQ> __device__ __forceinline__ bool hb_full(const prefill_params &p, int k0, int r0)
{
    if (k0 + 64 > p.n_kv || r0 + BQ > p.n_q) return false;
    if (p.mask.kind == FS_MASK_NONE) return true;
    /* the extreme corners decide for causal and window masks */
    return hb_visible(p, r0, k0 + 63) && hb_visible(p, r0 + BQ - 1, k0);
}

/* Pack 8·KS accumulators (keys × 16kk.. queries) into the four registers of each k-step's A. */
template <typename T, int KS>
__device__ __forceinline__ void pack_a(uint32_t (&a)[KS][4], const float *s)
{
#pragma unroll
    for (int kk = 0; kk < KS; kk++)
#pragma unroll
        for (int x = 0; x < 4; x++) a[kk][x] = pack2<T>(s[8 * kk + 2 * x], s[8 * kk + 2 * x + 1]);
}
template <int KS> __device__ __forceinline__ void a_fence(uint32_t (&a)[KS][4])
{
#pragma unroll
    for (int kk = 0; kk < KS; kk++)
#pragma unroll
        for (int i = 0; i < 4; i++) asm volatile("" : "+r"(a[kk][i])::"memory");
}

/* red.global.add.v2.f32: two consecutive floats added atomically (sm_90). */
__device__ __forceinline__ void red_add2(float *g, float a, float b)
{
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(g), "f"(a), "f"(b) : "memory");
}

/* Grid (ceil(n_kv / 128), n_kv_heads, batch) (version 7: one dimension), 384 threads: warpgroup
 * 0 the producer (one thread issues every copy), warpgroups 1 and 2 the consumers (keys
 * 64c .. 64c + 63 of the block's tile). An item is one Q tile of BQ rows (64; 128 in versions
 * 11-13 at d = 64) of one query head. Shared, 1024-aligned, swizzled 16-bit tiles: K, V (128
 * rows), STAGES × Q and dO (BQ rows); 2 × dSᵀ (128 keys × BQ queries: item w writes buffer
 * w mod 2 while the other warpgroup may still read w − 1's); then NSB × 2 dQ staging blocks of
 * 64 × 64 floats (version 5: none); STAGES × L and D (BQ floats); barriers kv_full, full[STAGES], empty[STAGES], ds_ready[2],
 * ds_free[2] (versions 8, 10-13). tmL, tmD: the padded L (base 2) and D; acc: the dQ accumulator
 * (layouts at the top of this file). */
template <typename T, int D, int STAGES, int MODE, int NSB, bool LPT, bool LAG, bool ALT, int BQ, bool LEAN, bool ROT>
__global__ void __launch_bounds__(384, 1)
bwd_wgmma(prefill_params p, const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
          const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmdO,
          const __grid_constant__ CUtensorMap tmL, const __grid_constant__ CUtensorMap tmD, float *__restrict__ acc, int npad,
          T *__restrict__ dK, T *__restrict__ dV, int group)
{
    constexpr uint32_t TKV = tile_bytes<BKV, D>(), TQ = tile_bytes<BQ, D>(), TS = tile_bytes<BKV, BQ>();
    constexpr int NSTG = MODE == DQ_BULK ? NSB * 2 : 0;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sK = align1024(smem_raw), *sV = sK + TKV, *sQ = sV + TKV, *sdO = sQ + STAGES * TQ;
    unsigned char *sdS = sdO + STAGES * TQ;
    float *stg = reinterpret_cast<float *>(sdS + 2 * TS);
    float *sL = stg + NSTG * 4096, *sD = sL + STAGES * BQ;
    uint64_t *bar = reinterpret_cast<uint64_t *>(sD + STAGES * BQ);
    uint64_t *kv_full = bar, *full = bar + 1, *empty = full + STAGES, *ds_ready = empty + STAGES, *ds_free = ds_ready + 2;
    /* version 8: dQ one item behind, at d = 128 (at d = 64 no warpgroup waits for the other) */
    constexpr bool LAGGED = LAG && (D == 128 || ALT || BQ == 128);
    /* version 10 at d = 64: item u's dQ by consumer warpgroup u mod 2 alone, over all 128 keys */
    constexpr bool TURNS = ALT && D == 64 && BQ == 64;
    /* version 11 at d = 64: items of 128 queries; warpgroup c computes dQ of queries 64c.. */
    constexpr bool QSPLIT = BQ == 128;

    const int tid = threadIdx.x, wg = tid >> 7;
    int kb = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    if (LPT) {   /* version 7: heads (b · n_kv_heads + kvh) in groups of `group`, key tiles slowest */
        const int n_kb = (p.n_kv + BKV - 1) / BKV, heads = (int)gridDim.x / n_kb;   /* batch · n_kv_heads */
        const int per_group = n_kb * group, grp = blockIdx.x / per_group, in = blockIdx.x % per_group;
        const int first = grp * group, here = min(group, heads - first), head = first + in % here;
        kb = in / here;
        kvh = head % p.n_kv_heads;
        b = head / p.n_kv_heads;
    }
    const int G = p.n_q_heads / p.n_kv_heads;
    const int c0 = kb * BKV, c1 = min(c0 + BKV, p.n_kv);
    const int nqt = npad / BQ;

    /* the Q tiles that can see keys [c0, c1) */
    int qt_lo = 0, qt_hi = nqt;
    if (p.mask.kind == FS_MASK_CAUSAL || p.mask.kind == FS_MASK_WINDOW)
        qt_lo = (int)min((long)nqt, max(0L, ((long)c0 - p.mask.offset) / BQ));
    if (p.mask.kind == FS_MASK_WINDOW)
        qt_hi = (int)min((long)qt_hi, max(0L, ((long)c1 - 1 + p.mask.window - 1 - p.mask.offset) / BQ + 1));
    const int per_head = max(0, qt_hi - qt_lo), total = G * per_head;
    /* the item walked w-th: w itself, or (version 13, no mask) w + this key tile's share of the
     * walk, so that the blocks of one head, which start together, reduce into different dQ tiles */
    const int n_kb = (p.n_kv + BKV - 1) / BKV;
    const int rot = ROT && p.mask.kind == FS_MASK_NONE ? (int)((long)kb * total / n_kb) : 0;
    auto item = [&](int w) __attribute__((always_inline)) { return ROT && w + rot >= total ? w + rot - total : w + rot; };

    if (tid == 0) {
        mbar_init(kv_full, 1);
        for (int x = 0; x < 2; x++) {   /* version 8's dSᵀ buffers: one arrival per consumer warp */
            mbar_init(ds_ready + x, 8);
            mbar_init(ds_free + x, 8);
        }
        ring_init(full, empty, STAGES, 8);   /* one arrival per consumer warp (also fences the inits) */
    }
    __syncthreads();

    if (wg == 0) {   /* the producer */
        wg_regs_dec<24>();
        if (tid == 0) {
            const int kvrow = b * p.n_kv_heads + kvh;
            mbar_expect_tx(kv_full, 2 * TKV);
            tma_tile3<BKV, D>(sK, &tmK, c0, kvrow, kv_full);
            tma_tile3<BKV, D>(sV, &tmV, c0, kvrow, kv_full);
            for (int w = 0; w < total; w++) {
                const int s = ring_stage<STAGES>(w), it = item(w), h = kvh * G + it / per_head;
                const int r0 = (qt_lo + it % per_head) * BQ;
                const int qrow = b * p.n_q_heads + h;
                ring_wait_empty<STAGES>(empty, w);
                mbar_expect_tx(full + s, 2 * TQ + 2 * BQ * 4);
                tma_tile3<BQ, D>(sQ + s * TQ, &tmQ, r0, qrow, full + s);
                tma_tile3<BQ, D>(sdO + s * TQ, &tmdO, r0, qrow, full + s);
                tma_load3(sL + s * BQ, &tmL, r0, qrow, 0, full + s);
                tma_load3(sD + s * BQ, &tmD, r0, qrow, 0, full + s);
            }
        }
        return;
    }

    wg_regs_inc<240>();
    const int c = wg - 1, ct = tid - 128, warp = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int k0 = c0 + 64 * c;                      /* this warpgroup's first key */
    const uint32_t aK = smem_u32(sK) + c * 64 * 128, aV = smem_u32(sV) + c * 64 * 128;
    const uint32_t lK = sw128_lo(aK), lV = sw128_lo(aV);   /* version 12: descriptors by addition */

    float dk[D / 64][32], dv[D / 64][32];
#pragma unroll
    for (int nb = 0; nb < D / 64; nb++)
#pragma unroll
        for (int i = 0; i < 32; i++) dk[nb][i] = dv[nb][i] = 0;

    /* dQ (64 queries × 64 columns) of item u = dS K: at d = 128 all 128 keys, columns 64c..; at
     * d = 64 this warpgroup's 64 keys, all columns. Waits for every product this warpgroup has
     * issued (the item's dV and dK too). Version 8 then frees u's dSᵀ buffer. */
    auto dq_compute = [&](int u, float (&dq)[32]) __attribute__((always_inline)) {
        const uint32_t aS = smem_u32(sdS + (u & 1) * TS);
        const bool mine = !TURNS || (u & 1) == c;
#pragma unroll
        for (int i = 0; i < 32; i++) dq[i] = 0;
        if (mine) {
            if (LAGGED) mbar_wait(ds_ready + (u & 1), (u >> 1) & 1);
            reg_fence<32>(dq);
            wg_fence();
            if (LEAN) {
                /* version 12: both descriptors built once, then one addition a k-step */
                const uint32_t lA = sw128_lo(aS + (QSPLIT ? c : 0) * BKV * 128);
                const uint32_t lB = sw128_lo(smem_u32(sK) + (D == 128 ? c : 0) * BKV * 128);
#pragma unroll
                for (int kk = 0; kk < BKV / 16; kk++) wgmma_ss_tt<T>(dq, sw128_at(lA, kk * 16 * 128), sw128_at(lB, kk * 16 * 128));
            } else if (D == 128 || TURNS || QSPLIT) {
                /* all 128 keys; A: dSᵀ's query block c (QSPLIT) or 0; B: K's column block c (d = 128) */
                const uint32_t aA = aS + (QSPLIT ? c : 0) * BKV * 128;
#pragma unroll
                for (int kk = 0; kk < BKV / 16; kk++)
                    wgmma_ss_tt<T>(dq, sw128_desc(aA + kk * 16 * 128),
                                   sw128_desc(smem_u32(sK) + (D == 128 ? c : 0) * BKV * 128 + kk * 16 * 128));
            } else {
#pragma unroll
                for (int kk = 0; kk < 4; kk++)
                    wgmma_ss_tt<T>(dq, sw128_desc(aS + (64 * c + kk * 16) * 128),
                                   sw128_desc(smem_u32(sK) + (64 * c + kk * 16) * 128));
            }
            wg_commit();
            wg_wait<0>();
            reg_fence<32>(dq);
        }
        if (LAGGED) {
            __syncwarp();
            if (lane == 0) mbar_arrive(ds_free + (u & 1));
        }
    };
    /* dQ of item u into the float32 accumulator: block (query head row, Q tile, column block) */
    auto dq_reduce = [&](int u, float (&dq)[32]) __attribute__((always_inline)) {
        if (TURNS && (u & 1) != c) return;   /* version 10: the other warpgroup's item */
        const int slot = TURNS ? u >> 1 : u;  /* this warpgroup's reduces so far */
        const int iu = item(u), qrow_u = b * p.n_q_heads + kvh * G + iu / per_head, qt_u = qt_lo + iu % per_head;
        /* the accumulator's 64-row tile of these rows (an item of 128 queries holds two) */
        const int t64 = qt_u * (BQ / 64) + (QSPLIT ? c : 0);
        float *blk = acc + (((size_t)qrow_u * (npad / 64) + t64) * (D / 64) + (D == 128 ? c : 0)) * 4096;
        if (MODE == DQ_RED) {
#pragma unroll
            for (int i = 0; i < 32; i += 2) {
                const int rr = 16 * warp + g + 8 * ((i >> 1) & 1), cc = 8 * (i >> 2) + 2 * t4;
                red_add2(blk + acc_off(rr, cc), dq[i], dq[i + 1]);
            }
            return;
        }
        /* the copy that read this buffer NSB items ago is done reading it: its issuing thread
         * waited for that before a barrier of this warpgroup that comes before these stores (the
         * dSᵀ barrier of versions 4-7; version 8 meets here first) */
        if (LAGGED) bar_sync<128>(2 + c);
        float *sg = stg + ((slot % NSB) * 2 + c) * 4096;
#pragma unroll
        for (int i = 0; i < 32; i += 2) {
            const int rr = 16 * warp + g + 8 * ((i >> 1) & 1), cc = 8 * (i >> 2) + 2 * t4;
            *reinterpret_cast<float2 *>(sg + acc_off(rr, cc)) = make_float2(dq[i], dq[i + 1]);
        }
        fence_async_smem();
        bar_sync<128>(2 + c);
        if (ct % 128 == 0) {
            bulk_reduce_add_f32(blk, sg, 4096 * 4);
            bulk_commit();
            /* with one buffer, wait here until the copy has read it; with two, until the
             * previous item's copy has */
            if (NSB == 1) bulk_wait_read<0>();
            else bulk_wait_read<1>();
        }
    };

    mbar_wait(kv_full, 0);
    for (int w = 0; w < total; w++) {
        const int s = ring_stage<STAGES>(w), r0 = (qt_lo + item(w) % per_head) * BQ;
        const uint32_t aQ = smem_u32(sQ + s * TQ), adO = smem_u32(sdO + s * TQ);
        unsigned char *dS = sdS + (w & 1) * TS;
        const float *tL = sL + s * BQ, *tD = sD + s * BQ;
        ring_wait_full<STAGES>(full, w);

        /* Sᵀ = K_c Qᵀ and dPᵀ = V_c dOᵀ (64 keys × 64 queries each), two groups */
        float st[BQ / 2], dp[BQ / 2];
        const uint32_t lQ = sw128_lo(aQ), ldO = sw128_lo(adO);   /* version 12's descriptors */
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            const uint32_t ok = (kk >> 2) * BKV * 128 + (kk & 3) * 32, oq = (kk >> 2) * BQ * 128 + (kk & 3) * 32;
            if (LEAN) wgmma_ss<T, BQ>(st, sw128_at(lK, ok), sw128_at(lQ, oq), kk > 0);
            else wgmma_ss<T, BQ>(st, sw128_desc(aK + ok), sw128_desc(aQ + oq), kk > 0);
        }
        wg_commit();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            const uint32_t ok = (kk >> 2) * BKV * 128 + (kk & 3) * 32, oq = (kk >> 2) * BQ * 128 + (kk & 3) * 32;
            if (LEAN) wgmma_ss<T, BQ>(dp, sw128_at(lV, ok), sw128_at(ldO, oq), kk > 0);
            else wgmma_ss<T, BQ>(dp, sw128_desc(aV + ok), sw128_desc(adO + oq), kk > 0);
        }
        wg_commit();

        /* Pᵀ = 2^(s·scale·log2 e − L) (masked pairs 0), then dSᵀ = Pᵀ ∘ (dPᵀ − D) */
        const bool full_tile = hb_full<BQ>(p, k0, r0);
        wg_wait<1>();
        reg_fence<BQ / 2>(st);
        /* row q's L or D: version 12 reads rows q, q + 1 as one float2 (q even) */
        auto row_of = [&](const float *t, int i) __attribute__((always_inline)) {
            const int q0 = 8 * (i >> 2) + 2 * t4;
            if (!LEAN) return t[q0 + (i & 1)];
            const float2 x = *reinterpret_cast<const float2 *>(t + q0);
            return (i & 1) ? x.y : x.x;
        };
#pragma unroll
        for (int i = 0; i < BQ / 2; i++) {
            const int q = 8 * (i >> 2) + 2 * t4 + (i & 1), j = k0 + 16 * warp + g + 8 * ((i >> 1) & 1);
            float pv = fast_exp2(fmaf(st[i], p.scale2, -row_of(tL, i)));
            if (!full_tile && (j >= p.n_kv || !hb_visible(p, r0 + q, j))) pv = 0.f;
            st[i] = pv;
        }
        wg_wait<0>();
        reg_fence<BQ / 2>(dp);
#pragma unroll
        for (int i = 0; i < BQ / 2; i++) dp[i] = st[i] * (dp[i] - row_of(tD, i));

        /* dV += Pᵀ dO, dK += dSᵀ Q (A from registers, B read transposed); scale applied at the end */
        uint32_t ap[BQ / 16][4], ad[BQ / 16][4];
        pack_a<T, BQ / 16>(ap, st);
        pack_a<T, BQ / 16>(ad, dp);
#pragma unroll
        for (int nb = 0; nb < D / 64; nb++) {
            reg_fence<32>(dv[nb]);
            reg_fence<32>(dk[nb]);
        }
        wg_fence();
        if (LEAN && D == 128) {
            /* version 12: both column blocks in one m64n128 product (dO and Q N-major, their
             * blocks BQ · 128 bytes apart); dv[0..1][32] laid end to end is its accumulator */
            const uint32_t ldOn = sw128_lo(adO, BQ * 128), lQn = sw128_lo(aQ, BQ * 128);
#pragma unroll
            for (int kk = 0; kk < BQ / 16; kk++) {
                wgmma_rs_tn<T, 128>(&dv[0][0], ap[kk], sw128_at(ldOn, kk * 16 * 128));
                wgmma_rs_tn<T, 128>(&dk[0][0], ad[kk], sw128_at(lQn, kk * 16 * 128));
            }
        } else {
#pragma unroll
            for (int kk = 0; kk < BQ / 16; kk++)
#pragma unroll
                for (int nb = 0; nb < D / 64; nb++) {
                    const uint32_t o = nb * BQ * 128 + kk * 16 * 128;
                    if (LEAN) {
                        wgmma_rs_t<T>(dv[nb], ap[kk], sw128_at(ldO, o));
                        wgmma_rs_t<T>(dk[nb], ad[kk], sw128_at(lQ, o));
                    } else {
                        wgmma_rs_t<T>(dv[nb], ap[kk], sw128_desc(adO + o));
                        wgmma_rs_t<T>(dk[nb], ad[kk], sw128_desc(aQ + o));
                    }
                }
        }
        wg_commit();

        /* dSᵀ into shared memory (keys 64c + 16·warp + g (+8), queries 16kk + 2t (+8)); version 8
         * first waits until both warpgroups' dQ of two tiles ago has read this buffer */
        if (LAGGED && w >= 2) mbar_wait(ds_free + (w & 1), ((w - 2) >> 1) & 1);
#pragma unroll
        for (int kk = 0; kk < BQ / 16; kk++)
#pragma unroll
            for (int x = 0; x < 4; x++) {
                const int r = 64 * c + 16 * warp + g + 8 * (x & 1), q = 16 * kk + 2 * t4 + 8 * (x >> 1);
                *reinterpret_cast<uint32_t *>(dS + sw_off<BKV>(r, q)) = ad[kk][x];
            }
        fence_async_smem();
        float dq[32];
#pragma unroll
        for (int i = 0; i < 32; i++) dq[i] = 0;
        if (LAGGED) {
            /* announce dSᵀ(w); compute dQ of the previous item, whose dSᵀ both warpgroups wrote
             * while this one's products ran */
            __syncwarp();
            if (lane == 0) mbar_arrive(ds_ready + (w & 1));
            wg_wait<0>();   /* dV and dK first: their A registers free before dQ's accumulators */
            a_fence<BQ / 16>(ap);
            a_fence<BQ / 16>(ad);
            if (w >= 1) dq_compute(w - 1, dq);
        } else {
            /* dSᵀ complete before the tensor cores read it: at d = 128 each warpgroup's dQ
             * columns need every key's, so both warpgroups meet; at d = 64 its own keys' */
            if (D == 128) bar_sync<256>(1);
            else bar_sync<128>(2 + c);
            dq_compute(w, dq);
        }
        a_fence<BQ / 16>(ap);
        a_fence<BQ / 16>(ad);
#pragma unroll
        for (int nb = 0; nb < D / 64; nb++) {
            reg_fence<32>(dv[nb]);
            reg_fence<32>(dk[nb]);
        }
        ring_release<STAGES>(empty, w, lane);   /* Q, dO, L, D of this stage are no longer read */
        if (!LAGGED) dq_reduce(w, dq);
        else if (w >= 1) dq_reduce(w - 1, dq);
    }
    if (LAGGED && total > 0) {   /* the last item's dQ */
        float dq[32];
        dq_compute(total - 1, dq);
        dq_reduce(total - 1, dq);
    }
    if (MODE == DQ_BULK && ct % 128 == 0) bulk_wait_all();   /* the copies finish before the block ends */

    /* dK = scale · Σ dSᵀ Q, dV = Σ Pᵀ dO: this thread's keys k0 + 16·warp + g (+8) */
    const float scale = p.scale2 / FS_LOG2E;
    const size_t kvbase = ((size_t)b * p.n_kv_heads + kvh) * p.n_kv;
#pragma unroll
    for (int nb = 0; nb < D / 64; nb++)
#pragma unroll
        for (int i = 0; i < 32; i += 2) {
            const int j = k0 + 16 * warp + g + 8 * ((i >> 1) & 1), col = nb * 64 + 8 * (i >> 2) + 2 * t4;
            if (j < p.n_kv) {
                const size_t off = (kvbase + j) * D + col;
                *reinterpret_cast<uint32_t *>(dK + off) = pack2<T>(dk[nb][i] * scale, dk[nb][i + 1] * scale);
                *reinterpret_cast<uint32_t *>(dV + off) = pack2<T>(dv[nb][i], dv[nb][i + 1]);
            }
        }
}

template <typename T, int D, int STAGES, int MODE, int NSB, bool LPT, bool LAG, bool ALT = false, int BQ = 64,
          bool LEAN = false, bool ROT = false>
fs_status hb_launch(const fs_cuda_prefill *pp, const prefill_params &p, const CUtensorMap &mq, const CUtensorMap &mk,
                    const CUtensorMap &mv, const CUtensorMap &mdo, const CUtensorMap &ml, const CUtensorMap &md, float *acc,
                    int npad, void *dK, void *dV, char *why, size_t n)
{
    constexpr int NSTG = MODE == DQ_BULK ? NSB * 2 : 0;
    const size_t smem = 1024 + 2 * (size_t)tile_bytes<BKV, D>() + 2 * (size_t)STAGES * tile_bytes<BQ, D>() +
                        2 * (size_t)tile_bytes<BKV, BQ>() + (size_t)NSTG * 4096 * 4 + 2 * STAGES * BQ * 4 +
                        8 * (1 + 2 * STAGES + 4);
    auto kern = bwd_wgmma<T, D, STAGES, MODE, NSB, LPT, LAG, ALT, BQ, LEAN, ROT>;
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const int n_kb = (pp->n_kv + BKV - 1) / BKV, heads = pp->batch * pp->n_kv_heads;
    dim3 grid(n_kb, pp->n_kv_heads, pp->batch);
    int group = 1;
    if (LPT) {
        /* a group's Q and dO (2 · n_q · d · 2 bytes a query head, G query heads a KV head) in
         * 16 MiB; without a causal or window mask every block is as long, and the order is
         * version 6's (groups of one head, key tiles fastest) */
        const bool ragged = pp->mask == FS_MASK_CAUSAL || pp->mask == FS_MASK_WINDOW;
        const long per_group = (16L << 20) / (4L * pp->n_q * D * (pp->n_q_heads / pp->n_kv_heads));
        group = !ragged ? 1 : (int)std::max(1L, std::min((long)heads, per_group));
        grid = dim3((unsigned)(n_kb * heads), 1, 1);
    }
    kern<<<grid, 384, smem, (cudaStream_t)pp->stream>>>(p, mq, mk, mv, mdo, ml, md, acc, npad, (T *)dK, (T *)dV, group);
    FS_CU_LAUNCHED();
    return FS_OK;
}

template <typename T, int D>
fs_status hb_run(const fs_cuda_prefill *pp, int version, const void *Q, const void *K, const void *V, const void *O,
                 const void *dO, void *dQ, void *dK, void *dV, void *work, char *why, size_t n)
{
    const prefill_params p = make_params(pp);
    /* an item's query rows: 128 for versions 11-13 at d = 64, else 64; L, D and the dQ
     * accumulator are padded to whole items */
    const int BQ = version >= 11 && D == 64 ? 128 : 64;
    const int bh = pp->batch * pp->n_q_heads, npad = (pp->n_q + BQ - 1) / BQ * BQ;
    float *acc = (float *)work, *Lp = acc + (size_t)bh * npad * D, *Dp = Lp + (size_t)bh * npad;
    cudaStream_t stream = (cudaStream_t)pp->stream;   /* NULL: the default stream */
    FS_CU_TRY(cudaMemsetAsync(acc, 0, sizeof(float) * (size_t)bh * npad * D, stream));
    hbwd_pre<T, D><<<(bh * npad + 7) / 8, 256, 0, stream>>>(bh, pp->n_q, npad, (const T *)O, (const T *)dO, pp->lse, Lp, Dp);
    FS_CU_LAUNCHED();
    CUtensorMap mq, mk, mv, mdo, ml, md;
    fs_status st;
    if ((st = make_rows_map_f32(&ml, Lp, npad, bh, BQ, why, n)) != FS_OK) return st;
    if ((st = make_rows_map_f32(&md, Dp, npad, bh, BQ, why, n)) != FS_OK) return st;
    if ((st = make_map(&mq, Q, pp->dtype, D, pp->n_q, bh, BQ, why, n)) != FS_OK) return st;
    if ((st = make_map(&mdo, dO, pp->dtype, D, pp->n_q, bh, BQ, why, n)) != FS_OK) return st;
    if ((st = make_map(&mk, K, pp->dtype, D, pp->n_kv, pp->batch * pp->n_kv_heads, BKV, why, n)) != FS_OK) return st;
    if ((st = make_map(&mv, V, pp->dtype, D, pp->n_kv, pp->batch * pp->n_kv_heads, BKV, why, n)) != FS_OK) return st;
    switch (version) {
    case 4: st = hb_launch<T, D, 2, DQ_BULK, 1, false, false>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK, dV, why, n); break;
    case 5: st = hb_launch<T, D, 2, DQ_RED, 1, false, false>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK, dV, why, n); break;
    case 6: st = hb_launch<T, D, 2, DQ_BULK, 2, false, false>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK, dV, why, n); break;
    case 7: st = hb_launch<T, D, 2, DQ_BULK, 2, true, false>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK, dV, why, n); break;
    case 8: st = hb_launch<T, D, 2, DQ_BULK, 2, false, true>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK, dV, why, n); break;
    case 9:   /* three stages where they fit (d = 64: 177 KiB; at d = 128 two already take 226) */
        st = hb_launch<T, D, D == 64 ? 3 : 2, DQ_BULK, 2, false, true>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK, dV,
                                                                         why, n);
        break;
    case 10:   /* at d = 64 the turns; at d = 128 version 8's very kernel */
        if constexpr (D == 64)
            st = hb_launch<T, D, 2, DQ_BULK, 2, false, true, true>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK, dV, why,
                                                                   n);
        else
            st = hb_launch<T, D, 2, DQ_BULK, 2, false, true>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK, dV, why, n);
        break;
    case 11:   /* at d = 64 items of 128 queries; at d = 128 version 8's very kernel */
        if constexpr (D == 64)
            st = hb_launch<T, D, 2, DQ_BULK, 1, false, true, false, 128>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK, dV,
                                                                         why, n);
        else
            st = hb_launch<T, D, 2, DQ_BULK, 2, false, true>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK, dV, why, n);
        break;
    case 12:   /* version 11's kernel at d = 64, version 8's at d = 128, each with fewer instructions */
        if constexpr (D == 64)
            st = hb_launch<T, D, 2, DQ_BULK, 1, false, true, false, 128, true>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK,
                                                                               dV, why, n);
        else
            st = hb_launch<T, D, 2, DQ_BULK, 2, false, true, false, 64, true>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad, dK,
                                                                              dV, why, n);
        break;
    default:   /* 13: version 12 with each block's walk begun at its own share of the items (no mask) */
        if constexpr (D == 64)
            st = hb_launch<T, D, 2, DQ_BULK, 1, false, true, false, 128, true, true>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad,
                                                                                     dK, dV, why, n);
        else
            st = hb_launch<T, D, 2, DQ_BULK, 2, false, true, false, 64, true, true>(pp, p, mq, mk, mv, mdo, ml, md, acc, npad,
                                                                                    dK, dV, why, n);
    }
    if (st != FS_OK) return st;
    const size_t units = (size_t)bh * pp->n_q * (D / 8);
    hbwd_dq<T, D><<<(unsigned)std::min<size_t>((units + 255) / 256, 8192), 256, 0, stream>>>(bh, pp->n_q, npad / 64, pp->scale,
                                                                                acc, (T *)dQ);
    FS_CU_LAUNCHED();
    return FS_OK;
}

}   // namespace

size_t fs_cu_hopper_backward_workspace(const fs_cuda_prefill *p)
{
    const size_t bh = (size_t)p->batch * p->n_q_heads, npad = (size_t)(p->n_q + 127) / 128 * 128;   /* whole items of 128 */
    return sizeof(float) * bh * npad * (p->d + 2);
}

fs_status fs_cu_hopper_backward(const fs_cuda_prefill *pp, int version, const void *Q, const void *K, const void *V,
                                const void *O, const void *dO, void *dQ, void *dK, void *dV, void *work, char *why,
                                size_t n)
{
    char what[64];
    snprintf(what, sizeof what, "backward version %d", version);
    fs_status st = hopper_device(what, why, n);
    if (st != FS_OK) return st;
    const bool bf = pp->dtype == FS_CUDA_BF16;
    if (pp->d == 64)
        return bf ? hb_run<__nv_bfloat16, 64>(pp, version, Q, K, V, O, dO, dQ, dK, dV, work, why, n)
                  : hb_run<__half, 64>(pp, version, Q, K, V, O, dO, dQ, dK, dV, work, why, n);
    if (pp->d == 128)
        return bf ? hb_run<__nv_bfloat16, 128>(pp, version, Q, K, V, O, dO, dQ, dK, dV, work, why, n)
                  : hb_run<__half, 128>(pp, version, Q, K, V, O, dO, dQ, dK, dV, work, why, n);
    if (why && n) snprintf(why, n, "%s takes d = 64 or 128, not %d", what, pp->d);
    return FS_ERR_ARG;
}
