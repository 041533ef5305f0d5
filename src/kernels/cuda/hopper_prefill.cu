/* hopper_prefill.cu: prefill versions 10 and up, built for Hopper only (sm_90a: the warpgroup
 * MMA and setmaxnreg exist on no other target). attn_prefill.cu dispatches here; the bitmask
 * (and tree) masks stay on version 9, the slower path.
 *
 *  10  wgmma: each warpgroup (4 warps) owns 64 query rows, two warpgroups a block (Bq = 128),
 *      KV tiles of Bk = 128 keys. S = Q Kᵀ is one chain of wgmma.mma_async with both operands
 *      read from shared memory through matrix descriptors (128-byte swizzle, the layout the TMA
 *      writes); P stays in registers and O += P V is a wgmma with A from registers and V read
 *      transposed from shared memory. Tiles still come in by cp.async, double-buffered, and
 *      the whole block meets at a barrier twice a tile, as in versions 3-9.
 *  11  TMA and warp specialization: a third warpgroup is the producer; one thread of it
 *      issues the tensor-memory-accelerator copies (cp.async.bulk.tensor) of the Q tile and of
 *      each K and V tile into a ring of 2 stages, each completing on its own mbarrier; the two
 *      consumer warpgroups wait on those barriers, compute, and give the stage back through an
 *      "empty" barrier. No block-wide barrier remains in the loop. setmaxnreg moves registers
 *      from the producer (24 a thread) to the consumers (240).
 *  12  softmax overlapped with the tensor cores inside a warpgroup: S_j = Q K_jᵀ and
 *      O += P_{j−1} V_{j−1} are issued together; the warpgroup waits for S_j alone, computes its
 *      softmax while P_{j−1} V_{j−1} still runs, and rescales o once that is done.
 *  13  version 12 with the two consumer warpgroups taking turns (ping-pong, two named
 *      barriers): one issues its products while the other computes its softmax.
 *  14  version 13 with three K/V stages: in 12 and 13 a stage is given back only once
 *      P_{j−1} V_{j−1} has finished, in the middle of tile j, so with two stages the copy of
 *      tile j+1 starts late and its latency shows (both measured slower than 11).
 *  15  version 14 with half of the exponentials computed by a polynomial on the FMA pipe
 *      (exp2_fma) instead of the MUFU, which at d = 64 is as busy as the tensor cores.
 *  16  at d = 64, version 14 with three consumer warpgroups (Bq = 192, 160 registers a thread):
 *      each K/V tile serves 1.5 times the rows, and three warpgroups take turns at the tensor
 *      cores. At d = 128 the registers do not fit (S and O alone are 128 a thread), so
 *      version 16 is version 14 there, and at d = 256 too.
 *  17  version 14 with the blocks in longest-first order across heads. Versions 10-16 number
 *      a block's query tile fastest, longest first within each head, so under a causal mask one
 *      head's longest tile can start near the end of the grid and run alone while the other SMs
 *      idle. Here the grid is one dimension: heads are taken in groups small enough that their
 *      K and V stay in L2, one group after the other, and within a group the longest tiles of
 *      every head start first, so the last blocks to start are the shortest. Without a mask
 *      (rows of one length) the order is version 14's. Measured against version 14 (H100,
 *      2026-11-23, run 9 and the exploratory calls before it), causal, N = 4096: +4 to +5 % at
 *      d = 128, +14 % at d = 256, −1 to +2 % at d = 64.
 *  18  at d = 64, persistent blocks: one block an SM takes query tiles one after the other,
 *      in pairs of equal cost under a causal mask (the longest with the shortest of a head);
 *      Q is double-buffered so the next tile's Q and K/V load while the current one finishes,
 *      and a block's start and end no longer leave the SM idle. At d = 128 and 256 (two Q
 *      buffers and three stages do not fit), version 17. Measured at d = 64 (H100, 2026-11-23,
 *      run 9) against version 17: causal +4 % (N = 4096), +20 % (N = 1024), −3 % (N = 16384, where
 *      the short tiles are few); not causal +12 % at N = 1024. Handing out single tiles in a
 *      snake order instead of pairs made causal N = 4096 14 % slower than version 17.
 *  19  at d = 128, version 17 with key tiles of Bk = 176 (FlashAttention-3's tile there): each
 *      K/V tile's products are 1.4 times as long for the same softmax bookkeeping per tile
 *      (the rowmax vote, α, the rescale of o), and the block makes 1.4 times fewer passes; the
 *      K/V stages are 44 KiB, so only two fit. At d = 64 and 256, version 17.
 *  20  at d = 64, version 17 with key tiles of Bk = 192 and three stages: at d = 64 each tile's
 *      products are half as long while the softmax bookkeeping per tile is the same, which is
 *      where version 17 is furthest from cuDNN; S takes 96 registers a thread, which fits beside
 *      P and o. At d = 128 and 256, version 17.
 *  21  version 17 with the mask in a loop of its own, entered once a tile and only by a partial
 *      tile. Versions 12-20 test the tile's class inside the loop over the elements, and the
 *      compiler turned each element's test into predicated code that every tile executes: in
 *      version 17's profile (d = 128, no mask, where every tile is full) the mask's integer
 *      compares and selects are a fifth of all instructions; version 21 executes 30 % fewer.
 *      Measured against version 17 (H100, 2026-11-25, run 22): +14 % at d = 128 (+25 % causal),
 *      +19 % at d = 64 (+35 % causal).
 *  22  version 21 with O += P V as one m64nDk16 wgmma a 16 keys at d = 128 and 256 (V's column
 *      blocks one leading offset apart in the descriptor) instead of D/64 m64n64k16: half or a
 *      quarter of the instructions, P's registers read once. At d = 64, version 21.
 *  23  version 22 with each wgmma's matrix descriptor made as the tile's base descriptor plus a
 *      constant (sw128_lo, sw128_at): in version 22's SASS every one of a tile's 16 wgmma
 *      instructions at d = 128 is preceded by about ten integer instructions that mask, shift
 *      and or its address again. 11 % fewer instructions than version 22; the time moved within
 *      the spread (runs 23, 26).
 *  24  at d = 64, version 23 with version 20's key tiles of Bk = 192 and three stages: with the
 *      leaner loop the per-tile costs (the waits, the row-max shuffles, the rescale vote) are
 *      a larger share, and 1.5 times the keys share them (+2 to +4 % without a mask, slower
 *      causal: run 26). At d = 128 and 256, version 23.
 *  25  version 18's persistent blocks (Q double-buffered, pairs of query tiles) with version
 *      23's loop: at d = 64 with version 24's tiles and three stages, at d = 128 with two stages
 *      (Q's two buffers and three stages do not fit), so that a block's start and end overlap
 *      the previous tile's work. As version 18, only where every query tile sees keys (else
 *      version 24); at d = 256, version 23.
 *  26  at d = 64, version 25 with a quarter of the exponentials (every fourth 8-key chunk) by
 *      the polynomial on the FMA pipe: at d = 64 the MUFU's 16 exponentials a cycle take as
 *      long as the tensor cores' products (8192 a tile a warpgroup against 1 M multiply-adds at
 *      2048 a cycle), and version 15's half was too many instructions for version 14's loop.
 *      +2 to +3 % over version 25 without a mask (run 26). At d = 128 and 256, version 25.
 *  27  at d = 128 and 256, version 25 with one Q buffer, given back as soon as a tile's last
 *      S = Q Kᵀ is done: at d = 128 the third stage fits again (version 25's two stages were
 *      17 to 18 % slower than version 23), and the next tile's Q and first K/V tiles still load
 *      during this tile's last softmax, P V and stores: +3 % over version 23 at N = 4096 (run
 *      26). At d = 64, version 26.
 *  28  at d = 64 under a causal or window mask, version 23's kernel with version 26's quarter
 *      polynomial (there version 23's key tiles of 128 and block order beat versions 24-26);
 *      otherwise version 27. Measured: no gain over version 23 there (run 26).
 *  29  at d = 64 under a causal or window mask where every query tile sees keys, version 18's
 *      persistent blocks (key tiles of 128, two Q buffers) with version 28's loop: the short
 *      tiles near the diagonal are where a block's start and end weigh most; otherwise version
 *      28. Measured against version 28 (run 26): +13 % at N = 1024, none at N = 4096.
 *  30  the fastest form of each head size and mask so far (d = 64: version 23's kernel under a
 *      causal or window mask, version 26 otherwise; d = 128 and 256: version 27, or 23 where a
 *      query tile may see no key), with a lean mask for the partial tiles of a causal mask: a
 *      per-row limit computed once a tile, then one compare and one select a score instead of
 *      the general test's index arithmetic and three bounds.
 *  31  version 30 with a lazy running maximum (FS_LAZY_MAX): a row's m moves only when a tile's
 *      maximum exceeds it by more than 8 (base 2), so after the first tiles o is almost never
 *      rescaled; P stays ≤ 256, and O and the log-sum-exp are unchanged in exact arithmetic.
 *  32  without a mask, version 31's persistent kernel with the last round split: the query
 *      tiles left over after the whole rounds (68 of 2048 on 132 SMs at every d = 128 bench
 *      shape, so 64 SMs idle for a sixteenth of the run) are cut into equal runs of key tiles
 *      for every block, whose pieces are merged in a workspace by the warp that finishes an
 *      item's last piece (split_sched). Under a mask, version 31. Measured (runs 33-35): no
 *      gain at d = 64 and 128 (N = 4096: −1 to −2.5 % at d = 128, 0 to −5 % at d = 64; −5 % at
 *      d = 128, N = 1024), +1 to +2 % at d = 256. The GPU was at its power cap (700 W) in
 *      those runs: SMs left idle at the end likely let the busy ones clock higher, so the
 *      balanced tail saves little time, and the pieces' extra starts, stores and merges cost
 *      some.
 *  33  version 31 with its persistent kernels in the order cuDNN's forward has in its SASS (run
 *      37): in each warpgroup S = Q Kᵀ, the softmax and O += P V one after the other, each
 *      waited for, and the two warpgroups taking turns at the exponentials (wg_item_seq)
 *      instead of at the products. Measured (run 38): d = 256 +32 % without a mask and +19 %
 *      causal (647.9 and 574.0 TFLOP/s: 0.96× and 1.06× cuDNN), d = 64 within ±3 % (−8 % at
 *      N = 1024), d = 128 7 to 13 % slower (9 % more cycles under ncu).
 *  34  version 31 with, at d = 64, the tile cuDNN's forward takes there (ncu, 2026-11-27:
 *      persistent, 2 consumer warpgroups, key tiles of 128, 134 KiB of shared memory), for both
 *      masks: version 31's persistent blocks with key tiles of 128, two Q buffers and three
 *      stages wherever every query tile sees keys (causal included, as version 29 did on an
 *      older loop), else version 31. Version 31 takes key tiles of 192 at d = 64, whose last
 *      tile is a third full at N = 1024 and 4096, and under a causal mask version 23's kernel.
 *      At d = 128 and 256 it is version 31. Measured (2026-11-27-v34-run1, H100): at N = 1024
 *      +8 % without a mask and +24 % causal (372.0 and 285.0 TFLOP/s: 1.05x and 1.11x cuDNN);
 *      at N = 4096 and 16384 without a mask 5-7 % slower than version 31 (the 128-key tiles'
 *      extra starts cost more than the third-full last tile of 192), causal +2 % at 4096, −6 %
 *      at 16384.
 *  35  version 34's choice at d = 64 where the keys are fewer than 4096, version 31's from 4096
 *      on (the lengths where each was measured faster); at d = 128 and 256 version 31.
 *
 * d = 256 runs versions 10-35 with Bk = 64 and two stages: Q and the K/V stages fill 192 KiB.
 * There 14 and 16 are version 13, 15 differs from it only in its exponentials, and 17 to 20
 * (18 to 20 are 17 there) only in their block order; 21 to 23 are as listed, 24 to 26 are 23,
 * and 27 to 35 are version 27's persistent blocks with one Q buffer and two stages (30 with its
 * lean causal mask, 31, 34 and 35 also with the lazy maximum, 32 also with the split last round, 33
 * with wg_item_seq's order).
 *
 * Shared-memory tiles use the 128-byte swizzle described in hopper_common.cuh, which also holds
 * what versions 11-18 are built from (shared with hopper_fp8.cu and hopper_decode.cu): the
 * mbarriers and TMA copies, the stage ring (its two "full" barriers a stage, K's and V's:
 * ring2_init), setmaxnreg, named barriers, and the host's tensor maps.
 *
 * wgmma accumulator layout (m64nN, f32), warp w of the warpgroup, lane = 4g + t: element
 * 4i + e of a thread holds row 16w + g + 8·(e >> 1), column 8i + 2t + (e & 1) — per warp the
 * layout of mma.sync's m16n8 accumulator, so the softmax below is versions 5-9's.
 */
#include <climits>

#include "kernels/cuda/hopper_common.cuh"

/* ROWS × D elements from global (row stride D) into a swizzled tile by cp.async; rows ≥ valid
 * are zero-filled. */
template <typename T, int D, int ROWS, int NT>
__device__ __forceinline__ void load_sw(unsigned char *s, const T *g, int valid, int tid)
{
    constexpr int CH = D / 8;
    for (int c = tid; c < ROWS * CH; c += NT) {
        const int r = c / CH, col = (c % CH) * 8;
        const bool ok = r < valid;
        cp_async16(s + sw_off<ROWS>(r, col), g + (size_t)(ok ? r : 0) * D + col, ok);
    }
}

/* ---- one warpgroup's share of a KV tile ------------------------------------------------------ */

/* Class of KV tile kt for rows [r0, r1) under causal / window / no mask (no bitmask here):
 * skipped when no pair is visible, full when every pair is (and the tile is whole). */
__device__ __forceinline__ int wg_class(const prefill_params &p, int r0, int r1, int kt, int bk)
{
    const int c0 = kt * bk, c1 = min(c0 + bk, p.n_kv);
    const bool edge = c1 - c0 < bk;
    if (r1 <= r0) return FS_TILE_SKIPPED;
    if (p.mask.kind == FS_MASK_NONE) return edge ? FS_TILE_PARTIAL : FS_TILE_FULL;
    const long p0 = (long)r0 + p.mask.offset, p1 = (long)r1 - 1 + p.mask.offset;
    if (c0 > p1) return FS_TILE_SKIPPED;
    if (p.mask.kind == FS_MASK_WINDOW && (long)c1 - 1 <= p0 - p.mask.window) return FS_TILE_SKIPPED;
    bool full = (long)c1 - 1 <= p0;
    if (p.mask.kind == FS_MASK_WINDOW) full = full && c0 > p1 - p.mask.window;
    return (full && !edge) ? FS_TILE_FULL : FS_TILE_PARTIAL;
}

/* Issue S = Q_wg Kᵀ (64 × BK, this thread's BK/2 values) and commit; no wait: D/16 wgmma, each
 * over 16 columns of d. sQ: this warpgroup's 64 rows inside a swizzled tile of BQ rows; sK: a
 * swizzled tile of BK. */
template <typename T, int D, int BK, int BQ, bool BASE = false>
__device__ __forceinline__ void wg_scores_issue(float *s, uint32_t sQ, uint32_t sK)
{
    reg_fence<BK / 2>(s);
    wg_fence();
    if constexpr (BASE) {   /* version 23: each descriptor as the tile's base plus a constant */
        const uint32_t q = sw128_lo(sQ), k = sw128_lo(sK);
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
            wgmma_ss<T, BK>(s, sw128_at(q, (kk >> 2) * BQ * 128 + (kk & 3) * 32),
                            sw128_at(k, (kk >> 2) * BK * 128 + (kk & 3) * 32), kk > 0);
    } else {
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
            wgmma_ss<T, BK>(s, sw128_desc(sQ + (kk >> 2) * BQ * 128 + (kk & 3) * 32),
                            sw128_desc(sK + (kk >> 2) * BK * 128 + (kk & 3) * 32), kk > 0);
    }
    wg_commit();
}

/* S = Q_wg Kᵀ, waited for (versions 10 and 11). */
template <typename T, int D, int BK, int BQ>
__device__ __forceinline__ void wg_scores(float *s, uint32_t sQ, uint32_t sK)
{
    wg_scores_issue<T, D, BK, BQ>(s, sQ, sK);
    wg_wait<0>();
    reg_fence<BK / 2>(s);
}

/* 2^x for x ≤ 0 (−∞ included) on the FMA and integer pipes instead of the special-function
 * unit (MUFU), which does 16 ex2 a cycle on an SM against 128 FMAs: x = n + f with n an integer
 * (rounded by adding 1.5·2^23) and |f| ≤ 1/2; 2^f from a degree-3 polynomial fitted here
 * (relative error ≤ 1.1e-4, under float16's rounding of P); n goes into the exponent bits.
 * x is clamped at −127, where the result is exactly +0 (p(0) = 1 and the exponent empties). */
__device__ __forceinline__ float exp2_fma(float x)
{
    x = fmaxf(x, -127.f);
    const float t = x + 12582912.f;   /* 1.5 · 2^23: the sum's low bits are round(x) */
    const float f = x - (t - 12582912.f);
    const float q = fmaf(fmaf(fmaf(0.05500896f, f, 0.24221100f), f, 0.69328292f), f, 1.f);
    const unsigned n = (unsigned)(__float_as_int(t) - 0x4B400000);
    return __int_as_float((int)((unsigned)__float_as_int(q) + (n << 23)));
}

/* The online softmax on this thread's two rows (row_x = row0 + 8x) of tile kt: s becomes
 * P = 2^(s·scale2 − m_new), ℓ is updated, and α = 2^(m_old − m_new) is returned for the caller
 * to rescale o with (in wg_item, versions 12-18, only once the previous P V has finished). m is in
 * base-2 units of the raw score times scale2 (the FFMA exponent of version 5); a row that has
 * seen nothing keeps m = −∞ and uses base 0, so no NaN appears. */
/* LAZY (version 31): the running maximum m of a row moves only when a tile's maximum exceeds it
 * by more than FS_LAZY_MAX (base-2 units); below that the tile is exponentiated against the old
 * m, so P ≤ 2^FS_LAZY_MAX = 256 (float16 and bfloat16 hold it with their usual relative
 * precision), α = 1 and o needs no rescale. ℓ and o share the same m, so O = o / ℓ and the
 * log-sum-exp m + log ℓ are exact as before; only the rescale becomes rare. */
#define FS_LAZY_MAX 8.f

/* No hook: wg_softmax's default between its maximum and its exponentials. */
struct no_hook {
    __device__ __forceinline__ void before_exp() const {}
    __device__ __forceinline__ void after_exp() const {}
};

template <int BK, int POLY = 0, bool HOIST = false, bool LEAN = false, bool LAZY = false, typename HOOK = no_hook>
__device__ __forceinline__ void wg_softmax(const prefill_params &p, float *s, float (&m)[2], float (&l)[2],
                                           float (&alpha)[2], int kt, int cls, int row0, int t4,
                                           const HOOK &hook = HOOK())
{
    /* HOIST (versions 21 and up): the mask as a loop of its own, entered once a tile and only by
     * a partial one. In versions 12-20 the test of cls sits inside the loop over the elements,
     * and the compiler predicates each element's mask code instead of branching around it, so
     * a full tile executed the mask's compares too. */
    if (HOIST && cls == FS_TILE_PARTIAL) wg_mask<BK, LEAN>(p, s, kt, row0, t4);
    float bm[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int i = 0; i < BK / 8; i++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            if (!HOIST && cls == FS_TILE_PARTIAL) {
                const int j = kt * BK + 8 * i + 2 * t4 + (e & 1), pos = row0 + 8 * (e >> 1) + p.mask.offset;
                bool vis = j < p.n_kv;
                if (p.mask.kind == FS_MASK_CAUSAL || p.mask.kind == FS_MASK_WINDOW) vis = vis && j <= pos;
                if (p.mask.kind == FS_MASK_WINDOW) vis = vis && j > pos - p.mask.window;
                if (!vis) s[4 * i + e] = -INFINITY;
            }
        }
        bm[0] = fmaxf(bm[0], fmaxf(s[4 * i], s[4 * i + 1]));
        bm[1] = fmaxf(bm[1], fmaxf(s[4 * i + 2], s[4 * i + 3]));
    }
    float base[2], sum[2] = {0, 0};
#pragma unroll
    for (int x = 0; x < 2; x++) {
        bm[x] = fmaxf(bm[x], __shfl_xor_sync(0xffffffff, bm[x], 1));
        bm[x] = fmaxf(bm[x], __shfl_xor_sync(0xffffffff, bm[x], 2));
        bm[x] *= p.scale2;
        const float mn = fmaxf(m[x], bm[x]);
        if (LAZY && m[x] != -INFINITY && mn - m[x] <= FS_LAZY_MAX) {
            base[x] = m[x];   /* m stays */
            alpha[x] = 1.f;
            continue;
        }
        base[x] = mn == -INFINITY ? 0.f : mn;
        alpha[x] = fast_exp2(m[x] - base[x]);
        m[x] = mn;
    }
    hook.before_exp();   /* version 33: the warpgroups take turns at the exponentials */
#pragma unroll
    for (int i = 0; i < BK / 2; i++) {
        /* POLY 1 (version 15): every other 8-column chunk by the polynomial, the rest by ex2;
         * POLY 2 (version 26): every fourth chunk */
        const float x = fmaf(s[i], p.scale2, -base[(i >> 1) & 1]);
        const bool poly = POLY == 1 ? (i & 4) != 0 : POLY == 2 ? (i & 12) == 12 : false;
        s[i] = poly ? exp2_fma(x) : fast_exp2(x);
        sum[(i >> 1) & 1] += s[i];
    }
    hook.after_exp();
#pragma unroll
    for (int x = 0; x < 2; x++) l[x] = alpha[x] * l[x] + sum[x];
}

/* o *= α row by row, skipped when no row of the warp got a new maximum (a warp vote). */
template <int D>
__device__ __forceinline__ void wg_rescale(float (&o)[D / 64][32], const float (&alpha)[2])
{
    if (__any_sync(0xffffffff, alpha[0] != 1.f || alpha[1] != 1.f))
#pragma unroll
        for (int nb = 0; nb < D / 64; nb++)
#pragma unroll
            for (int i = 0; i < 32; i++) o[nb][i] *= alpha[(i >> 1) & 1];
}

/* P as wgmma A fragments: keys 16kk..16kk+15 are accumulator chunks 2kk and 2kk+1. */
template <typename T, int BK>
__device__ __forceinline__ void wg_pack(uint32_t (&a)[BK / 16][4], const float *s)
{
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) {
        a[kk][0] = pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
        a[kk][1] = pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
        a[kk][2] = pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
        a[kk][3] = pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
    }
}

/* Issue O += P V (A = P from registers, V read transposed) and commit; no wait. WIDE (versions 22
 * and up, d = 128 and 256): one m64nDk16 a 16 keys, across V's D/64 column blocks (BK · 128 bytes
 * apart), instead of D/64 m64n64k16 each over one block: half (d = 128) or a quarter (d = 256)
 * of the instructions, and P's registers read once a 16 keys instead of D/64 times. */
template <typename T, int D, int BK, bool WIDE = false, bool BASE = false>
__device__ __forceinline__ void wg_pv_issue(float (&o)[D / 64][32], const uint32_t (&a)[BK / 16][4], uint32_t sV)
{
#pragma unroll
    for (int nb = 0; nb < D / 64; nb++) reg_fence<32>(o[nb]);
    wg_fence();
    if constexpr (BASE) {   /* version 23, as wg_scores_issue (and WIDE) */
        const uint32_t v = sw128_lo(sV, D > 64 ? BK * 128 : 16);
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            if constexpr (D > 64) wgmma_rs_tn<T, D>(&o[0][0], a[kk], sw128_at(v, kk * 16 * 128));
            else wgmma_rs_t<T>(o[0], a[kk], sw128_at(v, kk * 16 * 128));
        }
    } else if constexpr (WIDE && D > 64) {
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++)
            wgmma_rs_tn<T, D>(&o[0][0], a[kk], sw128_desc_mn(sV + kk * 16 * 128, BK * 128));
    } else {
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++)
#pragma unroll
            for (int nb = 0; nb < D / 64; nb++)   /* keys 16kk.., d columns 64nb..: 16 rows of 128 B */
                wgmma_rs_t<T>(o[nb], a[kk], sw128_desc(sV + nb * BK * 128 + kk * 16 * 128));
    }
    wg_commit();
}

/* Keep P's registers alive and unchanged until the wgmma reading them has been waited for. */
template <int BK> __device__ __forceinline__ void a_fence(uint32_t (&a)[BK / 16][4])
{
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++)
#pragma unroll
        for (int i = 0; i < 4; i++) asm volatile("" : "+r"(a[kk][i])::"memory");
}

/* Wait for every wgmma issued (the last being O += P V), keeping P's registers and o in place
 * until then. */
template <int D, int BK> __device__ __forceinline__ void wg_pv_wait(float (&o)[D / 64][32], uint32_t (&a)[BK / 16][4])
{
    wg_wait<0>();
    a_fence<BK>(a);
#pragma unroll
    for (int nb = 0; nb < D / 64; nb++) reg_fence<32>(o[nb]);
}

/* Versions 10 and 11: the softmax, then O += P V, waited for at once. */
template <typename T, int D, int BK>
__device__ __forceinline__ void wg_softmax_pv(const prefill_params &p, float *s, float (&o)[D / 64][32],
                                              float (&m)[2], float (&l)[2], uint32_t sV, int kt,
                                              int cls, int row0, int t4)
{
    float alpha[2];
    wg_softmax<BK>(p, s, m, l, alpha, kt, cls, row0, t4);
    wg_rescale<D>(o, alpha);
    uint32_t a[BK / 16][4];
    wg_pack<T, BK>(a, s);
    wg_pv_issue<T, D, BK>(o, a, sV);
    wg_pv_wait<D, BK>(o, a);
}

/* O = o / ℓ for this thread's two rows (ℓ summed over the quad), and the log-sum-exp. */
template <typename T, int D>
__device__ __forceinline__ void wg_store(const prefill_params &p, T *Oh, float *lse_h, float (&o)[D / 64][32],
                                         const float (&m)[2], const float (&l)[2], int row0, int t4)
{
#pragma unroll
    for (int x = 0; x < 2; x++) {
        float lx = l[x];
        lx += __shfl_xor_sync(0xffffffff, lx, 1);
        lx += __shfl_xor_sync(0xffffffff, lx, 2);
        const float inv = lx > 0 ? 1.f / lx : 0.f;
        const int r = row0 + 8 * x;
        if (r >= p.n_q) continue;
        if (lse_h && t4 == 0) lse_h[r] = lse_of(m[x], lx);
#pragma unroll
        for (int nb = 0; nb < D / 64; nb++)
#pragma unroll
            for (int i = 0; i < 8; i++)
                *reinterpret_cast<uint32_t *>(Oh + (size_t)r * D + nb * 64 + 8 * i + 2 * t4) =
                    pack2<T>(o[nb][4 * i + 2 * x] * inv, o[nb][4 * i + 2 * x + 1] * inv);
    }
}

/* ---- Version 10: wgmma, tiles by cp.async ---------------------------------------------------- */

/* grid (ceil(n_q / 128), n_q_heads, batch), 256 threads = 2 warpgroups of 64 rows.
 * Shared: Q (128 × D), 2 stages × K (BK × D), 2 stages × V (BK × D), all swizzled. */
template <typename T, int D, int BK>
__global__ void __launch_bounds__(256, 1)
prefill_wgmma(prefill_params p, const T *__restrict__ Q, const T *__restrict__ K, const T *__restrict__ V,
              T *__restrict__ O)
{
    constexpr int BQ = 128, NT = 256, TQ = BQ * D * 2, TK = BK * D * 2;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sQ = align1024(smem_raw), *sK = sQ + TQ, *sV = sK + 2 * TK;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int qt = gridDim.x - 1 - blockIdx.x;   /* the longest rows (causal) start first */
    const int h = blockIdx.y, b = blockIdx.z, kvh = h / (p.n_q_heads / p.n_kv_heads);
    const int r0 = qt * BQ, r1 = min(r0 + BQ, p.n_q);
    const size_t qh = (size_t)b * p.n_q_heads + h;
    const T *Qg = Q + (qh * p.n_q + r0) * D;
    const T *Kg = K + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;
    const T *Vg = V + ((size_t)b * p.n_kv_heads + kvh) * p.n_kv * D;
    const int wr0 = r0 + 64 * wg, wr1 = min(wr0 + 64, p.n_q);          /* this warpgroup's rows */
    const int row0 = wr0 + 16 * ((tid >> 5) & 3) + g;                   /* this thread's first row */

    int lo, hi;
    key_range(p, r0, r1, &lo, &hi);
    const int kt_lo = lo / BK, kt_hi = (hi + BK - 1) / BK;

    float o[D / 64][32], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
#pragma unroll
    for (int nb = 0; nb < D / 64; nb++)
#pragma unroll
        for (int i = 0; i < 32; i++) o[nb][i] = 0;

    load_sw<T, D, BQ, NT>(sQ, Qg, r1 - r0, tid);
    if (kt_lo < kt_hi) {
        load_sw<T, D, BK, NT>(sK, Kg + (size_t)kt_lo * BK * D, p.n_kv - kt_lo * BK, tid);
        load_sw<T, D, BK, NT>(sV, Vg + (size_t)kt_lo * BK * D, p.n_kv - kt_lo * BK, tid);
    }
    cp_async_commit();
    for (int kt = kt_lo, st = 0; kt < kt_hi; kt++, st ^= 1) {
        if (kt + 1 < kt_hi) {   /* the next tile into the other stage while this one computes */
            load_sw<T, D, BK, NT>(sK + (st ^ 1) * TK, Kg + (size_t)(kt + 1) * BK * D, p.n_kv - (kt + 1) * BK, tid);
            load_sw<T, D, BK, NT>(sV + (st ^ 1) * TK, Vg + (size_t)(kt + 1) * BK * D, p.n_kv - (kt + 1) * BK, tid);
        }
        cp_async_commit();
        cp_async_wait<1>();
        fence_async_smem();   /* cp.async writes → wgmma reads */
        __syncthreads();
        const int cls = wg_class(p, wr0, wr1, kt, BK);
        if (cls != FS_TILE_SKIPPED) {
            float s[BK / 2];
            wg_scores<T, D, BK, BQ>(s, smem_u32(sQ) + wg * 64 * 128, smem_u32(sK + st * TK));
            wg_softmax_pv<T, D, BK>(p, s, o, m, l, smem_u32(sV + st * TK), kt, cls, row0, t4);
        }
        __syncthreads();   /* everyone is done with this stage before it is refilled */
    }
    cp_async_wait<0>();
    wg_store<T, D>(p, O + qh * p.n_q * D, p.lse ? p.lse + qh * p.n_q : nullptr, o, m, l, row0, t4);
}

/* ---- Version 11: TMA, mbarriers, a producer warpgroup ---------------------------------------- */

/* grid as version 10, 384 threads: warpgroup 0 the producer (one thread issues every copy),
 * warpgroups 1 and 2 the consumers (64 rows each). Shared: Q, STAGES × K, STAGES × V, then the
 * barriers: q_full, k_full[STAGES], v_full[STAGES], empty[STAGES]. */
template <typename T, int D, int BK, int STAGES>
__global__ void __launch_bounds__(384, 1)
prefill_tma(prefill_params p, const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
            const __grid_constant__ CUtensorMap tmV, T *__restrict__ O)
{
    constexpr int BQ = 128, TQ = BQ * D * 2, TK = BK * D * 2;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sQ = align1024(smem_raw), *sK = sQ + TQ, *sV = sK + STAGES * TK;
    uint64_t *bar = reinterpret_cast<uint64_t *>(sV + STAGES * TK);
    uint64_t *q_full = bar, *k_full = bar + 1, *v_full = k_full + STAGES, *empty = v_full + STAGES;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int qt = gridDim.x - 1 - blockIdx.x;
    const int h = blockIdx.y, b = blockIdx.z, kvh = h / (p.n_q_heads / p.n_kv_heads);
    const int r0 = qt * BQ, r1 = min(r0 + BQ, p.n_q);
    const size_t qh = (size_t)b * p.n_q_heads + h;

    int lo, hi;
    key_range(p, r0, r1, &lo, &hi);
    const int kt_lo = lo / BK, kt_hi = (hi + BK - 1) / BK;

    if (tid == 0) {
        mbar_init(q_full, 1);
        ring2_init(k_full, v_full, empty, STAGES, 8);   /* one arrival per consumer warp */
    }
    __syncthreads();

    if (wg == 0) {   /* producer */
        wg_regs_dec<24>();
        if (tid == 0) {
            mbar_expect_tx(q_full, TQ);
            for (int cb = 0; cb < D / 64; cb++) tma_load3(sQ + cb * BQ * 128, &tmQ, 64 * cb, r0, (int)qh, q_full);
            const int kvrow = b * p.n_kv_heads + kvh;
            for (int kt = kt_lo, it = 0; kt < kt_hi; kt++, it++) {
                const int s = ring_stage<STAGES>(it);
                ring_wait_empty<STAGES>(empty, it);
                mbar_expect_tx(k_full + s, TK);
                for (int cb = 0; cb < D / 64; cb++)
                    tma_load3(sK + s * TK + cb * BK * 128, &tmK, 64 * cb, kt * BK, kvrow, k_full + s);
                mbar_expect_tx(v_full + s, TK);
                for (int cb = 0; cb < D / 64; cb++)
                    tma_load3(sV + s * TK + cb * BK * 128, &tmV, 64 * cb, kt * BK, kvrow, v_full + s);
            }
        }
    } else {         /* consumers */
        wg_regs_inc<240>();
        const int cw = wg - 1;
        const int wr0 = r0 + 64 * cw, wr1 = min(wr0 + 64, p.n_q);
        const int row0 = wr0 + 16 * ((tid >> 5) & 3) + g;
        float o[D / 64][32], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
#pragma unroll
        for (int nb = 0; nb < D / 64; nb++)
#pragma unroll
            for (int i = 0; i < 32; i++) o[nb][i] = 0;
        mbar_wait(q_full, 0);
        for (int kt = kt_lo, it = 0; kt < kt_hi; kt++, it++) {
            const int s = ring_stage<STAGES>(it);
            const int cls = wg_class(p, wr0, wr1, kt, BK);
            float sc[BK / 2];
            ring_wait_full<STAGES>(k_full, it);
            if (cls != FS_TILE_SKIPPED)
                wg_scores<T, D, BK, BQ>(sc, smem_u32(sQ) + cw * 64 * 128, smem_u32(sK + s * TK));
            ring_wait_full<STAGES>(v_full, it);
            if (cls != FS_TILE_SKIPPED)
                wg_softmax_pv<T, D, BK>(p, sc, o, m, l, smem_u32(sV + s * TK), kt, cls, row0, t4);
            ring_release<STAGES>(empty, it, lane);
        }
        wg_store<T, D>(p, O + qh * p.n_q * D, p.lse ? p.lse + qh * p.n_q : nullptr, o, m, l, row0, t4);
    }
}

/* ---- Versions 12 to 17: softmax overlapped with the tensor cores, one query tile a block -------- */

/* Version 17's block order: which query tile, head and batch block idx of a 1-D grid of n_qt
 * query tiles × every (batch, head) takes. The heads (b · n_q_heads + h) go in groups of
 * group_heads, one group after the other; inside a group, the longest tile (qt = n_qt − 1) of
 * each head, then the next longest of each, and so on. */
__device__ __forceinline__ void block_lpt(int idx, int n_qt, int n_q_heads, int n_blocks, int group_heads, int *qt,
                                          int *h, int *b)
{
    const int per_group = n_qt * group_heads, grp = idx / per_group, in = idx % per_group;
    const int heads = n_blocks / n_qt, first = grp * group_heads, here = min(group_heads, heads - first);
    const int head = first + in % here;
    *qt = n_qt - 1 - in / here;
    *h = head % n_q_heads;
    *b = head / n_q_heads;
}

/* The consumers' turns (versions 13-18) use the named barriers of hopper_common.cuh (bar_sync,
 * bar_arrive): id 1 + c is consumer warpgroup c's turn (ids 1 and 2, or 1 to 3 with three
 * consumer warpgroups; 0 is __syncthreads). Each meets 256 threads: the 128 that wait for the
 * turn and the 128 of the warpgroup that hands it over. */

/* The producer's share of one query tile ("item"): K and V tiles kt_lo .. kt_lo + nt − 1 of KV row
 * kvrow into the ring. gt0 counts the tiles this block has put in the ring before, so that stage
 * and phase run on across the items of version 18; every other version has one item (gt0 = 0). */
template <int D, int BK, int STAGES>
__device__ __forceinline__ void produce_kv(const CUtensorMap *tmK, const CUtensorMap *tmV, unsigned char *sK,
                                           unsigned char *sV, uint64_t *k_full, uint64_t *v_full, uint64_t *empty,
                                           int kt_lo, int nt, int kvrow, int gt0)
{
    constexpr int TK = BK * D * 2;
    for (int it = 0; it < nt; it++) {
        const int gt = gt0 + it, s = ring_stage<STAGES>(gt), kt = kt_lo + it;
        ring_wait_empty<STAGES>(empty, gt);
        mbar_expect_tx(k_full + s, TK);
        for (int cb = 0; cb < D / 64; cb++)
            tma_load3(sK + s * TK + cb * BK * 128, tmK, 64 * cb, kt * BK, kvrow, k_full + s);
        mbar_expect_tx(v_full + s, TK);
        for (int cb = 0; cb < D / 64; cb++)
            tma_load3(sV + s * TK + cb * BK * 128, tmV, 64 * cb, kt * BK, kvrow, v_full + s);
    }
}

/* One consumer warpgroup's share of one item: rows [wr0, wr1) (this thread's rows row0 and
 * row0 + 8) against the item's nt K/V tiles from the ring (tile counter gt0 as in produce_kv),
 * Q at shared address sQw; o, m, ℓ come in zeroed and leave ready for wg_store.
 * The warpgroup pipelines inside itself: while the tensor cores run S_j = Q K_jᵀ and
 * O += P_{j−1} V_{j−1} (issued together), it waits only for S_j and computes its softmax; o is
 * rescaled by α_j once P_{j−1} V_{j−1} is done. Every tile is treated as partial-or-full (never
 * skipped) so all warpgroups run the same schedule. PINGPONG (versions 13 and up): the consumer
 * warpgroups take turns issuing their products (named barriers 1, 2, ...), so one's softmax
 * runs while another's products occupy the tensor cores: warpgroup c waits on barrier 1 + c
 * before issuing, then lets the next one (c + 1 mod NCW) go. The last warpgroup's very last
 * hand-over is skipped when no one will wait for it (hand_last false). q_free (version 27's one Q
 * buffer, else null): each warp arrives on it as soon as the item's last S = Q Kᵀ is done, the
 * last read of Q, so the next item's Q can load during this one's last softmax, P V and stores. */
template <typename T, int D, int BK, int STAGES, bool PINGPONG, int POLY, int NCW, int STEP = 0>
__device__ __forceinline__ void wg_item(const prefill_params &p, uint32_t sQw, const unsigned char *sK,
                                        const unsigned char *sV, uint64_t *k_full, uint64_t *v_full,
                                        uint64_t *empty, int kt_lo, int nt, int gt0, int cw, int wr0, int wr1,
                                        int row0, int t4, int lane, bool hand_last, float (&o)[D / 64][32],
                                        float (&m)[2], float (&l)[2], uint64_t *q_free = nullptr)
{
    auto q_done = [&] {
        if (q_free) {
            __syncwarp();
            if (lane == 0) mbar_arrive(q_free);
        }
    };
    constexpr int TK = BK * D * 2;
    auto my_turn = [&] { if (PINGPONG) bar_sync(1 + cw); };
    auto your_turn = [&](bool last) {
        if (PINGPONG && !(cw == NCW - 1 && last && !hand_last)) bar_arrive(1 + (cw + 1) % NCW);
    };
    float sc[BK / 2], alpha[2];
    uint32_t a[BK / 16][4];
    if (nt > 0) {
        const int s = ring_stage<STAGES>(gt0);
        ring_wait_full<STAGES>(k_full, gt0);
        my_turn();
        wg_scores_issue<T, D, BK, 64 * NCW, (STEP >= 23)>(sc, sQw, smem_u32(sK + s * TK));
        your_turn(false);
        wg_wait<0>();
        reg_fence<BK / 2>(sc);
        if (nt == 1) q_done();
        const int cls = wg_class(p, wr0, wr1, kt_lo, BK) == FS_TILE_FULL ? FS_TILE_FULL : FS_TILE_PARTIAL;
        wg_softmax<BK, POLY, (STEP >= 21), (STEP >= 30), (STEP >= 31)>(p, sc, m, l, alpha, kt_lo, cls, row0, t4);
        wg_rescale<D>(o, alpha);
        wg_pack<T, BK>(a, sc);
    }
    for (int it = 1; it < nt; it++) {
        const int gt = gt0 + it, s = ring_stage<STAGES>(gt), sp = ring_stage<STAGES>(gt - 1), kt = kt_lo + it;
        ring_wait_full<STAGES>(k_full, gt);
        ring_wait_full<STAGES>(v_full, gt - 1);
        my_turn();
        wg_scores_issue<T, D, BK, 64 * NCW, (STEP >= 23)>(sc, sQw, smem_u32(sK + s * TK));   /* S_j */
        wg_pv_issue<T, D, BK, (STEP >= 22), (STEP >= 23)>(o, a, smem_u32(sV + sp * TK));     /* O += P_{j−1} V_{j−1} */
        your_turn(false);
        wg_wait<1>();                                                           /* S_j is ready */
        reg_fence<BK / 2>(sc);
        if (it == nt - 1) q_done();
        const int cls = wg_class(p, wr0, wr1, kt, BK) == FS_TILE_FULL ? FS_TILE_FULL : FS_TILE_PARTIAL;
        wg_softmax<BK, POLY, (STEP >= 21), (STEP >= 30), (STEP >= 31)>(p, sc, m, l, alpha, kt, cls, row0, t4);
        wg_pv_wait<D, BK>(o, a);                                                /* P_{j−1} V_{j−1} is done */
        ring_release<STAGES>(empty, gt - 1, lane);                             /* stage j−1 is free */
        wg_rescale<D>(o, alpha);
        wg_pack<T, BK>(a, sc);
    }
    if (nt > 0) {
        const int gl = gt0 + nt - 1, sp = ring_stage<STAGES>(gl);
        ring_wait_full<STAGES>(v_full, gl);
        my_turn();
        wg_pv_issue<T, D, BK, (STEP >= 22), (STEP >= 23)>(o, a, smem_u32(sV + sp * TK));
        your_turn(true);
        wg_pv_wait<D, BK>(o, a);
        ring_release<STAGES>(empty, gl, lane);
    }
}

/* Version 33's turns: warpgroup cw waits on named barrier 1 + cw before its exponentials and
 * lets the next one (cw + 1 mod NCW) go after them. */
template <int NCW> struct exp_turns {
    int cw;
    __device__ __forceinline__ void before_exp() const { bar_sync(1 + cw); }
    __device__ __forceinline__ void after_exp() const { bar_arrive(1 + (cw + 1) % NCW); }
};

/* Version 33: wg_item's work in the order of cuDNN's Hopper forward as its SASS shows it (ncu's
 * source page, run 37): no overlap inside a warpgroup (S_j = Q K_jᵀ is issued and waited for,
 * then the softmax, then O += P_j V_j is issued and waited for), and the warpgroups take turns
 * at the exponentials instead of at the products: one warpgroup's exponentials have the
 * special-function unit to themselves while the other's products run. Arguments, ring and
 * q_free as wg_item; the last warpgroup's final hand-over is taken as in wg_item's callers. */
template <typename T, int D, int BK, int STAGES, int POLY, int NCW>
__device__ __forceinline__ void wg_item_seq(const prefill_params &p, uint32_t sQw, const unsigned char *sK,
                                            const unsigned char *sV, uint64_t *k_full, uint64_t *v_full,
                                            uint64_t *empty, int kt_lo, int nt, int gt0, int cw, int wr0, int wr1,
                                            int row0, int t4, int lane, float (&o)[D / 64][32], float (&m)[2],
                                            float (&l)[2], uint64_t *q_free)
{
    constexpr int TK = BK * D * 2;
    float sc[BK / 2], alpha[2];
    uint32_t a[BK / 16][4];
    for (int it = 0; it < nt; it++) {
        const int gt = gt0 + it, s = ring_stage<STAGES>(gt), kt = kt_lo + it;
        ring_wait_full<STAGES>(k_full, gt);
        wg_scores_issue<T, D, BK, 64 * NCW, true>(sc, sQw, smem_u32(sK + s * TK));   /* S_j */
        wg_wait<0>();
        reg_fence<BK / 2>(sc);
        if (it == nt - 1 && q_free) {   /* the item's last read of Q */
            __syncwarp();
            if (lane == 0) mbar_arrive(q_free);
        }
        const int cls = wg_class(p, wr0, wr1, kt, BK) == FS_TILE_FULL ? FS_TILE_FULL : FS_TILE_PARTIAL;
        wg_softmax<BK, POLY, true, true, true>(p, sc, m, l, alpha, kt, cls, row0, t4, exp_turns<NCW>{cw});
        wg_rescale<D>(o, alpha);
        wg_pack<T, BK>(a, sc);
        ring_wait_full<STAGES>(v_full, gt);
        wg_pv_issue<T, D, BK, true, true>(o, a, smem_u32(sV + s * TK));   /* O += P_j V_j */
        wg_pv_wait<D, BK>(o, a);
        ring_release<STAGES>(empty, gt, lane);
    }
}

/* A consumer thread's state before an item: o (its D/2 accumulators of two rows) = 0, m = −∞,
 * ℓ = 0. */
template <int D> __device__ __forceinline__ void wg_zero(float (&o)[D / 64][32], float (&m)[2], float (&l)[2])
{
#pragma unroll
    for (int nb = 0; nb < D / 64; nb++)
#pragma unroll
        for (int i = 0; i < 32; i++) o[nb][i] = 0;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0;
}

/* Versions 12 to 17: version 11's producer and barriers, one query tile a block, the consumers
 * as in wg_item. Bq = 64 · NCW rows (128, or 192 for version 16 at d = 64), 128 · (NCW + 1)
 * threads; grid as version 10 (over Bq-row tiles), or with LPT (version 17) one dimension of
 * n_qt · batch · n_q_heads blocks ordered by block_lpt. Shared: Q (Bq × D), STAGES × K,
 * STAGES × V, then the barriers q_full, k_full[STAGES], v_full[STAGES], empty[STAGES]. */
template <typename T, int D, int BK, int STAGES, bool PINGPONG, int POLY = 0, int NCW = 2, bool LPT = false,
          int STEP = 0>
__global__ void __launch_bounds__(128 * (NCW + 1), 1)
prefill_overlap(prefill_params p, const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                const __grid_constant__ CUtensorMap tmV, T *__restrict__ O)
{
    constexpr int BQ = 64 * NCW, TQ = BQ * D * 2, TK = BK * D * 2;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sQ = align1024(smem_raw), *sK = sQ + TQ, *sV = sK + STAGES * TK;
    uint64_t *bar = reinterpret_cast<uint64_t *>(sV + STAGES * TK);
    uint64_t *q_full = bar, *k_full = bar + 1, *v_full = k_full + STAGES, *empty = v_full + STAGES;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    int qt, h, b;
    if (LPT) {
        block_lpt(blockIdx.x, (p.n_q + BQ - 1) / BQ, p.n_q_heads, gridDim.x, p.group_heads, &qt, &h, &b);
    } else {
        qt = gridDim.x - 1 - blockIdx.x;
        h = blockIdx.y;
        b = blockIdx.z;
    }
    const int kvh = h / (p.n_q_heads / p.n_kv_heads);
    const int r0 = qt * BQ, r1 = min(r0 + BQ, p.n_q);
    const size_t qh = (size_t)b * p.n_q_heads + h;

    int lo, hi;
    key_range(p, r0, r1, &lo, &hi);
    const int kt_lo = lo / BK, kt_hi = (hi + BK - 1) / BK, nt = kt_hi - kt_lo;

    if (tid == 0) {
        mbar_init(q_full, 1);
        ring2_init(k_full, v_full, empty, STAGES, 4 * NCW);   /* one arrival per consumer warp */
    }
    __syncthreads();

    if (wg == 0) {   /* producer, as version 11 */
        wg_regs_dec<24>();
        if (tid == 0) {
            mbar_expect_tx(q_full, TQ);
            for (int cb = 0; cb < D / 64; cb++) tma_load3(sQ + cb * BQ * 128, &tmQ, 64 * cb, r0, (int)qh, q_full);
            produce_kv<D, BK, STAGES>(&tmK, &tmV, sK, sV, k_full, v_full, empty, kt_lo, nt, b * p.n_kv_heads + kvh, 0);
        }
        return;
    }
    /* 240 registers a consumer thread with two consumer warpgroups, 160 with three (version 16):
     * 128 · 24 + 384 · 160 fits the 65536 of an SM */
    if (NCW == 2) wg_regs_inc<240>();
    else wg_regs_inc<160>();
    const int cw = wg - 1;
    const int wr0 = r0 + 64 * cw, wr1 = min(wr0 + 64, p.n_q);
    const int row0 = wr0 + 16 * ((tid >> 5) & 3) + g;
    float o[D / 64][32], m[2], l[2];
    wg_zero<D>(o, m, l);
    /* the last warpgroup lets warpgroup 0 take the first turn */
    if (PINGPONG && cw == NCW - 1 && nt > 0) bar_arrive(1);
    mbar_wait(q_full, 0);
    wg_item<T, D, BK, STAGES, PINGPONG, POLY, NCW, STEP>(p, smem_u32(sQ) + cw * 64 * 128, sK, sV, k_full, v_full,
                                                         empty, kt_lo, nt, 0, cw, wr0, wr1, row0, t4, lane, false, o,
                                                         m, l);
    wg_store<T, D>(p, O + qh * p.n_q * D, p.lse ? p.lse + qh * p.n_q : nullptr, o, m, l, row0, t4);
}

/* ---- Version 18: persistent blocks ------------------------------------------------------------ */

/* One block an SM, each taking query tiles ("items") one after the other. Q has two buffers: the
 * producer loads the next item's Q and first K/V tiles while the consumers still compute, rescale
 * and store the current one, so a block's start and end (Q's latency, the first tile's, the
 * pipeline filling, the output's stores) overlap with work, where in versions 10-17 they leave
 * the SM idle between two blocks.
 * Which block takes which tiles is fixed in advance (no counter in memory): the query tiles of a
 * head are paired, the longest with the shortest (tile n_qt − 1 − i with tile i), so that under a
 * causal mask every pair costs the same n_qt + 1 key tiles; block k takes pairs k, k + gridDim,
 * k + 2 gridDim, ..., numbered head by head so that the blocks at work share a few heads' K and
 * V in L2. (Handing out single tiles in version 17's order, in a snake, left blocks up to 23 %
 * apart.) Grid: min(pairs, SMs) blocks of 384 threads (the producer warpgroup and two
 * consumers). Shared: Q × QB, K and V × STAGES, barriers q_full (2), q_empty (2), k_full, v_full,
 * empty (STAGES each). Every item must have keys (nt > 0): the host sends the masks that could
 * leave one empty to version 17.
 * QB = 1 (version 27, where two Q buffers and three stages do not fit): one Q buffer, given back
 * by the consumers as soon as the item's last S = Q Kᵀ is done, so the next Q's load still
 * overlaps the item's last softmax, P V and stores, and the K/V ring runs on across items.
 * The pairs' order is hopper_common.cuh's pair_item (the e4m3 persistent versions take it too). */

/* The body of the persistent kernels: prefill_persist (versions 18, 25-27, 29-31, 33) runs it
 * with the pairs, prefill_split (version 32) with split_sched. Version 33 (STEP) runs each item
 * with wg_item_seq, the others with wg_item. */
template <typename T, int D, int BK, int STAGES, int STEP, int POLY, int QB, typename SCHED>
__device__ __forceinline__ void persist_body(const prefill_params &p, const CUtensorMap *tmQ, const CUtensorMap *tmK,
                                             const CUtensorMap *tmV, T *__restrict__ O, const SCHED &sched)
{
    constexpr int BQ = 128, TQ = BQ * D * 2, TK = BK * D * 2;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sQ = align1024(smem_raw), *sK = sQ + QB * TQ, *sV = sK + STAGES * TK;
    uint64_t *bar = reinterpret_cast<uint64_t *>(sV + STAGES * TK);
    uint64_t *q_full = bar, *q_empty = bar + 2, *k_full = bar + 4, *v_full = k_full + STAGES, *empty = v_full + STAGES;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int n_qt = (p.n_q + BQ - 1) / BQ;

    if (tid == 0) {   /* two rings: Q's (2 stages) and K/V's; one arrival per consumer warp */
        ring_init_bars(q_full, q_empty, 2, 8);
        ring2_init(k_full, v_full, empty, STAGES, 8);
    }
    __syncthreads();

    /* query tile → rows, key tiles, KV row, (batch, head) row (both roles compute the same) */
    struct item { int r0, r1, kt_lo, nt, kvrow; size_t qh; };
    auto item_at = [&](int qt, int head) {
        const int h = head % p.n_q_heads, b = head / p.n_q_heads;
        int lo, hi;
        item it;
        it.r0 = qt * BQ;
        it.r1 = min(it.r0 + BQ, p.n_q);
        key_range(p, it.r0, it.r1, &lo, &hi);
        it.kt_lo = lo / BK;
        it.nt = (hi + BK - 1) / BK - it.kt_lo;
        it.kvrow = b * p.n_kv_heads + h / (p.n_q_heads / p.n_kv_heads);
        it.qh = (size_t)head;
        return it;
    };

    /* piece w's item, over the key tiles the piece takes */
    auto piece_item = [&](const work_piece &w) {
        item it = item_at(w.qt, w.head);
        if constexpr (SCHED::split) {
            it.kt_lo = w.kt_lo;
            it.nt = w.nt;
        }
        return it;
    };

    if (wg == 0) {   /* the producer */
        wg_regs_dec<24>();
        if (tid == 0) {
            int gt = 0, qi = 0;
            work_piece w;
            for (int s = 0; sched.next(s, n_qt, &w); s++) {
                if (w.qt < 0) continue;
                const item it = piece_item(w);
                /* Q's ring of QB in bits (ring_stage<2> costs a signed remainder) */
                const int x = QB == 2 ? qi & 1 : 0, ph = QB == 2 ? (qi >> 1) & 1 : qi & 1;
                mbar_wait(q_empty + x, ph ^ 1);
                mbar_expect_tx(q_full + x, TQ);
                for (int cb = 0; cb < D / 64; cb++)
                    tma_load3(sQ + x * TQ + cb * BQ * 128, tmQ, 64 * cb, it.r0, (int)it.qh, q_full + x);
                produce_kv<D, BK, STAGES>(tmK, tmV, sK, sV, k_full, v_full, empty, it.kt_lo, it.nt, it.kvrow, gt);
                gt += it.nt;
                qi++;
            }
        }
        return;
    }
    wg_regs_inc<240>();
    const int cw = wg - 1;
    int gt = 0, qi = 0;
    work_piece w;
    if (cw == 1) bar_arrive(1);   /* warpgroup 0 takes the first turn (every block has an item) */
    for (int s = 0; sched.next(s, n_qt, &w); s++) {
        if (w.qt < 0) continue;
        const item it = piece_item(w);
        const int x = QB == 2 ? qi & 1 : 0, ph = QB == 2 ? (qi >> 1) & 1 : qi & 1;
        const int wr0 = it.r0 + 64 * cw, wr1 = min(wr0 + 64, p.n_q);
        const int row0 = wr0 + 16 * ((tid >> 5) & 3) + g;
        float o[D / 64][32], m[2], l[2];
        wg_zero<D>(o, m, l);
        mbar_wait(q_full + x, ph);
        /* Q's buffer is given back once every product that read it is done: with two buffers
         * after the item, with one (version 27) after its last S = Q Kᵀ, inside wg_item */
        if constexpr (STEP == 33)
            wg_item_seq<T, D, BK, STAGES, POLY, 2>(p, smem_u32(sQ + x * TQ) + cw * 64 * 128, sK, sV, k_full, v_full,
                                                   empty, it.kt_lo, it.nt, gt, cw, wr0, wr1, row0, t4, lane, o, m, l,
                                                   QB == 1 ? q_empty : nullptr);
        else
            wg_item<T, D, BK, STAGES, true, POLY, 2, STEP>(p, smem_u32(sQ + x * TQ) + cw * 64 * 128, sK, sV, k_full,
                                                           v_full, empty, it.kt_lo, it.nt, gt, cw, wr0, wr1, row0,
                                                           t4, lane, true, o, m, l, QB == 1 ? q_empty : nullptr);
        if (QB == 2) {
            __syncwarp();
            if (lane == 0) mbar_arrive(q_empty + x);
        }
        gt += it.nt;
        qi++;
        if constexpr (SCHED::split)   /* a piece of a tail item: stored by whoever finishes it last */
            if (w.tail >= 0 && !sched.template merge<D>(w, cw, (tid >> 5) & 3, lane, o, m, l)) continue;
        wg_store<T, D>(p, O + it.qh * p.n_q * D, p.lse ? p.lse + it.qh * p.n_q : nullptr, o, m, l, row0, t4);
    }
    /* warpgroup 1's last hand-over went to warpgroup 0, which takes it here */
    if (cw == 0) bar_sync(1);
}

template <typename T, int D, int BK, int STAGES, int STEP = 0, int POLY = 0, int QB = 2>
__global__ void __launch_bounds__(384, 1)
prefill_persist(prefill_params p, const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                const __grid_constant__ CUtensorMap tmV, T *__restrict__ O, int n_pairs)
{
    persist_body<T, D, BK, STAGES, STEP, POLY, QB>(p, &tmQ, &tmK, &tmV, O, pair_sched{n_pairs});
}

/* ---- Version 32: the last round split across every SM ----------------------------------------- */

/* Version 31's persistent kernel on split_sched: the whole rounds, then the last round's items cut
 * into equal runs of key tiles for every block, merged by the warp that finishes an item's last
 * piece. The schedule, its merge and split_plan are in hopper_common.cuh (the e4m3 versions 28
 * and 29 take them too), where the comment above split_sched says how it cuts and merges. */
template <typename T, int D, int BK, int STAGES, int POLY, int QB>
__global__ void __launch_bounds__(384, 1)
prefill_split(prefill_params p, const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
              const __grid_constant__ CUtensorMap tmV, T *__restrict__ O, split_sched sched)
{
    persist_body<T, D, BK, STAGES, 31, POLY, QB>(p, &tmQ, &tmK, &tmV, O, sched);
}

/* ---- Host side ------------------------------------------------------------------------------ */

/* Launch a prefill_tma or prefill_overlap kernel (versions 11-17, 19-24, 28, and 30, 31 and 33
 * where they are not persistent) on a grid of blocks of `threads` with smem bytes of shared memory. */
template <typename T, typename KERN>
static fs_status launch_overlap(KERN kern, dim3 grid, int threads, size_t smem, const prefill_params &p,
                                const CUtensorMap &mq, const CUtensorMap &mk, const CUtensorMap &mv, void *O,
                                char *why, size_t n, cudaStream_t stream)
{
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kern<<<grid, threads, smem, stream>>>(p, mq, mk, mv, (T *)O);
    FS_CU_LAUNCHED();
    return FS_OK;
}

/* Launch a persistent kernel (prefill_persist: versions 18, 25-27, 29-31, 33) with smem bytes
 * of shared memory over the pairs of query tiles of n_qt tiles a head: one block an SM, or one a
 * pair where there are fewer pairs, or pp->max_blocks where that is fewer (the ring leaves SMs
 * free for NCCL's copies that way); on pp's stream. */
template <typename T, typename KERN>
static fs_status launch_persist(KERN kern, size_t smem, int n_qt, long heads, const prefill_params &p,
                                const CUtensorMap &mq, const CUtensorMap &mk, const CUtensorMap &mv, void *O,
                                char *why, size_t n, const fs_cuda_prefill *pp)
{
    const long pairs = (long)(n_qt + 1) / 2 * heads;
    int dev, sms;
    FS_CU_TRY(cudaGetDevice(&dev));
    FS_CU_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (pp->max_blocks > 0 && pp->max_blocks < sms) sms = pp->max_blocks;
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kern<<<(unsigned)(pairs < sms ? pairs : sms), 384, smem, fs_cu_stream(pp)>>>(p, mq, mk, mv, (T *)O, (int)pairs);
    FS_CU_LAUNCHED();
    return FS_OK;
}

/* Versions 30, 31 and 33-35 (STEP): the fastest form of each head size and mask so far, with the
 * lean mask of partial tiles (wg_mask's LEAN; 31 also the lazy maximum, wg_softmax's LAZY; 33 is 31
 * with the persistent kernels on wg_item_seq, the others as 31's; 34 and 35 are 31 but at d = 64): at d = 64
 * under a causal or window mask version 23's kernel, at d = 64 otherwise version 26's persistent
 * blocks (key tiles of 192, the quarter polynomial), at d = 128 and 256 version 27's persistent
 * blocks with one Q buffer where every query tile sees keys, else version 23's kernel. Version 34
 * at d = 64: persistent blocks with key tiles of 128 (two Q buffers, three stages, the quarter
 * polynomial) wherever every query tile sees keys, whatever the mask; version 35 the same where the
 * keys are fewer than 4096, else as 31. Maps and block order as hopper_d made them (po: version
 * 17's order; n_qt query tiles of 128 a head). */
template <typename T, int D, int STEP>
static fs_status hopper_best(const fs_cuda_prefill *pp, const prefill_params &p, const prefill_params &po, int n_qt,
                             long heads, bool ragged, const CUtensorMap &mq, const CUtensorMap &mk,
                             const CUtensorMap &mv, const void *K, const void *V, void *O, char *why, size_t n)
{
    constexpr int BQ = 128, BK = D == 256 ? 64 : 128, TQ = BQ * D * 2, TK = BK * D * 2;
    constexpr int OSTEP = STEP >= 33 ? 31 : STEP;   /* version 33 changes the persistent kernels only */
    constexpr int KSTEP = STEP >= 34 ? 31 : STEP;   /* versions 34 and 35 change the choice, not the kernels */
    if constexpr (D == 64) {
        const bool tile128 = STEP == 34 || (STEP == 35 && p.n_kv < 4096);
        if (tile128 && (!ragged || p.mask.offset >= 0)) {   /* 1 + 2 · 16 + 3 · 32 KiB */
            const size_t smem = 1024 + 2 * (size_t)TQ + 2 * 3 * (size_t)TK + 8 * (4 + 3 * 3);
            return launch_persist<T>(prefill_persist<T, D, BK, 3, KSTEP, 2>, smem, n_qt, heads, p, mq, mk, mv, O, why, n,
                                     pp);
        }
        if (ragged) {
            const size_t smem = 1024 + TQ + 2 * 3 * (size_t)TK + 8 * (1 + 3 * 3);
            return launch_overlap<T>(prefill_overlap<T, D, BK, 3, true, 0, 2, true, OSTEP>, dim3((unsigned)(n_qt * heads)),
                                     384, smem, po, mq, mk, mv, O, why, n, fs_cu_stream(pp));
        }
        constexpr int BKW = 192, TKW = BKW * D * 2;   /* version 24's key tiles */
        CUtensorMap mkw, mvw;
        fs_status st;
        if ((st = make_map(&mkw, K, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BKW, why, n)) != FS_OK) return st;
        if ((st = make_map(&mvw, V, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BKW, why, n)) != FS_OK) return st;
        const size_t smem = 1024 + 2 * (size_t)TQ + 2 * 3 * (size_t)TKW + 8 * (4 + 3 * 3);
        return launch_persist<T>(prefill_persist<T, D, BKW, 3, KSTEP, 2>, smem, n_qt, heads, p, mq, mkw, mvw, O, why,
                                 n, pp);
    } else {
        constexpr int ST = D == 128 ? 3 : 2;
        if (!ragged || p.mask.offset >= 0) {
            const size_t smem = 1024 + (size_t)TQ + 2 * ST * (size_t)TK + 8 * (4 + 3 * ST);
            return launch_persist<T>(prefill_persist<T, D, BK, ST, KSTEP, 0, 1>, smem, n_qt, heads, p, mq, mk, mv, O,
                                     why, n, pp);
        }
        const size_t smem = 1024 + TQ + 2 * ST * (size_t)TK + 8 * (1 + 3 * ST);
        return launch_overlap<T>(prefill_overlap<T, D, BK, ST, true, 0, 2, true, OSTEP>, dim3((unsigned)(n_qt * heads)),
                                 384, smem, po, mq, mk, mv, O, why, n, fs_cu_stream(pp));
    }
}

size_t fs_cu_hopper_prefill_workspace(const fs_cuda_prefill *pp, int version)
{
    if (version != 32 || pp->mask != FS_MASK_NONE || (pp->d != 64 && pp->d != 128 && pp->d != 256)) return 0;
    const long g = split_grid(pp, 128);
    /* two slots a block, and fewer than g tail items of 8 counters */
    return g * (2 * split_slot_floats(pp->d) * sizeof(float) + 8 * sizeof(unsigned));
}

/* Version 32 without a mask: version 31's persistent kernel of each head size (d = 64: key tiles
 * of 192, two Q buffers, the quarter polynomial; d = 128: one Q buffer, three stages; d = 256:
 * one Q buffer, two stages, key tiles of 64) on version 32's schedule. */
template <typename T, int D>
static fs_status hopper_split(const fs_cuda_prefill *pp, const prefill_params &p, int n_qt, long heads,
                              const CUtensorMap &mq, const void *K, const void *V, void *O, char *why, size_t n)
{
    constexpr int BK = D == 64 ? 192 : D == 128 ? 128 : 64, ST = D == 256 ? 2 : 3, QB = D == 64 ? 2 : 1;
    constexpr int POLY = D == 64 ? 2 : 0, TQ = 128 * D * 2, TK = BK * D * 2;
    CUtensorMap mk, mv;
    fs_status st;
    if ((st = make_map(&mk, K, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BK, why, n)) != FS_OK) return st;
    if ((st = make_map(&mv, V, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BK, why, n)) != FS_OK) return st;
    split_sched sc;
    int G;
    if ((st = split_plan(pp, (long)n_qt * heads, (p.n_kv + BK - 1) / BK, D, 2, pp->work, &sc, &G,
                         "prefill version 32 (fs_cuda_prefill_workspace)", fs_cu_hopper_prefill_workspace(pp, 32), why,
                         n)) != FS_OK)
        return st;
    const size_t smem = 1024 + QB * (size_t)TQ + 2 * ST * (size_t)TK + 8 * (4 + 3 * ST);
    auto kern = prefill_split<T, D, BK, ST, POLY, QB>;
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kern<<<(unsigned)G, 384, smem, fs_cu_stream(pp)>>>(p, mq, mk, mv, (T *)O, sc);
    FS_CU_LAUNCHED();
    return FS_OK;
}

/* Launch prefill version 10-35 at head dimension D on Q, K, V, O (device pointers, layout of
 * attn_prefill.cu); p's mask and scale as made by make_params. */
template <typename T, int D>
static fs_status hopper_d(const fs_cuda_prefill *pp, const prefill_params &p, int version, const void *Q,
                          const void *K, const void *V, void *O, char *why, size_t n)
{
    /* d = 256: Bk = 64, so that Q and two stages of K and V (64 + 2 · 64 KiB) fit */
    constexpr int BQ = 128, BK = D == 256 ? 64 : 128, TQ = BQ * D * 2, TK = BK * D * 2;
    dim3 grid((p.n_q + BQ - 1) / BQ, pp->n_q_heads, pp->batch);
    if (version == 10) {
        const size_t smem = 1024 + TQ + 4 * (size_t)TK;
        auto kern = prefill_wgmma<T, D, BK>;
        FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        kern<<<grid, 256, smem, fs_cu_stream(pp)>>>(p, (const T *)Q, (const T *)K, (const T *)V, (T *)O);
        FS_CU_LAUNCHED();
        return FS_OK;
    }
    constexpr int STAGES = 2;
    CUtensorMap mq, mk, mv;
    fs_status st;
    if ((st = make_map(&mq, Q, pp->dtype, D, p.n_q, pp->batch * pp->n_q_heads, BQ, why, n)) != FS_OK) return st;
    if ((st = make_map(&mk, K, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BK, why, n)) != FS_OK) return st;
    if ((st = make_map(&mv, V, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BK, why, n)) != FS_OK) return st;
    /* version 14: a third stage (at d = 128: 1 + 32 + 3 × 64 KiB, just under the 227 KiB a
     * block may have) */
    const int stages = version >= 14 && D != 256 ? 3 : STAGES;
    if constexpr (D == 64) if (version == 16) {   /* three consumer warpgroups: Bq = 192 */
        constexpr int BQ3 = 192;
        CUtensorMap mq3;
        if ((st = make_map(&mq3, Q, pp->dtype, D, p.n_q, pp->batch * pp->n_q_heads, BQ3, why, n)) != FS_OK) return st;
        const size_t smem3 = 1024 + (size_t)BQ3 * D * 2 + 2 * 3 * (size_t)TK + 8 * (1 + 3 * 3);
        dim3 grid3((p.n_q + BQ3 - 1) / BQ3, pp->n_q_heads, pp->batch);
        return launch_overlap<T>(prefill_overlap<T, D, BK, 3, true, false, 3>, grid3, 512, smem3, p, mq3, mk, mv, O, why,
                                 n, fs_cu_stream(pp));
    }
    /* version 17 orders the blocks when rows differ in length (causal, window): heads in groups
     * whose K and V (2 · n_kv · d · 2 bytes a query head, counted so even under GQA) fit 16 MiB of
     * the 50 MB L2; otherwise groups of one head, which is version 14's order */
    const bool ragged = pp->mask == FS_MASK_CAUSAL || pp->mask == FS_MASK_WINDOW;
    const long heads = (long)pp->batch * pp->n_q_heads;
    prefill_params po = p;
    if (version >= 17) {
        const long per_group = (16L << 20) / (4L * p.n_kv * D);
        po.group_heads = !ragged ? 1 : (int)(per_group < 1 ? 1 : per_group > heads ? heads : per_group);
    }
    /* versions 30 and 31: the fastest form of each head size and mask so far, with the lean mask
     * (and in 31 the lazy maximum) */
    if (version == 30) return hopper_best<T, D, 30>(pp, p, po, grid.x, heads, ragged, mq, mk, mv, K, V, O, why, n);
    if (version == 31 || (version == 32 && ragged))
        return hopper_best<T, D, 31>(pp, p, po, grid.x, heads, ragged, mq, mk, mv, K, V, O, why, n);
    if (version == 32) return hopper_split<T, D>(pp, p, grid.x, heads, mq, K, V, O, why, n);
    /* version 33: version 31 with the persistent kernels on wg_item_seq's loop */
    if (version == 33) return hopper_best<T, D, 33>(pp, p, po, grid.x, heads, ragged, mq, mk, mv, K, V, O, why, n);
    /* version 34: version 31 with cuDNN's tile at d = 64 */
    if (version == 34) return hopper_best<T, D, 34>(pp, p, po, grid.x, heads, ragged, mq, mk, mv, K, V, O, why, n);
    /* version 35: version 34 where the keys are fewer than 4096, else version 31 */
    if (version == 35) return hopper_best<T, D, 35>(pp, p, po, grid.x, heads, ragged, mq, mk, mv, K, V, O, why, n);
    /* version 18 at d = 64 when every query tile sees keys (no mask, or causal / window with
     * n_kv ≥ n_q); otherwise, and at d = 128 and 256, version 17. Version 29 at d = 64 under a
     * causal or window mask where every query tile sees keys: version 18's persistent blocks (two
     * Q buffers, key tiles of 128) with version 28's loop */
    if constexpr (D == 64) {
        /* two Q buffers and three stages: 1 + 2 · 16 + 3 · 32 KiB */
        const size_t smem18 = 1024 + 2 * (size_t)TQ + 2 * 3 * (size_t)TK + 8 * (4 + 3 * 3);
        if (version == 18 && (!ragged || p.mask.offset >= 0))
            return launch_persist<T>(prefill_persist<T, D, BK, 3>, smem18, grid.x, heads, p, mq, mk, mv, O, why, n, pp);
        if (version == 29 && ragged && p.mask.offset >= 0)
            return launch_persist<T>(prefill_persist<T, D, BK, 3, 23, 2>, smem18, grid.x, heads, p, mq, mk, mv, O, why,
                                     n, pp);
    }
    /* version 28 at d = 64 under a causal or window mask: version 23's kernel (key tiles of 128,
     * version 17's block order) with version 26's quarter of the exponentials by the polynomial;
     * otherwise version 27 */
    if constexpr (D == 64) if (version >= 28 && ragged) {
        const size_t smem28 = 1024 + TQ + 2 * 3 * (size_t)TK + 8 * (1 + 3 * 3);
        return launch_overlap<T>(prefill_overlap<T, D, BK, 3, true, 2, 2, true, 23>, dim3((unsigned)(grid.x * heads)),
                                 384, smem28, po, mq, mk, mv, O, why, n, fs_cu_stream(pp));
    }
    /* versions 25 and 26: version 18's persistent blocks with version 23's loop, when every query
     * tile sees keys (as version 18): at d = 64 with version 24's key tiles of 192 and three stages
     * (1 + 2 · 16 + 3 · 48 KiB), at d = 128 with two stages (1 + 2 · 32 + 2 · 64 KiB: two Q
     * buffers and three stages do not fit). Version 26 computes a quarter of the exponentials by
     * the polynomial at d = 64 (at d = 128 it is version 25). Otherwise version 24. */
    const bool persist25 = version == 25 || version == 26 || (D == 64 && version >= 27);
    if constexpr (D != 256) if (persist25 && (!ragged || p.mask.offset >= 0)) {
        constexpr int BK25 = D == 64 ? 192 : 128, ST25 = D == 64 ? 3 : 2, TK25 = BK25 * D * 2;
        CUtensorMap mk25, mv25;
        if ((st = make_map(&mk25, K, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BK25, why, n)) != FS_OK) return st;
        if ((st = make_map(&mv25, V, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BK25, why, n)) != FS_OK) return st;
        const size_t smem25 = 1024 + 2 * (size_t)TQ + 2 * ST25 * (size_t)TK25 + 8 * (4 + 3 * ST25);
        auto kern25 = prefill_persist<T, D, BK25, ST25, 23>;
        if constexpr (D == 64) if (version >= 26) kern25 = prefill_persist<T, D, BK25, ST25, 23, 2>;
        return launch_persist<T>(kern25, smem25, grid.x, heads, p, mq, mk25, mv25, O, why, n, pp);
    }
    /* version 27 at d = 128 and 256: version 25 with one Q buffer, so that d = 128 keeps three
     * stages (1 + 32 + 3 · 64 KiB, as version 17; at d = 256 1 + 64 + 2 · 64 KiB with key tiles of
     * 64); as version 25 only where every query tile sees keys, else version 23 */
    if constexpr (D != 64) if (version >= 27 && (!ragged || p.mask.offset >= 0)) {
        constexpr int ST27 = D == 128 ? 3 : 2;
        const size_t smem27 = 1024 + (size_t)TQ + 2 * ST27 * (size_t)TK + 8 * (4 + 3 * ST27);
        return launch_persist<T>(prefill_persist<T, D, BK, ST27, 23, 0, 1>, smem27, grid.x, heads, p, mq, mk, mv, O,
                                 why, n, pp);
    }
    /* version 20 at d = 64: version 17 with Bk = 192 and three stages (1 + 16 + 3 · 48 KiB); version
     * 24 (and 25-27 where they fall back) the same with version 23's loop */
    if constexpr (D == 64) if (version == 20 || version >= 24) {
        constexpr int BK20 = 192;
        CUtensorMap mk20, mv20;
        if ((st = make_map(&mk20, K, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BK20, why, n)) != FS_OK) return st;
        if ((st = make_map(&mv20, V, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BK20, why, n)) != FS_OK) return st;
        const size_t smem20 = 1024 + TQ + 2 * 3 * (size_t)BK20 * D * 2 + 8 * (1 + 3 * 3);
        auto kern20 = version == 20 ? prefill_overlap<T, D, BK20, 3, true, false, 2, true>
                                    : prefill_overlap<T, D, BK20, 3, true, false, 2, true, 23>;
        return launch_overlap<T>(kern20, dim3((unsigned)(grid.x * heads)), 384, smem20, po, mq, mk20, mv20, O, why, n,
                                 fs_cu_stream(pp));
    }
    /* version 19 at d = 128: version 17 with Bk = 176 and two stages (1 + 32 + 2 · 88 KiB) */
    if constexpr (D == 128) if (version == 19) {
        constexpr int BK19 = 176;
        CUtensorMap mk19, mv19;
        if ((st = make_map(&mk19, K, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BK19, why, n)) != FS_OK) return st;
        if ((st = make_map(&mv19, V, pp->dtype, D, p.n_kv, pp->batch * pp->n_kv_heads, BK19, why, n)) != FS_OK) return st;
        const size_t smem19 = 1024 + TQ + 2 * 2 * (size_t)BK19 * D * 2 + 8 * (1 + 3 * 2);
        return launch_overlap<T>(prefill_overlap<T, D, BK19, 2, true, false, 2, true>, dim3((unsigned)(grid.x * heads)),
                                 384, smem19, po, mq, mk19, mv19, O, why, n, fs_cu_stream(pp));
    }
    const size_t smem = 1024 + TQ + 2 * stages * (size_t)TK + 8 * (1 + 3 * stages);
    auto kern = version == 11 ? prefill_tma<T, D, BK, STAGES>
              : version == 12 ? prefill_overlap<T, D, BK, STAGES, false>
              : version == 13 ? prefill_overlap<T, D, BK, STAGES, true>
              : version == 15 ? prefill_overlap<T, D, BK, (D == 256 ? 2 : 3), true, true>
              : version == 21 ? prefill_overlap<T, D, BK, (D == 256 ? 2 : 3), true, false, 2, true, 21>
              : version == 22 ? prefill_overlap<T, D, BK, (D == 256 ? 2 : 3), true, false, 2, true, 22>
              : version >= 23 ? prefill_overlap<T, D, BK, (D == 256 ? 2 : 3), true, false, 2, true, 23>
              : version >= 17 ? prefill_overlap<T, D, BK, (D == 256 ? 2 : 3), true, false, 2, true>
                              : prefill_overlap<T, D, BK, (D == 256 ? 2 : 3), true>;   /* 14, and 16 at d = 128, 256 */
    if (version >= 17)
        return launch_overlap<T>(kern, dim3((unsigned)(grid.x * heads)), 384, smem, po, mq, mk, mv, O, why, n,
                                 fs_cu_stream(pp));
    return launch_overlap<T>(kern, grid, 384, smem, p, mq, mk, mv, O, why, n, fs_cu_stream(pp));
}

fs_status fs_cu_hopper_prefill(const fs_cuda_prefill *pp, const prefill_params &p, int version, const void *Q,
                               const void *K, const void *V, void *O, char *why, size_t n)
{
    char what[32];
    snprintf(what, sizeof what, "prefill version %d", version);
    fs_status st = hopper_device(what, why, n);
    if (st != FS_OK) return st;
    const bool bf = pp->dtype == FS_CUDA_BF16;
    if (pp->d == 64)
        return bf ? hopper_d<__nv_bfloat16, 64>(pp, p, version, Q, K, V, O, why, n)
                  : hopper_d<__half, 64>(pp, p, version, Q, K, V, O, why, n);
    if (pp->d == 128)
        return bf ? hopper_d<__nv_bfloat16, 128>(pp, p, version, Q, K, V, O, why, n)
                  : hopper_d<__half, 128>(pp, p, version, Q, K, V, O, why, n);
    if (pp->d == 256)
        return bf ? hopper_d<__nv_bfloat16, 256>(pp, p, version, Q, K, V, O, why, n)
                  : hopper_d<__half, 256>(pp, p, version, Q, K, V, O, why, n);
    if (why && n) snprintf(why, n, "prefill version %d takes d = 64, 128 or 256, not %d", version, pp->d);
    return FS_ERR_ARG;
}
