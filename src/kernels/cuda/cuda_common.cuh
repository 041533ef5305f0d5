/* cuda_common.cuh: what the CUDA sources of flashstep share: error checks, the 16-bit types,
 * and the engine's masks as host and device functions (same rules as src/engine/attn.c).
 * Private to src/kernels/cuda; the rest of the program sees cuda_backend.h only. */
#ifndef FS_CUDA_COMMON_CUH
#define FS_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

extern "C" {
#include "kernels/cuda/cuda_backend.h"
}

/* Inside a host function that has (char *why, size_t n) and returns fs_status: on a CUDA error,
 * say which call failed where, and return FS_ERR_ARG. */
#define FS_CU_TRY(call)                                                                         \
    do {                                                                                        \
        cudaError_t fs_e_ = (call);                                                             \
        if (fs_e_ != cudaSuccess) {                                                             \
            if (why && n)                                                                       \
                snprintf(why, n, "%s:%d: %s failed: %s", __FILE__, __LINE__, #call,             \
                         cudaGetErrorString(fs_e_));                                            \
            return FS_ERR_ARG;                                                                  \
        }                                                                                       \
    } while (0)

/* After a launch: the launch's own error (bad configuration, too much shared memory). */
#define FS_CU_LAUNCHED() FS_CU_TRY(cudaGetLastError())

#define FS_LOG2E 1.4426950408889634f

/* Query row i of a problem with this mask sees key j? (engine: fs_mask_visible) */
struct fs_cu_mask {
    int kind;              /* fs_mask_kind */
    int offset;            /* query i sits at position i + offset */
    int window;
    const uint64_t *bits;  /* device, n_q rows of words words */
    int words;
};

__host__ __device__ __forceinline__ bool fs_cu_visible(const fs_cu_mask &m, int i, int j)
{
    int p = i + m.offset;
    switch (m.kind) {
    case FS_MASK_NONE: return true;
    case FS_MASK_CAUSAL: return j <= p;
    case FS_MASK_WINDOW: return j <= p && j > p - m.window;
    default: return (m.bits[(size_t)i * m.words + (j >> 6)] >> (j & 63)) & 1u;
    }
}

/* Class of the tile of rows [r0, r1) and keys [c0, c1) (engine: fs_mask_classify); why gets
 * the skip reason. Bitmasks scan the tile (lesson sizes only; the fast kernels vote instead). */
__host__ __device__ inline int fs_cu_classify(const fs_cu_mask &m, bool is_tree, int r0, int r1, int c0,
                                     int c1, int *why)
{
    *why = FS_SKIP_NONE;
    if (m.kind == FS_MASK_NONE) return FS_TILE_FULL;
    if (m.kind == FS_MASK_CAUSAL || m.kind == FS_MASK_WINDOW) {
        long p0 = (long)r0 + m.offset, p1 = (long)r1 - 1 + m.offset, last = c1 - 1;
        if (c0 > p1) { *why = FS_SKIP_CAUSAL; return FS_TILE_SKIPPED; }
        if (m.kind == FS_MASK_WINDOW && last <= p0 - m.window) {
            *why = FS_SKIP_WINDOW;
            return FS_TILE_SKIPPED;
        }
        bool full = last <= p0;
        if (m.kind == FS_MASK_WINDOW) full = full && c0 > p1 - m.window;
        return full ? FS_TILE_FULL : FS_TILE_PARTIAL;
    }
    long seen = 0, total = (long)(r1 - r0) * (c1 - c0);
    for (int i = r0; i < r1; i++)
        for (int j = c0; j < c1; j++) seen += fs_cu_visible(m, i, j);
    if (seen == 0) {
        *why = is_tree ? FS_SKIP_TREE : FS_SKIP_BITMASK;
        return FS_TILE_SKIPPED;
    }
    return seen == total ? FS_TILE_FULL : FS_TILE_PARTIAL;
}

/* ---- What every prefill version reads (attn_prefill.cu, hopper_prefill.cu) ----------------- */

struct prefill_params {
    int n_q_heads, n_kv_heads, n_q, n_kv;
    float scale2;          /* scale · log2 e */
    fs_cu_mask mask;
    float *lse;            /* (batch, n_q_heads, n_q) natural log-sum-exp, or NULL */
    int group_heads;       /* Hopper version 17: heads a group of its block order (0: unused) */
};

static inline prefill_params make_params(const fs_cuda_prefill *p)
{
    prefill_params k;
    k.n_q_heads = p->n_q_heads;
    k.n_kv_heads = p->n_kv_heads;
    k.n_q = p->n_q;
    k.n_kv = p->n_kv;
    k.scale2 = p->scale * FS_LOG2E;
    k.mask.kind = p->mask;
    k.mask.offset = p->offset;
    k.mask.window = p->window;
    k.mask.bits = p->bits;
    k.mask.words = p->words_per_row;
    k.lse = p->lse;
    k.group_heads = 0;
    return k;
}

/* Keys [*lo, *hi) that rows [r0, r1) can see at all under a causal or window mask. */
__device__ __forceinline__ void key_range(const prefill_params &p, int r0, int r1, int *lo, int *hi)
{
    *lo = 0;
    *hi = p.n_kv;
    if (p.mask.kind == FS_MASK_CAUSAL || p.mask.kind == FS_MASK_WINDOW) {
        long last = (long)r1 - 1 + p.mask.offset;          /* newest query position */
        *hi = (int)max(0L, min((long)p.n_kv, last + 1));
        if (p.mask.kind == FS_MASK_WINDOW) {
            long first = (long)r0 + p.mask.offset - p.mask.window + 1;  /* oldest key seen */
            *lo = (int)max(0L, min((long)*hi, first));
        }
    }
}

/* A row's log-sum-exp in natural units from its base-2 running max m2 (of scale·log2e·s) and
 * its sum ℓ: L = (m2 + log2 ℓ) · ln 2; −∞ for a row that saw nothing. */
__device__ __forceinline__ float lse_of(float m2, float l)
{
    return l > 0 ? (m2 + log2f(l)) * 0.69314718055994531f : -INFINITY;
}

/* The stream a prefill problem's kernels launch on (fs_cuda_prefill.stream; NULL: the default). */
static inline cudaStream_t fs_cu_stream(const fs_cuda_prefill *pp) { return (cudaStream_t)pp->stream; }

/* Versions 10 and up (hopper_prefill.cu, built for sm_90a only): FS_ERR_ARG with why when the
 * device is not a Hopper (compute capability 9.0). */
fs_status fs_cu_hopper_prefill(const fs_cuda_prefill *pp, const prefill_params &p, int version,
                               const void *Q, const void *K, const void *V, void *O, char *why,
                               size_t n);

/* The workspace prefill version `version` (hopper_prefill.cu) needs for pp: 0 but for version 32
 * without a mask. */
size_t fs_cu_hopper_prefill_workspace(const fs_cuda_prefill *pp, int version);

/* Backward versions 4 and up (hopper_backward.cu, sm_90a only): the workspace they need, and
 * the launch (FS_ERR_ARG with why when the device is not a Hopper). */
size_t fs_cu_hopper_backward_workspace(const fs_cuda_prefill *p);
fs_status fs_cu_hopper_backward(const fs_cuda_prefill *pp, int version, const void *Q, const void *K, const void *V,
                                const void *O, const void *dO, void *dQ, void *dK, void *dV, void *work, char *why,
                                size_t n);

/* cp.async (sm_80+): 16 bytes global -> shared, zero-filled when !pred (rows past the end). */
__device__ __forceinline__ void cp_async16(void *s, const void *g, bool pred)
{
    uint32_t a = (uint32_t)__cvta_generic_to_shared(s);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(a), "l"(g), "r"(pred ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* The two 16-bit input types, with the conversions the kernels need. */
template <typename T> struct fs_cu_type;
template <> struct fs_cu_type<__half> {
    typedef __half2 T2;
    static __device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
    static __device__ __forceinline__ __half from_f(float x) { return __float2half_rn(x); }
    static __device__ __forceinline__ T2 pack(float a, float b) { return __floats2half2_rn(a, b); }
    static __device__ __forceinline__ float2 unpack(T2 x) { return __half22float2(x); }
};
template <> struct fs_cu_type<__nv_bfloat16> {
    typedef __nv_bfloat162 T2;
    static __device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ __nv_bfloat16 from_f(float x) { return __float2bfloat16_rn(x); }
    static __device__ __forceinline__ T2 pack(float a, float b) { return __floats2bfloat162_rn(a, b); }
    static __device__ __forceinline__ float2 unpack(T2 x) { return __bfloat1622float2(x); }
};

/* 2^x in one MUFU instruction (sm_80+); 2^(−∞) = +0. */
__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;   /* ex2(−∞) = +0 */
}

/* ---- Tensor-core helpers (sm_80+) --------------------------------------------------------- */

__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void *p)
{
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t r[4], const void *p)
{
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

/* c (16×8, f32) += a (16×16) · b (16×8) */
template <typename T> __device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mma16816<__half>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma16816<__nv_bfloat16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* The same product when rows 8-15 of a are zero and rows 8-15 of the result are not wanted (a
 * thread's rows g + 8: a decode group of at most 8 query heads fills rows 0-7 alone): c[0], c[1]
 * (row g) += a (rows 0-7: a0, a2) · b; c[2], c[3] are neither read nor written, so a caller that
 * never touches them keeps no registers for them. */
template <typename T> __device__ __forceinline__ void mma16816_top(float c[4], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mma16816_top<__half>(float c[4], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1)
{
    asm volatile("{\n.reg .f32 x, y;\n"   /* rows g + 8 of the result: not wanted */
                 "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,x,y}, {%2,%4,%3,%4}, "
                 "{%5,%6}, {%0,%1,%7,%7};\n}\n"
                 : "+f"(c[0]), "+f"(c[1])
                 : "r"(a0), "r"(a2), "r"(0u), "r"(b0), "r"(b1), "f"(0.f));
}
template <> __device__ __forceinline__ void mma16816_top<__nv_bfloat16>(float c[4], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1)
{
    asm volatile("{\n.reg .f32 x, y;\n"   /* rows g + 8 of the result: not wanted */
                 "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,x,y}, {%2,%4,%3,%4}, "
                 "{%5,%6}, {%0,%1,%7,%7};\n}\n"
                 : "+f"(c[0]), "+f"(c[1])
                 : "r"(a0), "r"(a2), "r"(0u), "r"(b0), "r"(b1), "f"(0.f));
}

template <typename T> __device__ __forceinline__ uint32_t pack2(float a, float b)
{
    typename fs_cu_type<T>::T2 v = fs_cu_type<T>::pack(a, b);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* rows × D elements from global (row stride D) to shared (row stride LD); rows ≥ valid are 0. */
template <typename T, int D, int LD, int ROWS, int NT>
__device__ __forceinline__ void load_tile(T *s, const T *g, int valid)
{
    constexpr int CH = D / 8;   /* 16-byte chunks per row */
    for (int c = threadIdx.x; c < ROWS * CH; c += NT) {
        int r = c / CH, col = (c % CH) * 8;
        bool ok = r < valid;
        cp_async16(s + r * LD + col, g + (size_t)(ok ? r : 0) * D + col, ok);
    }
}

#endif
