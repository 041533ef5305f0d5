/* hopper_decode.cu: decode version 9, built for Hopper only (sm_90a). attn_decode.cu dispatches
 * here for the split phase and merges the partials with its own merge kernel.
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
 * Tiles land in the TMA's 128-byte swizzle (hopper_common.cuh), so the compute warps' ldmatrix
 * addresses go through sw_off; dec_warp_tile (decode_common.cuh) is version 7's math unchanged.
 */
#include "kernels/cuda/decode_common.cuh"
#include "kernels/cuda/hopper_common.cuh"

#define DEC9_BK 64        /* keys a tile: 16 for each compute warp */
#define DEC9_THREADS 160  /* 4 compute warps, then the producer warp */

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

/* grid (splits, n_kv_heads, batch), DEC9_THREADS threads. Shared memory: STAGES K tiles, then
 * STAGES V tiles (64 rows × D, swizzled), then Q (16, D + 8), then the barriers full (STAGES)
 * and empty (STAGES). Writes the split's partial as versions 2-8 do. PAGED (version 10): tmK and
 * tmV are pool maps (make_pool_map) and the keys of sequence b are found through the table. */
template <typename T, int D, int STAGES, bool PAGED>
__global__ void __launch_bounds__(DEC9_THREADS) decode_tma(decode_params p, const __grid_constant__ CUtensorMap tmK,
                                                           const __grid_constant__ CUtensorMap tmV,
                                                           const T *__restrict__ Q, float *__restrict__ part)
{
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

    if (tid == 0) ring_init(full, empty, STAGES, 4);   /* one arrival per compute warp */
    __syncthreads();

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
            }
            return;
        }
        /* paged: the whole warp keeps a window of 32 table entries (lane i holds entry base + i);
         * lane 0 waits, announces the bytes and issues the copies */
        const int P = p.page_size, rows = P < DEC9_BK ? P : DEC9_BK, per = DEC9_BK / rows;   /* boxes a tile */
        const int nblk = min((len + P - 1) / P, p.blocks_per_seq);
        const int32_t *tab = p.block_table + (size_t)b * p.blocks_per_seq;
        int base = -64, mine = 0;
        for (int it = 0; it < nt; it++) {
            const int s = ring_stage<STAGES>(it), key0 = j0 + it * DEC9_BK, blk0 = key0 / P;
            if (blk0 + per > base + 32) {   /* per divides 32 and blk0 advances by per: whole tiles fit */
                base = blk0;
                mine = base + lane < nblk ? tab[base + lane] : 0;
            }
            int page[DEC9_BK / 16];
#pragma unroll
            for (int q = 0; q < DEC9_BK / 16; q++) page[q] = __shfl_sync(0xffffffff, mine, (blk0 - base + q) & 31);
            if (lane == 0) {
                int boxes = 0;
                for (int q = 0; q < per; q++) boxes += key0 + q * rows < j1;
                ring_wait_empty<STAGES>(empty, it);
                mbar_expect_tx(full + s, 2u * boxes * rows * 128 * (D / 64));
                const int slot0 = P > DEC9_BK ? key0 % P : 0;
                for (int q = 0; q < boxes; q++)
                    for (int cb = 0; cb < D / 64; cb++) {
                        const uint32_t off = cb * DEC9_BK * 128 + q * rows * 128;
                        tma_load4(sK + s * TK + off, &tmK, 64 * cb, kvh, slot0, page[q], full + s);
                        tma_load4(sV + s * TK + off, &tmV, 64 * cb, kvh, slot0, page[q], full + s);
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
    for (int it = 0; it < nt; it++) {
        const int s = ring_stage<STAGES>(it);
        const unsigned char *kS = sK + s * TK, *vS = sV + s * TK;
        const int c0 = j0 + it * DEC9_BK + warp * 16;
        ring_wait_full<STAGES>(full, it);
        if (!PAGED || c0 < j1)   /* paged: past the end, the page was not loaded */
            dec_warp_tile<T, D>(
                p.scale2, qf, [&](int kk) { return kS + sw_off<DEC9_BK>(rk, kk * 16 + ck); },
                [&](int dp) { return vS + sw_off<DEC9_BK>(rv, dp * 16 + cv); }, c0, j1, t4, m, l, o);
        ring_release<STAGES>(empty, it, lane);   /* this warp has read the stage */
    }

    /* every tile has landed and been read: the stages' room holds the 4 warps' states */
    float *merge = reinterpret_cast<float *>(sK);
    sync_compute();
    dec_warp_state_out<D>(merge, warp, g, t4, m, l, o);
    sync_compute();
    dec_partial_out<D>(p, merge, tid, G, b, kvh, split, part);
}

/* The tensor maps of K and V (boxes of 64 keys × 64 columns; paged: the pools' maps, boxes of
 * min(page_size, 64) slots) and one launch of decode_tma over (splits, n_kv_heads, batch); the
 * partials go to part. */
template <typename T, int D, bool PAGED>
static fs_status launch9(const fs_cuda_decode *pp, const decode_params &p, const void *Q, const void *K,
                         const void *V, float *part, char *why, size_t n)
{
    constexpr int STAGES = dec9_stages<D>();
    static_assert(dec_merge_floats<D>() * sizeof(float) <= 2 * STAGES * DEC9_BK * D * 2, "merge room");
    CUtensorMap mk, mv;
    fs_status st;
    if (PAGED) {
        const int rows = pp->page_size < DEC9_BK ? pp->page_size : DEC9_BK;
        if ((st = make_pool_map(&mk, K, pp->dtype, D, pp->n_kv_heads, pp->page_size, pp->n_pages, rows, why, n)) != FS_OK)
            return st;
        if ((st = make_pool_map(&mv, V, pp->dtype, D, pp->n_kv_heads, pp->page_size, pp->n_pages, rows, why, n)) != FS_OK)
            return st;
    } else {
        const int heads = pp->batch * pp->n_kv_heads;
        if ((st = make_map(&mk, K, pp->dtype, D, p.n_kv, heads, DEC9_BK, why, n)) != FS_OK) return st;
        if ((st = make_map(&mv, V, pp->dtype, D, p.n_kv, heads, DEC9_BK, why, n)) != FS_OK) return st;
    }
    const size_t smem = dec9_smem<T, D, STAGES>();
    auto kern = decode_tma<T, D, STAGES, PAGED>;
    FS_CU_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kern<<<dim3(p.splits, pp->n_kv_heads, pp->batch), DEC9_THREADS, smem>>>(p, mk, mv, (const T *)Q, part);
    FS_CU_LAUNCHED();
    return FS_OK;
}

template <bool PAGED>
static fs_status launch9_of(const fs_cuda_decode *pp, const decode_params &p, const void *Q, const void *K,
                            const void *V, float *part, char *why, size_t n)
{
    const bool bf = pp->dtype == FS_CUDA_BF16;
    if (pp->d == 64)
        return bf ? launch9<__nv_bfloat16, 64, PAGED>(pp, p, Q, K, V, part, why, n)
                  : launch9<__half, 64, PAGED>(pp, p, Q, K, V, part, why, n);
    return bf ? launch9<__nv_bfloat16, 128, PAGED>(pp, p, Q, K, V, part, why, n)
              : launch9<__half, 128, PAGED>(pp, p, Q, K, V, part, why, n);
}

fs_status fs_cu_hopper_decode_split(const fs_cuda_decode *pp, const decode_params &p, const void *Q,
                                    const void *K, const void *V, float *part, char *why, size_t n)
{
    const bool paged = pp->page_size > 0;
    fs_status st = hopper_device(paged ? "decode version 10" : "decode version 9", why, n);
    if (st != FS_OK) return st;
    return paged ? launch9_of<true>(pp, p, Q, K, V, part, why, n) : launch9_of<false>(pp, p, Q, K, V, part, why, n);
}

/* How many blocks of decode_tma fit on one SM at head dimension D (1 if the query fails). */
template <int D> static int occupancy9()
{
    auto kern = decode_tma<__half, D, dec9_stages<D>(), false>;   /* both 16-bit types and version 10 take the same room */
    const size_t smem = dec9_smem<__half, D, dec9_stages<D>()>();
    int n = 0;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kern, DEC9_THREADS, smem) != cudaSuccess)
        return 1;
    return n < 1 ? 1 : n;
}

int fs_cu_hopper_decode_blocks_per_sm(const fs_cuda_decode *pp) { return pp->d == 64 ? occupancy9<64>() : occupancy9<128>(); }
