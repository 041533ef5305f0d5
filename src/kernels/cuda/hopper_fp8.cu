/* hopper_fp8.cu: the e4m3 (FP8) forward, built for Hopper only (sm_90a), and its pre-passes.
 *
 * Inputs in eight bits halve the bytes of the 16-bit kernels and double the tensor cores' rate:
 * wgmma with e4m3 operands takes k = 32 a step (32 bytes of a row, as k = 16 does in 16 bits).
 * The kernel is prefill version 14's schedule (hopper_prefill.cu): a producer warpgroup issuing
 * TMA copies into a ring of stages, two consumer warpgroups of 64 query rows taking turns at
 * the tensor cores (ping-pong), S_j = Q K_jᵀ issued together with O += P_{j−1} V_{j−1}. What
 * changes for eight bits:
 *
 *  - Both operands of an 8-bit wgmma must be K-major (the transpose flags exist only for 16-bit
 *    types). For S = Q Kᵀ they are: Q and K are stored with d contiguous. For O += P V the
 *    reduction runs over keys, so V must be stored with keys contiguous: the pre-pass
 *    fs_cuda_fp8_quantize(FS_FP8_V_T) writes V transposed, (heads, d, n_kv rounded up to 32),
 *    once, so each V tile is a 128-row (d) × 128-byte (keys) box, the same shape as a K tile.
 *  - P comes from registers as the A operand. The f32 accumulator of S gives thread (g, t) of a
 *    warp the keys 8i + 2t and 8i + 2t + 1 of rows g and g + 8, while an 8-bit A fragment wants
 *    keys 4t .. 4t + 3 and 16 + 4t .. 16 + 4t + 3 of each 32. Rather than moving bytes between
 *    threads, the pre-pass stores V's keys in the order the registers already hold P: within
 *    each 32 keys, column k of the transposed V holds key σ(k) = (k & 16) + 2·((k >> 2) & 3) +
 *    (k & 1) + 8·((k >> 1) & 1). Since P V sums over keys, any order is right as long as P and V
 *    agree, and the kernel packs P into fragments with no shuffle at all.
 *  - Descales: an e4m3 code x stands for x · descale (one per tensor, on the device, written by
 *    the quantizing pre-pass); q_descale · k_descale folds into the softmax's scale, v_descale
 *    into the final 1/ℓ. P is computed as 2^(s − m + 8), in [0, 256] instead of [0, 1], so that
 *    small weights stay in e4m3's normal range (its smallest normal is 2^−6); the 2^8 cancels in
 *    O = o / ℓ (ℓ summed from the same values).
 *  - Output in bfloat16.
 *
 * d = 256 (versions 8-10): the same kernel with D = 256. Q and K tiles are two column blocks of
 * 128 bytes (one TMA box each, eight k-steps for S), a Vᵀ tile is one box of 256 rows (d) ×
 * 128 bytes (keys), P V is m64n256k32 and O is 128 floats a thread. Tiles stay 128 keys (a Vᵀ
 * tile's keys are its 128-byte rows, the swizzle every descriptor here assumes); with Q 32 KiB
 * and a stage of K and Vᵀ 64 KiB, three stages fill 224 of the 227 KiB. O (128) + S (64) + P of
 * the previous tile (16) is 208 registers of the 240, so the overlapped schedules fit unspilled.
 *
 * Versions 11-15: versions 4, 6, 7, 8 and 9 with the mask hoisted out of the loop over the
 * scores (f8_softmax's HOIST). In versions 1-10 the test of a tile's class sits inside that loop,
 * where the compiler predicates each score's mask arithmetic instead of branching around it, so
 * full tiles spend issue slots on it too; float16 prefill version 21 measured the same fix at
 * +14 % (d = 128, no mask). Here the issue slots matter more: at d = 128 the e4m3 products are
 * as fast as the exponentials, and the softmax's instructions are what is left to hide.
 * Measured (H100, 2026-11-27, `2026-11-27-fp8-hoist-run2`): version 12 executes 34 % fewer
 * instructions than version 6 and is 30 and 39 % faster without a mask (763.6 against 588.2
 * TFLOP/s at N = 4096, 903.0 against 649.0 at 16384), 41 and 67 % causal; at d = 256 version 14
 * is 12-34 % faster than version 8.
 *
 * Versions 16 and 17: versions 12 and 14 with each wgmma's matrix descriptor made as the tile's
 * base descriptor plus a constant (hopper_common.cuh's sw128_lo and sw128_at, float16 prefill
 * version 23's change): in version 12's profile a seventh of the instructions executed were the
 * uniform datapath's integer work (ULOP3, UIADD3, USHF, UMOV, R2UR). Measured (H100, 2026-11-27,
 * `2026-11-27-fp8-hoist-run2`): 6 % fewer instructions (ULOP3 and USHF), +6 % at N = 4096
 * without a mask, within ±3 % elsewhere.
 * Tried on top of them and taken out, no faster (patches in bench/cuda/results/
 * 2026-11-27-lazy-split-trial, -pingpong-poly-trial and -half-exp-trial): a lazy running maximum
 * (threshold 0.75, so that P stays under 448), the ping-pong at d = 128, a quarter of the
 * exponentials by the polynomial, and half2 exponentials (two MUFU operations each on an H100)
 * with ℓ summed by the tensor cores through a column of ones beside Vᵀ (wrong on long rows: the
 * e4m3 wgmma's accumulator loses low bits of a growing positive sum).
 *
 * Versions 18-25: scales per block, and persistent blocks. 18 and 19 are 16 and 17 with one
 * scale per 64 rows of Q and per 128 keys of K and V (fs_cuda_fp8_quantize's block, the engine's
 * FS_SCALE_BLOCK): S's scale is taken anew at each key tile, the tile's descales loaded while the
 * tile before it is computed, and o is kept in units of the current tile's V descale (every tile
 * rescales o). 24 and 25 keep o in units of the running maximum of V's descales instead, folding
 * the tile's share into P's exponent, so o is rescaled only when that maximum grows (f8_item says
 * how). 20 and 21 are 16 and 17 on persistent blocks, one an SM, over prefill version 18's pairs
 * of query tiles (pair_item), the K/V ring running on across items and Q given back after each
 * item's last S; 22 and 23 are 20 and 21 with the block scales. Measured (H100, 2026-11-27,
 * `2026-11-27-fp8-blocks-persist-run3`, two timings in one call): the block scales cost 0-7 % at
 * d = 128 and 3-11 % at d = 256 against 16 and 17; folded (24, 25), -8 to +3 % at both, and at
 * d = 256, N = 16384, 3-15 % faster than 19. The persistent blocks read -10 to +2 % of 16 and 17
 * but for d = 256, N = 4096 causal (+9 to +11 %): at these shapes a block's start and end are a
 * small part of its 32-128 key tiles.
 *
 * Versions 26 and 27: float16 prefill version 33's turns at the exponentials (f8_softmax's TURNS),
 * each warpgroup one tile at a time: 26 is version 16 with them (three warpgroups in rotation), 27
 * two warpgroups at d = 256. Measured (H100, 2026-11-27, `2026-11-27-fp8-turns-run4`): 6-14 %
 * slower than 16 and 8-22 % slower than 17. In e4m3 at d = 128 the products take no longer than
 * the exponentials, so a warpgroup waiting for its turn idles the tensor cores as often as it
 * frees the special-function unit.
 *
 * Versions 28 and 29: 20 and 21 with, without a mask, float16 prefill version 32's last round
 * split (hopper_common.cuh's split_sched: whole rounds of query tiles, then the last round's cut
 * into equal runs of key tiles for every SM, merged by the warp finishing an item's last piece);
 * under a mask, 20 and 21. Measured (H100, 2026-11-27, `2026-11-27-fp8-split-run7`, the rounds in
 * shuffled orders): at d = 128 +6 to +9 % over 20 and +2 to +9 % over 16 (894.8 and 901.8 TFLOP/s
 * at N = 16384); at d = 256 within the spread of 17 and 21. Runs 1-6 of these versions timed in
 * one fixed order, which moved the same kernel by up to 9 % with its place in it.
 *
 * Incoherent processing (optional, FS_FP8_ROWS_HADAMARD): Q and K rows multiplied by the same
 * random-sign Hadamard matrix H·diag(s)/√d before quantizing; it is orthogonal, so Q Kᵀ is
 * unchanged in exact arithmetic, while an outlier column is spread over all d columns and the
 * per-tensor scale no longer has to cover it.
 */
#include <cuda_fp8.h>

#include "kernels/cuda/hopper_common.cuh"

#define FP8_BQ 128       /* query rows a block: two consumer warpgroups of 64 */
/* keys a tile (BK): 128, or 256 (version 7); K and Vᵀ tiles of BK · d bytes */

/* ---- wgmma with e4m3 operands ---------------------------------------------------------------
 * fp8_ss<N>: d (64×N f32, N = 128 or 256) = (acc ? d : 0) + A (64×32, descriptor) · B (32×N,
 * descriptor), both K-major. fp8_rs<N>: d (64×N) += A (64×32, four registers a thread: the 8-bit
 * A-fragment layout) · B (32×N, descriptor); N = d, the head size. */
template <int N> __device__ void fp8_ss(float *d, uint64_t da, uint64_t db, int acc);
template <> __device__ __forceinline__ void fp8_ss<128>(float *d, uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
        : FS_WG_D64
        : "l"(da), "l"(db), "r"(acc));
}
template <> __device__ __forceinline__ void fp8_ss<256>(float *d, uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1;\n}\n"
        : FS_WG_D128
        : "l"(da), "l"(db), "r"(acc));
}
template <int N> __device__ void fp8_rs(float *d, const uint32_t a[4], uint64_t db);
template <> __device__ __forceinline__ void fp8_rs<128>(float *d, const uint32_t a[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
        : FS_WG_D64
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
template <> __device__ __forceinline__ void fp8_rs<256>(float *d, const uint32_t a[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1;\n}\n"
        : FS_WG_D128
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
/* Keep P's 8-bit fragments alive and unchanged until the wgmma reading them has been waited for
 * (hopper_prefill.cu's a_fence, 32 keys a fragment). The fences, commits, waits and descriptors
 * around these wgmma are hopper_common.cuh's (wg_fence, wg_commit, wg_wait, reg_fence,
 * sw128_desc: an 8-bit K-major operand has the 16-bit one's 128-byte rows). */
template <int BK> __device__ __forceinline__ void f8_a_fence(uint32_t (&a)[BK / 32][4])
{
#pragma unroll
    for (int kk = 0; kk < BK / 32; kk++)
#pragma unroll
        for (int i = 0; i < 4; i++) asm volatile("" : "+r"(a[kk][i])::"memory");
}

/* Two floats to two e4m3 bytes (round to nearest even, saturating at ±448): a in the low byte. */
__device__ __forceinline__ uint32_t f8x2(float a, float b)
{
    return (uint32_t)__nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
}

/* ---- one consumer warpgroup ------------------------------------------------------------------ */

/* Class of key tile kt for rows [r0, r1) (none, causal, window): full or partial (the caller
 * visits only tiles inside key_range, so none is skipped). */
template <int BK> __device__ __forceinline__ bool f8_full(const prefill_params &p, int r0, int r1, int kt)
{
    const int c0 = kt * BK, c1 = min(c0 + BK, p.n_kv);
    if (c1 - c0 < BK) return false;
    if (p.mask.kind == FS_MASK_NONE) return true;
    const long p0 = (long)r0 + p.mask.offset, p1 = (long)r1 - 1 + p.mask.offset;
    bool full = (long)c1 - 1 <= p0;
    if (p.mask.kind == FS_MASK_WINDOW) full = full && c0 > p1 - p.mask.window;
    return full;
}

/* 2^x for x ≤ 0 on the FMA and integer pipes (prefill version 15's exp2_fma: a degree-3
 * polynomial on the fraction, the integer part into the exponent bits; exactly +0 below −127). */
__device__ __forceinline__ float f8_exp2_fma(float x)
{
    x = fmaxf(x, -127.f);
    const float t = x + 12582912.f;
    const float f = x - (t - 12582912.f);
    const float q = fmaf(fmaf(fmaf(0.05500896f, f, 0.24221100f), f, 0.69328292f), f, 1.f);
    const unsigned n = (unsigned)(__float_as_int(t) - 0x4B400000);
    return __int_as_float((int)((unsigned)__float_as_int(q) + (n << 23)));
}

/* The online softmax of this thread's two rows (row0, row0 + 8) on tile kt, as version 14's
 * wg_softmax, with P = 2^(s·scale2 − m + 8): s becomes P, ℓ is updated, α returned. NPOLY of
 * every 4 chunks of 8 keys take their exponentials from f8_exp2_fma instead of the MUFU.
 * HOIST (versions 11 and up): the mask as a loop of its own (hopper_common.cuh's wg_mask, lean),
 * entered only by a partial tile, as float16 prefill versions 21 and 30 do; in versions 1-10 the
 * test of `full` sits inside the loop over the elements. lr, inv_r (versions 24 and 25): P is
 * made 2^lr times smaller (lr ≤ 0) while ℓ still sums the P of the formula, through inv_r = 2^−lr.
 * TURNS (versions 26 and 27: the number of consumer warpgroups): warpgroup cw waits on named
 * barrier 1 + cw before its exponentials and lets the next one go after them (float16 prefill
 * version 33's exp_turns), so one warpgroup at a time has the special-function unit. */
template <int BK, int NPOLY, bool HOIST = false, int TURNS = 0>
__device__ __forceinline__ void f8_softmax(const prefill_params &p, float scale2, float *s, float (&m)[2],
                                           float (&l)[2], float (&alpha)[2], int kt, bool full, int row0, int t4,
                                           float lr = 0.f, float inv_r = 1.f, int cw = 0)
{
    if (HOIST && !full) wg_mask<BK, true>(p, s, kt, row0, t4);
    float bm[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int i = 0; i < BK / 8; i++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            if (!HOIST && !full) {
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
        bm[x] *= scale2;
        const float mn = fmaxf(m[x], bm[x]);
        base[x] = mn == -INFINITY ? 0.f : mn;
        alpha[x] = fast_exp2(m[x] - base[x]);
        m[x] = mn;
        base[x] -= 8.f + lr;   /* P up to 2^8 (times 2^lr ≤ 1 in versions 24 and 25) */
    }
    if (TURNS) bar_sync(1 + cw);
#pragma unroll
    for (int i = 0; i < BK / 2; i++) {
        const float x = fmaf(s[i], scale2, -base[(i >> 1) & 1]);
        s[i] = ((i >> 2) & 3) < NPOLY ? f8_exp2_fma(x) : fast_exp2(x);
        sum[(i >> 1) & 1] += s[i];
    }
    if (TURNS) bar_arrive(1 + (cw + 1) % (TURNS > 0 ? TURNS : 1));
#pragma unroll
    for (int x = 0; x < 2; x++) l[x] = alpha[x] * l[x] + sum[x] * inv_r;
}

/* P as 8-bit A fragments, 32 keys a fragment, with no data moved between threads: register 0
 * takes this thread's row-g values of accumulator chunks 4kk and 4kk + 1 (keys 2t, 2t + 1,
 * 8 + 2t, 9 + 2t of the 32), register 2 those of chunks 4kk + 2 and 4kk + 3, registers 1 and 3
 * the same for row g + 8. The fragment calls them keys 4t .. 4t + 3 and 16 + 4t .. 16 + 4t + 3:
 * the transposed V is stored in that order (σ in the comment at the top). */
template <int BK> __device__ __forceinline__ void f8_pack(uint32_t (&a)[BK / 32][4], const float *s)
{
#pragma unroll
    for (int kk = 0; kk < BK / 32; kk++) {
        const float *c = s + 16 * kk;
        a[kk][0] = f8x2(c[0], c[1]) | (f8x2(c[4], c[5]) << 16);
        a[kk][1] = f8x2(c[2], c[3]) | (f8x2(c[6], c[7]) << 16);
        a[kk][2] = f8x2(c[8], c[9]) | (f8x2(c[12], c[13]) << 16);
        a[kk][3] = f8x2(c[10], c[11]) | (f8x2(c[14], c[15]) << 16);
    }
}

template <int D> __device__ __forceinline__ void f8_rescale(float (&o)[D / 2], const float (&alpha)[2])
{
    if (__any_sync(0xffffffff, alpha[0] != 1.f || alpha[1] != 1.f))
#pragma unroll
        for (int i = 0; i < D / 2; i++) o[i] *= alpha[(i >> 1) & 1];
}

/* Issue S = Q_wg Kᵀ (d bytes: d / 32 k-steps of 32) and commit. Q and K tiles are d / 128
 * column blocks of 128 bytes: Q's of BQ rows (sQ already offset to this warpgroup's 64), K's of
 * BK rows. DESC (versions 16 and 17): each descriptor made as the tile's base plus a constant
 * (sw128_lo, sw128_at), as float16 prefill version 23 does, instead of sw128_desc's masks and
 * shifts for every wgmma. */
template <int D, int BQ, int BK, bool DESC = false>
__device__ __forceinline__ void f8_scores_issue(float (&s)[BK / 2], uint32_t sQ, uint32_t sK)
{
    reg_fence<BK / 2>(s);
    wg_fence();
    if constexpr (DESC) {
        const uint32_t q = sw128_lo(sQ), k = sw128_lo(sK);
#pragma unroll
        for (int kk = 0; kk < D / 32; kk++)
            fp8_ss<BK>(s, sw128_at(q, (kk >> 2) * BQ * 128 + (kk & 3) * 32),
                       sw128_at(k, (kk >> 2) * BK * 128 + (kk & 3) * 32), kk > 0);
    } else {
#pragma unroll
        for (int kk = 0; kk < D / 32; kk++)
            fp8_ss<BK>(s, sw128_desc(sQ + (kk >> 2) * BQ * 128 + (kk & 3) * 32),
                       sw128_desc(sK + (kk >> 2) * BK * 128 + (kk & 3) * 32), kk > 0);
    }
    wg_commit();
}
/* Issue O += P V and commit. Vᵀ tile: BK / 128 blocks of D rows (d) × 128 bytes (keys). */
template <int D, int BK, bool DESC = false>
__device__ __forceinline__ void f8_pv_issue(float (&o)[D / 2], const uint32_t (&a)[BK / 32][4], uint32_t sVt)
{
    reg_fence<D / 2>(o);
    wg_fence();
    if constexpr (DESC) {
        const uint32_t v = sw128_lo(sVt);
#pragma unroll
        for (int kk = 0; kk < BK / 32; kk++) fp8_rs<D>(o, a[kk], sw128_at(v, (kk >> 2) * D * 128 + (kk & 3) * 32));
    } else {
#pragma unroll
        for (int kk = 0; kk < BK / 32; kk++) fp8_rs<D>(o, a[kk], sw128_desc(sVt + (kk >> 2) * D * 128 + (kk & 3) * 32));
    }
    wg_commit();
}

/* Wait for every wgmma issued (the last being O += P V), keeping P's fragments and o in place
 * until then. */
template <int D, int BK> __device__ __forceinline__ void f8_pv_wait(float (&o)[D / 2], uint32_t (&a)[BK / 32][4])
{
    wg_wait<0>();
    f8_a_fence<BK>(a);
    reg_fence<D / 2>(o);
}

/* The descales of one warpgroup's item. BLOCKS (versions 18, 19, 22-25): Q's of each 64 rows,
 * K's and V's of each 128 keys (one a key tile), so S's scale is taken anew at every tile. V's
 * descale vd_j cannot be folded into the end as one factor; o is kept in units of a descale vc:
 *  - versions 18, 19, 22, 23: vc = vd_j, the current tile's: before P_j V_j is added,
 *    o ← o · α · vd_{j−1} / vd_j (folded into α, so every tile rescales o);
 *  - versions 24, 25 (VFOLD): vc = max(vd_0 .. vd_j), a running maximum like m: P_j is made
 *    vd_j / vc times smaller in its exponent (free), ℓ still sums the unscaled P, and o is rescaled
 *    by vc_old / vc_new only when the maximum grows, as by α when m does.
 * O = o · vc / ℓ at the end. Otherwise one descale of each (per tensor), folded once. */
template <bool BLOCKS> struct f8_scales {
    float qs2;            /* the softmax scale (log2 e / √d) times Q's descale */
    const float *kd, *vd; /* this KV head's: indexed by key tile (BLOCKS), else [0] */
};

/* One consumer warpgroup's item: its 64 query rows [wr0, wr1) (row0: this thread's first) against
 * key tiles kt_lo .. kt_lo + nt − 1, which the producer fills as the ring's fills g0, g0 + 1, ...
 * (g0 = 0 but in the persistent versions). Leaves o, m, ℓ and, in *vsc, the descale o is in
 * units of. q_release (persistent versions): the Q buffer's empty barrier, arrived at by each warp
 * once the item's last S = Q Kᵀ is done. PERSIST: the ping-pong's hand-over goes on past the
 * item (the kernel takes the last one). */
template <int D, int BQ, int BK, int STAGES, int NPOLY, bool PINGPONG, bool OVERLAP, bool HOIST, bool DESC,
          bool BLOCKS, bool PERSIST, bool VFOLD = false, int TURNS = 0>
__device__ __forceinline__ void f8_item(const prefill_params &p, const f8_scales<BLOCKS> &sc8, uint32_t sQw,
                                        unsigned char *sK, unsigned char *sV, uint64_t *k_full, uint64_t *v_full,
                                        uint64_t *empty, uint64_t *q_release, int kt_lo, int nt, int g0, int cw,
                                        int wr0, int wr1, int row0, int t4, int lane, float (&o)[D / 2],
                                        float (&m)[2], float (&l)[2], float *vsc)
{
    static_assert(BLOCKS || !VFOLD, "the running maximum of V's descale is for per-block scales");
    constexpr int TK = BK * D;
    float sc[BK / 2], alpha[2] = {1.f, 1.f};   /* set by each tile's softmax before use */
    uint32_t a[BK / 32][4];
    /* BLOCKS: tile it's K and V descales are loaded while tile it − 1 is computed (kx, vx), so
     * their latency (from L2) stays off the softmax's path; take(it) makes them current (kc, vc) */
    float kc = 1.f, vc = 1.f, kx = 1.f, vx = 1.f;
    auto fetch = [&](int it) {
        if (BLOCKS && it < nt) {
            kx = sc8.kd[kt_lo + it];
            vx = sc8.vd[kt_lo + it];
        }
    };
    auto take = [&](int it) {
        if (BLOCKS) {
            kc = kx;
            vc = vx;
            fetch(it + 1);
        }
    };
    fetch(0);
    float vcur = BLOCKS ? vx : 1.f;                 /* the descale o is in units of (vc) */
    float ratio = 1.f, lr = 0.f, inv_r = 1.f;        /* o's change of units; P's factor 2^lr */
    const float scale2 = sc8.qs2 * sc8.kd[0];   /* per tensor: the one scale */
    auto s2 = [&] { return BLOCKS ? sc8.qs2 * kc : scale2; };
    /* V's descale of the current tile, before its softmax: the new units of o, and P's factor */
    auto v_pre = [&] {
        if (BLOCKS) {
            const float vn = vc;
            if (VFOLD) {
                const float vm = fmaxf(vcur, vn);
                ratio = vcur / vm;
                lr = __log2f(vn / vm);
                inv_r = vm / vn;
                vcur = vm;
            } else {
                ratio = vcur / vn;
                vcur = vn;
            }
        }
    };
    /* o's change of units folded into α after the softmax (which updates ℓ with α alone) */
    auto v_step = [&] {
        if (BLOCKS) {
            alpha[0] *= ratio;
            alpha[1] *= ratio;
        }
    };
    auto q_done = [&](int it) {
        if (PERSIST && it == nt - 1) {
            __syncwarp();
            if (lane == 0) mbar_arrive(q_release);
        }
    };
    auto my_turn = [&] { if (PINGPONG) bar_sync(1 + cw); };
    auto your_turn = [&](bool last) { if (PINGPONG && !(cw == 1 && last && !PERSIST)) bar_arrive(1 + (cw + 1) % 2); };
    if (!OVERLAP) {   /* one tile at a time: S, softmax, P V, each waited for */
        for (int it = 0; it < nt; it++) {
            const int s = (g0 + it) % STAGES, kt = kt_lo + it;   /* ring_stage spelled out: through the call,
                                                                * nvcc computed the tile addresses differently */
            take(it);
            ring_wait_full<STAGES>(k_full, g0 + it);
            f8_scores_issue<D, BQ, BK, DESC>(sc, sQw, smem_u32(sK + s * TK));
            wg_wait<0>();
            reg_fence<BK / 2>(sc);
            q_done(it);
            v_pre();
            f8_softmax<BK, NPOLY, HOIST, TURNS>(p, s2(), sc, m, l, alpha, kt, f8_full<BK>(p, wr0, wr1, kt), row0,
                                                t4, lr, inv_r, cw);
            v_step();
            f8_rescale<D>(o, alpha);
            f8_pack<BK>(a, sc);
            ring_wait_full<STAGES>(v_full, g0 + it);
            f8_pv_issue<D, BK, DESC>(o, a, smem_u32(sV + s * TK));
            f8_pv_wait<D, BK>(o, a);
            ring_release<STAGES>(empty, g0 + it, lane);
        }
    }
    if (OVERLAP && nt > 0) {
        const int s = ring_stage<STAGES>(g0);
        take(0);
        ring_wait_full<STAGES>(k_full, g0);
        my_turn();
        f8_scores_issue<D, BQ, BK, DESC>(sc, sQw, smem_u32(sK + s * TK));
        your_turn(false);
        wg_wait<0>();
        reg_fence<BK / 2>(sc);
        q_done(0);
        v_pre();
        f8_softmax<BK, NPOLY, HOIST>(p, s2(), sc, m, l, alpha, kt_lo, f8_full<BK>(p, wr0, wr1, kt_lo), row0, t4,
                                     lr, inv_r);
        f8_pack<BK>(a, sc);
    }
    for (int it = 1; OVERLAP && it < nt; it++) {
        const int s = ring_stage<STAGES>(g0 + it), sp = ring_stage<STAGES>(g0 + it - 1), kt = kt_lo + it;
        take(it);
        ring_wait_full<STAGES>(k_full, g0 + it);
        ring_wait_full<STAGES>(v_full, g0 + it - 1);
        my_turn();
        f8_scores_issue<D, BQ, BK, DESC>(sc, sQw, smem_u32(sK + s * TK));   /* S_j */
        f8_pv_issue<D, BK, DESC>(o, a, smem_u32(sV + sp * TK));        /* O += P_{j−1} V_{j−1} */
        your_turn(false);
        wg_wait<1>();                                     /* S_j is ready */
        reg_fence<BK / 2>(sc);
        q_done(it);
        v_pre();
        f8_softmax<BK, NPOLY, HOIST>(p, s2(), sc, m, l, alpha, kt, f8_full<BK>(p, wr0, wr1, kt), row0, t4, lr,
                                     inv_r);
        f8_pv_wait<D, BK>(o, a);                         /* P_{j−1} V_{j−1} is done */
        ring_release<STAGES>(empty, g0 + it - 1, lane);
        v_step();
        f8_rescale<D>(o, alpha);
        f8_pack<BK>(a, sc);
    }
    if (OVERLAP && nt > 0) {
        const int sp = ring_stage<STAGES>(g0 + nt - 1);
        ring_wait_full<STAGES>(v_full, g0 + nt - 1);
        my_turn();
        f8_pv_issue<D, BK, DESC>(o, a, smem_u32(sV + sp * TK));
        your_turn(true);
        f8_pv_wait<D, BK>(o, a);
        ring_release<STAGES>(empty, g0 + nt - 1, lane);
    }
    *vsc = BLOCKS ? vcur : sc8.vd[0];
}

/* O = o · vsc / ℓ in bfloat16, this thread's two rows (rows past n_q are not written; 0 where
 * the row saw no key). */
template <int D>
__device__ __forceinline__ void f8_store(const prefill_params &p, __nv_bfloat16 *Oh, const float (&o)[D / 2],
                                         const float (&l)[2], float vsc, int row0, int t4)
{
#pragma unroll
    for (int x = 0; x < 2; x++) {
        float lx = l[x];
        lx += __shfl_xor_sync(0xffffffff, lx, 1);
        lx += __shfl_xor_sync(0xffffffff, lx, 2);
        const float inv = lx > 0 ? vsc / lx : 0.f;
        const int r = row0 + 8 * x;
        if (r >= p.n_q) continue;
#pragma unroll
        for (int i = 0; i < D / 8; i++)
            *reinterpret_cast<uint32_t *>(Oh + (size_t)r * D + 8 * i + 2 * t4) =
                pack2<__nv_bfloat16>(o[4 * i + 2 * x] * inv, o[4 * i + 2 * x + 1] * inv);
    }
}

/* The descales of the item whose query rows start at wr0 (a multiple of 64) in (batch, head) row
 * qh, against KV row kvrow: descale arrays qd, kd, vd as fs_cuda_fp8_prefill_run takes them. */
template <bool BLOCKS>
__device__ __forceinline__ f8_scales<BLOCKS> f8_scales_of(const prefill_params &p, const float *qd, const float *kd,
                                                          const float *vd, size_t qh, int kvrow, int wr0)
{
    f8_scales<BLOCKS> s;
    if (BLOCKS) {
        const int nqb = (p.n_q + 63) / 64, nkb = (p.n_kv + FS_CUDA_FP8_KV_BLOCK - 1) / FS_CUDA_FP8_KV_BLOCK;
        s.qs2 = p.scale2 * qd[qh * nqb + min(wr0 / 64, nqb - 1)];   /* a warpgroup past n_q stores nothing */
        s.kd = kd + (size_t)kvrow * nkb;
        s.vd = vd + (size_t)kvrow * nkb;
    } else {
        s.qs2 = p.scale2 * qd[0];
        s.kd = kd;
        s.vd = vd;
    }
    return s;
}

/* grid (query tiles, n_q_heads, batch), 128 · (NCW + 1) threads: warpgroup 0 the producer, the
 * others the consumers (version 14's schedule with NCW = 2). Shared: Q (BQ × D B), STAGES × K
 * (BK × D B), STAGES × Vᵀ (D × BK B), each in column blocks of 128 bytes, then the barriers
 * q_full, k_full[STAGES], v_full[STAGES], empty[STAGES]. D = 128 or 256 (O: D / 2 floats a
 * thread). qd, kd, vd: device descales (fs_cuda_fp8_quantize's; per block with BLOCKS). O:
 * bfloat16. */
template <int D, int BK, int STAGES, int NPOLY, bool PINGPONG, int NCW = 2, bool OVERLAP = true, bool HOIST = false,
          bool DESC = false, bool BLOCKS = false, bool VFOLD = false, bool TURNS = false>
__global__ void __launch_bounds__(128 * (NCW + 1), 1)
prefill_fp8(prefill_params p, const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
            const __grid_constant__ CUtensorMap tmV, const float *__restrict__ qd, const float *__restrict__ kd,
            const float *__restrict__ vd, __nv_bfloat16 *__restrict__ O)
{
    constexpr int BQ = 64 * NCW, TQ = BQ * D, TK = BK * D;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sQ = align1024(smem_raw), *sK = sQ + TQ, *sV = sK + STAGES * TK;
    uint64_t *bar = reinterpret_cast<uint64_t *>(sV + STAGES * TK);
    uint64_t *q_full = bar, *k_full = bar + 1, *v_full = k_full + STAGES, *empty = v_full + STAGES;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int qt = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int kvh = h / (p.n_q_heads / p.n_kv_heads), kvrow = b * p.n_kv_heads + kvh;
    const int r0 = qt * BQ, r1 = min(r0 + BQ, p.n_q);
    const size_t qh = (size_t)b * p.n_q_heads + h;
    int lo, hi;
    key_range(p, r0, r1, &lo, &hi);
    const int kt_lo = lo / BK, nt = (hi + BK - 1) / BK - kt_lo;

    if (tid == 0) {
        mbar_init(q_full, 1);
        ring2_init(k_full, v_full, empty, STAGES, 4 * NCW);   /* one arrival per consumer warp */
    }
    __syncthreads();

    if (wg == 0) {   /* the producer: one thread issues every copy */
        wg_regs_dec<24>();
        if (tid == 0) {
            mbar_expect_tx(q_full, TQ);
            for (int cb = 0; cb < D / 128; cb++) tma_load3(sQ + cb * BQ * 128, &tmQ, 128 * cb, r0, (int)qh, q_full);
            for (int it = 0; it < nt; it++) {
                const int s = ring_stage<STAGES>(it), kt = kt_lo + it;
                ring_wait_empty<STAGES>(empty, it);
                mbar_expect_tx(k_full + s, TK);
                for (int cb = 0; cb < D / 128; cb++)   /* K: BK keys × d bytes, d / 128 boxes */
                    tma_load3(sK + s * TK + cb * BK * 128, &tmK, 128 * cb, kt * BK, kvrow, k_full + s);
                mbar_expect_tx(v_full + s, TK);
                for (int cb = 0; cb < BK / 128; cb++)   /* Vᵀ: d rows × BK keys, BK / 128 boxes */
                    tma_load3(sV + s * TK + cb * D * 128, &tmV, kt * BK + 128 * cb, 0, kvrow, v_full + s);
            }
        }
        return;
    }
    /* 240 registers a consumer thread with two consumer warpgroups, 160 with three */
    if (NCW == 2) wg_regs_inc<240>();
    else wg_regs_inc<160>();
    const int cw = wg - 1;
    const int wr0 = r0 + 64 * cw, wr1 = min(wr0 + 64, p.n_q);
    const int row0 = wr0 + 16 * ((tid >> 5) & 3) + g;
    const f8_scales<BLOCKS> sc8 = f8_scales_of<BLOCKS>(p, qd, kd, vd, qh, kvrow, wr0);
    float o[D / 2], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0}, vsc;
#pragma unroll
    for (int i = 0; i < D / 2; i++) o[i] = 0;
    static_assert(!PINGPONG || (NCW == 2 && OVERLAP), "the ping-pong takes two overlapping consumer warpgroups");
    static_assert(!TURNS || (!OVERLAP && !PINGPONG), "turns at the exponentials are for one tile at a time");
    if (PINGPONG && cw == 1 && nt > 0) bar_arrive(1);   /* warpgroup 0 takes the first turn */
    if (TURNS && cw == NCW - 1 && nt > 0) bar_arrive(1);   /* warpgroup 0 takes the first turn at the exponentials */
    mbar_wait(q_full, 0);
    f8_item<D, BQ, BK, STAGES, NPOLY, PINGPONG, OVERLAP, HOIST, DESC, BLOCKS, false, VFOLD, TURNS ? NCW : 0>(
        p, sc8, smem_u32(sQ) + cw * 64 * 128, sK, sV, k_full, v_full, empty, nullptr, kt_lo, nt, 0, cw, wr0, wr1,
        row0, t4, lane, o, m, l, &vsc);
    if (TURNS && cw == 0 && nt > 0) bar_sync(1);   /* the last warpgroup's last hand-over */
    f8_store<D>(p, O + qh * p.n_q * D, o, l, vsc, row0, t4);
}

/* Versions 20-23, 28 and 29: persistent blocks, one an SM, over a schedule's pieces of work
 * (hopper_common.cuh): pair_sched's pairs of query tiles (grid: min(pairs, SMs)), or, in versions
 * 28 and 29 without a mask, split_sched's whole rounds and a last round cut into runs of key
 * tiles, whose pieces the warp finishing an item's last one merges (the per-tensor V descale
 * applies to every piece alike, so it waits for the store). Each piece as f8_item computes it, the K/V ring running on across items
 * (fill numbers counted over the block's whole work). Q has QB buffers: the producer loads the
 * next item's Q as soon as one is given back, which each consumer warp does once its item's last
 * S = Q Kᵀ is done, so the next item's Q and first tiles land while the consumers still finish
 * the current one (its last softmax, P V and stores), where versions 1-19 leave the SM to a new
 * block. Barriers: q_full[QB], q_empty[QB], then the K/V ring's. An item without keys (possible
 * under a window or a negative causal offset) is written as 0, as in the other versions. */
template <int D, int BK, int STAGES, bool PINGPONG, int NCW, bool OVERLAP, int QB, bool BLOCKS, typename SCHED>
__global__ void __launch_bounds__(128 * (NCW + 1), 1)
prefill_fp8_persist(prefill_params p, const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                    const __grid_constant__ CUtensorMap tmV, const float *__restrict__ qd,
                    const float *__restrict__ kd, const float *__restrict__ vd, __nv_bfloat16 *__restrict__ O,
                    SCHED sched)
{
    constexpr int BQ = 64 * NCW, TQ = BQ * D, TK = BK * D;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sQ = align1024(smem_raw), *sK = sQ + QB * TQ, *sV = sK + STAGES * TK;
    uint64_t *bar = reinterpret_cast<uint64_t *>(sV + STAGES * TK);
    uint64_t *q_full = bar, *q_empty = bar + QB, *k_full = bar + 2 * QB, *v_full = k_full + STAGES,
             *empty = v_full + STAGES;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int n_qt = (p.n_q + BQ - 1) / BQ, G = p.n_q_heads / p.n_kv_heads;

    if (tid == 0) {   /* two rings, Q's and K/V's; one arrival per consumer warp */
        ring_init_bars(q_full, q_empty, QB, 4 * NCW);
        ring2_init(k_full, v_full, empty, STAGES, 4 * NCW);
    }
    __syncthreads();

    /* a piece's rows, key tiles and KV row (both roles compute the same) */
    struct item { int r0, kt_lo, nt, kvrow; };
    auto item_at = [&](const work_piece &w) {
        item it;
        it.r0 = w.qt * BQ;
        if constexpr (SCHED::split) {   /* no mask: the item's tiles are 0 .. nt − 1, the piece's a run of them */
            it.kt_lo = w.kt_lo;
            it.nt = w.nt;
        } else {
            int lo, hi;
            key_range(p, it.r0, min(it.r0 + BQ, p.n_q), &lo, &hi);
            it.kt_lo = lo / BK;
            it.nt = hi > lo ? (hi + BK - 1) / BK - it.kt_lo : 0;
        }
        it.kvrow = w.head / p.n_q_heads * p.n_kv_heads + w.head % p.n_q_heads / G;
        return it;
    };

    if (wg == 0) {   /* the producer */
        wg_regs_dec<24>();
        if (tid == 0) {
            int gt = 0, qi = 0;
            work_piece pc;
            for (int s = 0; sched.next(s, n_qt, &pc); s++) {
                if (pc.qt < 0) continue;
                const int head = pc.head;
                const item w = item_at(pc);
                const int x = ring_stage<QB>(qi);
                ring_wait_empty<QB>(q_empty, qi);
                mbar_expect_tx(q_full + x, TQ);
                for (int cb = 0; cb < D / 128; cb++)
                    tma_load3(sQ + x * TQ + cb * BQ * 128, &tmQ, 128 * cb, w.r0, head, q_full + x);
                for (int it = 0; it < w.nt; it++) {
                    const int s8 = ring_stage<STAGES>(gt + it), kt = w.kt_lo + it;
                    ring_wait_empty<STAGES>(empty, gt + it);
                    mbar_expect_tx(k_full + s8, TK);
                    for (int cb = 0; cb < D / 128; cb++)
                        tma_load3(sK + s8 * TK + cb * BK * 128, &tmK, 128 * cb, kt * BK, w.kvrow, k_full + s8);
                    mbar_expect_tx(v_full + s8, TK);
                    for (int cb = 0; cb < BK / 128; cb++)
                        tma_load3(sV + s8 * TK + cb * D * 128, &tmV, kt * BK + 128 * cb, 0, w.kvrow, v_full + s8);
                }
                gt += w.nt;
                qi++;
            }
        }
        return;
    }
    if (NCW == 2) wg_regs_inc<240>();
    else wg_regs_inc<160>();
    const int cw = wg - 1;
    static_assert(!PINGPONG || (NCW == 2 && OVERLAP), "the ping-pong takes two overlapping consumer warpgroups");
    if (PINGPONG && cw == 1) bar_arrive(1);   /* warpgroup 0 takes the first turn */
    int gt = 0, qi = 0;
    work_piece pc;
    for (int s = 0; sched.next(s, n_qt, &pc); s++) {
        if (pc.qt < 0) continue;
        const int head = pc.head;
        const item w = item_at(pc);
        const int x = ring_stage<QB>(qi);
        const int wr0 = w.r0 + 64 * cw, wr1 = min(wr0 + 64, p.n_q);
        const int row0 = wr0 + 16 * ((tid >> 5) & 3) + g;
        const f8_scales<BLOCKS> sc8 = f8_scales_of<BLOCKS>(p, qd, kd, vd, (size_t)head, w.kvrow, wr0);
        float o[D / 2], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0}, vsc;
#pragma unroll
        for (int i = 0; i < D / 2; i++) o[i] = 0;
        ring_wait_full<QB>(q_full, qi);
        if (w.nt == 0) ring_release<QB>(q_empty, qi, lane);   /* no S to wait for */
        f8_item<D, BQ, BK, STAGES, 0, PINGPONG, OVERLAP, true, true, BLOCKS, true>(
            p, sc8, smem_u32(sQ + x * TQ) + cw * 64 * 128, sK, sV, k_full, v_full, empty, q_empty + x, w.kt_lo,
            w.nt, gt, cw, wr0, wr1, row0, t4, lane, o, m, l, &vsc);
        gt += w.nt;
        qi++;
        if constexpr (SCHED::split)   /* a piece of a tail item: stored by whoever finishes it last */
            if (pc.tail >= 0 && !sched.template merge<D, NCW>(pc, cw, (tid >> 5) & 3, lane,
                                                              reinterpret_cast<float(&)[D / 64][32]>(o), m, l))
                continue;
        f8_store<D>(p, O + (size_t)head * p.n_q * D, o, l, vsc, row0, t4);
    }
    if (PINGPONG && cw == 0) bar_sync(1);   /* warpgroup 1's last hand-over */
}

/* ---- the pre-passes ------------------------------------------------------------------------- */

/* The sign of column c of the random-sign Hadamard transform with this seed (splitmix64). */
__device__ __forceinline__ float f8_sign(uint64_t seed, int c)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(c + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return ((z ^ (z >> 31)) >> 63) ? -1.f : 1.f;
}

/* One warp a row of D values: lane holds columns E·lane .. E·lane + E − 1 (E = D / 32), as
 * floats, then (HAD) times diag(signs), the Hadamard matrix (butterflies: in-thread for strides
 * below E, shuffles above) and 1/√D. */
template <typename T, int D, bool HAD>
__device__ __forceinline__ void f8_row(const T *x, int lane, uint64_t seed, float (&v)[D / 32])
{
    constexpr int E = D / 32;
#pragma unroll
    for (int i = 0; i < E; i++) v[i] = fs_cu_type<T>::to_f(x[E * lane + i]);
    if constexpr (HAD) {
#pragma unroll
        for (int i = 0; i < E; i++) v[i] *= f8_sign(seed, E * lane + i);
#pragma unroll
        for (int h = 1; h < E; h <<= 1)
#pragma unroll
            for (int i = 0; i < E; i++)
                if (!(i & h)) {
                    const float u = v[i], w = v[i + h];
                    v[i] = u + w;
                    v[i + h] = u - w;
                }
#pragma unroll
        for (int h = 1; h < 32; h <<= 1) {
            const bool up = lane & h;
#pragma unroll
            for (int i = 0; i < E; i++) {
                const float w = __shfl_xor_sync(0xffffffff, v[i], h);
                v[i] = up ? w - v[i] : v[i] + w;
            }
        }
#pragma unroll
        for (int i = 0; i < E; i++) v[i] *= rsqrtf((float)D);
    }
}

/* Pass 0: the largest |value| of rows (after the transform) into amax (as the bits of a
 * non-negative float, atomicMax on them). Pass 1: each value times 448 / amax in e4m3. rows =
 * heads · n; block = 0: one amax for them all; block > 0: one per `block` rows of each head,
 * amax[head · nb + i / block] for row i of a head (nb blocks a head). */
template <typename T, int D, bool HAD, int PASS>
__global__ void __launch_bounds__(256) f8_rows(const T *__restrict__ X, long rows, int n, int block, int nb,
                                                uint64_t seed, unsigned *__restrict__ amax, uint8_t *__restrict__ X8)
{
    constexpr int E = D / 32;
    const int lane = threadIdx.x & 31;
    float mx = 0;
    for (long r = (long)blockIdx.x * 8 + (threadIdx.x >> 5); r < rows; r += (long)gridDim.x * 8) {
        const long bi = block ? r / n * nb + r % n / block : 0;
        float v[E];
        f8_row<T, D, HAD>(X + r * D, lane, seed, v);
        if (PASS == 0) {
#pragma unroll
            for (int i = 0; i < E; i++) mx = fmaxf(mx, fabsf(v[i]));
            if (block) {   /* this row's block now, so the warp's maximum starts again */
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
                if (lane == 0) atomicMax(amax + bi, __float_as_uint(mx));
                mx = 0;
            }
        } else {
            const float am = __uint_as_float(amax[bi]), q = am > 0 ? 448.f / am : 1.f;
#pragma unroll
            for (int i = 0; i < E; i += 2)
                *reinterpret_cast<uint16_t *>(X8 + r * D + E * lane + i) = (uint16_t)f8x2(v[i] * q, v[i + 1] * q);
        }
    }
    if (PASS == 0 && !block) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
        if (lane == 0) atomicMax(amax, __float_as_uint(mx));
    }
}

/* V (heads, n, D) → Vᵀ (heads, D, np) in e4m3 (np = n rounded up to 32), keys permuted within
 * each 32 by σ (top of this file), keys past n written 0. PASS 0: amax as f8_rows (block: keys a
 * scale, a multiple of 32, or 0). A block of threads takes 32 keys of one head through shared
 * memory. */
template <typename T, int D, int PASS>
__global__ void __launch_bounds__(256) f8_vt(const T *__restrict__ V, int n, int np, int block, int nb,
                                             unsigned *__restrict__ amax, uint8_t *__restrict__ Vt)
{
    __shared__ float tile[32][D + 1];
    const int head = blockIdx.y, k0 = blockIdx.x * 32;
    const T *src = V + ((size_t)head * n + k0) * D;
    unsigned *am_of = amax + (block ? (size_t)head * nb + k0 / block : 0);
    float mx = 0;
    for (int i = threadIdx.x; i < 32 * D; i += 256) {
        const int k = i / D, c = i % D;
        const float x = k0 + k < n ? fs_cu_type<T>::to_f(src[(size_t)k * D + c]) : 0.f;
        tile[k][c] = x;
        mx = fmaxf(mx, fabsf(x));
    }
    if (PASS == 0) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
        if ((threadIdx.x & 31) == 0) atomicMax(am_of, __float_as_uint(mx));
        return;
    }
    __syncthreads();
    const float am = __uint_as_float(*am_of), q = am > 0 ? 448.f / am : 1.f;
    for (int i = threadIdx.x; i < D * 16; i += 256) {   /* 16 pairs of keys a row of Vᵀ */
        const int c = i / 16, k = 2 * (i % 16);
        auto sig = [](int j) { return (j & 16) + 2 * ((j >> 2) & 3) + (j & 1) + 8 * ((j >> 1) & 1); };
        *reinterpret_cast<uint16_t *>(Vt + ((size_t)head * D + c) * np + k0 + k) =
            (uint16_t)f8x2(tile[sig(k)][c] * q, tile[sig(k + 1)][c] * q);
    }
}

/* amax (bits, count of them) → descale = amax / 448 in place (1 when everything is 0). */
__global__ void f8_descale(unsigned *amax, long count)
{
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (long)gridDim.x * blockDim.x) {
        const float am = __uint_as_float(amax[i]);
        reinterpret_cast<float *>(amax)[i] = am > 0 ? am / 448.f : 1.f;
    }
}

/* ---- Host side ------------------------------------------------------------------------------ */

/* A 3-D tensor map over bytes: (heads, rows, inner) with boxes of 128 bytes × box_rows rows,
 * 128-byte swizzle (hopper_common.cuh's make_map_of). */
static fs_status make_map8(CUtensorMap *map, const void *base, int inner, int rows, int heads, int box_rows,
                           char *why, size_t n)
{
    return make_map_of(map, base, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, inner, rows, heads, box_rows, why, n);
}

extern "C" int fs_cuda_fp8_vt_len(int n_kv) { return (n_kv + 31) / 32 * 32; }
extern "C" int fs_cuda_fp8_scale_blocks(int n, int block) { return block > 0 ? (n + block - 1) / block : 1; }

template <typename T, int D>
static fs_status quant_d(const void *X, int heads, int len, fs_cuda_fp8_layout lay, uint64_t seed, int block,
                         void *X8, float *descale, char *why, size_t n)
{
    unsigned *am = reinterpret_cast<unsigned *>(descale);
    const int nb = fs_cuda_fp8_scale_blocks(len, block);
    const long count = block ? (long)heads * nb : 1;
    FS_CU_TRY(cudaMemsetAsync(am, 0, count * sizeof(float)));
    const T *x = (const T *)X;
    uint8_t *y = (uint8_t *)X8;
    if (lay == FS_FP8_V_T) {
        const int np = fs_cuda_fp8_vt_len(len);
        const dim3 grid(np / 32, heads);
        f8_vt<T, D, 0><<<grid, 256>>>(x, len, np, block, nb, am, y);
        FS_CU_LAUNCHED();
        f8_vt<T, D, 1><<<grid, 256>>>(x, len, np, block, nb, am, y);
        FS_CU_LAUNCHED();
    } else {
        const long rows = (long)heads * len;
        long blocks = (rows + 7) / 8;
        if (blocks > 4096) blocks = 4096;
        if (lay == FS_FP8_ROWS_HADAMARD) {
            f8_rows<T, D, true, 0><<<(unsigned)blocks, 256>>>(x, rows, len, block, nb, seed, am, y);
            FS_CU_LAUNCHED();
            f8_rows<T, D, true, 1><<<(unsigned)blocks, 256>>>(x, rows, len, block, nb, seed, am, y);
        } else {
            f8_rows<T, D, false, 0><<<(unsigned)blocks, 256>>>(x, rows, len, block, nb, seed, am, y);
            FS_CU_LAUNCHED();
            f8_rows<T, D, false, 1><<<(unsigned)blocks, 256>>>(x, rows, len, block, nb, seed, am, y);
        }
        FS_CU_LAUNCHED();
    }
    f8_descale<<<(unsigned)(count < 262144 ? (count + 255) / 256 : 1024), 256>>>(am, count);
    FS_CU_LAUNCHED();
    return FS_OK;
}

extern "C" fs_status fs_cuda_fp8_quantize(const void *X, fs_cuda_dtype dt, int heads, int n, int d,
                                          fs_cuda_fp8_layout lay, uint64_t seed, int block, void *X8,
                                          float *descale, char *why, size_t nw)
{
    if (heads < 1 || n < 1 || !(d == 64 || d == 128 || d == 256)) {
        if (why && nw) snprintf(why, nw, "fp8 quantize: heads, n ≥ 1 and d = 64, 128 or 256 (got %d, %d, %d)", heads, n, d);
        return FS_ERR_ARG;
    }
    if (block < 0 || (lay == FS_FP8_V_T && block % 32)) {
        if (why && nw) snprintf(why, nw, "fp8 quantize: a block of %d %s (0: one scale; Vᵀ's a multiple of 32 keys)",
                                block, lay == FS_FP8_V_T ? "keys" : "rows");
        return FS_ERR_ARG;
    }
    const bool bf = dt == FS_CUDA_BF16;
#define FS_F8_Q(D) return bf ? quant_d<__nv_bfloat16, D>(X, heads, n, lay, seed, block, X8, descale, why, nw) \
                             : quant_d<__half, D>(X, heads, n, lay, seed, block, X8, descale, why, nw)
    if (d == 64) FS_F8_Q(64);
    if (d == 128) FS_F8_Q(128);
    FS_F8_Q(256);
#undef FS_F8_Q
}

static const char *fp8_lines[] = {
    "prefill version 14's schedule on e4m3: wgmma k = 32, Vt from the pre-pass, P packed in registers, 4 stages",
    "version 1 with a quarter of the exponentials by a polynomial on the FMA pipe",
    "version 1 with half of the exponentials by a polynomial on the FMA pipe",
    "version 1 without the ping-pong (each warpgroup overlaps only its own products)",
    "version 4 with a quarter of the exponentials by the polynomial",
    "three consumer warpgroups (Bq = 192, 160 registers a thread), each one tile at a time (no overlap inside)",
    "version 4 with 256-key tiles, each warpgroup one tile at a time (no overlap inside, 3 stages)",
    "d = 256: version 1 (ping-pong) with 128-key tiles, Q in two 128-byte column blocks, 3 stages of 64 KiB",
    "d = 256: version 8 without the ping-pong (version 4's schedule)",
    "d = 256: version 8 one tile at a time (no overlap inside, no ping-pong)",
    "version 4 with the mask hoisted: a lean loop of its own, entered only by a partial tile",
    "version 6 with the mask hoisted",
    "version 7 with the mask hoisted",
    "d = 256: version 8 with the mask hoisted",
    "d = 256: version 9 with the mask hoisted",
    "version 12 with each wgmma descriptor made as the tile's base plus a constant",
    "d = 256: version 14 with each wgmma descriptor made as the tile's base plus a constant",
    "version 16 with a scale per block (64 rows of Q, 128 keys of K and V), S's scale taken anew each tile",
    "d = 256: version 17 with a scale per block (64 rows of Q, 128 keys of K and V)",
    "version 16 on persistent blocks (one an SM) over pairs of query tiles, Q double-buffered",
    "d = 256: version 17 on persistent blocks over pairs of query tiles, Q's one buffer given back after the last S",
    "version 20 with a scale per block",
    "d = 256: version 21 with a scale per block",
    "version 18 with V's descale as a running maximum folded into P's exponent: o rescaled only when it grows",
    "d = 256: version 19 with V's descale as a running maximum folded into P's exponent",
    "version 16 with the warpgroups taking turns at the exponentials (float16 prefill version 33's idea)",
    "d = 256: version 17 one tile at a time (no overlap, no ping-pong), the warpgroups taking turns at the exponentials",
    "version 20 with, without a mask, the last round split into equal runs of key tiles for every SM (prefill version 32's schedule)",
    "d = 256: version 21 with, without a mask, the last round split (prefill version 32's schedule)",
};
extern "C" int fs_cuda_fp8_versions(void) { return (int)(sizeof fp8_lines / sizeof *fp8_lines); }
extern "C" int fs_cuda_fp8_block_keys(int v) { return v == 7 || v == 13 ? 256 : 128; }
extern "C" int fs_cuda_fp8_head_size(int v)
{
    return (v >= 8 && v <= 10) || v == 14 || v == 15 || (v >= 17 && v % 2 == 1) ? 256 : 128;
}
extern "C" int fs_cuda_fp8_version_blocks(int v) { return v == 18 || v == 19 || (v >= 22 && v <= 25) ? 64 : 0; }
extern "C" int fs_cuda_fp8_version_v_fold(int v) { return v == 24 || v == 25; }
/* consumer warpgroups a block: three in versions 6, 12, 16 and the d = 128 ones from 18 on, two elsewhere */
static int fp8_consumers(int v) { return v == 6 || v == 12 || v == 16 || (v >= 18 && v % 2 == 0) ? 3 : 2; }
extern "C" int fs_cuda_fp8_block_queries(int v) { return 64 * fp8_consumers(v); }

extern "C" size_t fs_cuda_fp8_prefill_workspace(const fs_cuda_prefill *pp, int version)
{
    if ((version != 28 && version != 29) || pp->mask != FS_MASK_NONE || pp->d != fs_cuda_fp8_head_size(version))
        return 0;
    const int ncw = fp8_consumers(version);
    /* two slots a block, and fewer than g tail items of 4 · ncw counters */
    return split_grid(pp, fs_cuda_fp8_block_queries(version)) *
           (2 * split_slot_floats(pp->d, ncw) * sizeof(float) + 4 * ncw * sizeof(unsigned));
}
extern "C" const char *fs_cuda_fp8_version_str(int v)
{
    return v >= 1 && v <= fs_cuda_fp8_versions() ? fp8_lines[v - 1] : "?";
}

extern "C" fs_status fs_cuda_fp8_prefill_run(const fs_cuda_prefill *pp, int version, const void *Q8, const void *K8,
                                             const void *Vt8, const float *qd, const float *kd, const float *vd,
                                             void *O, char *why, size_t n)
{
    if (version < 1 || version > fs_cuda_fp8_versions()) {
        if (why && n) snprintf(why, n, "no e4m3 version %d (1..%d)", version, fs_cuda_fp8_versions());
        return FS_ERR_ARG;
    }
    if (pp->batch < 1 || pp->n_q_heads < 1 || pp->n_kv_heads < 1 || pp->n_q_heads % pp->n_kv_heads || pp->n_q < 1 ||
        pp->n_kv < 1 || pp->d != fs_cuda_fp8_head_size(version) || pp->mask == FS_MASK_BITS || !(pp->scale > 0) ||
        pp->lse || !qd || !kd || !vd) {
        if (why && n) snprintf(why, n, "e4m3 version %d takes d = %d, no bitmask, a positive scale, a valid shape, "
                                       "three descale arrays and no lse (it writes O only)", version,
                               fs_cuda_fp8_head_size(version));
        return FS_ERR_ARG;
    }
    fs_status st = hopper_device("the e4m3 kernel", why, n);
    if (st != FS_OK) return st;
    const int D = fs_cuda_fp8_head_size(version);
    constexpr int BK = 128, STAGES = 4;
    /* d = 256: Q 32 KiB, a stage of K and Vᵀ 64 KiB, so three stages (224 KiB) fit 227, with one
     * Q buffer in the persistent versions */
    const bool persist = (version >= 20 && version <= 23) || version >= 28;
    const int BQ = 64 * fp8_consumers(version), BKv = fs_cuda_fp8_block_keys(version),
              STv = BKv == 256 || D == 256 ? 3 : STAGES, QB = persist ? (D == 256 ? 1 : 2) : 1;
    const prefill_params p = make_params(pp);
    CUtensorMap mq, mk, mv;
    if ((st = make_map8(&mq, Q8, D, pp->n_q, pp->batch * pp->n_q_heads, BQ, why, n)) != FS_OK) return st;
    if ((st = make_map8(&mk, K8, D, pp->n_kv, pp->batch * pp->n_kv_heads, BKv, why, n)) != FS_OK) return st;
    if ((st = make_map8(&mv, Vt8, fs_cuda_fp8_vt_len(pp->n_kv), D, pp->batch * pp->n_kv_heads, D, why, n)) != FS_OK)
        return st;
    const size_t smem = 1024 + (size_t)QB * BQ * D + 2 * (size_t)STv * BKv * D + 8 * ((persist ? 2 * QB : 1) + 3 * STv);
    const int threads = 128 * (fp8_consumers(version) + 1);
    __nv_bfloat16 *o = (__nv_bfloat16 *)O;
    const int n_qt = (pp->n_q + BQ - 1) / BQ;
    if (persist && pp->mask == FS_MASK_NONE && version >= 28) {   /* the split schedule */
        auto kern = version == 28 ? prefill_fp8_persist<128, BK, STAGES, false, 3, false, 2, false, split_sched>
                                  : prefill_fp8_persist<256, BK, 3, true, 2, true, 1, false, split_sched>;
        FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        split_sched sc;
        int G;
        char what[64];
        snprintf(what, sizeof what, "e4m3 version %d (fs_cuda_fp8_prefill_workspace)", version);
        if ((st = split_plan(pp, (long)n_qt * pp->batch * pp->n_q_heads, (pp->n_kv + BK - 1) / BK, D,
                             fp8_consumers(version), pp->work, &sc, &G, what,
                             fs_cuda_fp8_prefill_workspace(pp, version), why, n)) != FS_OK)
            return st;
        kern<<<G, threads, smem, fs_cu_stream(pp)>>>(p, mq, mk, mv, qd, kd, vd, o, sc);
        FS_CU_LAUNCHED();
        return FS_OK;
    }
    if (persist) {   /* the pairs (versions 28 and 29 under a mask: 20 and 21) */
        const bool d128 = D == 128;
        auto kern = version == 22 ? prefill_fp8_persist<128, BK, STAGES, false, 3, false, 2, true, pair_sched>
                  : version == 23 ? prefill_fp8_persist<256, BK, 3, true, 2, true, 1, true, pair_sched>
                  : d128          ? prefill_fp8_persist<128, BK, STAGES, false, 3, false, 2, false, pair_sched>
                                  : prefill_fp8_persist<256, BK, 3, true, 2, true, 1, false, pair_sched>;
        FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        int dev, sms;
        FS_CU_TRY(cudaGetDevice(&dev));
        FS_CU_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        const int n_pairs = pp->batch * pp->n_q_heads * ((n_qt + 1) / 2);
        kern<<<n_pairs < sms ? n_pairs : sms, threads, smem, fs_cu_stream(pp)>>>(p, mq, mk, mv, qd, kd, vd, o,
                                                                               pair_sched{n_pairs});
        FS_CU_LAUNCHED();
        return FS_OK;
    }
    auto kern = version == 2 ? prefill_fp8<128, BK, STAGES, 1, true>
              : version == 3 ? prefill_fp8<128, BK, STAGES, 2, true>
              : version == 4 ? prefill_fp8<128, BK, STAGES, 0, false>
              : version == 5 ? prefill_fp8<128, BK, STAGES, 1, false>
              : version == 6 ? prefill_fp8<128, BK, STAGES, 0, false, 3, false>
              : version == 7 ? prefill_fp8<128, 256, 3, 0, false, 2, false>
              : version == 8 ? prefill_fp8<256, BK, 3, 0, true>
              : version == 9 ? prefill_fp8<256, BK, 3, 0, false>
              : version == 10 ? prefill_fp8<256, BK, 3, 0, false, 2, false>
              : version == 11 ? prefill_fp8<128, BK, STAGES, 0, false, 2, true, true>
              : version == 12 ? prefill_fp8<128, BK, STAGES, 0, false, 3, false, true>
              : version == 13 ? prefill_fp8<128, 256, 3, 0, false, 2, false, true>
              : version == 14 ? prefill_fp8<256, BK, 3, 0, true, 2, true, true>
              : version == 15 ? prefill_fp8<256, BK, 3, 0, false, 2, true, true>
              : version == 16 ? prefill_fp8<128, BK, STAGES, 0, false, 3, false, true, true>
              : version == 17 ? prefill_fp8<256, BK, 3, 0, true, 2, true, true, true>
              : version == 18 ? prefill_fp8<128, BK, STAGES, 0, false, 3, false, true, true, true>
              : version == 19 ? prefill_fp8<256, BK, 3, 0, true, 2, true, true, true, true>
              : version == 24 ? prefill_fp8<128, BK, STAGES, 0, false, 3, false, true, true, true, true>
              : version == 25 ? prefill_fp8<256, BK, 3, 0, true, 2, true, true, true, true, true>
              : version == 26 ? prefill_fp8<128, BK, STAGES, 0, false, 3, false, true, true, false, false, true>
              : version == 27 ? prefill_fp8<256, BK, 3, 0, false, 2, false, true, true, false, false, true>
                              : prefill_fp8<128, BK, STAGES, 0, true>;
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid((pp->n_q + BQ - 1) / BQ, pp->n_q_heads, pp->batch);
    kern<<<grid, threads, smem, fs_cu_stream(pp)>>>(p, mq, mk, mv, qd, kd, vd, o);
    FS_CU_LAUNCHED();
    return FS_OK;
}
