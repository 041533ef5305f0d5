/* hopper_common.cuh: what the Hopper-only kernels (hopper_*.cu, built for sm_90a) share: the
 * 128-byte swizzled tile layout, mbarriers, TMA box loads and the host's tensor maps.
 *
 * Swizzled tiles: a tile of R rows × D columns (16-bit) is D/64 column blocks, each R rows of 128
 * bytes; within a row, 16-byte chunk c sits at chunk c ^ (row mod 8) (the "128B swizzle" of the
 * TMA and of wgmma's descriptors), so the 8 rows a tensor-core or ldmatrix read takes at once
 * fall in different banks.
 *
 * An mbarrier counts arrivals and, for TMA copies, bytes: a phase completes when its expected
 * arrivals have come and every byte announced by expect_tx has landed; waiters wait on the
 * parity (0, 1, 0, ...) of the phase they need. */
#ifndef FS_HOPPER_COMMON_CUH
#define FS_HOPPER_COMMON_CUH

#include <cuda.h>
#include <cudaTypedefs.h>

#include "kernels/cuda/cuda_common.cuh"

/* The shared-memory address of a generic pointer into shared memory (what PTX operands take). */
__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* Byte offset of element (r, c) in a swizzled tile of ROWS rows (see the top of this file). */
template <int ROWS> __device__ __forceinline__ uint32_t sw_off(int r, int c)
{
    return (uint32_t)((c >> 6) * ROWS * 128 + r * 128 + ((((c & 63) >> 3) ^ (r & 7)) << 4) + (c & 7) * 2);
}

/* p moved up to the next 1024-byte boundary of shared memory, where a swizzled tile must start
 * (the swizzle repeats every 8 rows of 128 bytes). */
__device__ __forceinline__ unsigned char *align1024(unsigned char *p)
{
    return p + ((1024 - (smem_u32(p) & 1023)) & 1023);
}

/* ---- mbarriers and the TMA ------------------------------------------------------------------ */

/* Barrier b expects count arrivals a phase (one thread initialises; fence before use). */
__device__ __forceinline__ void mbar_init(uint64_t *b, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(b)), "r"(count) : "memory");
}
/* One arrival on b that also announces `bytes` to come by TMA copies in this phase. */
__device__ __forceinline__ void mbar_expect_tx(uint64_t *b, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(b)), "r"(bytes) : "memory");
}
/* One arrival on b. */
__device__ __forceinline__ void mbar_arrive(uint64_t *b)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(b)) : "memory");
}
/* Wait until the phase of parity `parity` of barrier b has completed. */
__device__ __forceinline__ void mbar_wait(uint64_t *b, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(smem_u32(b)), "r"(parity) : "memory");
    } while (!done);
}
/* One TMA box (64 columns × rows × 1 head) of a 3-D tensor map into shared memory at dst,
 * counted on barrier b. Coordinates: column, row, head. Rows past the tensor's end read 0. */
__device__ __forceinline__ void tma_load3(void *dst, const CUtensorMap *map, int c0, int c1, int c2, uint64_t *b)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n"
                 ::"r"(smem_u32(dst)), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_u32(b))
                 : "memory");
}

/* One TMA box of a 4-D tensor map into shared memory at dst, counted on barrier b; coordinates
 * innermost first (for a paged pool: column, KV head, slot, page). */
__device__ __forceinline__ void tma_load4(void *dst, const CUtensorMap *map, int c0, int c1, int c2, int c3,
                                          uint64_t *b)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
                 ::"r"(smem_u32(dst)), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_u32(b))
                 : "memory");
}

/* ---- Host side ------------------------------------------------------------------------------ */

/* FS_OK when the current device is a Hopper (compute capability 9.0), the only target these
 * files are built for; otherwise FS_ERR_ARG with "<what> needs a Hopper GPU (sm_90a), not sm_XY". */
static inline fs_status hopper_device(const char *what, char *why, size_t n)
{
    int dev, major, minor;
    FS_CU_TRY(cudaGetDevice(&dev));
    FS_CU_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    FS_CU_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major != 9 || minor != 0) {
        if (why && n) snprintf(why, n, "%s needs a Hopper GPU (sm_90a), not sm_%d%d", what, major, minor);
        return FS_ERR_ARG;
    }
    return FS_OK;
}

/* A 3-D tensor map over a (heads, rows, D) 16-bit tensor, boxes of 64 columns × box_rows rows,
 * 128-byte swizzle; the encoder comes from the driver (no -lcuda). */
static inline fs_status make_map(CUtensorMap *map, const void *base, fs_cuda_dtype dt, int D, int rows,
                                int heads, int box_rows, char *why, size_t n)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    cudaDriverEntryPointQueryResult q;
    FS_CU_TRY(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&encode, 12000,
                                               cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !encode) {
        if (why && n) snprintf(why, n, "the driver has no cuTensorMapEncodeTiled");
        return FS_ERR_ARG;
    }
    const cuuint64_t dims[3] = {(cuuint64_t)D, (cuuint64_t)rows, (cuuint64_t)heads};
    const cuuint64_t strides[2] = {(cuuint64_t)D * 2, (cuuint64_t)rows * D * 2};
    const cuuint32_t box[3] = {64, (cuuint32_t)box_rows, 1}, estr[3] = {1, 1, 1};
    CUresult r = encode(map, dt == FS_CUDA_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                        3, const_cast<void *>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        if (why && n) snprintf(why, n, "cuTensorMapEncodeTiled failed (%d)", (int)r);
        return FS_ERR_ARG;
    }
    return FS_OK;
}

/* A 4-D tensor map over a paged pool (n_pages, page_size, heads, D) of 16-bit values (vLLM's
 * layout), boxes of 64 columns × 1 head × box_rows slots × 1 page, 128-byte swizzle: a box
 * lands as box_rows rows of 128 bytes, the layout of make_map's boxes, and the page is a
 * coordinate, so each copy can follow a block table. A page index past n_pages reads 0. */
static inline fs_status make_pool_map(CUtensorMap *map, const void *base, fs_cuda_dtype dt, int D, int heads,
                                      int page_size, int n_pages, int box_rows, char *why, size_t n)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    cudaDriverEntryPointQueryResult q;
    FS_CU_TRY(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&encode, 12000,
                                               cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !encode) {
        if (why && n) snprintf(why, n, "the driver has no cuTensorMapEncodeTiled");
        return FS_ERR_ARG;
    }
    const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)heads, (cuuint64_t)page_size, (cuuint64_t)n_pages};
    const cuuint64_t strides[3] = {(cuuint64_t)D * 2, (cuuint64_t)heads * D * 2, (cuuint64_t)page_size * heads * D * 2};
    const cuuint32_t box[4] = {64, 1, (cuuint32_t)box_rows, 1}, estr[4] = {1, 1, 1, 1};
    CUresult r = encode(map, dt == FS_CUDA_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                        4, const_cast<void *>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        if (why && n) snprintf(why, n, "cuTensorMapEncodeTiled (paged pool) failed (%d)", (int)r);
        return FS_ERR_ARG;
    }
    return FS_OK;
}

#endif
