/* hopper_decode.cu: decode versions 9 to 18, and e4m3-cache versions 5-16 (at the end of this
 * file), built for Hopper only (sm_90a). attn_decode.cu dispatches here for the split phase:
 * versions 9 and 10 (e4m3 cache: 5 to 8) it merges with its own merge kernel, 11 and 12 merge in
 * the split kernel's last block, and 13 to 18 (e4m3 cache: 9 to 16) launch their merge here as a
 * programmatic dependent; their plans (the host's work done once) may run as a CUDA graph.
 *
 *  9  version 7's arithmetic with its loads changed. In version 7 every thread issues 16-byte
 *     cp.async copies for each tile and the block meets at a barrier twice a tile, so at most
 *     two tiles are in flight and the load rate of a block is what limits decode (version 7's
 *     split sweep: more blocks did not help). Here a fifth warp, the producer, brings each
 *     64-key K and V tile in with TMA box copies (one instruction per 64 × 64 box) into a ring
 *     of stages, each completing on its own mbarrier; the 4 compute warps wait on those
 *     barriers and give a stage back through an "empty" barrier as soon as they have read it.
 *     No block-wide barrier remains in the loop, and all but one stage stay in flight.
 *     Measured (H100, 2026-11-23, run 9 and the exploratory calls before it; GQA 32/8, d = 128,
 *     32768 and 65536 keys, 3 stages): 2.91-2.98 TB/s, 97-100 % of the device copy in the same
 *     call, against 2.66-2.76 TB/s for version 7.
 *
 * 10 version 9 reading a paged cache (vLLM's pool[page, slot, kv_head, d] and a block table
 *     per sequence, sequences of their own lengths). The tensor maps are 4-D over the pools with
 *     the page as a coordinate, so each box copy follows the table: one box per 64-key tile at
 *     page sizes that are multiples of 64, 64 / page_size boxes of page_size rows at 16 and 32.
 *     The producer warp reads the table 32 entries at a time (one coalesced load, then shuffles)
 *     and skips the pages past the sequence's end; splits are whole tiles, so a tile never
 *     straddles a page it does not own. The compute warps are version 9's, skipping a warp's
 *     16 keys when they all lie past the end (their page was not loaded).
 *
 * 11 version 9 with the merge in the same launch: the last block of each (batch, KV head) to
 *    finish merges the splits' partials (dec_last_merge, version 8's tail). On the H200, whose
 *    HBM3e copies 134 MB of float16 K and V at 32k keys in about 32 µs, the merge kernel's own
 *    launch and its wait for the split kernel's last block are a few per cent of the call.
 * 12 version 10 (paged) with the same merge in the launch.
 * 13 version 9 with the merge kernel launched as a programmatic dependent of the split kernel:
 *    every split block lets it launch as soon as it starts (griddepcontrol.launch_dependents),
 *    so its blocks are already resident and waiting (griddepcontrol.wait) when the last split
 *    ends; the split count stays one wave, so the waiting blocks take no split's place.
 * 14 version 10 (paged) with version 13's merge.
 * 15, 16 versions 13 and 14 with each warp's step cut to the rows a group fills: with at most 8
 *    query heads a KV head (GQA 32/8 has 4), rows 8-15 of every mma tile are zero, so no thread's
 *    rows g + 8 carry anything. The step leaves them alone (decode_common.cuh's TOP: half the
 *    output accumulators, half the exponentials, the products through mma16816_top) and rescales
 *    o only when some row's maximum moved. Larger groups run versions 13 and 14's step.
 * 18 version 16 with, when a page holds fewer keys than a tile (64), one box copy a page where
 *    it issues D / 64: the pool's tensor maps (make_whole_map) take a row's 64-column blocks as a
 *    dimension of their own, so a box brings the page's whole rows, and a stage holds the tile's
 *    pages one after another, each its rows' column blocks in turn (the compute warps address it
 *    through sw_whole). With pages of 16 at d = 128 a tile takes four boxes of 4 KiB a tensor
 *    instead of eight of 2 KiB. Why: once version 16's page array was in registers, what the
 *    pages of 16 still lost was in the copies (its ring alone 0.96-0.97 of contiguous). Measured
 *    (H200, `2026-12-01-h200-whole-vmax`, `-paged-final`): with pages of 16, 0.964-0.976 of
 *    version 15 where 16 read 0.946-0.963. Pages of 64 and more run version 16's kernel: there whole-row boxes were
 *    1-3 % slower, as on a contiguous cache (`2026-11-30-h200-whole-rows`), where one 16 KiB box
 *    streams more slowly than two of 8 KiB. So 17, the contiguous sibling, is version 15.
 * 20 e4m3-cache version 16's turn in float16: with pages of 16 (32 at d = 64) a block serves a
 *    split of one sequence for every KV head, a stage is a whole page of every head (boxes of
 *    8 KiB, whole rows), one compute warp a head (decode_page below). 19, the contiguous sibling,
 *    is version 15; where the page kernel does not take the problem, 20 is 18. Measured (H200,
 *    `2026-12-02-h200-page-f16`, `-ring`): no faster than 18 (0.956-0.969 of contiguous with
 *    pages of 16, against 0.965-0.973), and its ring alone a little slower; kept as the measured
 *    form of the idea, which paid for the e4m3 cache only because its boxes grew from 2 KiB.
 *
 * Versions 10, 12, 14, 16 and 18 read either pool layout (fs_cuda_decode's head_major): vLLM's (page,
 * slot, KV head, d), where one head's rows of a page are 128-byte pieces a whole slot apart
 * (n_kv_heads · d · 2 bytes), or the head-major (page, KV head, slot, d), where they lie
 * together. Only the order of the box's coordinates differs; the box lands the same.
 *
 * Tiles land in the TMA's 128-byte swizzle (hopper_common.cuh), so the compute warps' ldmatrix
 * addresses go through sw_off; dec_warp_tile (decode_common.cuh) is version 7's math unchanged.
 */
#include <new>

#include "kernels/cuda/decode_common.cuh"
#include "kernels/cuda/hopper_common.cuh"

#define DEC9_BK 64        /* keys a tile: 16 for each compute warp */
#define DEC9_THREADS 160  /* 4 compute warps, then the producer warp */

/* The paged producers' window on a sequence's block table (versions 10-20, e4m3-cache versions
 * 6-16): lane i holds entry base + i, read 32 at a time by one coalesced load when the walk reaches
 * past the window (reach: a tile's blocks first … last, never more than 32); entry(blk) shuffles
 * entry blk from its lane. Every lane of the warp calls both. */
struct table_window {
    const int32_t *tab;
    int nblk, lane, base = -64, mine = 0;
    /* true when the window moved (what a caller keeps beside the entries is to be read again) */
    __device__ __forceinline__ bool reach(int first, int last)
    {
        if (last < base + 32) return false;
        base = first;
        mine = base + lane < nblk ? tab[base + lane] : 0;
        return true;
    }
    __device__ __forceinline__ int from(int blk) const { return (blk - base) & 31; }
    __device__ __forceinline__ int entry(int blk) const { return __shfl_sync(0xffffffff, mine, from(blk)); }
};

/* Blocks of kern that fit on one SM with `threads` threads and smem bytes of dynamic shared memory
 * (1 if the query fails). */
template <typename Kern> static int blocks_per_sm(Kern kern, int threads, size_t smem)
{
    int n = 0;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kern, threads, smem) != cudaSuccess)
        return 1;
    return n < 1 ? 1 : n;
}

/* FS_DECODE_NOSTEP (a measurement, never a product build): the compute warps of decode_tma and
 * decode_kv8_tma wait for each stage and give it back without their step, so a timing reads the
 * rate at which the producer's ring alone streams the cache: the ceiling of these kernels' loads.
 * The output is wrong; bench_cuda --time does not check it. */

/* FS_DECODE_CLOCKS (a measurement, never a product build): the contiguous split kernels
 * (decode_tma, decode_kv8_tma) and the merge behind them stamp the device's nanosecond clock
 * (%globaltimer) at fixed points of each block, so that one call's time can be taken apart: when
 * each block started, when its first stage landed, when its loop and its partial ended, and when the
 * merge's blocks arrived, were let through and ended. Per split block (the grid's linear block
 * index, the first CLK_BLOCKS): [0] entry, [1] the first stage landed (compute warp 0), [2] the
 * loop ended (warp 0), [3] the producer issued its last copy, [4] the partial written (thread 0),
 * [5] the SM. Per merge block: [0] entry, [1] past griddepcontrol.wait, [2] its column written.
 * fs_cuda_decode_clocks copies them out and, if asked, clears them for the next call. */
#ifdef FS_DECODE_CLOCKS
#define CLK_BLOCKS 4096
__device__ unsigned long long fs_dec_clk[CLK_BLOCKS * 8], fs_dec_mclk[CLK_BLOCKS * 4];
__device__ __forceinline__ unsigned long long clk_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
/* value v into the split block's slot k */
__device__ __forceinline__ void clk_put(int k, unsigned long long v)
{
    const unsigned bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    if (bid < CLK_BLOCKS) fs_dec_clk[bid * 8 + k] = v;
}
__device__ __forceinline__ unsigned clk_smid()
{
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    return sm;
}
__device__ __forceinline__ void clk_merge(int k)
{
    const unsigned bid = blockIdx.x + gridDim.x * blockIdx.y;
    if (bid < CLK_BLOCKS) fs_dec_mclk[bid * 4 + k] = clk_now();
}
#define CLK(k) clk_put(k, clk_now())
#define CLKSM() clk_put(5, clk_smid())
#define CLKM(k) clk_merge(k)

int fs_cuda_decode_clocks(unsigned long long *split, size_t n_split, unsigned long long *merge, size_t n_merge, int clear)
{
    n_split = n_split < CLK_BLOCKS * 8 ? n_split : CLK_BLOCKS * 8;
    n_merge = n_merge < CLK_BLOCKS * 4 ? n_merge : CLK_BLOCKS * 4;
    if (cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpyFromSymbol(split, fs_dec_clk, n_split * sizeof *split) != cudaSuccess ||
        cudaMemcpyFromSymbol(merge, fs_dec_mclk, n_merge * sizeof *merge) != cudaSuccess)
        return 1;
    if (clear) {
        static const unsigned long long zero[CLK_BLOCKS * 8] = {};
        if (cudaMemcpyToSymbol(fs_dec_clk, zero, sizeof zero) != cudaSuccess ||
            cudaMemcpyToSymbol(fs_dec_mclk, zero, CLK_BLOCKS * 4 * sizeof *zero) != cudaSuccess)
            return 1;
    }
    return 0;
}
#else
#define CLK(k) ((void)0)
#define CLKSM() ((void)0)
#define CLKM(k) ((void)0)
#endif

/* Stages of version 9 by d: 96 KiB of K and V tiles, so that two blocks fit on an SM. Measured
 * at d = 128 (H100, 2026-11-23, the three decode shapes of bench_cuda): 2, 3, 4 and 6 stages all
 * read 2.94-2.99 TB/s, within the spread of one run; once TMA keeps the copies in flight, the
 * stage count no longer matters. */
template <int D> constexpr int dec9_stages() { return D == 64 ? 6 : 3; }

/* Dynamic shared memory of decode_tma: 1024 for alignment, STAGES K and V tiles, Q (16, D + 8),
 * the barriers. */
template <typename T, int D, int STAGES> static size_t dec9_smem()
{
    return 1024 + 2 * (size_t)STAGES * DEC9_BK * D * 2 + sizeof(T) * 16 * (D + 8) + 2 * STAGES * sizeof(uint64_t);
}

/* Byte offset of key r's column c in a stage of WHOLE boxes (version 18): boxes of `rows` keys
 * (16 or 32) one after another, each the keys' D / 64 column blocks of rows × 128 swizzled bytes
 * (make_whole_map). With rows = 64 it would be sw_off<64>: a stage laid out as version 9's. */
template <int D> __device__ __forceinline__ uint32_t sw_whole(int r, int c, int rows)
{
    return (uint32_t)(((r / rows) * (D / 64) + (c >> 6)) * rows * 128 + (r & (rows - 1)) * 128 +
                      ((((c & 63) >> 3) ^ (r & 7)) << 4) + (c & 7) * 2);
}

/* grid (splits, n_kv_heads, batch), DEC9_THREADS threads. Shared memory: STAGES K tiles, then
 * STAGES V tiles (64 rows × D, swizzled), then Q (16, D + 8), then the barriers full (STAGES)
 * and empty (STAGES). Writes the split's partial as versions 2-8 do. PAGED (version 10): tmK and
 * tmV are pool maps (make_pool_map) and the keys of sequence b are found through the table.
 * WHOLE (version 18, pages below 64 keys): the maps are make_whole_map's, one box a page brings
 * its whole rows of D columns instead of D / 64 boxes of 64 columns. */
template <typename T, int D, int STAGES, bool PAGED, bool FUSE, bool PDL = false, bool TOP = false,
          bool WHOLE = false>
__global__ void __launch_bounds__(DEC9_THREADS) decode_tma(decode_params p, const __grid_constant__ CUtensorMap tmK,
                                                           const __grid_constant__ CUtensorMap tmV,
                                                           const T *__restrict__ Q, float *__restrict__ part,
                                                           unsigned *__restrict__ done, T *__restrict__ Out)
{
    static_assert(!WHOLE || PAGED, "whole-row boxes are a paged pool's");
    constexpr int LD = D + 8, TK = DEC9_BK * D * 2;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sK = align1024(smem_raw), *sV = sK + STAGES * TK;
    T *sQ = reinterpret_cast<T *>(sV + STAGES * TK);
    uint64_t *full = reinterpret_cast<uint64_t *>(sQ + 16 * LD), *empty = full + STAGES;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int G = p.n_q_heads / p.n_kv_heads;
    const int len = PAGED && p.seq_lens ? min(p.seq_lens[b], p.n_kv) : p.n_kv;   /* this sequence's keys */
    const int j0 = split * p.split_len, j1 = min(j0 + p.split_len, len);
    const int nt = j0 < j1 ? (j1 - j0 + DEC9_BK - 1) / DEC9_BK : 0;

    if (tid == 0) {
        if (!PAGED) { CLK(0); CLKSM(); }
        ring_init(full, empty, STAGES, 4);   /* one arrival per compute warp */
    }
    __syncthreads();
    /* version 13: the merge kernel may launch once every block of this grid has got here; its
     * blocks then wait (griddepcontrol.wait) for this grid to finish and its writes to show */
    if constexpr (PDL) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");

    if (warp == 4) {   /* the producer: one thread issues every copy */
        if (!PAGED) {
            if (lane == 0) {
                const int kvrow = b * p.n_kv_heads + kvh;
                for (int it = 0; it < nt; it++) {
                    const int s = ring_stage<STAGES>(it), key0 = j0 + it * DEC9_BK;
                    ring_wait_empty<STAGES>(empty, it);
                    mbar_expect_tx(full + s, 2 * TK);   /* K and V on one barrier, box by box */
                    for (int cb = 0; cb < D / 64; cb++) {
                        tma_load3(sK + s * TK + cb * DEC9_BK * 128, &tmK, 64 * cb, key0, kvrow, full + s);
                        tma_load3(sV + s * TK + cb * DEC9_BK * 128, &tmV, 64 * cb, key0, kvrow, full + s);
                    }
                }
                CLK(3);
            }
            return;
        }
        /* paged: the whole warp keeps a window of 32 table entries (lane i holds entry base + i);
         * lane 0 waits, announces the bytes and issues the copies */
        const int P = p.page_size, rows = P < DEC9_BK ? P : DEC9_BK, per = DEC9_BK / rows;   /* boxes a tile */
        const int nblk = min((len + P - 1) / P, p.blocks_per_seq);
        table_window w{p.block_table + (size_t)b * p.blocks_per_seq, nblk, lane};
        for (int it = 0; it < nt; it++) {
            const int s = ring_stage<STAGES>(it), key0 = j0 + it * DEC9_BK, blk0 = key0 / P;
            w.reach(blk0, blk0 + per - 1);   /* per divides 32 and blk0 advances by per: whole tiles fit */
            int page[DEC9_BK / 16];
#pragma unroll
            for (int q = 0; q < DEC9_BK / 16; q++) page[q] = w.entry(blk0 + q);
            if (lane == 0) {
                int boxes = 0;
                for (int q = 0; q < per; q++) boxes += key0 + q * rows < j1;
                ring_wait_empty<STAGES>(empty, it);
                mbar_expect_tx(full + s, 2u * boxes * rows * 128 * (D / 64));
                const int slot0 = P > DEC9_BK ? key0 % P : 0;
                const int c1 = p.head_major ? slot0 : kvh, c2 = p.head_major ? kvh : slot0;   /* make_pool_map */
#pragma unroll
                for (int q = 0; q < DEC9_BK / 16; q++)   /* unrolled: page[] stays in registers (a loop to
                                                            boxes indexed it, and ptxas kept it in local memory) */
                    if (q < boxes) {
                        if (WHOLE) {   /* the page's rows, every column, one copy */
                            const uint32_t off = q * rows * 128 * (D / 64);
                            tma_load5(sK + s * TK + off, &tmK, 0, slot0, 0, kvh, page[q], full + s);
                            tma_load5(sV + s * TK + off, &tmV, 0, slot0, 0, kvh, page[q], full + s);
                        } else
                            for (int cb = 0; cb < D / 64; cb++) {
                                const uint32_t off = cb * DEC9_BK * 128 + q * rows * 128;
                                tma_load4(sK + s * TK + off, &tmK, 64 * cb, c1, c2, page[q], full + s);
                                tma_load4(sV + s * TK + off, &tmV, 64 * cb, c1, c2, page[q], full + s);
                            }
                    }
            }
            __syncwarp();
        }
        return;
    }

    /* the 4 compute warps: Q by cp.async, then the tiles as they land */
    auto sync_compute = [] { bar_sync<128>(1); };   /* the 4 compute warps alone */
    load_tile<T, D, LD, 16, 128>(sQ, Q + ((size_t)b * p.n_q_heads + (size_t)kvh * G) * D, G);
    cp_async_commit();
    cp_async_wait<0>();
    sync_compute();
    uint32_t qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) ldsm_x4(qf[kk], sQ + (lane & 15) * LD + kk * 16 + (lane >> 4) * 8);

    float o[D / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0;
    const int rk = warp * 16 + (lane & 7) + ((lane >> 4) << 3);          /* this lane's K row */
    const int ck = ((lane >> 3) & 1) * 8;                                 /* and column in a k-step */
    const int rv = warp * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);    /* V row */
    const int cv = (lane >> 4) << 3;                                      /* V column in 16 */
    const int rows = WHOLE ? p.page_size : DEC9_BK;   /* keys a box */
    auto at = [&](int r, int c) { return WHOLE ? sw_whole<D>(r, c, rows) : sw_off<DEC9_BK>(r, c); };
    for (int it = 0; it < nt; it++) {
        const int s = ring_stage<STAGES>(it);
        const unsigned char *kS = sK + s * TK, *vS = sV + s * TK;
        const int c0 = j0 + it * DEC9_BK + warp * 16;
        ring_wait_full<STAGES>(full, it);
        if (!PAGED && it == 0 && tid == 0) CLK(1);
#ifndef FS_DECODE_NOSTEP
        if (!PAGED || c0 < j1)   /* paged: past the end, the page was not loaded */
            dec_warp_tile<T, D, TOP>(
                p.scale2, qf, [&](int kk) { return kS + at(rk, kk * 16 + ck); },
                [&](int dp) { return vS + at(rv, dp * 16 + cv); }, c0, j1, t4, m, l, o);
#endif
        ring_release<STAGES>(empty, it, lane);   /* this warp has read the stage */
    }

    /* every tile has landed and been read: the stages' room holds the 4 warps' states */
    float *merge = reinterpret_cast<float *>(sK);
    if (!PAGED && tid == 0) CLK(2);
    sync_compute();
    dec_warp_state_out<D>(merge, warp, g, t4, m, l, o);
    sync_compute();
    dec_partial_out<D>(p, merge, tid, G, b, kvh, split, part);
    if (!PAGED && tid == 0) CLK(4);
    /* versions 11 and 12: the last block of this KV head merges (the producer warp has left, so
     * the compute warps' own barrier stands for the block's) */
    if constexpr (FUSE) dec_last_merge<T, D, 128>(p, part, done, Out, tid, G, b, kvh, sync_compute);
}

/* The tensor maps of K and V: boxes of 64 keys × 64 columns; paged: the pools' maps (either
 * layout), boxes of min(page_size, 64) slots. WHOLE (paged, pages below 64 keys): make_whole_map's,
 * boxes of a page's slots × every column. */
template <int D, bool PAGED, bool WHOLE = false>
static fs_status maps9(const fs_cuda_decode *pp, const decode_params &p, const void *K, const void *V, CUtensorMap &mk,
                       CUtensorMap &mv, char *why, size_t n)
{
    fs_status st;
    if (WHOLE) {   /* (page, slot, head, d) or head-major (page, head, slot, d) */
        const size_t row = (size_t)D * 2;
        const int P = pp->page_size, H = pp->n_kv_heads;
        const size_t ss = pp->head_major ? row : H * row, hs = pp->head_major ? P * row : row, ps = P * H * row;
        if ((st = make_whole_map(&mk, K, pp->dtype, D, P, ss, H, hs, pp->n_pages, ps, why, n)) != FS_OK) return st;
        return make_whole_map(&mv, V, pp->dtype, D, P, ss, H, hs, pp->n_pages, ps, why, n);
    }
    if (PAGED) {
        const int rows = pp->page_size < DEC9_BK ? pp->page_size : DEC9_BK;
        const bool hm = pp->head_major != 0;
        if ((st = make_pool_map(&mk, K, pp->dtype, D, pp->n_kv_heads, pp->page_size, pp->n_pages, rows, hm, why, n)) != FS_OK)
            return st;
        if ((st = make_pool_map(&mv, V, pp->dtype, D, pp->n_kv_heads, pp->page_size, pp->n_pages, rows, hm, why, n)) != FS_OK)
            return st;
    } else {
        const int heads = pp->batch * pp->n_kv_heads;
        if ((st = make_map(&mk, K, pp->dtype, D, p.n_kv, heads, DEC9_BK, why, n)) != FS_OK) return st;
        if ((st = make_map(&mv, V, pp->dtype, D, p.n_kv, heads, DEC9_BK, why, n)) != FS_OK) return st;
    }
    return FS_OK;
}

/* One launch of decode_tma over (splits, n_kv_heads, batch); the partials go to part. */
template <typename T, int D, bool PAGED>
static fs_status launch9(const fs_cuda_decode *pp, const decode_params &p, const void *Q, const void *K,
                         const void *V, float *part, unsigned *done, void *O, char *why, size_t n)
{
    constexpr int STAGES = dec9_stages<D>();
    static_assert(dec_merge_floats<D>() * sizeof(float) <= 2 * STAGES * DEC9_BK * D * 2, "merge room");
    CUtensorMap mk, mv;
    fs_status st = maps9<D, PAGED>(pp, p, K, V, mk, mv, why, n);
    if (st != FS_OK) return st;
    const size_t smem = dec9_smem<T, D, STAGES>();
    auto kern = done ? decode_tma<T, D, STAGES, PAGED, true> : decode_tma<T, D, STAGES, PAGED, false>;
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kern<<<dim3(p.splits, pp->n_kv_heads, pp->batch), DEC9_THREADS, smem>>>(p, mk, mv, (const T *)Q, part, done, (T *)O);
    FS_CU_LAUNCHED();
    return FS_OK;
}

template <bool PAGED>
static fs_status launch9_of(const fs_cuda_decode *pp, const decode_params &p, const void *Q, const void *K,
                            const void *V, float *part, unsigned *done, void *O, char *why, size_t n)
{
    const bool bf = pp->dtype == FS_CUDA_BF16;
    if (pp->d == 64)
        return bf ? launch9<__nv_bfloat16, 64, PAGED>(pp, p, Q, K, V, part, done, O, why, n)
                  : launch9<__half, 64, PAGED>(pp, p, Q, K, V, part, done, O, why, n);
    return bf ? launch9<__nv_bfloat16, 128, PAGED>(pp, p, Q, K, V, part, done, O, why, n)
              : launch9<__half, 128, PAGED>(pp, p, Q, K, V, part, done, O, why, n);
}

fs_status fs_cu_hopper_decode_split(const fs_cuda_decode *pp, const decode_params &p, const void *Q,
                                    const void *K, const void *V, float *part, unsigned *done, void *O, char *why,
                                    size_t n)
{
    const bool paged = pp->page_size > 0;
    fs_status st = hopper_device(paged ? (done ? "decode version 12" : "decode version 10")
                                       : (done ? "decode version 11" : "decode version 9"), why, n);
    if (st != FS_OK) return st;
    return paged ? launch9_of<true>(pp, p, Q, K, V, part, done, O, why, n)
                 : launch9_of<false>(pp, p, Q, K, V, part, done, O, why, n);
}

/* Version 13's merge: decode_merge behind griddepcontrol.wait, so that it can be launched while
 * the split kernel still runs. grid (n_q_heads, batch), D threads. */
template <typename T, int D>
__global__ void decode_merge_pdl(decode_params p, const float *__restrict__ part, T *__restrict__ O)
{
    if (threadIdx.x == 0) CLKM(0);
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (threadIdx.x == 0) CLKM(1);
    dec_merge_col<T, D>(p, part, O, blockIdx.x, blockIdx.y, threadIdx.x);
    if (threadIdx.x == 0) CLKM(2);
}

/* The merge of the partials in part into O, launched as a programmatic dependent of the split
 * kernel just launched (which must execute griddepcontrol.launch_dependents). */
template <typename T, int D>
static fs_status launch_merge_pdl(const fs_cuda_decode *pp, const decode_params &p, const float *part, void *O,
                                  cudaStream_t st, char *why, size_t n)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(pp->n_q_heads, pp->batch);
    cfg.blockDim = dim3(D);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = st;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    FS_CU_TRY(cudaLaunchKernelEx(&cfg, decode_merge_pdl<T, D>, p, part, (T *)O));
    return FS_OK;
}

/* Versions 13 (contiguous) and 14 (paged): the split kernel, then its merge as a programmatic
 * dependent; TOP: versions 15 and 16 (and 17 and 18; WHOLE: 18's pages below 64 keys). In two
 * halves: plan13 does the host's work (the tensor maps, the kernel's shared-memory attribute)
 * into a hopper_pdl_plan, run13 launches from it. */
struct hopper_pdl_plan {
    fs_cuda_decode pp;
    decode_params p;
    CUtensorMap mk, mv, ms;   /* ms: e4m3-cache version 16's descales */
    float *part;
    const float *scales;   /* the e4m3 cache's descales (plan_kv8); NULL for the float16 cache */
    /* the launches, on stream st (0, or a stream being captured into a graph) */
    fs_status (*run)(const hopper_pdl_plan &pl, const void *Q, void *O, cudaStream_t st, char *why, size_t n);
};

template <typename T, int D, bool PAGED, bool TOP, bool WHOLE>
static fs_status run13(const hopper_pdl_plan &pl, const void *Q, void *O, cudaStream_t st, char *why, size_t n)
{
    constexpr int STAGES = dec9_stages<D>();
    auto kern = decode_tma<T, D, STAGES, PAGED, false, true, TOP, WHOLE>;
    kern<<<dim3(pl.p.splits, pl.pp.n_kv_heads, pl.pp.batch), DEC9_THREADS, dec9_smem<T, D, STAGES>(), st>>>(
        pl.p, pl.mk, pl.mv, (const T *)Q, pl.part, nullptr, nullptr);
    FS_CU_LAUNCHED();
    return launch_merge_pdl<T, D>(&pl.pp, pl.p, pl.part, O, st, why, n);
}

template <typename T, int D, bool PAGED, bool TOP, bool WHOLE>
static fs_status plan13(hopper_pdl_plan &pl, const void *K, const void *V, char *why, size_t n)
{
    constexpr int STAGES = dec9_stages<D>();
    fs_status st = maps9<D, PAGED, WHOLE>(&pl.pp, pl.p, K, V, pl.mk, pl.mv, why, n);
    if (st != FS_OK) return st;
    auto kern = decode_tma<T, D, STAGES, PAGED, false, true, TOP, WHOLE>;
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dec9_smem<T, D, STAGES>()));
    pl.run = run13<T, D, PAGED, TOP, WHOLE>;
    return FS_OK;
}

template <bool PAGED, bool TOP, bool WHOLE>
static fs_status plan13_of(hopper_pdl_plan &pl, const void *K, const void *V, char *why, size_t n)
{
    const bool bf = pl.pp.dtype == FS_CUDA_BF16;
    if (pl.pp.d == 64)
        return bf ? plan13<__nv_bfloat16, 64, PAGED, TOP, WHOLE>(pl, K, V, why, n)
                  : plan13<__half, 64, PAGED, TOP, WHOLE>(pl, K, V, why, n);
    return bf ? plan13<__nv_bfloat16, 128, PAGED, TOP, WHOLE>(pl, K, V, why, n)
              : plan13<__half, 128, PAGED, TOP, WHOLE>(pl, K, V, why, n);
}

/* ---- Decode version 20: a whole page of every KV head a stage ------------------------------
 *
 * Version 18 brings a page of one KV head a box (4 KiB: 16 slots of 128 float16 columns), and a
 * block serves one KV head, so that is the longest run of bytes it can ask for; with pages of 16
 * its ring reads 0.96-0.98 of the contiguous ring. A page of the pool holds every KV head's rows
 * in one run of P · H · D · 2 bytes (32 KiB at P = 16, H = 8, d = 128) in either layout, and
 * e4m3-cache version 16, which turned its block around to read whole pages, took 11 % less time
 * than version 14 with pages of 16. The same turn here: a block serves a split of one sequence for
 * every KV head, one compute warp a head (H = 2, 4 or 8), and a stage is one page of K and one of
 * V, copied in boxes of 8 KiB (make_whole_map with several heads a box: each head's page lands as
 * version 18's box does, its D / 64 column blocks of P swizzled rows of 128 bytes). Each warp
 * steps over its head's P keys of the page, 16 at a time, with version 15's step (TOP), and keeps
 * its head's state for the whole split, so it writes its partial itself (no merge of warps); the
 * merge is version 13's, a programmatic dependent. Q's fragments come straight from global memory
 * (rows g < G of the head's group; TOP leaves rows g + 8 alone). One block an SM (the stages fill
 * the shared memory): with 8 KV heads, 8 compute warps an SM, as version 18's two blocks of 4.
 *
 * grid (splits, 1, batch), 288 threads: 8 compute warps, then the producer. Shared: STAGES pages
 * of K, STAGES of V (P · 8 · D · 2 bytes each, head h's page at h · P · D · 2), the barriers full
 * and empty. PS: 16 (d = 64 and 128) or 32 (d = 64): at least three stages in 192 KiB. */
#define PAGE_THREADS 288
template <int D, int PS> __host__ __device__ constexpr int page_stages()
{
    return (196608 / (2 * PS * 8 * D * 2)) < 8 ? 196608 / (2 * PS * 8 * D * 2) : 8;
}
template <int D, int PS> static size_t page_smem()
{
    return 1024 + 2 * (size_t)page_stages<D, PS>() * PS * 8 * D * 2 + 2 * page_stages<D, PS>() * sizeof(uint64_t);
}

template <typename T, int D, int PS>
__global__ void __launch_bounds__(PAGE_THREADS) decode_page(decode_params p, const __grid_constant__ CUtensorMap tmK,
                                                            const __grid_constant__ CUtensorMap tmV,
                                                            const T *__restrict__ Q, float *__restrict__ part)
{
    constexpr int STAGES = page_stages<D, PS>(), HP = PS * D * 2, TP = 8 * HP;   /* HP: a head's page, bytes */
    static_assert(STAGES >= 3, "a page of 8 heads takes at most a third of the stages' room");
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sK = align1024(smem_raw), *sV = sK + STAGES * TP;
    uint64_t *full = reinterpret_cast<uint64_t *>(sV + STAGES * TP), *empty = full + STAGES;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int split = blockIdx.x, b = blockIdx.z, H = p.n_kv_heads;
    const int G = p.n_q_heads / H;
    const int len = p.seq_lens ? min(p.seq_lens[b], p.n_kv) : p.n_kv;
    const int j0 = split * p.split_len, j1 = min(j0 + p.split_len, len);   /* split_len: whole pages */
    const int nt = j0 < j1 ? (j1 - j0 + PS - 1) / PS : 0;                  /* pages of the split */

    if (tid == 0) ring_init(full, empty, STAGES, H);   /* one arrival per working compute warp */
    __syncthreads();
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");

    if (warp == 8) {   /* the producer: lane i holds table entry base + i; lane 0 issues the copies */
        const int bh = 8192 / HP < H ? 8192 / HP : H;   /* heads a box: 8 KiB, or the whole page */
        const int nblk = min((len + PS - 1) / PS, p.blocks_per_seq);
        table_window w{p.block_table + (size_t)b * p.blocks_per_seq, nblk, lane};
        for (int it = 0; it < nt; it++) {
            const int s = ring_stage<STAGES>(it), blk = j0 / PS + it;
            w.reach(blk, blk);
            const int page = w.entry(blk);
            if (lane == 0) {
                ring_wait_empty<STAGES>(empty, it);
                mbar_expect_tx(full + s, 2u * H * HP);
                for (int h = 0; h < H; h += bh) {
                    tma_load5(sK + s * TP + h * HP, &tmK, 0, 0, 0, h, page, full + s);
                    tma_load5(sV + s * TP + h * HP, &tmV, 0, 0, 0, h, page, full + s);
                }
            }
            __syncwarp();
        }
        return;
    }
    if (warp >= H) return;   /* a compute warp without a KV head */

    /* compute warp h: its KV head's G query heads (rows g < G), over every page of the split */
    const int h = warp;
    uint32_t qf[D / 16][4];
    const T *q = Q + ((size_t)b * p.n_q_heads + (size_t)h * G + (g < G ? g : 0)) * D;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        qf[kk][0] = g < G ? *reinterpret_cast<const uint32_t *>(q + kk * 16 + 2 * t4) : 0u;
        qf[kk][2] = g < G ? *reinterpret_cast<const uint32_t *>(q + kk * 16 + 8 + 2 * t4) : 0u;
        qf[kk][1] = qf[kk][3] = 0u;   /* rows g + 8: none (TOP) */
    }
    float o[D / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0;
    const int rk = (lane & 7) + ((lane >> 4) << 3), ck = ((lane >> 3) & 1) * 8;   /* as decode_tma's, warp 0 */
    const int rv = (lane & 7) + (((lane >> 3) & 1) << 3), cv = (lane >> 4) << 3;
    for (int it = 0; it < nt; it++) {
        const int s = ring_stage<STAGES>(it), key0 = j0 + it * PS;
        const unsigned char *kS = sK + s * TP + h * HP, *vS = sV + s * TP + h * HP;
        ring_wait_full<STAGES>(full, it);
#ifndef FS_DECODE_NOSTEP
#pragma unroll
        for (int x = 0; x < PS / 16; x++)
            if (key0 + 16 * x < j1)
                dec_warp_tile<T, D, true>(
                    p.scale2, qf, [&](int kk) { return kS + sw_whole<D>(16 * x + rk, kk * 16 + ck, PS); },
                    [&](int dp) { return vS + sw_whole<D>(16 * x + rv, dp * 16 + cv, PS); }, key0 + 16 * x, j1, t4, m, l, o);
#endif
        ring_release<STAGES>(empty, it, lane);   /* this warp has read the stage */
    }

    /* the warp's partial of this split: rows g < G, m and ℓ as dec_partial_out writes them */
    l[0] += __shfl_xor_sync(0xffffffff, l[0], 1);
    l[0] += __shfl_xor_sync(0xffffffff, l[0], 2);
    if (g < G) {
        float *dst = part + (((size_t)b * p.n_q_heads + (size_t)h * G + g) * p.splits + split) * (D + 2);
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++)
#pragma unroll
            for (int e = 0; e < 2; e++) dst[2 + dt * 8 + 2 * t4 + e] = o[dt][e];
        if (t4 == 0) {
            dst[0] = m[0];
            dst[1] = l[0];
        }
    }
}

/* Whether version 20's page kernel takes problem pp: pages of 16 (32 at d = 64: at least three
 * stages), 2, 4 or 8 KV heads (a compute warp each), groups of at most 8 query heads (TOP), d = 64
 * or 128. Otherwise version 20 is version 18. */
static bool page_takes(const fs_cuda_decode *pp)
{
    const int H = pp->n_kv_heads;
    return (pp->page_size == 16 || (pp->page_size == 32 && pp->d == 64)) && (H == 2 || H == 4 || H == 8) &&
           pp->n_q_heads / H <= 8 && (pp->d == 64 || pp->d == 128);
}

template <typename T, int D, int PS>
static fs_status run_page(const hopper_pdl_plan &pl, const void *Q, void *O, cudaStream_t st, char *why, size_t n)
{
    decode_page<T, D, PS><<<dim3(pl.p.splits, 1, pl.pp.batch), PAGE_THREADS, page_smem<D, PS>(), st>>>(pl.p, pl.mk, pl.mv,
                                                                                                      (const T *)Q, pl.part);
    FS_CU_LAUNCHED();
    return launch_merge_pdl<T, D>(&pl.pp, pl.p, pl.part, O, st, why, n);
}

template <typename T, int D, int PS>
static fs_status plan_page(hopper_pdl_plan &pl, const void *K, const void *V, char *why, size_t n)
{
    const size_t row = (size_t)D * 2;
    const int H = pl.pp.n_kv_heads, bh = (int)(8192 / (PS * row)) < H ? (int)(8192 / (PS * row)) : H;
    const size_t ss = pl.pp.head_major ? row : H * row, hs = pl.pp.head_major ? PS * row : row, ps = PS * H * row;
    fs_status st = make_whole_map(&pl.mk, K, pl.pp.dtype, D, PS, ss, H, hs, pl.pp.n_pages, ps, why, n, bh);
    if (st != FS_OK || (st = make_whole_map(&pl.mv, V, pl.pp.dtype, D, PS, ss, H, hs, pl.pp.n_pages, ps, why, n, bh)) != FS_OK)
        return st;
    FS_CU_TRY(cudaFuncSetAttribute(decode_page<T, D, PS>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)page_smem<D, PS>()));
    pl.run = run_page<T, D, PS>;
    return FS_OK;
}

static fs_status plan_page_of(hopper_pdl_plan &pl, const void *K, const void *V, char *why, size_t n)
{
    const bool bf = pl.pp.dtype == FS_CUDA_BF16;
    if (pl.pp.d == 64)
        return pl.pp.page_size == 16 ? (bf ? plan_page<__nv_bfloat16, 64, 16>(pl, K, V, why, n) : plan_page<__half, 64, 16>(pl, K, V, why, n))
                                     : (bf ? plan_page<__nv_bfloat16, 64, 32>(pl, K, V, why, n) : plan_page<__half, 64, 32>(pl, K, V, why, n));
    return bf ? plan_page<__nv_bfloat16, 128, 16>(pl, K, V, why, n) : plan_page<__half, 128, 16>(pl, K, V, why, n);
}

int fs_cu_hopper_decode_page_per_sm(const fs_cuda_decode *pp, int version)
{
    if (version != 20 || !page_takes(pp)) return 0;
    if (pp->d == 128) return blocks_per_sm(decode_page<__half, 128, 16>, PAGE_THREADS, page_smem<128, 16>());
    if (pp->page_size == 16) return blocks_per_sm(decode_page<__half, 64, 16>, PAGE_THREADS, page_smem<64, 16>());
    return blocks_per_sm(decode_page<__half, 64, 32>, PAGE_THREADS, page_smem<64, 32>());
}

/* The host's half into pl (pl.pp, pl.p and pl.part set by the caller). */
static fs_status plan_pdl(hopper_pdl_plan &pl, int version, const void *K, const void *V, char *why, size_t n)
{
    const bool paged = pl.pp.page_size > 0, top = version >= 15 && pl.pp.n_q_heads / pl.pp.n_kv_heads <= 8;
    char what[32];
    snprintf(what, sizeof what, "decode version %d", version);
    fs_status st = hopper_device(what, why, n);
    if (st != FS_OK) return st;
    if (version == 20 && top && page_takes(&pl.pp)) return plan_page_of(pl, K, V, why, n);
    if (version == 19) version = 15;
    if (version == 20) version = 18;   /* where the page kernel does not take the problem */
    if (version == 18 && pl.pp.page_size < DEC9_BK) {   /* a page's whole rows a box */
        if (top) return plan13_of<true, true, true>(pl, K, V, why, n);
        return plan13_of<true, false, true>(pl, K, V, why, n);
    }
    if (top) return paged ? plan13_of<true, true, false>(pl, K, V, why, n) : plan13_of<false, true, false>(pl, K, V, why, n);
    return paged ? plan13_of<true, false, false>(pl, K, V, why, n) : plan13_of<false, false, false>(pl, K, V, why, n);
}

/* A plan's problem, launch parameters, partials and (e4m3 cache) descales, before its host's half. */
static void plan_init(hopper_pdl_plan &pl, const fs_cuda_decode *pp, const decode_params &p, float *part,
                      const float *scales)
{
    pl.pp = *pp;
    pl.p = p;
    pl.part = part;
    pl.scales = scales;
}

fs_status fs_cu_hopper_decode_pdl(const fs_cuda_decode *pp, const decode_params &p, int version, const void *Q,
                                  const void *K, const void *V, float *part, void *O, char *why, size_t n)
{
    hopper_pdl_plan pl;
    plan_init(pl, pp, p, part, nullptr);
    fs_status st = plan_pdl(pl, version, K, V, why, n);
    return st != FS_OK ? st : pl.run(pl, Q, O, 0, why, n);
}

/* A plan on the heap for problem pp (launch parameters p, partials part, descales scales), its
 * host's half done by make(*plan): *plan, or NULL and the failure. */
template <typename Make>
static fs_status new_plan(const fs_cuda_decode *pp, const decode_params &p, float *part, const float *scales,
                          hopper_pdl_plan **plan, Make make, char *why, size_t n)
{
    *plan = nullptr;
    hopper_pdl_plan *pl = new (std::nothrow) hopper_pdl_plan;   /* (the tensor maps' 64-byte alignment kept) */
    if (!pl) {
        if (why && n) snprintf(why, n, "out of host memory for a decode plan");
        return FS_ERR_NOMEM;
    }
    plan_init(*pl, pp, p, part, scales);
    fs_status st = make(*pl);
    if (st != FS_OK) {
        delete pl;
        return st;
    }
    *plan = pl;
    return FS_OK;
}

fs_status fs_cu_hopper_decode_pdl_plan(const fs_cuda_decode *pp, const decode_params &p, int version, const void *K,
                                       const void *V, float *part, hopper_pdl_plan **plan, char *why, size_t n)
{
    return new_plan(pp, p, part, nullptr, plan, [&](hopper_pdl_plan &pl) { return plan_pdl(pl, version, K, V, why, n); },
                    why, n);
}

fs_status fs_cu_hopper_decode_pdl_run(const hopper_pdl_plan *plan, const void *Q, void *O, cudaStream_t st, char *why,
                                      size_t n)
{
    return plan->run(*plan, Q, O, st, why, n);
}

void fs_cu_hopper_decode_pdl_free(hopper_pdl_plan *plan) { delete plan; }

/* How many blocks of decode_tma fit on one SM at head dimension D (1 if the query fails). */
template <int D> static int occupancy9()
{
    /* both 16-bit types and versions 10-12 take the same room */
    return blocks_per_sm(decode_tma<__half, D, dec9_stages<D>(), false, false>, DEC9_THREADS,
                         dec9_smem<__half, D, dec9_stages<D>()>());
}

int fs_cu_hopper_decode_blocks_per_sm(const fs_cuda_decode *pp) { return pp->d == 64 ? occupancy9<64>() : occupancy9<128>(); }

/* ---- The e4m3 KV cache on the TMA (e4m3-cache versions 5-8) ---------------------------------
 *
 *  5  e4m3-cache version 1's warp step (decode_common.cuh's kv8_warp_step, the bytes converted
 *     in registers) with version 9's loads: versions 1-4 load each warp's bytes from global
 *     memory into registers, one or two steps ahead, and read 87-88 % of the copy rate (H100,
 *     2026-11-27), where the float16 decode went from 91-92 % (version 7, cp.async) to 97-100 %
 *     (version 9) once a producer warp kept a ring of TMA copies in flight. Here the producer
 *     brings each 64-key K and V tile of e4m3 bytes into a ring of stages, unswizzled (a stage
 *     holds 64 rows of D bytes, as they lie in global memory), and each compute warp reads its
 *     bytes from the stage with the same addressing versions 1-4 use in global memory.
 *  6  version 5 on a paged pool (decode version 10's boxes, one a page below 64 slots) with one
 *     pair of descales per page and KV head: the producer writes the tile's pages' descales
 *     beside the stage before it arrives on the stage's barrier, so the compute warps find them
 *     there with the bytes.
 *  7, 8  versions 5 and 6 with the bytes converted by the hardware (kv8_warp_step's CVT).
 *  9, 10  versions 7 and 8 with decode version 13's merge: launched as a programmatic dependent
 *     of the split kernel, its blocks resident and waiting when the last split ends. A call over
 *     an e4m3 cache is half as long as over float16, so the merge's launch weighs twice as much.
 *  11, 12  versions 9 and 10 with decode version 15's step: the rows a group of at most 8 query
 *     heads leaves empty are left alone (half the accumulators, half the exponentials; o rescaled
 *     only when a row's maximum moved), and six stages at d = 128 (kv8t_stages). Why: an e4m3
 *     step has twice a float16 step's keys to get through for each byte read, and on the H100
 *     the warps' chains, not the loads, looked to set versions 5-8's rate (the measurement
 *     below). On the H200 the cut and the stages are worth nothing contiguous and 4.5-7.3 %
 *     paged: with the compute warps' step left out (FS_DECODE_NOSTEP) the contiguous ring itself
 *     streams 3.60 TB/s, 85 % of the copy, and the step costs 2-4 % on top; the ring, not the arithmetic, holds the
 *     e4m3 cache (`2026-11-29-h200-decode-rows`). Larger groups run versions 9 and 10's step.
 *  13, 14  versions 11 and 12 with o kept in units of the largest V descale seen so far (VMAX),
 *     as e4m3 prefill version 24 keeps it: a page whose V descale is smaller has its P multiplied
 *     by the ratio (at most 1) before P V, after ℓ has summed P, and o is rescaled only when the
 *     largest grows. Why: version 12 rescales o whenever the V descale changes, which with pages
 *     of 16 is every step (each warp's 16 keys are a page, and its next step is another page), so
 *     TOP's "o rescaled only when a row's maximum moved" never applies: D / 4 multiplies a step
 *     where this takes 4. A contiguous cache has one V descale a head: 13 runs 11's kernel.
 *  15, 16  16 takes a whole page of every KV head a stage, a block serving every KV head
 *     (decode_kv8_page below, which says why); 15, without pages, is version 11.
 *  17  version 11 with tiles of 128 keys read as 64 rows of two keys (PAIRS): a tile of K (and
 *     one of V) is 64 rows of 2 · D bytes, copied as two boxes of D-byte half rows, the first
 *     holding the tile's even keys and the second its odd ones, so that the ring asks the memory
 *     for exactly what the float16 decode's ring asks it for: a tile of 64 rows of 256 bytes in
 *     two boxes of 128-byte half rows (at d = 128). Why: of every difference between the two rings
 *     the measurements have ruled out (element size, swizzle, one box of 128-byte rows, half
 *     rows of 64 bytes, tiles of 128 keys in whole-row boxes, where V lies, stride, length), that
 *     pattern is the one left, and the e4m3 ring alone still streams 2-6 % slower than float16's
 *     on the same bytes (`2026-11-30-h200-decode-size`). The softmax and P V do not depend on the
 *     keys' order within a tile when K and V are permuted alike, so the compute warps step over
 *     the stage's rows as they lie. Tiles must be whole (the key mask counts keys in order):
 *     n_kv a multiple of 128 and splits of whole tiles; else, and for groups of more than 8,
 *     version 11 runs. Measured (H200, `2026-12-03-h200-pairs`, `-pairs-2`): its ring alone
 *     streams the bytes of the float16 ring in the same time (537 MB: 134.1-135.1 us against
 *     133.9-135.7), where 11's took 2 % longer; with its step, 0.2-2.4 % less time than 11.
 * The paged versions (6, 8, 10, 12, 14, 16) read either pool layout (fs_cuda_decode's head_major).
 * Measured (H100, 2026-11-27, `2026-11-27-fp8kv-run4`; GQA 32/8, d = 128, 32k and 64k keys):
 * version 5 2.57-2.63 TB/s, the same as version 1 (2.57-2.64); version 7 2.62-2.69, 88-90 % of
 * the copy. Under ncu every version runs 8 compute warps an SM (2 blocks at 158-224 registers),
 * the schedulers find no eligible warp in 50-63 % of the cycles, and a version 7 warp issues an
 * instruction every 6.3 cycles: the warps' dependent chains (8 mma a step into each score
 * accumulator, the row-max shuffles, the exponentials) set the rate, not the loads.
 *
 * A warp gives a stage back only after its step has used the bytes it read: given back as soon
 * as they were read into registers (before the step), the producer's next copy overwrote them
 * before some reads had completed, and a check with more tiles than stages failed.
 */
#define KV8_BK 64   /* keys a tile: 16 for each compute warp */

/* Stages by d: 64 KiB of K and V tiles (16 KiB a stage at d = 128); versions 11 and 12 (TOP) six
 * at d = 128, 96 KiB, float16 decode's room (two blocks an SM either way): with six, the paged
 * version read 3.2-3.4 % faster at pages of 256, the same at 16, and the contiguous one the same
 * (H200, 2026-11-29, `2026-11-29-h200-decode-rows`). */
template <int D, bool TOP = false, bool PAIRS = false> __host__ __device__ constexpr int kv8t_stages()
{
    if (PAIRS) return D == 64 ? 4 : 3;   /* version 17's tiles of 128 keys: the same room as 11's */
    return D == 64 ? 8 : TOP ? 6 : 4;
}

/* Keys a tile: 64, or 128 with version 17's pairs of keys. */
template <bool PAIRS> __host__ __device__ constexpr int kv8t_bk() { return PAIRS ? 2 * KV8_BK : KV8_BK; }

/* 1024 for alignment, the stages, their descales (up to 4 pages a tile: 8 floats), the barriers. */
template <int D, bool TOP = false, bool PAIRS = false> static size_t kv8t_smem()
{
    constexpr size_t S = kv8t_stages<D, TOP, PAIRS>();
    return 1024 + 2 * S * kv8t_bk<PAIRS>() * D + S * (8 * sizeof(float) + 2 * sizeof(uint64_t));
}

/* W consecutive 32-bit words from shared memory p (16-byte aligned when W ≥ 4, 8-byte when 2). */
template <int W> __device__ __forceinline__ void lds_words(uint32_t (&w)[W], const unsigned char *p)
{
    if constexpr (W % 4 == 0) {
#pragma unroll
        for (int i = 0; i < W / 4; i++) {
            const uint4 u = reinterpret_cast<const uint4 *>(p)[i];
            w[4 * i] = u.x; w[4 * i + 1] = u.y; w[4 * i + 2] = u.z; w[4 * i + 3] = u.w;
        }
    } else {
        static_assert(W == 2, "2 or a multiple of 4 words");
        const uint2 u = *reinterpret_cast<const uint2 *>(p);
        w[0] = u.x; w[1] = u.y;
    }
}

/* A warp's 16 keys from rows row0 .. row0 + 15 of a stage (sKt, sVt: rows of D bytes, rs bytes
 * apart: D, or the whole page's H · D in e4m3-cache version 16's vLLM layout), as attn_decode.cu's
 * kv8_load takes them from global memory; rows past nvalid − 1 (the split's end) read row
 * nvalid − 1: finite, and weighted by 0. */
template <int D>
__device__ __forceinline__ void kv8_load_stage(kv8_regs<D> &r, const unsigned char *sKt, const unsigned char *sVt,
                                               int row0, int nvalid, int g, int t4, int rs = D)
{
    const int r0 = 4 * (g >> 1) + (g & 1);
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
        lds_words<D / 16>(r.k[nt], sKt + min(row0 + r0 + 2 * nt, nvalid - 1) * rs + t4 * (D / 4));
#pragma unroll
    for (int x = 0; x < 4; x++) lds_words<D / 32>(r.v[x], sVt + min(row0 + 4 * t4 + x, nvalid - 1) * rs + g * (D / 8));
}

/* grid (splits, n_kv_heads, batch), DEC9_THREADS threads (4 compute warps, then the producer).
 * Shared: STAGES K tiles, STAGES V tiles (BK × D bytes each), the stages' descales (STAGES, 4
 * pages, k and v), the barriers full (STAGES) and empty (STAGES). scales: (batch, n_kv_heads, 2),
 * or (n_pages, n_kv_heads, 2) when PAGED. Writes the split's partial as versions 2-9 do. PAIRS
 * (version 17, contiguous): tiles of BK = 128 keys whose stage holds the even keys in rows 0-63
 * and the odd ones in rows 64-127; each compute warp steps over 16 rows of each half. */
template <int D, bool PAGED, bool CVT, bool PDL = false, bool TOP = false, bool VMAX = false, bool PAIRS = false>
__global__ void __launch_bounds__(DEC9_THREADS) decode_kv8_tma(decode_params p, const __grid_constant__ CUtensorMap tmK,
                                                               const __grid_constant__ CUtensorMap tmV,
                                                               const __half *__restrict__ Q,
                                                               const float *__restrict__ scales, float *__restrict__ part)
{
    static_assert(!(PAIRS && PAGED), "pairs of keys: a contiguous cache");
    constexpr int STAGES = kv8t_stages<D, TOP, PAIRS>(), BK = kv8t_bk<PAIRS>(), TK = BK * D;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sK = align1024(smem_raw), *sV = sK + STAGES * TK;
    float *sSc = reinterpret_cast<float *>(sV + STAGES * TK);
    uint64_t *full = reinterpret_cast<uint64_t *>(sSc + 8 * STAGES), *empty = full + STAGES;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int G = p.n_q_heads / p.n_kv_heads;
    const int len = PAGED && p.seq_lens ? min(p.seq_lens[b], p.n_kv) : p.n_kv;
    const int j0 = split * p.split_len, j1 = min(j0 + p.split_len, len);
    const int nt = j0 < j1 ? (j1 - j0 + BK - 1) / BK : 0;
    const int rows = PAGED && p.page_size < KV8_BK ? p.page_size : KV8_BK;   /* slots a box */

    if (tid == 0) {
        if (!PAGED) { CLK(0); CLKSM(); }
        ring_init(full, empty, STAGES, 4);   /* one arrival per compute warp */
    }
    __syncthreads();
    if constexpr (PDL) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");   /* versions 9, 10 */

    if (warp == 4) {   /* the producer */
        if (!PAGED) {
            if (lane == 0) {
                const int kvrow = b * p.n_kv_heads + kvh;
                for (int it = 0; it < nt; it++) {
                    const int s = ring_stage<STAGES>(it), key0 = j0 + it * BK;
                    ring_wait_empty<STAGES>(empty, it);
                    mbar_expect_tx(full + s, 2 * TK);
                    if constexpr (PAIRS) {   /* rows of two keys (plan_kv8's map): the even keys' halves, then the odd */
#pragma unroll
                        for (int h = 0; h < 2; h++) {
                            tma_load3(sK + s * TK + h * KV8_BK * D, &tmK, h * D, key0 / 2, kvrow, full + s);
                            tma_load3(sV + s * TK + h * KV8_BK * D, &tmV, h * D, key0 / 2, kvrow, full + s);
                        }
                    } else {
                        tma_load3(sK + s * TK, &tmK, 0, key0, kvrow, full + s);
                        tma_load3(sV + s * TK, &tmV, 0, key0, kvrow, full + s);
                    }
                }
                CLK(3);
            }
            return;
        }
        /* paged: lane i holds table entry base + i and that page's descales (one load each for
         * 32 pages); lane 0 writes the tile's descales, announces the bytes and issues the boxes */
        const int P = p.page_size, per = KV8_BK / rows;
        const int nblk = min((len + P - 1) / P, p.blocks_per_seq);
        table_window w{p.block_table + (size_t)b * p.blocks_per_seq, nblk, lane};
        float mk = 1.f, mv = 1.f;
        for (int it = 0; it < nt; it++) {
            const int s = ring_stage<STAGES>(it), key0 = j0 + it * KV8_BK, blk0 = key0 / P;
            if (w.reach(blk0, blk0 + per - 1)) {   /* and the new entries' descales */
                mk = scales[((size_t)w.mine * p.n_kv_heads + kvh) * 2];
                mv = scales[((size_t)w.mine * p.n_kv_heads + kvh) * 2 + 1];
            }
            int page[KV8_BK / 16];
            float pk[KV8_BK / 16], pv[KV8_BK / 16];
#pragma unroll
            for (int q = 0; q < KV8_BK / 16; q++) {
                const int from = w.from(blk0 + q);
                page[q] = w.entry(blk0 + q);
                pk[q] = __shfl_sync(0xffffffff, mk, from);
                pv[q] = __shfl_sync(0xffffffff, mv, from);
            }
            if (lane == 0) {
                int boxes = 0;
                for (int q = 0; q < per; q++) boxes += key0 + q * rows < j1;
                /* the boxes' coordinates before the wait: after it, only the descales and the copies */
                const int slot0 = P > KV8_BK ? key0 % P : 0;
                const int c1 = p.head_major ? slot0 : kvh, c2 = p.head_major ? kvh : slot0;   /* kv8_map's order */
                ring_wait_empty<STAGES>(empty, it);
#pragma unroll
                for (int q = 0; q < KV8_BK / 16; q++)   /* unrolled: the arrays stay in registers */
                    if (q < boxes) {
                        sSc[8 * s + 2 * q] = pk[q];
                        sSc[8 * s + 2 * q + 1] = pv[q];
                    }
                mbar_expect_tx(full + s, 2u * boxes * rows * D);   /* also releases the descales */
#pragma unroll
                for (int q = 0; q < KV8_BK / 16; q++)
                    if (q < boxes) {
                        tma_load4(sK + s * TK + q * rows * D, &tmK, 0, c1, c2, page[q], full + s);
                        tma_load4(sV + s * TK + q * rows * D, &tmV, 0, c1, c2, page[q], full + s);
                    }
            }
            __syncwarp();
        }
        return;
    }

    /* the 4 compute warps */
    uint32_t qf[D / 16][4];
    kv8_q_frags<D>(qf, Q + ((size_t)b * p.n_q_heads + (size_t)kvh * G) * D, G, g, t4);
    float o[D / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0;
    const float sc2_head = CVT ? p.scale2 : p.scale2 * 256.f;   /* without CVT the bytes read as 2^-8 times their values */
    float sk = 1.f, sv_cur = VMAX ? 0.f : 1.f;
    const int qw = PAGED ? 16 * warp / rows : 0;   /* the warp's page among a tile's (a division, once) */
    if (!PAGED) {
        sk = scales[((size_t)b * p.n_kv_heads + kvh) * 2];
        sv_cur = scales[((size_t)b * p.n_kv_heads + kvh) * 2 + 1];
    }
    for (int it = 0; it < nt; it++) {
        const int s = ring_stage<STAGES>(it), key0 = j0 + it * BK;
        ring_wait_full<STAGES>(full, it);
        if (!PAGED && it == 0 && tid == 0) CLK(1);
#pragma unroll
        for (int h = 0; h < BK / KV8_BK; h++) {   /* the warp's 16 rows of each 64-row half (PAIRS: two) */
            /* kb: the rows' first key, for the mask of the split's last tile; PAIRS' rows hold
             * keys out of order, and its tiles are whole (kv8_pairs_take), so kb never masks there */
            const int row0 = KV8_BK * h + 16 * warp, kb = key0 + row0;
            kv8_regs<D> r;
            float sc2 = sc2_head * sk, rescale = 1.f, pscale = 1.f;
            const bool live = kb < j1;   /* paged: past the end, the page was not loaded */
            if (live) {   /* the bytes and (paged) the page's descales */
                kv8_load_stage<D>(r, sK + s * TK, sV + s * TK, row0, min(j1 - key0, BK), g, t4);
                if (PAGED) {
                    const float2 kv = reinterpret_cast<const float2 *>(sSc)[4 * s + qw];   /* k's, v's */
                    sc2 = sc2_head * kv.x;
                    if (VMAX) {   /* o in units of the largest V descale so far (0 before the first page) */
                        if (kv.y > sv_cur) {
                            rescale = sv_cur / kv.y;
                            sv_cur = kv.y;
                        }
                        pscale = kv.y >= sv_cur ? 1.f : __fdividef(kv.y, sv_cur);
                    } else if (kv.y != sv_cur) {   /* the same for the whole warp: a new page's V descale */
                        rescale = sv_cur / kv.y;
                        sv_cur = kv.y;
                    }
                }
            }
#ifndef FS_DECODE_NOSTEP
            if (live) kv8_warp_step<D, CVT, TOP>(sc2, rescale, qf, r, kb, j1, t4, m, l, o, pscale);
#endif
        }
        ring_release<STAGES>(empty, it, lane);   /* the step has used the bytes (see the top) */
    }

    /* every tile has landed and been read: the stages' room holds the 4 warps' states */
    float *merge = reinterpret_cast<float *>(sK);
    if (!PAGED && tid == 0) CLK(2);
    bar_sync<128>(1);
    kv8_state_out<D>(merge, warp, g, t4, CVT ? sv_cur : sv_cur * 256.f, m, l, o);
    bar_sync<128>(1);
    dec_partial_out<D>(p, merge, tid, G, b, kvh, split, part);
    if (!PAGED && tid == 0) CLK(4);
}

/* ---- e4m3-cache version 16: a whole page a stage, every KV head -------------------------------
 *
 * With pages of 16 the paged ring streams 2 KiB boxes (a page's rows of one KV head: 16 × 128
 * bytes at d = 128) and alone reads 0.92 of the contiguous ring, where the float16 decode with
 * whole-row boxes of 4 KiB reads 0.96-0.98 of contiguous (version 18). A block of versions 6-14
 * serves one KV head, so the smallest run of bytes it can ask for is that head's part of a page.
 * But a page of the pool holds every KV head's rows in one run of P · H · D bytes (16 KiB at P =
 * 16, H = 8, d = 128) in either layout. So here a block serves a split of one sequence for every
 * KV head: one compute warp a KV head (H = 2, 4 or 8), a stage is one page of K and one of V,
 * copied in boxes of 8 KiB (whole rows of the page, whatever their heads), and each warp steps
 * over its head's P keys of the page, 16 at a time, with version 14's step (TOP, the hardware's
 * conversion, o in units of the largest V descale so far). Each warp holds its head's state for
 * the whole split, so it writes its partial itself (no merge of warps); the merge is version 13's,
 * a programmatic dependent. One block an SM (the stages fill the shared memory): with 8 KV heads,
 * eight compute warps an SM as before. Pages of 16 or 32 slots (PS). A page's descales (H pairs,
 * one run of the descale array) come by the TMA too, a box beside the stage on the same barrier:
 * the producer stores nothing itself.
 *
 * grid (splits, 1, batch), 32 · (8 + 1) threads: 8 compute warps, then the producer. Shared: STAGES
 * pages of K, STAGES of V (PS · 8 · D bytes each), the stages' descales (128 bytes each: up to 16
 * floats), the barriers full and empty. Stage rows: head-major, head h's slots at (h · PS + slot)
 * · D; vLLM's, (slot · H + h) · D. scales: (n_pages, n_kv_heads, 2), 16-byte aligned; tmS maps it
 * as one run of floats, boxes of 2 H. */
template <int D, int PS> __host__ __device__ constexpr int kv8p_stages()
{
    return (196608 / (2 * PS * 8 * D)) < 8 ? 196608 / (2 * PS * 8 * D) : 8;   /* about 192 KiB of pages */
}
#define KV8P_THREADS 288

template <int D, int PS> static size_t kv8p_smem()
{
    constexpr size_t S = kv8p_stages<D, PS>();
    return 1024 + 2 * S * PS * 8 * D + S * (32 * sizeof(float) + 2 * sizeof(uint64_t));
}

template <int D, int PS>
__global__ void __launch_bounds__(KV8P_THREADS) decode_kv8_page(decode_params p, const __grid_constant__ CUtensorMap tmK,
                                                                const __grid_constant__ CUtensorMap tmV,
                                                                const __grid_constant__ CUtensorMap tmS,
                                                                const __half *__restrict__ Q, float *__restrict__ part)
{
    constexpr int STAGES = kv8p_stages<D, PS>(), TP = PS * 8 * D, BR = 8192 / D;   /* BR: rows a box (8 KiB) */
    extern __shared__ unsigned char smem_raw[];
    unsigned char *sK = align1024(smem_raw), *sV = sK + STAGES * TP;
    float *sSc = reinterpret_cast<float *>(sV + STAGES * TP);
    uint64_t *full = reinterpret_cast<uint64_t *>(sSc + 32 * STAGES), *empty = full + STAGES;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int split = blockIdx.x, b = blockIdx.z, H = p.n_kv_heads;
    const int G = p.n_q_heads / H;
    const int len = p.seq_lens ? min(p.seq_lens[b], p.n_kv) : p.n_kv;
    const int j0 = split * p.split_len, j1 = min(j0 + p.split_len, len);   /* split_len: whole pages */
    const int nt = j0 < j1 ? (j1 - j0 + PS - 1) / PS : 0;                  /* pages of the split */

    if (tid == 0) ring_init(full, empty, STAGES, H);   /* one arrival per working compute warp */
    __syncthreads();
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");

    if (warp == 8) {   /* the producer: lane i holds table entry base + i; lane 0 issues the copies */
        const int bytes = PS * H * D, boxes = (bytes + 8191) / 8192, br = bytes < 8192 ? PS * H : BR;
        const int scb = 8 * H;   /* a page's descales box, bytes (H ≥ 2: kv8p_takes) */
        const int nblk = min((len + PS - 1) / PS, p.blocks_per_seq);
        table_window w{p.block_table + (size_t)b * p.blocks_per_seq, nblk, lane};
        for (int it = 0; it < nt; it++) {
            const int s = ring_stage<STAGES>(it), blk = j0 / PS + it;
            w.reach(blk, blk);
            const int page = w.entry(blk);
            if (lane == 0) {
                ring_wait_empty<STAGES>(empty, it);
                mbar_expect_tx(full + s, 2u * bytes + scb);
                tma_load1(sSc + 32 * s, &tmS, page * 2 * H, full + s);
                for (int q = 0; q < boxes; q++) {
                    tma_load3(sK + s * TP + q * br * D, &tmK, 0, q * br, page, full + s);
                    tma_load3(sV + s * TP + q * br * D, &tmV, 0, q * br, page, full + s);
                }
            }
            __syncwarp();
        }
        return;
    }
    if (warp >= H) return;   /* a compute warp without a KV head */

    /* compute warp h = warp: its KV head's G query heads, over every page of the split */
    const int h = warp;
    uint32_t qf[D / 16][4];
    kv8_q_frags<D>(qf, Q + ((size_t)b * p.n_q_heads + (size_t)h * G) * D, G, g, t4);
    float o[D / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0;
    float sv_cur = 0.f;   /* o's units: the largest V descale so far (0 before the first page) */
    const int rs = p.head_major ? D : H * D;   /* head h's rows in a stage: bytes apart, and the first */
    const unsigned char *hK = sK + (p.head_major ? (size_t)h * PS * D : (size_t)h * D);
    const unsigned char *hV = sV + (p.head_major ? (size_t)h * PS * D : (size_t)h * D);
    for (int it = 0; it < nt; it++) {
        const int s = ring_stage<STAGES>(it), key0 = j0 + it * PS;
        ring_wait_full<STAGES>(full, it);
        const float2 kv = reinterpret_cast<const float2 *>(sSc)[16 * s + h];   /* k's, v's */
        const float sc2 = p.scale2 * kv.x;
        float rescale = 1.f;
        if (kv.y > sv_cur) {
            rescale = sv_cur / kv.y;
            sv_cur = kv.y;
        }
        const float pscale = kv.y >= sv_cur ? 1.f : __fdividef(kv.y, sv_cur);
#pragma unroll
        for (int q = 0; q < PS / 16; q++) {
            const int kb = key0 + 16 * q;
            if (kb < j1) {
                kv8_regs<D> r;
                kv8_load_stage<D>(r, hK + s * TP, hV + s * TP, 16 * q, min(j1 - key0, PS), g, t4, rs);
#ifndef FS_DECODE_NOSTEP
                kv8_warp_step<D, true, true>(sc2, q == 0 ? rescale : 1.f, qf, r, kb, j1, t4, m, l, o, pscale);
#endif
            }
        }
        ring_release<STAGES>(empty, it, lane);   /* the steps have used the bytes */
    }

    /* the warp's partial of this split: rows g < G (TOP: rows g + 8 empty), o in true units */
    l[0] += __shfl_xor_sync(0xffffffff, l[0], 1);
    l[0] += __shfl_xor_sync(0xffffffff, l[0], 2);
    if (g < G) {
        float *dst = part + (((size_t)b * p.n_q_heads + (size_t)h * G + g) * p.splits + split) * (D + 2);
#pragma unroll
        for (int nt2 = 0; nt2 < D / 8; nt2++)
#pragma unroll
            for (int e = 0; e < 2; e++) dst[2 + (2 * t4 + e) * (D / 8) + nt2] = o[nt2][e] * sv_cur;
        if (t4 == 0) {
            dst[0] = m[0];
            dst[1] = l[0];
        }
    }
}

/* A tensor map over e4m3 bytes with boxes of whole rows of D bytes, no swizzle (a box lands as
 * its rows, back to back): rank 3 over a contiguous cache (D, n_kv, batch · n_kv_heads), boxes of
 * 64 rows; rank 4 over a pool (D, n_kv_heads, page_size, n_pages), or (D, page_size, n_kv_heads,
 * n_pages) head-major, boxes of `rows` slots. */
static fs_status kv8_map(CUtensorMap *map, const void *base, int rank, const cuuint64_t *dims, const cuuint32_t *box,
                         char *why, size_t n)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode;
    fs_status st = tensor_map_encoder(&encode, why, n);
    if (st != FS_OK) return st;
    cuuint64_t strides[3];
    strides[0] = dims[0];
    for (int i = 1; i < rank - 1; i++) strides[i] = strides[i - 1] * dims[i];
    const cuuint32_t estr[4] = {1, 1, 1, 1};
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, rank, const_cast<void *>(base), dims, strides, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        if (why && n) snprintf(why, n, "cuTensorMapEncodeTiled (e4m3 cache) failed (%d)", (int)r);
        return FS_ERR_ARG;
    }
    return FS_OK;
}

/* e4m3-cache versions 5-14 and 17 (16: plan_kv8p) in two halves, as versions 13-18 above: plan_kv8 does the host's work
 * (the two tensor maps, the kernel's shared-memory attribute) into a hopper_pdl_plan, run_kv8
 * launches from it (PDL: the merge too, as a programmatic dependent; else the caller merges). */
template <int D, bool PAGED, bool CVT, bool PDL, bool TOP, bool VMAX, bool PAIRS>
static fs_status run_kv8(const hopper_pdl_plan &pl, const void *Q, void *O, cudaStream_t st, char *why, size_t n)
{
    auto kern = decode_kv8_tma<D, PAGED, CVT, PDL, TOP, VMAX, PAIRS>;
    kern<<<dim3(pl.p.splits, pl.pp.n_kv_heads, pl.pp.batch), DEC9_THREADS, kv8t_smem<D, TOP, PAIRS>(), st>>>(
        pl.p, pl.mk, pl.mv, (const __half *)Q, pl.scales, pl.part);
    FS_CU_LAUNCHED();
    if constexpr (PDL) return launch_merge_pdl<__half, D>(&pl.pp, pl.p, pl.part, O, st, why, n);
    return FS_OK;
}

template <int D, bool PAGED, bool CVT, bool PDL = false, bool TOP = false, bool VMAX = false, bool PAIRS = false>
static fs_status plan_kv8(hopper_pdl_plan &pl, const void *K8, const void *V8, char *why, size_t n)
{
    static_assert(dec_merge_floats<D>() * sizeof(float) <= 2 * kv8t_stages<D, TOP, PAIRS>() * kv8t_bk<PAIRS>() * D,
                  "merge room");
    const fs_cuda_decode *pp = &pl.pp;
    fs_status st;
    if (PAGED) {
        const int rows = pp->page_size < KV8_BK ? pp->page_size : KV8_BK;
        const bool hm = pp->head_major != 0;
        const cuuint64_t heads = (cuuint64_t)pp->n_kv_heads, slots = (cuuint64_t)pp->page_size;
        const cuuint64_t dims[4] = {(cuuint64_t)D, hm ? slots : heads, hm ? heads : slots, (cuuint64_t)pp->n_pages};
        const cuuint32_t box[4] = {(cuuint32_t)D, hm ? (cuuint32_t)rows : 1u, hm ? 1u : (cuuint32_t)rows, 1};
        if ((st = kv8_map(&pl.mk, K8, 4, dims, box, why, n)) != FS_OK) return st;
        if ((st = kv8_map(&pl.mv, V8, 4, dims, box, why, n)) != FS_OK) return st;
    } else {
        /* PAIRS: each head's keys as n_kv / 2 rows of two keys (2 · D bytes), a box the D-byte
         * halves of 64 such rows */
        const int per = PAIRS ? 2 : 1;
        const cuuint64_t dims[3] = {(cuuint64_t)(per * D), (cuuint64_t)(pp->n_kv / per), (cuuint64_t)pp->batch * pp->n_kv_heads};
        const cuuint32_t box[3] = {(cuuint32_t)D, KV8_BK, 1};
        if ((st = kv8_map(&pl.mk, K8, 3, dims, box, why, n)) != FS_OK) return st;
        if ((st = kv8_map(&pl.mv, V8, 3, dims, box, why, n)) != FS_OK) return st;
    }
    auto kern = decode_kv8_tma<D, PAGED, CVT, PDL, TOP, VMAX, PAIRS>;
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kv8t_smem<D, TOP, PAIRS>()));
    pl.run = run_kv8<D, PAGED, CVT, PDL, TOP, VMAX, PAIRS>;
    return FS_OK;
}

/* e4m3-cache version 16's kernel in two halves, as plan_kv8 and run_kv8: its tensor maps view the
 * pool as pages of PS · H rows of D bytes (either layout: a page is one run), boxes of 8 KiB of
 * whole rows (or the whole page when it is smaller). */
template <int D, int PS>
static fs_status run_kv8p(const hopper_pdl_plan &pl, const void *Q, void *O, cudaStream_t st, char *why, size_t n)
{
    decode_kv8_page<D, PS><<<dim3(pl.p.splits, 1, pl.pp.batch), KV8P_THREADS, kv8p_smem<D, PS>(), st>>>(
        pl.p, pl.mk, pl.mv, pl.ms, (const __half *)Q, pl.part);
    FS_CU_LAUNCHED();
    return launch_merge_pdl<__half, D>(&pl.pp, pl.p, pl.part, O, st, why, n);
}

template <int D, int PS>
static fs_status plan_kv8p(hopper_pdl_plan &pl, const void *K8, const void *V8, char *why, size_t n)
{
    const fs_cuda_decode *pp = &pl.pp;
    const int rows = PS * pp->n_kv_heads, br = rows * D < 8192 ? rows : 8192 / D;
    const cuuint64_t dims[3] = {(cuuint64_t)D, (cuuint64_t)rows, (cuuint64_t)pp->n_pages};
    const cuuint32_t box[3] = {(cuuint32_t)D, (cuuint32_t)br, 1};
    fs_status st;
    if ((st = kv8_map(&pl.mk, K8, 3, dims, box, why, n)) != FS_OK) return st;
    if ((st = kv8_map(&pl.mv, V8, 3, dims, box, why, n)) != FS_OK) return st;
    {   /* the descales as one run of floats, a page's 2 H of them a box (16, 32 or 64 bytes) */
        PFN_cuTensorMapEncodeTiled_v12000 encode;
        if ((st = tensor_map_encoder(&encode, why, n)) != FS_OK) return st;
        const cuuint64_t sd[1] = {(cuuint64_t)pp->n_pages * pp->n_kv_heads * 2};
        const cuuint32_t sb[1] = {(cuuint32_t)(2 * pp->n_kv_heads)}, se[1] = {1};
        const cuuint64_t none[1] = {0};   /* (a 1-D map has no strides) */
        CUresult r = encode(&pl.ms, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, const_cast<float *>(pl.scales), sd, none, sb, se,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r != CUDA_SUCCESS) {
            if (why && n) snprintf(why, n, "cuTensorMapEncodeTiled (e4m3 descales) failed (%d)", (int)r);
            return FS_ERR_ARG;
        }
    }
    FS_CU_TRY(cudaFuncSetAttribute(decode_kv8_page<D, PS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)kv8p_smem<D, PS>()));
    pl.run = run_kv8p<D, PS>;
    return FS_OK;
}

/* Whether e4m3-cache version 16's page kernel takes problem pp: pages of 16 or 32 slots, 2, 4 or
 * 8 KV heads (a compute warp each; a page a power of two of bytes, whole 8 KiB boxes or one
 * smaller; a page's descales 16-byte multiples, which the TMA's box needs where it starts: with
 * one KV head they are 8 bytes, and the copy faulted), groups of at most 8 query heads, d = 64 or
 * 128. Otherwise version 16 is version 14 (with one KV head a page of it is what version 14's
 * boxes bring anyway). */
static bool kv8p_takes(const fs_cuda_decode *pp)
{
    const int H = pp->n_kv_heads;
    return (pp->page_size == 16 || pp->page_size == 32) && (H == 2 || H == 4 || H == 8) &&
           pp->n_q_heads / H <= 8 && (pp->d == 64 || pp->d == 128);
}

int fs_cu_hopper_kv8_page_per_sm(const fs_cuda_decode *pp, int version)
{
    if (version != 16 || !kv8p_takes(pp)) return 0;
    if (pp->d == 64)
        return pp->page_size == 16 ? blocks_per_sm(decode_kv8_page<64, 16>, KV8P_THREADS, kv8p_smem<64, 16>())
                                   : blocks_per_sm(decode_kv8_page<64, 32>, KV8P_THREADS, kv8p_smem<64, 32>());
    return pp->page_size == 16 ? blocks_per_sm(decode_kv8_page<128, 16>, KV8P_THREADS, kv8p_smem<128, 16>())
                               : blocks_per_sm(decode_kv8_page<128, 32>, KV8P_THREADS, kv8p_smem<128, 32>());
}

/* The version whose kernel runs e4m3-cache version v for groups of G query heads: 13 and 15 are
 * 11's kernel (a contiguous cache has one V descale a head and no pages), 16 is 14's where its
 * page kernel does not take the problem (kv8p_takes, asked first), 17 is 11's where its pairs of
 * keys do not (kv8_pairs_take, asked first; 17's kernel has 11's room and blocks an SM);
 * versions 11-14 step over rows g alone, so a group of more than 8 runs 9 and 10's step. */
static int kv8_version_run(int v, int G)
{
    if (v == 13 || v == 15 || v == 17) v = 11;
    if (v == 16) v = 14;   /* where version 16's page kernel does not take the problem */
    if (v >= 11 && G > 8) v = v == 14 ? 10 : v - 2;
    return v;
}

/* Whether version 17's pairs of keys take the problem: whole 128-key tiles (n_kv and the split
 * length multiples of 128) and a group of at most 8 (version 11's step). */
static bool kv8_pairs_take(const fs_cuda_decode *pp, const decode_params &p)
{
    return pp->n_kv % 128 == 0 && p.split_len % 128 == 0 && pp->n_q_heads / pp->n_kv_heads <= 8;
}

/* The host's half of e4m3-cache version `version` into pl (pl.pp, pl.p, pl.part, pl.scales set by
 * the caller). */
static fs_status plan_kv8_of(hopper_pdl_plan &pl, int version, const void *K8, const void *V8, char *why, size_t n)
{
    char what[32];
    snprintf(what, sizeof what, "e4m3-cache version %d", version);
    fs_status st = hopper_device(what, why, n);
    if (st != FS_OK) return st;
#define FS_KV8_PLAN(D, PAGED, CVT, PDL) plan_kv8<D, PAGED, CVT, PDL>(pl, K8, V8, why, n)
#define FS_KV8_TOP(D, PAGED) plan_kv8<D, PAGED, true, true, true>(pl, K8, V8, why, n)
    if (version == 16 && kv8p_takes(&pl.pp) && ((uintptr_t)pl.scales & 15) == 0) {   /* (a TMA source: 16-byte aligned) */
        if (pl.pp.d == 64) return pl.pp.page_size == 16 ? plan_kv8p<64, 16>(pl, K8, V8, why, n) : plan_kv8p<64, 32>(pl, K8, V8, why, n);
        return pl.pp.page_size == 16 ? plan_kv8p<128, 16>(pl, K8, V8, why, n) : plan_kv8p<128, 32>(pl, K8, V8, why, n);
    }
    if (version == 17 && kv8_pairs_take(&pl.pp, pl.p))
        return pl.pp.d == 64 ? plan_kv8<64, false, true, true, true, false, true>(pl, K8, V8, why, n)
                             : plan_kv8<128, false, true, true, true, false, true>(pl, K8, V8, why, n);
    version = kv8_version_run(version, pl.pp.n_q_heads / pl.pp.n_kv_heads);
    switch (version * 1000 + pl.pp.d) {
    case 14064: return plan_kv8<64, true, true, true, true, true>(pl, K8, V8, why, n);
    case 14128: return plan_kv8<128, true, true, true, true, true>(pl, K8, V8, why, n);
    case 11064: return FS_KV8_TOP(64, false);
    case 12064: return FS_KV8_TOP(64, true);
    case 11128: return FS_KV8_TOP(128, false);
    case 12128: return FS_KV8_TOP(128, true);
    case 5064: return FS_KV8_PLAN(64, false, false, false);
    case 6064: return FS_KV8_PLAN(64, true, false, false);
    case 7064: return FS_KV8_PLAN(64, false, true, false);
    case 8064: return FS_KV8_PLAN(64, true, true, false);
    case 9064: return FS_KV8_PLAN(64, false, true, true);
    case 10064: return FS_KV8_PLAN(64, true, true, true);
    case 5128: return FS_KV8_PLAN(128, false, false, false);
    case 6128: return FS_KV8_PLAN(128, true, false, false);
    case 7128: return FS_KV8_PLAN(128, false, true, false);
    case 8128: return FS_KV8_PLAN(128, true, true, false);
    case 9128: return FS_KV8_PLAN(128, false, true, true);
    default: return FS_KV8_PLAN(128, true, true, true);
    }
#undef FS_KV8_TOP
#undef FS_KV8_PLAN
}

fs_status fs_cu_hopper_decode_kv8(const fs_cuda_decode *pp, const decode_params &p, int version, const void *Q,
                                  const void *K8, const void *V8, const float *scales, float *part, void *O,
                                  char *why, size_t n)
{
    hopper_pdl_plan pl;
    plan_init(pl, pp, p, part, scales);
    fs_status st = plan_kv8_of(pl, version, K8, V8, why, n);
    return st != FS_OK ? st : pl.run(pl, Q, O, 0, why, n);
}

fs_status fs_cu_hopper_decode_kv8_plan(const fs_cuda_decode *pp, const decode_params &p, int version, const void *K8,
                                       const void *V8, const float *scales, float *part, hopper_pdl_plan **plan,
                                       char *why, size_t n)
{
    return new_plan(pp, p, part, scales, plan,
                    [&](hopper_pdl_plan &pl) { return plan_kv8_of(pl, version, K8, V8, why, n); }, why, n);
}

template <int D, bool PAGED, bool CVT, bool TOP = false, bool VMAX = false> static int occupancy_kv8()
{
    return blocks_per_sm(decode_kv8_tma<D, PAGED, CVT, false, TOP, VMAX>, DEC9_THREADS, kv8t_smem<D, TOP>());
}

int fs_cu_hopper_kv8_blocks_per_sm(int d, int version, int G)
{
    version = kv8_version_run(version, G);   /* as fs_cu_hopper_decode_kv8 */
    if (version == 9) version = 7;   /* the same split kernel's room */
    if (version == 10) version = 8;
    switch (version * 1000 + d) {
    case 14064: return occupancy_kv8<64, true, true, true, true>();
    case 14128: return occupancy_kv8<128, true, true, true, true>();
    case 11064: return occupancy_kv8<64, false, true, true>();
    case 12064: return occupancy_kv8<64, true, true, true>();
    case 11128: return occupancy_kv8<128, false, true, true>();
    case 12128: return occupancy_kv8<128, true, true, true>();
    case 5064: return occupancy_kv8<64, false, false>();
    case 6064: return occupancy_kv8<64, true, false>();
    case 7064: return occupancy_kv8<64, false, true>();
    case 8064: return occupancy_kv8<64, true, true>();
    case 5128: return occupancy_kv8<128, false, false>();
    case 6128: return occupancy_kv8<128, true, false>();
    case 7128: return occupancy_kv8<128, false, true>();
    default: return occupancy_kv8<128, true, true>();
    }
}
