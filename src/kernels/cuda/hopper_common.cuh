/* hopper_common.cuh: the Hopper primitives every hopper_*.cu kernel (built for sm_90a) is
 * written with, so that each numbered version's body reads as its one idea:
 *   - the 128-byte swizzled tile layout (sw_off, align1024) and wgmma's matrix descriptor of it
 *     (sw128_desc; sw128_desc_mn for an N-major operand of several column blocks; sw128_lo and
 *     sw128_at to build a loop's descriptors from one base);
 *   - the warpgroup MMA: wgmma_ss / wgmma_rs_t / wgmma_rs_tn / wgmma_ss_tt over shared tiles and
 *     registers, with wg_fence, wg_commit, wg_wait and reg_fence around them;
 *   - warp specialization: setmaxnreg (wg_regs_dec, wg_regs_inc), named barriers (bar_sync,
 *     bar_arrive);
 *   - the stage ring of mbarriers (ring_init, ring_wait_empty, ring_wait_full, ring_release);
 *   - persistent blocks' order of work over pairs of query tiles (pair_item);
 *   - TMA copies (tma_load1 / tma_load3 / tma_load4 / tma_load5 of one box, tma_tile3 of a whole
 *     swizzled tile) and the copy engine's float32 reduce-add into global memory (bulk_reduce_add_f32);
 *   - the causal, window and length mask of a forward kernel's partial key tile (wg_mask);
 *   - on the host, the tensor maps (make_map and make_map_of, make_pool_map, make_whole_map,
 *     make_rows_map_f32) through one encoder lookup.
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

#include <climits>

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
/* One TMA box of a 1-D tensor map into shared memory at dst (128-byte aligned), counted on
 * barrier b, from element c0 on; elements past the tensor's end read 0. */
__device__ __forceinline__ void tma_load1(void *dst, const CUtensorMap *map, int c0, uint64_t *b)
{
    asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2}], [%3];\n"
                 ::"r"(smem_u32(dst)), "l"(map), "r"(c0), "r"(smem_u32(b))
                 : "memory");
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

/* One TMA box of a 5-D tensor map into shared memory at dst, counted on barrier b; coordinates
 * innermost first (make_whole_map's: column, row, column block, head, page). */
__device__ __forceinline__ void tma_load5(void *dst, const CUtensorMap *map, int c0, int c1, int c2, int c3, int c4,
                                          uint64_t *b)
{
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n"
                 ::"r"(smem_u32(dst)), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(smem_u32(b))
                 : "memory");
}

/* ---- wgmma wrappers -------------------------------------------------------------------------
 * wgmma_ss<T, N>: d (64×N f32) = (acc ? d : 0) + A (64×16, descriptor) · B (16×N, descriptor,
 * stored N rows of K: "K-major").  wgmma_rs_t<T>: d (64×64) += A (64×16, four registers a
 * thread, mma.sync's A-fragment layout) · B (16×64, descriptor, stored K rows of N: "N-major",
 * the transpose flag set). */

/* The accumulator operands of a wgmma asm statement, d[0] to d[n − 1] each read and written
 * ("+f"), for n = 32, 64, 88, 96 and 128 (d the wrapper's float *d): runs of 4 and 16 from b. */
#define FS_WG_D4(b) "+f"(d[b]), "+f"(d[b + 1]), "+f"(d[b + 2]), "+f"(d[b + 3])
#define FS_WG_D16(b) FS_WG_D4(b), FS_WG_D4(b + 4), FS_WG_D4(b + 8), FS_WG_D4(b + 12)
#define FS_WG_D32 FS_WG_D16(0), FS_WG_D16(16)
#define FS_WG_D64 FS_WG_D32, FS_WG_D16(32), FS_WG_D16(48)
#define FS_WG_D88 FS_WG_D64, FS_WG_D16(64), FS_WG_D4(80), FS_WG_D4(84)
#define FS_WG_D96 FS_WG_D64, FS_WG_D16(64), FS_WG_D16(80)
#define FS_WG_D128 FS_WG_D64, FS_WG_D16(64), FS_WG_D16(80), FS_WG_D16(96), FS_WG_D16(112)

template <typename T, int N> __device__ void wgmma_ss(float *d, uint64_t da, uint64_t db, int acc);
template <typename T> __device__ void wgmma_rs_t(float *d, const uint32_t a[4], uint64_t db);
template <> __device__ __forceinline__ void wgmma_ss<__half, 64>(float *d, uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : FS_WG_D32
        : "l"(da), "l"(db), "r"(acc));
}
template <> __device__ __forceinline__ void wgmma_ss<__half, 128>(float *d, uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : FS_WG_D64
        : "l"(da), "l"(db), "r"(acc));
}
template <> __device__ __forceinline__ void wgmma_rs_t<__half>(float *d, const uint32_t a[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : FS_WG_D32
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
template <> __device__ __forceinline__ void wgmma_ss<__nv_bfloat16, 64>(float *d, uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : FS_WG_D32
        : "l"(da), "l"(db), "r"(acc));
}
template <> __device__ __forceinline__ void wgmma_ss<__nv_bfloat16, 128>(float *d, uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : FS_WG_D64
        : "l"(da), "l"(db), "r"(acc));
}
template <> __device__ __forceinline__ void wgmma_rs_t<__nv_bfloat16>(float *d, const uint32_t a[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : FS_WG_D32
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* Keep the compiler from moving reads or writes of accumulators across a wgmma wait/fence. */
template <int R> __device__ __forceinline__ void reg_fence(float *d)
{
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* Matrix descriptor of a 128B-swizzled operand starting at shared address addr: the start
 * (bits 0-13, in 16-byte units), the leading offset (unused by swizzled K-major operands and by
 * single-block N-major ones: 1), the stride between 8-row groups (1024 bytes), swizzle mode 1. */
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}
/* The descriptor of a loop, built once: sw128_lo is the low word of sw128_desc(addr) (with a
 * leading offset of block_bytes: sw128_desc_mn's; 16 gives sw128_desc's field of 1), and
 * sw128_at(lo, off) is then the descriptor of addr + off for a constant off, a multiple of 16:
 * one addition, where sw128_desc(addr + off) masks, shifts and ors again for every wgmma (ten
 * instructions each in the SASS of prefill version 22). Exact because every shared address is
 * below 256 KiB: the start field (addr >> 4, 14 bits) never carries into the leading offset. */
__device__ __forceinline__ uint32_t sw128_lo(uint32_t addr, uint32_t block_bytes = 16)
{
    return ((addr & 0x3FFFF) >> 4) | (((block_bytes >> 4) & 0x3FFF) << 16);
}
__device__ __forceinline__ uint64_t sw128_at(uint32_t lo, uint32_t off)
{
    return ((uint64_t)((1024 >> 4) | (1u << 30)) << 32) | (uint64_t)(lo + (off >> 4));
}
/* The same for an N-major (transposed) operand wider than one column block: N/64 blocks, each
 * 8-row groups 1024 bytes apart, block_bytes apart from one another (the leading offset). */
__device__ __forceinline__ uint64_t sw128_desc_mn(uint32_t addr, uint32_t block_bytes)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((block_bytes >> 4) & 0x3FFF) << 16) |
           ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

/* wgmma_ss<T, 176>: the 176-key tile of prefill version 19 at d = 128 (FlashAttention-3's shape). */
template <> __device__ __forceinline__ void wgmma_ss<__half, 176>(float *d, uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
        : FS_WG_D88
        : "l"(da), "l"(db), "r"(acc));
}
template <> __device__ __forceinline__ void wgmma_ss<__nv_bfloat16, 176>(float *d, uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
        : FS_WG_D88
        : "l"(da), "l"(db), "r"(acc));
}

/* wgmma_ss<T, 192>: the 192-key tile of prefill version 20 at d = 64. */
template <> __device__ __forceinline__ void wgmma_ss<__half, 192>(float *d, uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
        : FS_WG_D96
        : "l"(da), "l"(db), "r"(acc));
}
template <> __device__ __forceinline__ void wgmma_ss<__nv_bfloat16, 192>(float *d, uint64_t da, uint64_t db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
        : FS_WG_D96
        : "l"(da), "l"(db), "r"(acc));
}

/* wgmma_ss_tt<T>: d (64×64 f32) += A (64×16) · B (16×64), both from shared memory stored "M-" and
 * "N-major" (A held as 16 rows of K × 64 of M, B as 16 rows of K × 64 of N: both transpose flags
 * set). The backward's dQ = dS K reads dSᵀ and K this way. */
template <typename T> __device__ void wgmma_ss_tt(float *d, uint64_t da, uint64_t db);
#define FS_WGMMA_R32                                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "  \
    "%23, %24, %25, %26, %27, %28, %29, %30, %31}"
template <> __device__ __forceinline__ void wgmma_ss_tt<__half>(float *d, uint64_t da, uint64_t db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " FS_WGMMA_R32 ", %32, %33, 1, 1, 1, 1, 1;\n"
                 : FS_WG_D32 : "l"(da), "l"(db));
}
template <> __device__ __forceinline__ void wgmma_ss_tt<__nv_bfloat16>(float *d, uint64_t da, uint64_t db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " FS_WGMMA_R32 ", %32, %33, 1, 1, 1, 1, 1;\n"
                 : FS_WG_D32 : "l"(da), "l"(db));
}
#undef FS_WGMMA_R32

/* wgmma_rs_tn<T, N>: d (64×N f32, N = 128 or 256) += A (64×16, four registers a thread, as
 * wgmma_rs_t) · B (16×N, N-major: N/64 column blocks of 16 rows × 128 bytes, the blocks
 * sw128_desc_mn's leading offset apart). One instruction where wgmma_rs_t takes N/64: the
 * prefill's O += P V from version 22 on. d's element 4i + e is column 8i + 2t + (e & 1) as in
 * every accumulator, so d is the o[N/64][32] of N/64 wgmma_rs_t calls laid end to end. */
template <typename T, int N> __device__ void wgmma_rs_tn(float *d, const uint32_t a[4], uint64_t db);
template <> __device__ __forceinline__ void wgmma_rs_tn<__half, 128>(float *d, const uint32_t a[4], uint64_t db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "{%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"
                 : FS_WG_D64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
template <> __device__ __forceinline__ void wgmma_rs_tn<__nv_bfloat16, 128>(float *d, const uint32_t a[4], uint64_t db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "{%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"
                 : FS_WG_D64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
template <> __device__ __forceinline__ void wgmma_rs_tn<__half, 256>(float *d, const uint32_t a[4], uint64_t db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
                 "{%128, %129, %130, %131}, %132, 1, 1, 1, 1;\n"
                 : FS_WG_D128 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
template <> __device__ __forceinline__ void wgmma_rs_tn<__nv_bfloat16, 256>(float *d, const uint32_t a[4], uint64_t db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
                 "{%128, %129, %130, %131}, %132, 1, 1, 1, 1;\n"
                 : FS_WG_D128 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

/* ---- Warp specialization: registers, named barriers ------------------------------------------ */

/* setmaxnreg: a producer warpgroup gives registers back (down to R a thread), a consumer
 * warpgroup takes them (up to R). Needs a register cap at entry (__launch_bounds__(n, 1)) and
 * each role in one branch of a single if/else, or the compiler ignores it (warning C7508). */
template <int R> __device__ __forceinline__ void wg_regs_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R) : "memory");
}
template <int R> __device__ __forceinline__ void wg_regs_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R) : "memory");
}

/* Named barrier id (1..15; 0 is __syncthreads) met by THREADS threads: bar_sync waits, bar_arrive
 * counts this thread and goes on. */
template <int THREADS = 256> __device__ __forceinline__ void bar_sync(int id)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(THREADS) : "memory");
}
template <int THREADS = 256> __device__ __forceinline__ void bar_arrive(int id)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "n"(THREADS) : "memory");
}

/* ---- The stage ring ---------------------------------------------------------------------------
 * STAGES shared buffers filled by a producer thread and read by consumer warps, in fills
 * it = 0, 1, 2, ...: fill it uses stage it % STAGES, and waiters wait for phase parity
 * (it / STAGES) & 1. Each stage has a "full" barrier (one arrival: the producer's expect_tx,
 * then the copies' bytes) and an "empty" barrier (one arrival per consumer warp once it is done
 * reading). */
template <int STAGES> __device__ __forceinline__ int ring_stage(int it) { return it % STAGES; }
template <int STAGES> __device__ __forceinline__ uint32_t ring_parity(int it) { return (uint32_t)(it / STAGES) & 1; }

/* One thread: full[s] expects 1 arrival, empty[s] `readers` arrivals, for every stage; then the
 * fence that makes the barriers visible to the copy engine. A __syncthreads must follow. */
__device__ __forceinline__ void ring_init(uint64_t *full, uint64_t *empty, int stages, int readers)
{
    for (int s = 0; s < stages; s++) {
        mbar_init(full + s, 1);
        mbar_init(empty + s, readers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/* Producer: wait until fill it's stage has been read by everyone (the first round passes at
 * once: the stage's "previous phase" counts as complete). */
template <int STAGES> __device__ __forceinline__ void ring_wait_empty(uint64_t *empty, int it)
{
    mbar_wait(empty + ring_stage<STAGES>(it), ring_parity<STAGES>(it) ^ 1);
}
/* Consumer: wait until fill it has landed. */
template <int STAGES> __device__ __forceinline__ void ring_wait_full(uint64_t *full, int it)
{
    mbar_wait(full + ring_stage<STAGES>(it), ring_parity<STAGES>(it));
}
/* Consumer warp: this warp is done with fill it's stage (lane 0 arrives for the warp). */
template <int STAGES> __device__ __forceinline__ void ring_release(uint64_t *empty, int it, int lane)
{
    __syncwarp();
    if (lane == 0) mbar_arrive(empty + ring_stage<STAGES>(it));
}

/* Persistent blocks over pairs of query tiles (prefill version 18 and the e4m3 versions 20 and
 * up): the s-th item of this block (s = 0, 1, ...), false when the block has no more. A head's n_qt
 * query tiles are paired longest with shortest (tile n_qt − 1 − i with tile i: under a causal mask
 * every pair costs the same), and block k takes pairs k, k + gridDim, ..., numbered head by head;
 * *head is the (batch, head) row of the pair's head. The middle tile of an odd n_qt pairs with
 * nothing (its second item is skipped: *qt = −1). */
__device__ __forceinline__ bool pair_item(int s, int n_qt, int n_pairs, int *qt, int *head)
{
    const int half = (n_qt + 1) / 2, u = (s >> 1) * (int)gridDim.x + (int)blockIdx.x;
    if (u >= n_pairs) return false;
    const int i = u % half;
    *head = u / half;
    *qt = (s & 1) == 0 ? n_qt - 1 - i : (i == n_qt - 1 - i ? -1 : i);
    return true;
}

/* What a persistent block does next (a schedule's next(s, ...) gives the s-th piece of its work):
 * query tile qt of head `head`, and, where the schedule splits items, which of its key tiles. */
struct work_piece {
    int qt, head;
    int kt_lo, nt;   /* a split item's piece: key tiles [kt_lo, kt_lo + nt) of the item */
    int tail, slot;  /* the split item this piece is part of (−1: a whole item), and its slot */
};

/* The pairs as a schedule: the s-th piece is pair_item's s-th item, whole. */
struct pair_sched {
    static constexpr bool split = false;
    int n_pairs;
    __device__ __forceinline__ bool next(int s, int n_qt, work_piece *w) const
    {
        w->tail = -1;
        return pair_item(s, n_qt, n_pairs, &w->qt, &w->head);
    }
};

/* Without a mask every query tile ("item") costs the same nt key tiles, and versions 18-31 hand
 * out whole items: with items = 2048 on 132 SMs (every d = 128 row of the bench) a block takes 15
 * or 16, so the last round keeps 68 SMs busy and leaves 64 idle for a sixteenth of the run.
 * Version 32 gives block k (of G = gridDim.x) the items k, k + G, ..., k + (full − 1)·G, full =
 * ⌊items / G⌋, as whole items in rounds (the blocks at work share a few heads' K and V in L2, as
 * with the pairs), and cuts the R = items − full·G items left over (t = R·nt key tiles) into g
 * contiguous ranges of key tiles, one for each block k < g: tiles [b(k), b(k + 1)) with
 * b(k) = ⌊k·t / g⌋ (g ≥ R, and ranges of at least 4 tiles where G allows it; g = R keeps the
 * items whole). The last round then takes 16.5 tiles a block instead of 32 at most.
 * A range that crosses an item's start or end gives the block a piece of that item: its first
 * piece (slot 0: the one holding tile b(k)) and its last (slot 1: the one holding b(k + 1) − 1),
 * the items between whole. Each piece is computed as a whole item is, over its key tiles only, and
 * written unnormalised, (o, m, ℓ) per row, to its slot in a workspace; per tail item and consumer
 * warp a counter says how many of its pieces are done, and the warp that completes the last one
 * merges the other slots into its own registers, as the FlashDecoding merge does (m = max mᵢ,
 * ℓ = Σ 2^(mᵢ − m) ℓᵢ, o = Σ 2^(mᵢ − m) oᵢ), and stores O and L. No block waits for another. */
struct split_sched {
    static constexpr bool split = true;
    int full, nt, t, g;   /* whole rounds; key tiles an item; key tiles of the tail; blocks sharing it */
    float *part;          /* 2 slots a block, each split_slot_floats(D) */
    unsigned *count;      /* pieces done, one counter per tail item and consumer warp; zero at launch */

    __device__ __forceinline__ int b(int k) const { return (int)((long)k * t / g); }
    /* the block whose range holds tail tile x: the largest k with b(k) ≤ x */
    __device__ __forceinline__ int block_of(int x) const { return (int)(((long)(x + 1) * g - 1) / t); }

    __device__ __forceinline__ bool next(int s, int n_qt, work_piece *w) const
    {
        const int k = blockIdx.x, G = gridDim.x;
        int u, lo = 0, hi = nt;   /* item, and its key tiles [lo, hi) this piece takes */
        w->tail = -1;
        w->slot = 0;
        if (s < full) {
            u = s * G + k;
        } else {
            if (k >= g) return false;
            const int b0 = b(k), b1 = b(k + 1), i = b0 / nt + (s - full);
            lo = max(b0, i * nt);
            hi = min(b1, (i + 1) * nt);
            if (lo >= hi) return false;
            u = full * G + i;
            w->slot = lo == b0 ? 0 : 1;
            if (hi - lo < nt) w->tail = i;
            lo -= i * nt;
            hi -= i * nt;
        }
        w->head = u / n_qt;
        w->qt = u % n_qt;
        w->kt_lo = lo;
        w->nt = hi - lo;
        return true;
    }

    /* This warp's 16 rows of piece w (rows 64·cw + 16·warp + g and + 8 of the item; o, m, ℓ as
     * wg_item leaves them; NCW consumer warpgroups, items of 64·NCW rows): written to the piece's
     * slot; true when this warp completed the item (it has then merged the other pieces into o,
     * m, ℓ, and stores O); false otherwise. o: the accumulator of m64nDk16 (or k32) wgmma, D / 8
     * chunks of 4 floats, which is the same in registers whether it is held as [D / 64][32] or
     * [D / 2]. */
    template <int D, int NCW = 2>
    __device__ __forceinline__ bool merge(const work_piece &w, int cw, int warp, int lane, float (&o)[D / 64][32],
                                          float (&m)[2], float (&l)[2]) const
    {
        constexpr int R = 64 * NCW, M_AT = R * D, L_AT = R * D + R;   /* o (R × D), m (R), ℓ (R × 4) */
        const int r = 64 * cw + 16 * warp + (lane >> 2), t4 = lane & 3;
        float *mine = part + (size_t)(2 * blockIdx.x + w.slot) * (L_AT + 4 * R);
#pragma unroll
        for (int x = 0; x < 2; x++) {
#pragma unroll
            for (int nb = 0; nb < D / 64; nb++)
#pragma unroll
                for (int i = 0; i < 8; i++)
                    *reinterpret_cast<float2 *>(mine + (size_t)(r + 8 * x) * D + nb * 64 + 8 * i + 2 * t4) =
                        make_float2(o[nb][4 * i + 2 * x], o[nb][4 * i + 2 * x + 1]);
            if (t4 == 0) mine[M_AT + r + 8 * x] = m[x];
            mine[L_AT + 4 * (r + 8 * x) + t4] = l[x];   /* ℓ per thread: the quad is summed at the store */
        }
        __threadfence();
        __syncwarp();
        const int x0 = w.tail * nt, first = block_of(x0), last = block_of(x0 + nt - 1);
        unsigned done = 0;
        if (lane == 0) done = atomicAdd(count + 4 * NCW * w.tail + 4 * cw + warp, 1u);
        done = __shfl_sync(0xffffffff, done, 0);
        if (done != (unsigned)(last - first)) return false;
        __threadfence();
        for (int k = first; k <= last; k++) {
            if (k == (int)blockIdx.x) continue;
            const float *q = part + (size_t)(2 * k + (b(k) >= x0 ? 0 : 1)) * (L_AT + 4 * R);
#pragma unroll
            for (int x = 0; x < 2; x++) {
                const float mq = __ldcg(q + M_AT + r + 8 * x), mn = fmaxf(m[x], mq);
                if (mn == -INFINITY) continue;   /* neither saw a key */
                const float a = exp2f(m[x] - mn), c = exp2f(mq - mn);
#pragma unroll
                for (int nb = 0; nb < D / 64; nb++)
#pragma unroll
                    for (int i = 0; i < 8; i++) {
                        const float2 v = __ldcg(reinterpret_cast<const float2 *>(q + (size_t)(r + 8 * x) * D + nb * 64 +
                                                                                  8 * i + 2 * t4));
                        o[nb][4 * i + 2 * x] = a * o[nb][4 * i + 2 * x] + c * v.x;
                        o[nb][4 * i + 2 * x + 1] = a * o[nb][4 * i + 2 * x + 1] + c * v.y;
                    }
                l[x] = a * l[x] + c * __ldcg(q + L_AT + 4 * (r + 8 * x) + t4);
                m[x] = mn;
            }
        }
        return true;
    }
};

/* Floats of one slot of a split schedule's workspace, items of R = 64 · ncw rows: o (R × D),
 * m (R), ℓ (R × 4). */
static constexpr size_t split_slot_floats(int D, int ncw = 2) { return 64 * (size_t)ncw * ((size_t)D + 1 + 4); }

/* The blocks a split schedule runs on for pp with items of `rows` query rows, as split_plan
 * counts them (0 when no device answers): one an SM, at most the items, at most pp->max_blocks. */
static inline long split_grid(const fs_cuda_prefill *pp, int rows)
{
    int dev, sms;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    const long items = (long)(pp->n_q + rows - 1) / rows * pp->batch * pp->n_q_heads;
    long g = items < sms ? items : sms;
    if (pp->max_blocks > 0 && pp->max_blocks < g) g = pp->max_blocks;
    return g;
}

/* A split schedule (prefill version 32, e4m3 versions 28 and 29) for `items` query tiles of nt
 * key tiles each on *G blocks (one an SM, at most items, at most pp->max_blocks where that is
 * set): the whole rounds, then the tail cut as split_sched says; part and count in work (the
 * counters zeroed here), items of 64 · ncw rows. `what` and `need` (the workspace's bytes) make
 * the message when work is missing. */
static inline fs_status split_plan(const fs_cuda_prefill *pp, long items, int nt, int D, int ncw, void *work,
                                   split_sched *sc, int *G, const char *what, size_t need, char *why, size_t n)
{
    int dev, sms;
    FS_CU_TRY(cudaGetDevice(&dev));
    FS_CU_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    long g = items < sms ? items : sms;
    if (pp->max_blocks > 0 && pp->max_blocks < g) g = pp->max_blocks;
    *G = (int)g;
    const long full = items / g, R = items - full * g, t = R * nt;
    long share = t / 4 < g ? t / 4 : g;   /* ranges of at least 4 key tiles where g blocks allow */
    if (share < R) share = R;             /* never fewer blocks than tail items */
    if (t > INT_MAX) {
        if (why && n) snprintf(why, n, "%s: %ld key tiles in the last round are too many", what, t);
        return FS_ERR_SHAPE;
    }
    sc->full = (int)full;
    sc->nt = nt;
    sc->t = (int)t;
    sc->g = (int)share;
    sc->part = nullptr;
    sc->count = nullptr;
    if (R == 0) return FS_OK;   /* no tail: no workspace */
    if (!work) {
        if (why && n) snprintf(why, n, "%s needs a workspace (%zu bytes)", what, need);
        return FS_ERR_ARG;
    }
    sc->part = (float *)work;
    sc->count = (unsigned *)(sc->part + 2 * g * split_slot_floats(D, ncw));
    FS_CU_TRY(cudaMemsetAsync(sc->count, 0, sizeof(unsigned) * 4 * ncw * R, fs_cu_stream(pp)));
    return FS_OK;
}

/* ---- TMA copies into swizzled tiles, and bulk copies ------------------------------------------ */

/* Bytes of a swizzled tile of ROWS rows × COLS 16-bit columns (what one tma_tile3 brings). */
template <int ROWS, int COLS> __host__ __device__ constexpr uint32_t tile_bytes() { return (uint32_t)ROWS * COLS * 2; }

/* Rows row .. row + ROWS − 1 of head `head` (all COLS columns, 16-bit) of a make_map tensor
 * map into the swizzled tile at dst: COLS / 64 boxes, box cb landing at dst + cb · ROWS · 128.
 * Counted on barrier b, which must expect the bytes (mbar_expect_tx, tile_bytes). */
template <int ROWS, int COLS>
__device__ __forceinline__ void tma_tile3(unsigned char *dst, const CUtensorMap *map, int row, int head, uint64_t *b)
{
#pragma unroll
    for (int cb = 0; cb < COLS / 64; cb++) tma_load3(dst + cb * ROWS * 128, map, 64 * cb, row, head, b);
}

/* gdst[i] += ssrc[i] for `bytes` / 4 floats (global float32 += shared float32), done by the copy
 * engine with atomic adds in L2; one thread issues it. bulk_commit closes a group of these, and
 * bulk_wait_read<N> waits until at most N groups still read their shared source. Shared data
 * written by ordinary stores needs fence.proxy.async before the copy reads it. */
__device__ __forceinline__ void bulk_reduce_add_f32(float *gdst, const float *ssrc, uint32_t bytes)
{
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n"
                 ::"l"(gdst), "r"(smem_u32(ssrc)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
/* Wait until every bulk copy this thread committed has completed, its writes included (before a
 * block that issued bulk reduces ends). */
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
/* Ordinary shared-memory stores before this are seen by later wgmma / bulk-copy reads (each
 * writing thread runs it, then a barrier). */
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* ---- Rings with two "full" barriers a stage, several rings a block ----------------------------
 * A forward kernel's K/V ring has two "full" barriers a stage, k_full[s] and v_full[s] (the K
 * tile and the V tile of a stage land separately, so S = Q Kᵀ starts before V is in), and one
 * "empty"; stage and parity of fill it are the ring's above (ring_wait_full on either "full"
 * array, ring_wait_empty, ring_release). A block with several rings initialises each and fences
 * once, after the last. */

/* One thread: ring_init without the fence (a ring initialised before another one). */
__device__ __forceinline__ void ring_init_bars(uint64_t *full, uint64_t *empty, int stages, int readers)
{
    for (int s = 0; s < stages; s++) {
        mbar_init(full + s, 1);
        mbar_init(empty + s, readers);
    }
}
/* One thread: full_a[s] and full_b[s] expect 1 arrival, empty[s] `readers`, for every stage; then
 * the fence (as ring_init). A __syncthreads must follow. */
__device__ __forceinline__ void ring2_init(uint64_t *full_a, uint64_t *full_b, uint64_t *empty, int stages,
                                           int readers)
{
    for (int s = 0; s < stages; s++) {
        mbar_init(full_a + s, 1);
        mbar_init(full_b + s, 1);
        mbar_init(empty + s, readers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* ---- The mask of a partial key tile ------------------------------------------------------------
 * The forward kernels' accumulator layout: thread (g, t4) of a warp holds, for rows row0 and
 * row0 + 8, the keys 8i + 2·t4 and 8i + 2·t4 + 1 of each 8-key chunk i, as s[4i + e] (e & 1 the
 * key, e >> 1 the row). hopper_prefill.cu (versions 21 and up) and hopper_fp8.cu (e4m3 versions
 * 11 and up) call wg_mask only for a partial tile. */

/* s = −∞ where the pair (row, key) of tile kt is hidden: keys past n_kv, and those the causal or
 * window mask hides (this thread's rows row0 and row0 + 8). LEAN (version 30): without a window,
 * key j = kt·BK + 2·t4 + c (c = 8i + (e & 1), a constant of the unrolled loop) is visible from
 * row x when c ≤ lim_x = min(pos_x, n_kv − 1) − kt·BK − 2·t4: one compare and one select a score,
 * where the general form computes j and pos and tests each bound. */
template <int BK, bool LEAN = false>
__device__ __forceinline__ void wg_mask(const prefill_params &p, float *s, int kt, int row0, int t4)
{
    if (LEAN && p.mask.kind != FS_MASK_WINDOW) {
        const int j0 = kt * BK + 2 * t4;
        int lim[2];
#pragma unroll
        for (int x = 0; x < 2; x++) {
            const int pos = p.mask.kind == FS_MASK_CAUSAL ? row0 + 8 * x + p.mask.offset : p.n_kv - 1;
            lim[x] = min(pos, p.n_kv - 1) - j0;
        }
#pragma unroll
        for (int i = 0; i < BK / 8; i++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (8 * i + (e & 1) > lim[e >> 1]) s[4 * i + e] = -INFINITY;
        return;
    }
#pragma unroll
    for (int i = 0; i < BK / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int j = kt * BK + 8 * i + 2 * t4 + (e & 1), pos = row0 + 8 * (e >> 1) + p.mask.offset;
            bool vis = j < p.n_kv;
            if (p.mask.kind == FS_MASK_CAUSAL || p.mask.kind == FS_MASK_WINDOW) vis = vis && j <= pos;
            if (p.mask.kind == FS_MASK_WINDOW) vis = vis && j > pos - p.mask.window;
            if (!vis) s[4 * i + e] = -INFINITY;
        }
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

/* The driver's tensor-map encoder (cuTensorMapEncodeTiled), looked up through the runtime so that
 * nothing links -lcuda. */
static inline fs_status tensor_map_encoder(PFN_cuTensorMapEncodeTiled_v12000 *encode, char *why, size_t n)
{
    cudaDriverEntryPointQueryResult q;
    *encode = nullptr;
    FS_CU_TRY(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)encode, 12000, cudaEnableDefault,
                                               &q));
    if (q != cudaDriverEntryPointSuccess || !*encode) {
        if (why && n) snprintf(why, n, "the driver has no cuTensorMapEncodeTiled");
        return FS_ERR_ARG;
    }
    return FS_OK;
}

/* A 3-D tensor map over a (heads, rows, inner) tensor of `bytes`-byte elements of `type`, boxes
 * of one 128-byte row (128 / bytes elements) × box_rows rows, 128-byte swizzle; the encoder comes
 * from the driver (no -lcuda). make_map's 16-bit tensors, and hopper_fp8.cu's 8-bit ones. */
static inline fs_status make_map_of(CUtensorMap *map, const void *base, CUtensorMapDataType type, int bytes, int inner,
                                    int rows, int heads, int box_rows, char *why, size_t n)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode;
    fs_status st = tensor_map_encoder(&encode, why, n);
    if (st != FS_OK) return st;
    const cuuint64_t dims[3] = {(cuuint64_t)inner, (cuuint64_t)rows, (cuuint64_t)heads};
    const cuuint64_t strides[2] = {(cuuint64_t)inner * bytes, (cuuint64_t)rows * inner * bytes};
    const cuuint32_t box[3] = {(cuuint32_t)(128 / bytes), (cuuint32_t)box_rows, 1}, estr[3] = {1, 1, 1};
    CUresult r = encode(map, type, 3, const_cast<void *>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        if (why && n) snprintf(why, n, "cuTensorMapEncodeTiled failed (%d, %d-byte elements)", (int)r, bytes);
        return FS_ERR_ARG;
    }
    return FS_OK;
}

/* A 3-D tensor map over a (heads, rows, D) 16-bit tensor, boxes of 64 columns × box_rows rows,
 * 128-byte swizzle. */
static inline fs_status make_map(CUtensorMap *map, const void *base, fs_cuda_dtype dt, int D, int rows,
                                int heads, int box_rows, char *why, size_t n)
{
    return make_map_of(map, base, dt == FS_CUDA_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                       2, D, rows, heads, box_rows, why, n);
}

/* A 4-D tensor map over a paged pool (n_pages, page_size, heads, D) of 16-bit values (vLLM's
 * layout), boxes of 64 columns × 1 head × box_rows slots × 1 page, 128-byte swizzle: a box
 * lands as box_rows rows of 128 bytes, the layout of make_map's boxes, and the page is a
 * coordinate, so each copy can follow a block table. A page index past n_pages reads 0. */
static inline fs_status make_pool_map(CUtensorMap *map, const void *base, fs_cuda_dtype dt, int D, int heads,
                                      int page_size, int n_pages, int box_rows, bool head_major, char *why, size_t n)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode;
    fs_status st = tensor_map_encoder(&encode, why, n);
    if (st != FS_OK) return st;
    /* vLLM's (page, slot, head, d): coordinates (column, head, slot, page); head-major (page,
     * head, slot, d): (column, slot, head, page). Either way a box is box_rows rows of 64
     * columns, so it lands in shared memory the same. */
    const cuuint64_t inner = head_major ? (cuuint64_t)page_size : (cuuint64_t)heads;
    const cuuint64_t outer = head_major ? (cuuint64_t)heads : (cuuint64_t)page_size;
    const cuuint64_t dims[4] = {(cuuint64_t)D, inner, outer, (cuuint64_t)n_pages};
    const cuuint64_t strides[3] = {(cuuint64_t)D * 2, inner * D * 2, (cuuint64_t)page_size * heads * D * 2};
    const cuuint32_t box[4] = {64, head_major ? (cuuint32_t)box_rows : 1u, head_major ? 1u : (cuuint32_t)box_rows, 1},
                     estr[4] = {1, 1, 1, 1};
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

/* A tensor map over a paged pool whose box is a page's whole rows of D 16-bit columns (D a
 * multiple of 64, page_size at most 256): the row's D / 64 column blocks of 128 bytes are a
 * dimension of their own, after the rows, so one box lands as make_pool_map's D / 64 boxes do one
 * after another (block cb's page_size rows of 128 bytes, swizzled, at cb · page_size · 128) and
 * one copy does the work of D / 64. Its dimensions, innermost first: 64 columns, page_size slots
 * slot_stride bytes apart, D / 64 blocks 128 bytes apart, `heads` head_stride bytes apart, n_pages
 * pages page_stride bytes apart (either pool layout: only the strides differ). Coordinates
 * (0, slot, 0, head, page). box_heads > 1 (decode version 20): a box brings that many heads'
 * pages, each landing as the one head's box would, one after another. */
static inline fs_status make_whole_map(CUtensorMap *map, const void *base, fs_cuda_dtype dt, int D, int page_size,
                                       size_t slot_stride, int heads, size_t head_stride, int n_pages,
                                       size_t page_stride, char *why, size_t n, int box_heads = 1)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode;
    fs_status st = tensor_map_encoder(&encode, why, n);
    if (st != FS_OK) return st;
    const cuuint64_t dims[5] = {64, (cuuint64_t)page_size, (cuuint64_t)(D / 64), (cuuint64_t)heads, (cuuint64_t)n_pages};
    const cuuint64_t strides[4] = {slot_stride, 128, head_stride, page_stride};
    const cuuint32_t box[5] = {64, (cuuint32_t)page_size, (cuuint32_t)(D / 64), (cuuint32_t)box_heads, 1},
                     estr[5] = {1, 1, 1, 1, 1};
    CUresult r = encode(map, dt == FS_CUDA_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                        5, const_cast<void *>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        if (why && n) snprintf(why, n, "cuTensorMapEncodeTiled (a page's whole rows) failed (%d)", (int)r);
        return FS_ERR_ARG;
    }
    return FS_OK;
}

/* A 3-D tensor map over a float32 matrix of `rows` rows × `cols` columns (cols a multiple of 4),
 * boxes of `box` columns × 1 row, no swizzle: coordinates (column, row, 0). The backward's L and
 * D vectors of one Q tile come in as one box. */
static inline fs_status make_rows_map_f32(CUtensorMap *map, const float *base, int cols, int rows, int box, char *why,
                                          size_t n)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode;
    fs_status st = tensor_map_encoder(&encode, why, n);
    if (st != FS_OK) return st;
    const cuuint64_t dims[3] = {(cuuint64_t)cols, (cuuint64_t)rows, 1};
    const cuuint64_t strides[2] = {(cuuint64_t)cols * 4, (cuuint64_t)cols * rows * 4};
    const cuuint32_t boxd[3] = {(cuuint32_t)box, 1, 1}, estr[3] = {1, 1, 1};
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<float *>(base), dims, strides, boxd, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        if (why && n) snprintf(why, n, "cuTensorMapEncodeTiled (float32 rows) failed (%d)", (int)r);
        return FS_ERR_ARG;
    }
    return FS_OK;
}

#endif
