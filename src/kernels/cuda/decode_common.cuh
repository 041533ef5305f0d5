/* decode_common.cuh: what the decode kernels share (attn_decode.cu, and hopper_decode.cu built
 * for sm_90a): the launch parameters and, for the tensor-core versions 7 to 9, one warp's step
 * over 16 keys and the merge of the block's warps into the split's partial.
 *
 * The tensor-core layout (versions 7-9): the G ≤ 16 query heads that share one KV head are the
 * rows of a 16-row mma.sync tile (rows ≥ G are zero and thrown away). Each warp takes 16 keys of
 * every tile and keeps its own running (m, ℓ, o) over them: a thread holds rows g and g + 8
 * (lane = 4g + t4), o as D/8 accumulators of m16n8. m is in base 2 (m of scale · log2 e · s). */
#ifndef FS_DECODE_COMMON_CUH
#define FS_DECODE_COMMON_CUH

#include "kernels/cuda/cuda_common.cuh"

struct decode_params {
    int n_q_heads, n_kv_heads, n_kv, splits, split_len;
    float scale2;
    /* a paged cache (version 10): page size, blocks per table row, the table and the lengths
     * (fs_cuda_decode's fields); 0 and NULL for a contiguous one */
    int page_size, blocks_per_seq;
    const int32_t *block_table, *seq_lens;
    int head_major;   /* paged: the pools are (page, KV head, slot, d), not (page, slot, KV head, d) */
};

/* Versions 9 to 12 (hopper_decode.cu): launch the split kernel of version 9 (contiguous) or 10
 * (paged) on a Hopper GPU (FS_ERR_ARG with why on any other). With done and O NULL the caller
 * merges; versions 11 (contiguous) and 12 (paged) pass the zeroed counters (one per batch and KV
 * head) and O, and the last block of each KV head merges in the same launch (dec_last_merge).
 * Blocks of versions 9 to 12 that fit on one SM (the same kernel's room). */
fs_status fs_cu_hopper_decode_split(const fs_cuda_decode *pp, const decode_params &p, const void *Q,
                                    const void *K, const void *V, float *part, unsigned *done, void *O, char *why,
                                    size_t n);
/* Versions 13 to 16: version 9's (contiguous: 13, 15) or 10's (paged: 14, 16) split kernel, each
 * block letting the merge launch as soon as it has started (programmatic dependent launch), and
 * the merge launched so: its blocks are resident and waiting when the last split ends, instead
 * of being launched after it. 15 and 16 step over the rows a group fills alone (TOP) when it has
 * at most 8 query heads. */
fs_status fs_cu_hopper_decode_pdl(const fs_cuda_decode *pp, const decode_params &p, int version, const void *Q,
                                  const void *K, const void *V, float *part, void *O, char *why, size_t n);
/* The same, in two halves (fs_cuda_decode_plan): the host's work once (the device's check, the
 * tensor maps of K and V, the kernel's shared-memory attribute: *plan, freed with
 * fs_cu_hopper_decode_pdl_free), then each run's two launches alone. fs_cu_hopper_decode_pdl is
 * the two halves back to back. */
struct hopper_pdl_plan;
fs_status fs_cu_hopper_decode_pdl_plan(const fs_cuda_decode *pp, const decode_params &p, int version, const void *K,
                                       const void *V, float *part, hopper_pdl_plan **plan, char *why, size_t n);
fs_status fs_cu_hopper_decode_pdl_run(const hopper_pdl_plan *plan, const void *Q, void *O, cudaStream_t st, char *why,
                                      size_t n);
void fs_cu_hopper_decode_pdl_free(hopper_pdl_plan *plan);
int fs_cu_hopper_decode_blocks_per_sm(const fs_cuda_decode *pp);
/* Version 20's page kernel (a block for every KV head of a sequence's split): its blocks an SM when
 * it takes pp, else 0 (version 20 is then version 18, a block a KV head). */
int fs_cu_hopper_decode_page_per_sm(const fs_cuda_decode *pp, int version);
/* e4m3-cache versions 5-17 (hopper_decode.cu): the split kernel over an e4m3 cache, contiguous
 * (5, 7, 9, 11, 13, 15, 17) or paged (6, 8, 10, 12, 14, 16), the bytes converted by the hardware from 7 on, on a
 * Hopper GPU. Versions 5-8: the caller merges (O unused); 9-17 launch their merge into O
 * themselves, as a programmatic dependent. Blocks of it that fit on one SM at d with G query
 * heads a KV head. */
fs_status fs_cu_hopper_decode_kv8(const fs_cuda_decode *pp, const decode_params &p, int version, const void *Q,
                                  const void *K8, const void *V8, const float *scales, float *part, void *O,
                                  char *why, size_t n);
/* The same in two halves, as fs_cu_hopper_decode_pdl_plan: the host's work once into *plan (run
 * with fs_cu_hopper_decode_pdl_run, which for versions 5-8 launches the split kernel alone, freed
 * with fs_cu_hopper_decode_pdl_free). fs_cu_hopper_decode_pdl_run launches on stream st: 0, or a
 * stream being captured into a graph (fs_cuda_decode_plan_graph). */
fs_status fs_cu_hopper_decode_kv8_plan(const fs_cuda_decode *pp, const decode_params &p, int version, const void *K8,
                                       const void *V8, const float *scales, float *part, hopper_pdl_plan **plan,
                                       char *why, size_t n);
int fs_cu_hopper_kv8_blocks_per_sm(int d, int version, int G);
/* Version 16's page kernel (a block for every KV head of a sequence's split): its blocks an SM
 * when it takes pp, else 0 (version 16 is then version 14, a block a KV head). */
int fs_cu_hopper_kv8_page_per_sm(const fs_cuda_decode *pp, int version);

/* The online softmax of one warp's step, on its 16 rows × 16 keys of scores (shapes: s (2 n-tiles,
 * 4) raw scores, masked ones −∞; bm (2) their row maxima over this thread's entries; m, ℓ (2)
 * rows g and g + 8):
 *     m_new = max(m, scale2 · rowmax S),  α = 2^(m − m_new),  P = 2^(scale2 · S − m_new) into s,
 *     ℓ = α ℓ + rowsum P;  α out, for the caller to rescale o by (with anything else folded in).
 * The row maximum is taken over the row's 4 threads (lanes 4g … 4g + 3). Shared by the float16
 * decodes (dec_warp_tile) and the e4m3 cache's (attn_decode.cu, kv8_warp_step). TOP: row g
 * alone (s[.][0..1], m[0], ℓ[0]); rows g + 8 are left as they were given. */
template <bool TOP = false>
__device__ __forceinline__ void dec_frag_softmax(float scale2, float (&s)[2][4], float (&bm)[2], float (&m)[2],
                                                 float (&l)[2], float (&alpha)[2])
{
    float base[2], sum[2] = {0, 0};
#pragma unroll
    for (int x = 0; x < (TOP ? 1 : 2); x++) {
        bm[x] = fmaxf(bm[x], __shfl_xor_sync(0xffffffff, bm[x], 1));
        bm[x] = fmaxf(bm[x], __shfl_xor_sync(0xffffffff, bm[x], 2));
        const float mn = fmaxf(m[x], bm[x] * scale2);
        base[x] = mn == -INFINITY ? 0.f : mn;
        alpha[x] = fast_exp2(m[x] - base[x]);
        m[x] = mn;
    }
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < (TOP ? 2 : 4); e++) {
            s[nt][e] = fast_exp2(fmaf(s[nt][e], scale2, -base[e >> 1]));
            sum[e >> 1] += s[nt][e];
        }
#pragma unroll
    for (int x = 0; x < (TOP ? 1 : 2); x++) l[x] = alpha[x] * l[x] + sum[x];
}

/* o (D/8 m16n8 accumulators, rows g and g + 8) times α of its row. TOP: row g alone, and only
 * when some lane's α is not 1 (once a row's maximum has settled, most steps leave every α at 1:
 * the warp skips the D/4 multiplies together, a uniform branch). */
template <int D, bool TOP = false>
__device__ __forceinline__ void dec_frag_rescale(float (&o)[D / 8][4], const float (&alpha)[2])
{
    if constexpr (TOP) {
        if (!__any_sync(0xffffffff, alpha[0] != 1.f)) return;
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            o[dt][0] *= alpha[0];
            o[dt][1] *= alpha[0];
        }
    } else {
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            o[dt][0] *= alpha[0];
            o[dt][1] *= alpha[0];
            o[dt][2] *= alpha[1];
            o[dt][3] *= alpha[1];
        }
    }
}

/* One warp's 16 keys [c0, c0 + 16) of a tile (shapes: qf (D/16 k-steps, 4) the queries' A
 * fragments; m, ℓ (2) rows g and g + 8; o (D/8, 4)):
 *     S = Q Kᵀ (two 16 × 8 accumulators), keys ≥ j1 masked to −∞,
 *     m_new = max(m, scale2 · rowmax S),  α = 2^(m − m_new),  P = 2^(scale2 · S − m_new),
 *     ℓ = α ℓ + rowsum P,  o = α o + P V.
 * k_at(kk) is this lane's ldmatrix address of the warp's 16 K rows, columns 16 kk to 16 kk + 15;
 * v_at(dp) the same for V's 16 rows, output columns 16 dp on (read transposed). They are all
 * that differs between version 7 (rows padded to D + 8) and version 9 (the TMA's swizzle).
 * TOP (versions 15 and 16, groups of at most 8 query heads): rows g + 8 are empty, so every
 * product is mma16816_top and the softmax and the rescale take row g alone; m[1], ℓ[1] and
 * o[.][2..3] are left as they were given. */
template <typename T, int D, bool TOP = false, typename KAt, typename VAt>
__device__ __forceinline__ void dec_warp_tile(float scale2, const uint32_t (&qf)[D / 16][4], KAt k_at, VAt v_at,
                                              int c0, int j1, int t4, float (&m)[2], float (&l)[2],
                                              float (&o)[D / 8][4])
{
    float s[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        uint32_t bk[4];
        ldsm_x4(bk, k_at(kk));
        if constexpr (TOP) {
            mma16816_top<T>(s[0], qf[kk][0], qf[kk][2], bk[0], bk[1]);
            mma16816_top<T>(s[1], qf[kk][0], qf[kk][2], bk[2], bk[3]);
        } else {
            mma16816<T>(s[0], qf[kk], bk[0], bk[1]);
            mma16816<T>(s[1], qf[kk], bk[2], bk[3]);
        }
    }
    /* keys past the split's end are masked; max on raw scores, scale inside the FFMA */
    float bm[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < (TOP ? 2 : 4); e++) {
            const int j = c0 + nt * 8 + 2 * t4 + (e & 1);
            if (j >= j1) s[nt][e] = -INFINITY;
            bm[e >> 1] = fmaxf(bm[e >> 1], s[nt][e]);
        }
    float alpha[2] = {1.f, 1.f};   /* TOP sets alpha[0] alone */
    dec_frag_softmax<TOP>(scale2, s, bm, m, l, alpha);
    dec_frag_rescale<D, TOP>(o, alpha);
    /* O += P V over the warp's 16 keys: P is one A fragment */
    uint32_t a[4] = {pack2<T>(s[0][0], s[0][1]), pack2<T>(s[0][2], s[0][3]),
                     pack2<T>(s[1][0], s[1][1]), pack2<T>(s[1][2], s[1][3])};
#pragma unroll
    for (int dp = 0; dp < D / 16; dp++) {
        uint32_t bv[4];
        ldsm_x4_t(bv, v_at(dp));
        if constexpr (TOP) {
            mma16816_top<T>(o[2 * dp], a[0], a[2], bv[0], bv[1]);
            mma16816_top<T>(o[2 * dp + 1], a[0], a[2], bv[2], bv[3]);
        } else {
            mma16816<T>(o[2 * dp], a, bv[0], bv[1]);
            mma16816<T>(o[2 * dp + 1], a, bv[2], bv[3]);
        }
    }
}

/* Shared memory for the merge of 4 warps (floats): sM (4, 16), sL (4, 16), sO (4 · 16 rows of
 * D + 4, laid out by dec_so). */
template <int D> constexpr size_t dec_merge_floats() { return 4 * 16 * 2 + 4 * 16 * (size_t)(D + 4); }

/* Where row r (warp · 16 + the warp's row), column c of the warps' o lies in sO: rows D + 4 floats
 * apart and one float skipped every 32 columns. A warp stores one accumulator a lane at a time (8
 * rows g × 4 lanes t4); with rows D floats apart those stores fell on one bank 8 times over
 * (dec_warp_state_out) or 32 times (kv8_state_out, whose lanes t4 are 32 columns apart), and the
 * e4m3-cache kernels' epilogue took 5.4-5.7 µs (bench_cuda --only decode_clocks,
 * `2026-12-02-h200-decode-clocks`). Here they fall on 32 banks (kv8_state_out; 2-way at d = 64) or
 * 16 (dec_warp_state_out), and that epilogue takes under 1 µs (`-decode-clocks-2`). */
template <int D> __device__ __forceinline__ int dec_so(int r, int c) { return r * (D + 4) + c + (c >> 5); }

/* Each warp's m and ℓ of its rows g, g + 8 into s's sM and sL; ℓ summed over the row's 4 threads. */
__device__ __forceinline__ void dec_warp_ml_out(float *s, int warp, int g, int t4, float (&m)[2], float (&l)[2])
{
    float *sM = s, *sL = s + 4 * 16;
#pragma unroll
    for (int x = 0; x < 2; x++) {
        l[x] += __shfl_xor_sync(0xffffffff, l[x], 1);
        l[x] += __shfl_xor_sync(0xffffffff, l[x], 2);
        if (t4 == 0) {
            sM[warp * 16 + g + 8 * x] = m[x];
            sL[warp * 16 + g + 8 * x] = l[x];
        }
    }
}

/* Each warp's (m, ℓ, o) into s (dec_merge_floats<D>() floats); ℓ summed over the row's 4 threads. */
template <int D>
__device__ __forceinline__ void dec_warp_state_out(float *s, int warp, int g, int t4, float (&m)[2], float (&l)[2],
                                                   const float (&o)[D / 8][4])
{
    float *sO = s + 4 * 16 * 2;
    dec_warp_ml_out(s, warp, g, t4, m, l);
#pragma unroll
    for (int dt = 0; dt < D / 8; dt++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            sO[dec_so<D>(warp * 16 + g + 8 * (e >> 1), dt * 8 + 2 * t4 + (e & 1))] = o[dt][e];
}

/* After a barrier over the 4 warps (128 threads, tid < 128): merge their states row by row
 * (decode.h's merge) and write the split's partial: per (batch, query head, split) m, ℓ, then o
 * (D, unnormalized) into part (batch, n_q_heads, splits, D + 2). */
template <int D>
__device__ __forceinline__ void dec_partial_out(const decode_params &p, const float *s, int tid, int G, int b,
                                                int kvh, int split, float *__restrict__ part)
{
    const float *sM = s, *sL = s + 4 * 16, *sO = s + 4 * 16 * 2;
    for (int x = tid; x < G * D; x += 128) {
        const int row = x / D, c = x % D;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < 4; w++) M = fmaxf(M, sM[w * 16 + row]);
        const float base = M == -INFINITY ? 0.f : M;
        float L = 0, O = 0;
#pragma unroll
        for (int w = 0; w < 4; w++) {
            const float cw = exp2f(sM[w * 16 + row] - base);
            L = fmaf(cw, sL[w * 16 + row], L);
            O = fmaf(cw, sO[dec_so<D>(w * 16 + row, c)], O);
        }
        float *dst = part + (((size_t)b * p.n_q_heads + (size_t)kvh * G + row) * p.splits + split) * (D + 2);
        dst[2 + c] = O;
        if (c == 0) {
            dst[0] = M;
            dst[1] = L;
        }
    }
}

/* Phase 2 for one output element: the splits of row (b, h) merged (decode.h's merge, sequential),
 * column c of O written. decode_merge and version 13's merge run it, one thread a column. */
template <typename T, int D>
__device__ __forceinline__ void dec_merge_col(const decode_params &p, const float *__restrict__ part, T *__restrict__ O,
                                              int h, int b, int c)
{
    const float *row = part + ((size_t)b * p.n_q_heads + h) * p.splits * (D + 2);
    float m = -INFINITY;
#pragma unroll 8   /* the splits' loads in flight together */
    for (int s = 0; s < p.splits; s++) m = fmaxf(m, row[s * (D + 2)]);
    const float base = m == -INFINITY ? 0.f : m;
    float l = 0, o = 0;
#pragma unroll 8
    for (int s = 0; s < p.splits; s++) {
        const float *x = row + s * (D + 2);
        const float cs = exp2f(x[0] - base);
        l = fmaf(cs, x[1], l);
        o = fmaf(cs, x[2 + c], o);
    }
    O[((size_t)b * p.n_q_heads + h) * D + c] = fs_cu_type<T>::from_f(l > 0 ? o / l : 0.f);
}

/* Versions 8, 11 and 12: the merge in the same launch. Called by every thread of the block that
 * wrote the split's partial (NT threads, tid < NT, after dec_partial_out), with sync() a barrier
 * over exactly those threads. The last block of this (batch, KV head) to finish merges the
 * splits' partials (decode_merge's sums, in the same order), so there is no second launch. Each
 * block makes its partial visible (fence), then counts itself in; the one that counts splits − 1
 * reads every partial through L2 (__ldcg: L1 is not coherent between blocks) and puts the counter
 * back to zero for the next call. Out (batch, n_q_heads, D). */
template <typename T, int D, int NT, typename Sync>
__device__ __forceinline__ void dec_last_merge(const decode_params &p, const float *__restrict__ part,
                                               unsigned *__restrict__ done, T *__restrict__ Out, int tid, int G,
                                               int b, int kvh, Sync sync)
{
    __shared__ unsigned last;
    __threadfence();
    sync();
    if (tid == 0) last = atomicAdd(done + (size_t)b * p.n_kv_heads + kvh, 1u) == (unsigned)p.splits - 1;
    sync();
    if (!last) return;
    __threadfence();
    for (int x = tid; x < G * D; x += NT) {
        const int row = x / D, c = x % D;
        const size_t qrow = (size_t)b * p.n_q_heads + (size_t)kvh * G + row;
        const float *r = part + qrow * p.splits * (D + 2);
        float m = -INFINITY;
        for (int s = 0; s < p.splits; s++) m = fmaxf(m, __ldcg(r + s * (D + 2)));
        const float base = m == -INFINITY ? 0.f : m;
        float l = 0, o = 0;
        for (int s = 0; s < p.splits; s++) {
            const float cs = exp2f(__ldcg(r + s * (D + 2)) - base);
            l = fmaf(cs, __ldcg(r + s * (D + 2) + 1), l);
            o = fmaf(cs, __ldcg(r + s * (D + 2) + 2 + c), o);
        }
        Out[qrow * D + c] = fs_cu_type<T>::from_f(l > 0 ? o / l : 0.f);
    }
    if (tid == 0) done[(size_t)b * p.n_kv_heads + kvh] = 0;
}

/* ---- The e4m3 KV cache: one warp's step ------------------------------------------------------
 * attn_decode.cu's e4m3-cache versions 1-4 load a warp's bytes from global memory into registers,
 * hopper_decode.cu's versions 5-8 from a shared-memory stage the TMA filled; all then run the
 * same step on them (versions 7 and 8 with the hardware's conversion). */

/* Bytes 1 and 3 of t (e4m3; bytes 0 and 2 are ignored) as two float16 numbers, 2^-8 times their
 * values (low half from byte 1). */
__device__ __forceinline__ uint32_t e4m3x2_h2(uint32_t t) { return (t & 0x80008000u) | ((t >> 1) & 0x3f803f80u); }

/* Bytes 0 and 1 of t (e4m3) as two float16 numbers, exactly (low half from byte 0), by the
 * hardware's conversion (cvt.rn.f16x2.e4m3x2, sm_89 and up): one instruction, where e4m3x2_h2
 * takes an and, a shift and an and-or. Only hopper_decode.cu (sm_90a) calls it. */
__device__ __forceinline__ uint32_t e4m3x2_cvt(uint32_t t)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    uint32_t r;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"((unsigned short)(t & 0xffffu)));
    return r;
#else
    __trap();
    return t;
#endif
}

/* One warp's 16 keys as its threads hold them: K rows ρ(0, g), ρ(1, g) (D/16 words each, the
 * thread's quarter t4 of the row) and V rows 4 t4 … 4 t4 + 3 (D/32 words each, its eighth g). */
template <int D> struct kv8_regs {
    uint32_t k[2][D / 16];
    uint32_t v[4][D / 32];
};

/* The G query rows (float16, G ≤ 16, rows of D from Qg) as A fragments, with d permuted as the
 * e4m3 K fragments are: k index 2 t4 + e (e < 2) of k-step kk is d = 4 (t4 · D/16 + kk) + e,
 * index 2 t4 + 8 + e is that d + 2 + e, so that each thread's K bytes are contiguous. */
template <int D>
__device__ __forceinline__ void kv8_q_frags(uint32_t (&qf)[D / 16][4], const __half *Qg, int G, int g, int t4)
{
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        const int d0 = 4 * (t4 * (D / 16) + kk);
        uint2 lo = make_uint2(0, 0), hi = make_uint2(0, 0);
        if (g < G) lo = __ldg(reinterpret_cast<const uint2 *>(Qg + (size_t)g * D + d0));
        if (g + 8 < G) hi = __ldg(reinterpret_cast<const uint2 *>(Qg + (size_t)(g + 8) * D + d0));
        qf[kk][0] = lo.x;
        qf[kk][1] = hi.x;
        qf[kk][2] = lo.y;
        qf[kk][3] = hi.y;
    }
}

/* One warp's step over its 16 keys from kb (shapes as dec_warp_tile; o in units of sv · 2^-8):
 *     S = Q Kᵀ (k8 · 2^-8 as float16), keys ≥ j1 masked,  m_new = max(m, sc2 · rowmax S),
 *     α = 2^(m − m_new),  P = 2^(sc2 · S − m_new),  ℓ = α ℓ + rowsum P,  o = α · orescale · o + pscale · P V
 * sc2 = scale · log2 e · k descale · 2^8; orescale = (the previous step's V descale) / (this one's).
 * CVT (e4m3-cache versions 7 and 8): the bytes converted by e4m3x2_cvt, exactly, so without the
 * 2^-8: o in units of sv, and sc2 = scale · log2 e · k descale. TOP (e4m3-cache versions 11 and
 * 12): rows g + 8 empty, as dec_warp_tile's TOP. pscale (e4m3-cache version 14): P times this
 * step's V descale over the one o is kept in, after ℓ has summed P (1 elsewhere, folded away). */
template <int D, bool CVT = false, bool TOP = false>
__device__ __forceinline__ void kv8_warp_step(float sc2, float orescale, const uint32_t (&qf)[D / 16][4],
                                              const kv8_regs<D> &r, int kb, int j1, int t4, float (&m)[2],
                                              float (&l)[2], float (&o)[D / 8][4], float pscale = 1.f)
{
    static_assert(!TOP || CVT, "the TOP step converts by the hardware");
    float s[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
        for (int nt = 0; nt < 2; nt++) {
            const uint32_t x = r.k[nt][kk];
            if (TOP) mma16816_top<__half>(s[nt], qf[kk][0], qf[kk][2], e4m3x2_cvt(x), e4m3x2_cvt(x >> 16));
            else if (CVT) mma16816<__half>(s[nt], qf[kk], e4m3x2_cvt(x), e4m3x2_cvt(x >> 16));
            else mma16816<__half>(s[nt], qf[kk], e4m3x2_h2(__byte_perm(x, 0, 0x1100)), e4m3x2_h2(__byte_perm(x, 0, 0x3322)));
        }
    float bm[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < (TOP ? 2 : 4); e++) {
            if (kb + 4 * t4 + 2 * nt + (e & 1) >= j1) s[nt][e] = -INFINITY;   /* key ρ(nt, 2 t4 + (e & 1)) */
            bm[e >> 1] = fmaxf(bm[e >> 1], s[nt][e]);
        }
    float alpha[2] = {1.f, 1.f};   /* TOP sets alpha[0] alone */
    dec_frag_softmax<TOP>(sc2, s, bm, m, l, alpha);
    alpha[0] *= orescale;
    alpha[1] *= orescale;
    dec_frag_rescale<D, TOP>(o, alpha);
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < (TOP ? 2 : 4); e++) s[nt][e] *= pscale;
    const uint32_t a[4] = {pack2<__half>(s[0][0], s[0][1]), pack2<__half>(s[0][2], s[0][3]),
                           pack2<__half>(s[1][0], s[1][1]), pack2<__half>(s[1][2], s[1][3])};
    /* n-tile 4 w + c takes byte c of word w of the thread's four V rows */
#pragma unroll
    for (int w = 0; w < D / 32; w++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
            if (TOP) {   /* CVT's form on row g alone */
                const uint32_t pair = (uint32_t)(c | (4 + c) << 4);
                mma16816_top<__half>(o[4 * w + c], a[0], a[2], e4m3x2_cvt(__byte_perm(r.v[0][w], r.v[1][w], pair)),
                                     e4m3x2_cvt(__byte_perm(r.v[2][w], r.v[3][w], pair)));
                continue;
            }
            if (CVT) {   /* byte c of the two rows side by side, then converted */
                const uint32_t pair = (uint32_t)(c | (4 + c) << 4);
                mma16816<__half>(o[4 * w + c], a, e4m3x2_cvt(__byte_perm(r.v[0][w], r.v[1][w], pair)),
                                 e4m3x2_cvt(__byte_perm(r.v[2][w], r.v[3][w], pair)));
                continue;
            }
            const uint32_t sel = (uint32_t)(c | c << 4 | (4 + c) << 8 | (4 + c) << 12);
            mma16816<__half>(o[4 * w + c], a, e4m3x2_h2(__byte_perm(r.v[0][w], r.v[1][w], sel)),
                             e4m3x2_h2(__byte_perm(r.v[2][w], r.v[3][w], sel)));
        }
}

/* Each warp's (m, ℓ, o) into s (dec_merge_floats<D>() floats) as dec_warp_state_out does, with
 * o back in true units (times oscale: the V descale o is kept in, times 2^8 where the bytes were
 * read as 2^-8 times their values) and its columns put back (kv8_warp_step's n-tile 4 w + c holds
 * d = (2 t4 + e) · D/8 + n-tile). */
template <int D>
__device__ __forceinline__ void kv8_state_out(float *s, int warp, int g, int t4, float oscale, float (&m)[2],
                                              float (&l)[2], const float (&o)[D / 8][4])
{
    float *sO = s + 4 * 16 * 2;
    dec_warp_ml_out(s, warp, g, t4, m, l);
#pragma unroll
    for (int nt = 0; nt < D / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            sO[dec_so<D>(warp * 16 + g + 8 * (e >> 1), (2 * t4 + (e & 1)) * (D / 8) + nt)] = o[nt][e] * oscale;
}

#endif
