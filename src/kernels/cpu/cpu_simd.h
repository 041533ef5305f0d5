/* cpu_simd.h: the thin SIMD layer the kernels are written against (after ggml's
 * simd-mappings.h). Define exactly one of FS_SIMD_AVX512, FS_SIMD_AVX2, FS_SIMD_NEON,
 * FS_SIMD_SCALAR before including it. It gives:
 *
 *   vf            one vector of VL floats
 *   V_FN          the attribute every function touching vf carries: on x86 a target("…")
 *                 attribute, so one binary holds every instruction set and cpu_attn.c picks
 *                 one at run time with __builtin_cpu_supports
 *   vload/vstore (unaligned), vset1, vzero, vadd, vsub, vmul, vmax, vfma(a, b, c) = a·b + c
 *   vhsum, vhmax  horizontal sum / max to a float
 *   vhsum4(a, b, c, d, out)  the four horizontal sums into out[0..3], sharing the shuffles
 *   vexp2         2^x, relative error about 2e-7 for x ≥ −126; below, 0 (AVX-512, scalar) or
 *                 2^−126 (AVX2, NEON): never a denormal, which costs an Intel core an assist
 *   vload_f16, vload_bf16  VL 16-bit values (float16 / bfloat16) widened to one vector of floats
 *
 * VL lanes: 16, 8, 4, 1. Loops step by VL and finish with a scalar "leftovers" tail when the
 * length is not a multiple (the kernels pad their own buffers so that the hot loops never need
 * one). MR × NR is the register block of version 4's micro-kernels (see cpu_kernels.inc).
 */
#ifndef FS_CPU_SIMD_H
#define FS_CPU_SIMD_H

#include <math.h>

/* Cephes' minimax polynomial for 2^f on [−0.5, 0.5] (coefficients of exp2f). */
#define FS_EXP2_C6 1.535336188319500e-4f
#define FS_EXP2_C5 1.339887440266574e-3f
#define FS_EXP2_C4 9.618437357674640e-3f
#define FS_EXP2_C3 5.550332471162809e-2f
#define FS_EXP2_C2 2.402264791363012e-1f
#define FS_EXP2_C1 6.931472028550421e-1f

#if defined(FS_SIMD_AVX512)
#include <immintrin.h>
#define V_FN __attribute__((target("avx512f,avx512dq,avx512bw,avx2,fma,f16c")))
#define VL 16
#define MR 6
#define NR 64
typedef __m512 vf;
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, x) _mm512_storeu_ps((p), (x))
#define vset1(x) _mm512_set1_ps(x)
#define vzero() _mm512_setzero_ps()
#define vadd(a, b) _mm512_add_ps(a, b)
#define vsub(a, b) _mm512_sub_ps(a, b)
#define vmul(a, b) _mm512_mul_ps(a, b)
#define vmax(a, b) _mm512_max_ps(a, b)
#define vfma(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vhsum(x) _mm512_reduce_add_ps(x)
#define vhmax(x) _mm512_reduce_max_ps(x)
#define vload_f16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define vload_bf16(p) _mm512_castsi512_ps(_mm512_slli_epi32( \
    _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p))), 16))
static inline V_FN void vhsum4(vf a, vf b, vf c, vf d, float *out)
{
    /* 512 → 256 per vector, then three horizontal adds, then the two 128-bit halves */
    __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    __m256 b8 = _mm256_add_ps(_mm512_castps512_ps256(b), _mm512_extractf32x8_ps(b, 1));
    __m256 c8 = _mm256_add_ps(_mm512_castps512_ps256(c), _mm512_extractf32x8_ps(c, 1));
    __m256 d8 = _mm256_add_ps(_mm512_castps512_ps256(d), _mm512_extractf32x8_ps(d, 1));
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a8, b8), _mm256_hadd_ps(c8, d8));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}
/* 2^x = 2^n · 2^f with n = round(x), f in [−0.5, 0.5]; scalef applies 2^n exactly, and gives 0
 * for x < −126 without computing it: a result below the normal floats (every score a mask hides
 * is −∞) would make an Intel core stop for a microcode assist on each such vector: a causal
 * prefill's softmax there took twice the unmasked one's time instead of about half
 * (docs/kernels-cpu.md, "Version 7"). */
static inline V_FN vf vexp2(vf x)
{
    __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
    x = _mm512_max_ps(x, _mm512_set1_ps(-150.0f));
    vf n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vf f = _mm512_sub_ps(x, n);
    vf p = _mm512_set1_ps(FS_EXP2_C6);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(FS_EXP2_C5));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(FS_EXP2_C4));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(FS_EXP2_C3));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(FS_EXP2_C2));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(FS_EXP2_C1));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(normal, p, n);
}

#elif defined(FS_SIMD_AVX2)
#include <immintrin.h>
#define V_FN __attribute__((target("avx2,fma,f16c")))
#define VL 8
#define MR 6
#define NR 16
typedef __m256 vf;
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, x) _mm256_storeu_ps((p), (x))
#define vset1(x) _mm256_set1_ps(x)
#define vzero() _mm256_setzero_ps()
#define vadd(a, b) _mm256_add_ps(a, b)
#define vsub(a, b) _mm256_sub_ps(a, b)
#define vmul(a, b) _mm256_mul_ps(a, b)
#define vmax(a, b) _mm256_max_ps(a, b)
#define vfma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vload_f16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define vload_bf16(p) _mm256_castsi256_ps(_mm256_slli_epi32( \
    _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p))), 16))
static inline V_FN float vhsum(vf x)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline V_FN float vhmax(vf x)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline V_FN void vhsum4(vf a, vf b, vf c, vf d, float *out)
{
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}
/* 2^n built in the exponent field; x is clamped to [−126, 127] so that field stays normal
 * (below −126 the result is 2^−126 ≈ 1e−38 instead of 0: invisible next to ℓ ≥ 1). */
static inline V_FN vf vexp2(vf x)
{
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(127.0f));
    vf n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vf f = _mm256_sub_ps(x, n);
    vf p = _mm256_set1_ps(FS_EXP2_C6);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(FS_EXP2_C5));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(FS_EXP2_C4));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(FS_EXP2_C3));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(FS_EXP2_C2));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(FS_EXP2_C1));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

#elif defined(FS_SIMD_NEON)
#include <arm_neon.h>
#define V_FN
#define VL 4
#define MR 6
#define NR 16
typedef float32x4_t vf;
#define vload(p) vld1q_f32(p)
#define vstore(p, x) vst1q_f32((p), (x))
#define vset1(x) vdupq_n_f32(x)
#define vzero() vdupq_n_f32(0.0f)
#define vadd(a, b) vaddq_f32(a, b)
#define vsub(a, b) vsubq_f32(a, b)
#define vmul(a, b) vmulq_f32(a, b)
#define vmax(a, b) vmaxq_f32(a, b)
#define vfma(a, b, c) vfmaq_f32((c), (a), (b))
#define vhsum(x) vaddvq_f32(x)
#define vhmax(x) vmaxvq_f32(x)
#define vload_f16(p) vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(p))))
#define vload_bf16(p) vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)(p)), 16))
static inline void vhsum4(vf a, vf b, vf c, vf d, float *out)
{
    vst1q_f32(out, vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d)));
}
static inline vf vexp2(vf x)
{
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-126.0f)), vdupq_n_f32(127.0f));
    vf n = vrndnq_f32(x);
    vf f = vsubq_f32(x, n);
    vf p = vdupq_n_f32(FS_EXP2_C6);
    p = vfmaq_f32(vdupq_n_f32(FS_EXP2_C5), p, f);
    p = vfmaq_f32(vdupq_n_f32(FS_EXP2_C4), p, f);
    p = vfmaq_f32(vdupq_n_f32(FS_EXP2_C3), p, f);
    p = vfmaq_f32(vdupq_n_f32(FS_EXP2_C2), p, f);
    p = vfmaq_f32(vdupq_n_f32(FS_EXP2_C1), p, f);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, f);
    int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

#elif defined(FS_SIMD_SCALAR)
#define V_FN
#define VL 1
#define MR 6
#define NR 4
typedef float vf;
#define vload(p) (*(p))
#define vstore(p, x) (*(p) = (x))
#define vset1(x) (x)
#define vzero() 0.0f
#define vadd(a, b) ((a) + (b))
#define vsub(a, b) ((a) - (b))
#define vmul(a, b) ((a) * (b))
#define vmax(a, b) fmaxf(a, b)
#define vfma(a, b, c) ((a) * (b) + (c))
#define vhsum(x) (x)
#define vhmax(x) (x)
#define vload_f16(p) fs_cpu_f16_to_f32(*(const uint16_t *)(p))
#define vload_bf16(p) fs_cpu_bf16_to_f32(*(const uint16_t *)(p))
static inline void vhsum4(vf a, vf b, vf c, vf d, float *out)
{
    out[0] = a;
    out[1] = b;
    out[2] = c;
    out[3] = d;
}
static inline vf vexp2(vf x) { return x < -126.0f ? 0.0f : exp2f(x); }

#else
#error "define one of FS_SIMD_AVX512, FS_SIMD_AVX2, FS_SIMD_NEON, FS_SIMD_SCALAR"
#endif

#define NV (NR / VL)   /* vectors per micro-tile row */

/* The prefill's micro-tile (qk_block, pv_block: PMR rows × PNR keys), by default version 4's
 * MR × NR. A unit compiled for one microarchitecture may set FS_PMR and FS_PNR before including
 * this file (cpu_isa_avx512_*.c); the decode and the backward keep MR × NR. */
#ifdef FS_PMR
#define PMR FS_PMR
#else
#define PMR MR
#endif
#ifdef FS_PNR
#define PNR FS_PNR
#else
#define PNR NR
#endif
#define PNV (PNR / VL)   /* vectors per prefill micro-tile row */

#endif
