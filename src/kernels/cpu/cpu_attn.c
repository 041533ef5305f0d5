/* cpu_attn.c: the CPU kernels' entry points, the thread runner, the packing of K and V, the
 * scalar versions 1 and 2, the choice of version and instruction set, and the decode merge.
 *
 * Prefill versions (fs_cpu_opts.version), each measured with
 *     build/flashstep bench --n 4096 --d 128 --causal 0 --threads 2 --version 1,2,3,4 --no-baseline --no-decode
 * on this project's 2-core AMD EPYC (Zen 4, AVX-512; FMA peak measured 234 GFLOP/s at 2
 * threads), 8 heads, not causal, 2026-11-21 20:27 UTC, load 0.9 (docs/kernels-cpu.md walks
 * through them, docs/benchmarks.md has the whole record):
 *   1  textbook: the online softmax of 000, one query row at a time, one key at a time,
 *      scalar float32, one thread.                                 3.4 GFLOP/s,   20.1 s
 *   2  tiles Bq × Bk = 64 × 64 classified by the mask before any work (skipped tiles cost
 *      nothing, only partial ones test elements), S tile materialized, unnormalized (m, ℓ, o)
 *      per row; pthreads over (batch, head, Q tile), heaviest first.  11.9 GFLOP/s,  5.77 s
 *   3  the SIMD layer (cpu_simd.h): vector dot products along d, vector exp2 with
 *      scale·log2(e) folded into Q, vector axpy for P V; K, V packed once per KV head into
 *      float rows (16-bit storage converted there, once).             45.4 GFLOP/s,  1.51 s
 *   4  register-blocked micro-kernels: Kᵀ packed per tile so that S = Q Kᵀ runs as MR × NR
 *      blocks of broadcast-FMAs (6 rows × 64 keys = 24 zmm accumulators on AVX-512), and
 *      O = α O + P V likewise (6 rows × 64 columns of d); partial causal/window tiles hide a
 *      band per row and skip row blocks that see none of the tile.   183 GFLOP/s (78 % of
 *                                                                     peak), 0.375 s
 * Measured on the Zen 5 successor (64 FLOP per cycle per core), one thread timed by CPU time,
 * N = 2048, d = 128, 2026-11-23 (docs/benchmarks.md, z5-versions-1t): version 4 68.9 % of the
 * one-thread peak, and
 *   5  tiles of 192 × 128 with Kᵀ and V packed in contiguous 64-wide strips (what one
 *      micro-kernel call reads; a 128-key tile's interleaved strips aliased half of L1's sets).
 *                                                                     78.3 % of peak
 *   6  diagonal tiles of causal/window masks trimmed per 6-row block to the columns its rows
 *      see.                                              causal 1.94× fewer ms at N = 4096
 * Measured on the Zen 4 again (2 threads, N = 4096, 8 heads, 2026-11-27, docs/benchmarks.md,
 * zen4-stream; one thread on an Intel Xeon, xeon-stream):
 *   7  the next tile's Kᵀ and V asked into L2 a cache line at a time while this tile's products
 *      run, so that the first row block to meet a tile no longer waits on L3.
 *                                    Zen 4 1-3 % fewer ms; Xeon, one thread, 16 % (d = 128)
 * Decode (fs_cpu_decode_opts.version): split-KV (FlashDecoding); see fs_cpu_decode below.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "kernels/cpu/cpu_internal.h"

/* ---- names, defaults, checks ------------------------------------------------------------ */

fs_cpu_opts fs_cpu_opts_default(void)
{
    return (fs_cpu_opts){.version = 0, .threads = 1, .Bq = 0, .Bk = 0, .isa = FS_CPU_ISA_AUTO, .block = 0};
}

fs_cpu_decode_opts fs_cpu_decode_opts_default(void)
{
    return (fs_cpu_decode_opts){.version = 0, .threads = 1, .split_len = 0, .isa = FS_CPU_ISA_AUTO};
}

const char *fs_cpu_isa_str(fs_cpu_isa isa)
{
    switch (isa) {
    case FS_CPU_ISA_AUTO: return "auto";
    case FS_CPU_ISA_SCALAR: return "scalar";
    case FS_CPU_ISA_AVX2: return "avx2";
    case FS_CPU_ISA_AVX512: return "avx512";
    case FS_CPU_ISA_NEON: return "neon";
    default: return "?";
    }
}

const char *fs_cpu_dtype_str(fs_cpu_dtype t)
{
    switch (t) {
    case FS_CPU_DTYPE_F32: return "f32";
    case FS_CPU_DTYPE_F16: return "f16";
    case FS_CPU_DTYPE_BF16: return "bf16";
    default: return "?";
    }
}

size_t fs_cpu_dtype_size(fs_cpu_dtype t) { return t == FS_CPU_DTYPE_F32 ? 4 : 2; }

const char *fs_cpu_version_str(int32_t version)
{
    switch (version) {
    case 1: return "textbook online softmax, one row and one key at a time, scalar, 1 thread";
    case 2: return "tiles classified by the mask, S tile materialized, scalar, threads";
    case 3: return "SIMD: vector dot products, vector exp2, vector axpy; packed K, V";
    case 4: return "register-blocked micro-kernels on packed K-transposed tiles";
    case 5: return "tiles of 192 x 128 with K-transposed packed in contiguous 64-key strips";
    case 6: return "version 5 with diagonal tiles trimmed to the columns their rows see (causal, window)";
    case 7: return "version 6 with the next tile's K-transposed and V streamed into L2 during this tile's products";
    default: return "?";
    }
}

#if defined(__x86_64__) || defined(__i386__)
/* F16C (the float16 conversions of decode versions 3 and 4), from CPUID leaf 1 (ECX bit 29):
 * clang's __builtin_cpu_supports does not know the name. The answer is asked once per process
 * and kept (0 not asked yet, 1 no, 2 yes): under a hypervisor every CPUID instruction leaves the
 * guest, and two of them per call cost about 15 µs of every decode call here (a fifth of a
 * decode of 4096 positions on one KV head, by perf). */
static bool cpu_has_f16c(void)
{
    static int known;   /* a fact about the CPU, written once with the same value by any thread */
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (k == 0) {
        unsigned int a, b, c, d;
        k = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) ? 2 : 1;
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k == 2;
}
#endif

bool fs_cpu_isa_supported(fs_cpu_isa isa)
{
    switch (isa) {
    case FS_CPU_ISA_AUTO:
    case FS_CPU_ISA_SCALAR: return true;
#if defined(__x86_64__) || defined(__i386__)
    case FS_CPU_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case FS_CPU_ISA_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx2") &&
               __builtin_cpu_supports("fma") && cpu_has_f16c();
#endif
#if defined(__aarch64__)
    case FS_CPU_ISA_NEON: return true;
#endif
    default: return false;
    }
}

fs_cpu_isa fs_cpu_isa_best(void)
{
    static const fs_cpu_isa order[] = {FS_CPU_ISA_AVX512, FS_CPU_ISA_AVX2, FS_CPU_ISA_NEON};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (fs_cpu_isa_supported(order[i])) return order[i];
    return FS_CPU_ISA_SCALAR;
}

#if defined(__x86_64__) || defined(__i386__)
/* The AVX-512 tables: the same kernels compiled with different micro-tiles for the prefill
 * (docs/benchmarks.md, "Intel and AMD"); decode and backward are the same code in each. */
static const struct {
    const char *name;
    const cpu_isa_ops *ops;
} cpu_avx512_tables[] = {
    {"6x64", &fs_cpu_ops_avx512},
    {"12x32", &fs_cpu_ops_avx512_12x32},
};
#define CPU_AVX512_TABLES ((int32_t)(sizeof cpu_avx512_tables / sizeof cpu_avx512_tables[0]))

/* The table this CPU gets: 6x64 on every CPU so far. The other micro-tiles are there to be
 * measured (bench --block, bench/intel-sweep.sh): the one Xeon sweep so far lost its micro-tile
 * figures (docs/benchmarks.md, "Intel and AMD"), so no vendor has a measured reason for another.
 * A choice by CPUID goes here, asked once per process as cpu_has_f16c does. */
static int32_t cpu_avx512_choice(void) { return 0; }
#endif

int32_t fs_cpu_prefill_blocks(fs_cpu_isa isa)
{
    if (isa == FS_CPU_ISA_AUTO) isa = fs_cpu_isa_best();
#if defined(__x86_64__) || defined(__i386__)
    if (isa == FS_CPU_ISA_AVX512) return CPU_AVX512_TABLES;
#endif
    return 1;
}

/* The table of isa with the prefill micro-tile `block` (0: this CPU's choice, k: the k-th);
 * NULL when isa cannot run here or there is no such block. */
static const cpu_isa_ops *cpu_ops_block(fs_cpu_isa isa, int32_t block)
{
    if (isa == FS_CPU_ISA_AUTO) isa = fs_cpu_isa_best();
    if (block < 0 || block > fs_cpu_prefill_blocks(isa)) return NULL;
#if defined(__x86_64__) || defined(__i386__)
    if (isa == FS_CPU_ISA_AVX512 && fs_cpu_isa_supported(isa))
        return cpu_avx512_tables[block ? block - 1 : cpu_avx512_choice()].ops;
#endif
    return fs_cpu_isa_ops(isa);
}

const char *fs_cpu_prefill_block_str(fs_cpu_isa isa, int32_t block)
{
    if (isa == FS_CPU_ISA_AUTO) isa = fs_cpu_isa_best();
#if defined(__x86_64__) || defined(__i386__)
    if (isa == FS_CPU_ISA_AVX512 && block >= 0 && block <= CPU_AVX512_TABLES)
        return cpu_avx512_tables[block ? block - 1 : fs_cpu_isa_supported(isa) ? cpu_avx512_choice() : 0].name;
#endif
    switch (isa) {   /* one micro-tile each */
    case FS_CPU_ISA_AVX2:
    case FS_CPU_ISA_NEON: return "6x16";
    case FS_CPU_ISA_SCALAR: return "6x4";
    default: return "none";
    }
}

const cpu_isa_ops *fs_cpu_isa_ops(fs_cpu_isa isa)
{
    if (isa == FS_CPU_ISA_AUTO) isa = fs_cpu_isa_best();
    if (!fs_cpu_isa_supported(isa)) return NULL;
    switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
    case FS_CPU_ISA_AVX2: return &fs_cpu_ops_avx2;
    case FS_CPU_ISA_AVX512: return cpu_avx512_tables[cpu_avx512_choice()].ops;
#endif
#if defined(__aarch64__)
    case FS_CPU_ISA_NEON: return &fs_cpu_ops_neon;
#endif
    case FS_CPU_ISA_SCALAR: return &fs_cpu_ops_scalar;
    default: return NULL;
    }
}

fs_status fs_cpu_attn_check(const fs_cpu_attn *a)
{
    if (!a) return FS_ERR_ARG;
    if (a->batch < 1 || a->n_q_heads < 1 || a->n_kv_heads < 1 || a->n_q < 1 || a->n_kv < 1 ||
        a->d < FS_CPU_MIN_D || a->d > FS_CPU_MAX_D || a->n_q > FS_MAX_DIM ||
        a->n_kv > FS_MAX_DIM || a->n_q_heads > FS_MAX_HEADS || a->batch > FS_MAX_HEADS)
        return FS_ERR_SHAPE;
    if (a->n_q_heads % a->n_kv_heads != 0) return FS_ERR_SHAPE;
    if (a->dtype != FS_CPU_DTYPE_F32 && a->dtype != FS_CPU_DTYPE_F16 &&
        a->dtype != FS_CPU_DTYPE_BF16)
        return FS_ERR_ARG;
    if (!a->Q || !a->K || !a->V || !a->O) return FS_ERR_ARG;
    if (!(a->scale >= 0.0f) || isinf(a->scale)) return FS_ERR_VALUE;
    return fs_mask_check(&a->mask, a->n_kv);
}

static float scale_of(const fs_cpu_attn *a)
{
    return a->scale > 0.0f ? a->scale : 1.0f / sqrtf((float)a->d);
}

/* ---- float16 / bfloat16 ---------------------------------------------------------------- */

uint16_t fs_cpu_f32_to_f16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t sign = (u >> 16) & 0x8000u, ex = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (ex == 0xffu) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0u));
    int32_t e = (int32_t)ex - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {   /* a half subnormal, or zero */
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), h = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;   /* a carry may give ∞: right */
    return (uint16_t)(sign | h);
}

float fs_cpu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, ex = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (ex == 0) {
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    if (ex == 31) u = sign | 0x7f800000u | (man << 13);
    else u = sign | ((ex + 112u) << 23) | (man << 13);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t fs_cpu_f32_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);   /* NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float fs_cpu_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- the thread runner ------------------------------------------------------------------ */

typedef struct {
    void (*fn)(void *ctx, int32_t thread, int64_t item);
    void *ctx;
    int64_t n_items;
    atomic_llong next;
} runner;

typedef struct {
    runner *r;
    int32_t thread;
} runner_arg;

static void *runner_main(void *arg)
{
    runner_arg *ra = arg;
    runner *r = ra->r;
    for (;;) {
        int64_t item = atomic_fetch_add(&r->next, 1);
        if (item >= r->n_items) break;
        r->fn(r->ctx, ra->thread, item);
    }
    return NULL;
}

void fs_cpu_parallel(int32_t threads, int64_t n_items,
                     void (*fn)(void *ctx, int32_t thread, int64_t item), void *ctx)
{
    runner r = {.fn = fn, .ctx = ctx, .n_items = n_items};
    atomic_init(&r.next, 0);
    if (threads > FS_CPU_MAX_THREADS) threads = FS_CPU_MAX_THREADS;
    if (threads > n_items) threads = (int32_t)(n_items > 0 ? n_items : 1);
    pthread_t tid[FS_CPU_MAX_THREADS];
    runner_arg args[FS_CPU_MAX_THREADS];
    int32_t started = 0;
    for (int32_t t = 1; t < threads; t++) {
        args[t] = (runner_arg){&r, t};
        if (pthread_create(&tid[t], NULL, runner_main, &args[t]) != 0) break;
        started = t;
    }
    args[0] = (runner_arg){&r, 0};
    runner_main(&args[0]);   /* the calling thread works too; it finishes what others leave */
    for (int32_t t = 1; t <= started; t++) pthread_join(tid[t], NULL);
}

/* ---- large buffers ----------------------------------------------------------------------- */

void *fs_cpu_alloc_big(size_t bytes)
{
    if (bytes < ((size_t)4 << 20)) {   /* small: 64-byte aligned, as fs_cpu_opts.work wants */
        void *q = NULL;
        return posix_memalign(&q, 64, bytes ? bytes : 1) == 0 ? q : NULL;
    }
    size_t huge = (size_t)2 << 20;
    void *p = NULL;
    if (posix_memalign(&p, huge, (bytes + huge - 1) / huge * huge) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);   /* a hint; failure is harmless */
#endif
    return p;
}

fs_status cpu_work_take(void *work, size_t work_bytes, size_t bytes, float **mem)
{
    *mem = NULL;
    if (work && (work_bytes < bytes || (uintptr_t)work % 64)) return FS_ERR_ARG;
    /* a workspace kept across calls saves the system's clearing of fresh pages on every call
     * (docs/kernels-cpu.md, "Version 7") */
    *mem = work ? (float *)work : fs_cpu_alloc_big(bytes);
    return *mem ? FS_OK : FS_ERR_NOMEM;
}

void cpu_work_done(const void *work, float *mem)
{
    if (!work) free(mem);
}

/* ---- version 1: the textbook loop ------------------------------------------------------ */

/* For each (b, h, i): m = −∞, ℓ = 0, o = 0; for each visible key j:
 *     s = scale · q·k_j,  m_new = max(m, s),  α = e^(m − m_new),  p = e^(s − m_new)
 *     ℓ = α ℓ + p,  o = α o + p v_j,  m = m_new
 * then O = o / ℓ. Shapes: q, k_j, v_j, o are (d). */
static fs_status prefill1(const fs_cpu_attn *a)
{
    int32_t d = a->d, group = a->n_q_heads / a->n_kv_heads;
    float scale = scale_of(a);
    float *buf = malloc((size_t)4 * d * sizeof(float));
    if (!buf) return FS_ERR_NOMEM;
    float *q = buf, *k = buf + d, *v = buf + 2 * d, *o = buf + 3 * d;
    for (int32_t b = 0; b < a->batch; b++)
        for (int32_t h = 0; h < a->n_q_heads; h++)
            for (int32_t i = 0; i < a->n_q; i++) {
                cpu_get_row(a->dtype, a->Q, cpu_q_off(a, b, h, i), q, d);
                float m = -INFINITY, l = 0.0f;
                memset(o, 0, (size_t)d * sizeof(float));
                for (int32_t j = 0; j < a->n_kv; j++) {
                    if (!cpu_visible(&a->mask, a->n_q, a->n_kv, i, j)) continue;
                    cpu_get_row(a->dtype, a->K, cpu_kv_off(a, b, h / group, j), k, d);
                    cpu_get_row(a->dtype, a->V, cpu_kv_off(a, b, h / group, j), v, d);
                    float s = 0.0f;
                    for (int32_t c = 0; c < d; c++) s += q[c] * k[c];
                    s *= scale;
                    float m_new = fmaxf(m, s);
                    float alpha = expf(m - m_new), p = expf(s - m_new);
                    l = alpha * l + p;
                    for (int32_t c = 0; c < d; c++) o[c] = alpha * o[c] + p * v[c];
                    m = m_new;
                }
                float inv = l > 0.0f ? 1.0f / l : 0.0f;
                for (int32_t c = 0; c < d; c++)
                    cpu_put(a->dtype, a->O, cpu_q_off(a, b, h, i) + c, o[c] * inv);
                if (a->L) a->L[cpu_q_off(a, b, h, i) / d] = l > 0.0f ? m + logf(l) : -INFINITY;
            }
    free(buf);
    return FS_OK;
}

/* ---- version 2: tiles, classes, threads (scalar) --------------------------------------- */

/* Item (b, h, Q tile): for each KV tile that the mask does not skip,
 *     S = scale · Q_tile K_tileᵀ          (Bq × Bk)
 *     per row: m_new = max(m, max S), α = e^(m − m_new), P = e^(S − m_new),
 *              ℓ = α ℓ + Σ P,  o = α o + P V_tile
 * and O = o / ℓ at the end (the unnormalized form of tiled.h). */
static void prefill2_item(const cpu_prefill *p, cpu_scratch *sc, int64_t item)
{
    const fs_cpu_attn *a = p->a;
    int32_t b, h, qt;
    cpu_item_split(p, item, &b, &h, &qt);
    int32_t g = h / p->group, d = a->d, dp = p->dp, Bk = p->Bk;
    int32_t r0 = qt * p->Bq, rows = a->n_q - r0 < p->Bq ? a->n_q - r0 : p->Bq;
    for (int32_t r = 0; r < rows; r++) {
        cpu_get_row(a->dtype, a->Q, cpu_q_off(a, b, h, r0 + r), sc->Qs + (int64_t)r * dp, d);
        sc->m[r] = -INFINITY;
        sc->l[r] = 0.0f;
    }
    memset(sc->Oacc, 0, (size_t)rows * dp * sizeof(float));
    for (int32_t kt = 0; kt < p->n_kt; kt++) {
        int32_t c0 = kt * Bk, ncols = a->n_kv - c0 < Bk ? a->n_kv - c0 : Bk;
        fs_tile_class cls = fs_mask_classify(&a->mask, a->n_q, a->n_kv, r0, r0 + rows, c0,
                                             c0 + ncols, NULL);
        if (cls == FS_TILE_SKIPPED) continue;
        for (int32_t j = 0; j < ncols; j++) {
            cpu_get_row(a->dtype, a->K, cpu_kv_off(a, b, g, c0 + j), sc->Kt + (int64_t)j * dp, d);
            cpu_get_row(a->dtype, a->V, cpu_kv_off(a, b, g, c0 + j), sc->Vt + (int64_t)j * dp, d);
        }
        for (int32_t r = 0; r < rows; r++) {
            const float *q = sc->Qs + (int64_t)r * dp;
            float *S = sc->S + (int64_t)r * Bk, *o = sc->Oacc + (int64_t)r * dp;
            float mx = -INFINITY;
            for (int32_t j = 0; j < ncols; j++) {
                if (cls == FS_TILE_PARTIAL &&
                    !cpu_visible(&a->mask, a->n_q, a->n_kv, r0 + r, c0 + j)) {
                    S[j] = -INFINITY;
                    continue;
                }
                const float *k = sc->Kt + (int64_t)j * dp;
                float s = 0.0f;
                for (int32_t c = 0; c < d; c++) s += q[c] * k[c];
                S[j] = s * p->scale;
                mx = fmaxf(mx, S[j]);
            }
            float m_new = fmaxf(sc->m[r], mx);
            if (m_new == -INFINITY) continue;   /* nothing visible yet: state stays (−∞, 0, 0) */
            float alpha = expf(sc->m[r] - m_new), sum = 0.0f;
            for (int32_t c = 0; c < d; c++) o[c] *= alpha;
            for (int32_t j = 0; j < ncols; j++) {
                float P = expf(S[j] - m_new);   /* e^(−∞) = 0 for masked elements */
                sum += P;
                const float *v = sc->Vt + (int64_t)j * dp;
                for (int32_t c = 0; c < d; c++) o[c] += P * v[c];
            }
            sc->l[r] = alpha * sc->l[r] + sum;
            sc->m[r] = m_new;
        }
    }
    for (int32_t r = 0; r < rows; r++) {
        float inv = sc->l[r] > 0.0f ? 1.0f / sc->l[r] : 0.0f;
        if (a->L)
            a->L[cpu_q_off(a, b, h, r0 + r) / d] =
                sc->l[r] > 0.0f ? sc->m[r] + logf(sc->l[r]) : -INFINITY;
        for (int32_t c = 0; c < d; c++)
            cpu_put(a->dtype, a->O, cpu_q_off(a, b, h, r0 + r) + c,
                    sc->Oacc[(int64_t)r * dp + c] * inv);
    }
}

/* ---- prefill driver -------------------------------------------------------------------- */

typedef struct {
    cpu_prefill p;
    const cpu_isa_ops *ops;
    int32_t version;
    bool transposed;          /* pack Kᵀ per tile (version 4) instead of rows */
    int32_t threads;          /* at most one per item */
    cpu_scratch sc[FS_CPU_MAX_THREADS];
} prefill_run;

static int32_t round_up(int32_t x, int32_t m) { return (x + m - 1) / m * m; }

/* Pack item (b, KV head g, KV tile kt) into Kp, Vp as float, zero-padded. */
static void pack_item(void *ctx, int32_t thread, int64_t item)
{
    prefill_run *run = ctx;
    const cpu_prefill *p = &run->p;
    const fs_cpu_attn *a = p->a;
    int32_t kt = (int32_t)(item % p->n_kt);
    int64_t bg = item / p->n_kt;
    int32_t b = (int32_t)(bg / a->n_kv_heads), g = (int32_t)(bg % a->n_kv_heads);
    int64_t base = bg * p->head_stride + (int64_t)kt * p->tile_stride;
    float *Kt = p->Kp + base, *Vt = p->Vp + base;
    int32_t c0 = kt * p->Bk, n = a->n_kv - c0 < p->Bk ? a->n_kv - c0 : p->Bk, d = a->d;
    /* zero only a tile with padding (its last keys, or columns past d): a full tile is written
     * whole below, and clearing it first was one more pass over the packed buffer's 2 · 4 · N · d
     * bytes per KV head (docs/benchmarks.md, "Intel and AMD") */
    int32_t width = p->strips ? round_up(p->dp, run->ops->pnr) : p->dp;
    if (n < p->Bk || d < width) {
        memset(Kt, 0, (size_t)p->tile_stride * sizeof(float));
        memset(Vt, 0, (size_t)p->tile_stride * sizeof(float));
    }
    for (int32_t j = 0; j < n; j++) {
        if (p->strips) {   /* V[j][c] in strip c / nr, row j, column c mod nr */
            int32_t nr = run->ops->pnr;
            int64_t e0 = cpu_kv_off(a, b, g, c0 + j);
            for (int32_t c = 0; c < d; c += nr) {
                float *dst = Vt + (int64_t)(c / nr) * p->Bk * nr + (int64_t)j * nr;
                int32_t w = d - c < nr ? d - c : nr;
                if (a->dtype == FS_CPU_DTYPE_F32) {   /* a plain loop: memcpy of 64 floats
                                                         cost more in its call than its copy */
                    const float *src = (const float *)a->V + e0 + c;
                    for (int32_t k = 0; k < w; k++) dst[k] = src[k];
                } else {
                    cpu_get_row(a->dtype, a->V, e0 + c, dst, w);
                }
            }
        } else {
            cpu_get_row(a->dtype, a->V, cpu_kv_off(a, b, g, c0 + j), Vt + (int64_t)j * p->dp, d);
        }
        if (run->transposed) {
            /* column j of the tile: in strip j / nr, column j mod nr of that (d × nr) strip */
            int32_t nr = run->ops->pnr;
            float *col = p->strips ? Kt + (int64_t)(j / nr) * d * nr + j % nr : Kt + j;
            int64_t ld = p->strips ? nr : p->Bk, e0 = cpu_kv_off(a, b, g, c0 + j);
            if (a->dtype == FS_CPU_DTYPE_F32)
                for (int32_t k = 0; k < d; k++) col[k * ld] = ((const float *)a->K)[e0 + k];
            else
                for (int32_t k = 0; k < d; k++) col[k * ld] = cpu_get(a->dtype, a->K, e0 + k);
        } else {
            cpu_get_row(a->dtype, a->K, cpu_kv_off(a, b, g, c0 + j), Kt + (int64_t)j * p->dp, d);
        }
    }
}

static void prefill_item(void *ctx, int32_t thread, int64_t item)
{
    prefill_run *run = ctx;
    switch (run->version) {
    case 2: prefill2_item(&run->p, &run->sc[thread], item); break;
    case 3: run->ops->prefill3(&run->p, &run->sc[thread], item); break;
    default: run->ops->prefill4(&run->p, &run->sc[thread], item); break;   /* 4 to 7 */
    }
}

/* The plan of a prefill call: options checked, tiles sized (run->p), the thread count. */
static fs_status prefill_plan(const fs_cpu_attn *a, fs_cpu_opts *opt, prefill_run *run)
{
    fs_status st = fs_cpu_attn_check(a);
    if (st != FS_OK) return st;
    if (opt->version == 0) opt->version = FS_CPU_VERSIONS;
    if (opt->version < 1 || opt->version > FS_CPU_VERSIONS || opt->threads < 1 ||
        opt->threads > FS_CPU_MAX_THREADS || opt->Bq < 0 || opt->Bk < 0 ||
        (int)opt->isa < 0 || opt->isa >= FS_CPU_ISA_COUNT || (opt->work && opt->work_bytes == 0))
        return FS_ERR_ARG;
    const cpu_isa_ops *ops = cpu_ops_block(opt->isa, opt->block);
    if (!ops) return FS_ERR_ARG;
    if (cpu_dropout_on(a) && (opt->version < 4 || fs_dropout_check(a->dropout->p) != FS_OK)) return FS_ERR_ARG;
    memset(run, 0, sizeof *run);
    cpu_prefill *p = &run->p;
    run->ops = ops;
    run->version = opt->version;
    run->transposed = opt->version >= 4;
    run->threads = 1;
    p->a = a;
    if (opt->version == 1) return FS_OK;   /* the textbook loop: no tiles, a few rows of its own */
    /* Tile sizes (docs/kernels-cpu.md, "Tile sizes"): a (d × Bk) Kᵀ tile of 64 keys is 32 KiB
     * at d = 128, the size of L1d; the Q tile, S tile and o of Bq = 96 rows add 110 KiB, well
     * inside the 1 MiB L2 of a core, and 96 is a multiple of the micro-kernel's 6 rows. */
    p->Bq = opt->Bq ? opt->Bq : (opt->version >= 5 ? 192 : opt->version == 4 ? 96 : 64);
    /* Version 6 at d ≤ 128 takes Bk = 256: its trimmed diagonal tiles no longer make a wide tile
     * costly under a causal mask, and the softmax's per-row costs spread over twice the keys
     * (2 threads, Zen 4: 4-5 % faster without a mask at d = 64 and 128, 3 % and 2 % causal;
     * docs/kernels-cpu.md). */
    p->Bk = opt->Bk ? opt->Bk : (opt->version >= 6 && a->d <= 128 ? 256 : opt->version >= 5 ? 128 : 64);
    p->trim = opt->version >= 6;
    p->stream = opt->version >= 7;
    p->strips = opt->version >= 5;
    if (opt->version >= 4) p->Bk = round_up(p->Bk, ops->pnr);
    if (p->Bq > a->n_q) p->Bq = a->n_q;
    p->Bqp = opt->version >= 4 ? round_up(p->Bq, ops->pmr) : p->Bq;
    p->dp = opt->version >= 3 ? round_up(a->d, ops->lanes) : a->d;
    p->n_qt = (a->n_q + p->Bq - 1) / p->Bq;
    p->n_kt = (a->n_kv + p->Bk - 1) / p->Bk;
    p->group = a->n_q_heads / a->n_kv_heads;
    p->scale = scale_of(a);
    p->scale2 = p->scale * FS_CPU_LOG2E;
    p->tile_stride = (int64_t)p->Bk * (p->strips ? round_up(p->dp, ops->pnr) : p->dp);
    p->head_stride = (int64_t)p->n_kt * p->tile_stride;
    int64_t n_items = (int64_t)a->batch * a->n_q_heads * p->n_qt;
    run->threads = opt->threads < n_items ? opt->threads : (int32_t)n_items;
    return FS_OK;
}

/* The memory of a planned call, in floats: versions 3 on, K and V packed per KV head (Kp, Vp,
 * each batch · n_kv_heads · head_stride) first; then per thread Qs, Oacc (Bqp × dp), S
 * (Bqp × Bk), m, l, alpha (Bqp), version 2's K and V tiles (Bk × dp). All linear in N. Given
 * mem, also points p->Kp, p->Vp and run->sc into it: one function sizes and lays out, so the
 * two cannot disagree. Version 1: none. */
static size_t prefill_layout(prefill_run *run, float *mem)
{
    if (run->version == 1) return 0;
    cpu_prefill *p = &run->p;
    const fs_cpu_attn *a = p->a;
    size_t packed = run->version >= 3 ? (size_t)a->batch * a->n_kv_heads * p->head_stride : 0;
    size_t tile = (size_t)p->Bqp * p->dp, stile = (size_t)p->Bqp * p->Bk;
    size_t kvt = run->version == 2 ? (size_t)p->Bk * p->dp : 0;
    size_t per = 2 * tile + stile + 3 * (size_t)p->Bqp + 2 * kvt + 64;
    if (mem) {
        p->Kp = packed ? mem : NULL;
        p->Vp = packed ? mem + packed : NULL;
        for (int32_t t = 0; t < run->threads; t++) {
            float *s = mem + 2 * packed + (size_t)t * per;
            cpu_scratch *sc = &run->sc[t];
            sc->Qs = s; s += tile;
            sc->Oacc = s; s += tile;
            sc->S = s; s += stile;
            sc->m = s; s += p->Bqp;
            sc->l = s; s += p->Bqp;
            sc->alpha = s; s += p->Bqp;
            sc->Kt = kvt ? s : NULL; s += kvt;
            sc->Vt = kvt ? s : NULL;
        }
    }
    return 2 * packed + (size_t)run->threads * per;
}

size_t fs_cpu_prefill_workspace(const fs_cpu_attn *a, const fs_cpu_opts *o)
{
    fs_cpu_opts opt = o ? *o : fs_cpu_opts_default();
    opt.work = NULL;
    opt.work_bytes = 0;
    prefill_run *run = malloc(sizeof *run);
    size_t bytes = 0;
    if (run && prefill_plan(a, &opt, run) == FS_OK) bytes = prefill_layout(run, NULL) * sizeof(float);
    free(run);
    return bytes;
}

fs_status fs_cpu_prefill(const fs_cpu_attn *a, const fs_cpu_opts *o)
{
    fs_cpu_opts opt = o ? *o : fs_cpu_opts_default();
    prefill_run *run = malloc(sizeof *run);
    if (!run) return FS_ERR_NOMEM;
    fs_status st = prefill_plan(a, &opt, run);
    if (st != FS_OK || opt.version == 1) {
        free(run);
        return st != FS_OK ? st : prefill1(a);
    }
    float *mem;
    st = cpu_work_take(opt.work, opt.work_bytes, prefill_layout(run, NULL) * sizeof(float), &mem);
    if (st != FS_OK) {
        free(run);
        return st;
    }
    prefill_layout(run, mem);
    cpu_prefill *p = &run->p;
    if (p->Kp)
        fs_cpu_parallel(run->threads, (int64_t)a->batch * a->n_kv_heads * p->n_kt, pack_item, run);
    /* (a measurement build, FS_CPU_ABLATE = 4 in cpu_internal.h, packs K and V and stops) */
    int64_t n_items = (int64_t)a->batch * a->n_q_heads * p->n_qt;
    fs_cpu_parallel(run->threads, FS_CPU_ABLATE == 4 ? 0 : n_items, prefill_item, run);
    cpu_work_done(opt.work, mem);
    free(run);
    return FS_OK;
}

/* ---- decode driver and merge ----------------------------------------------------------- */

typedef struct {
    cpu_decode p;
    const cpu_isa_ops *ops;
    cpu_decode_scratch sc[FS_CPU_MAX_THREADS];
} decode_run;

static void decode_item(void *ctx, int32_t thread, int64_t item)
{
    decode_run *run = ctx;
    run->ops->decode(&run->p, &run->sc[thread], item);
}

/* The decode of both layouts: kv NULL reads a->K, a->V; otherwise the paged cache (checked). */
static fs_status decode_run_all(const fs_cpu_attn *a, const fs_cpu_paged_kv *kv,
                                const fs_cpu_decode_opts *opts)
{
    fs_cpu_attn chk = *a;
    if (kv) {   /* the problem's own checks see the pools where K and V would be */
        chk.K = kv->K_pool;
        chk.V = kv->V_pool;
    }
    fs_status st = fs_cpu_attn_check(&chk);
    if (st != FS_OK) return st;
    fs_cpu_decode_opts opt = opts ? *opts : fs_cpu_decode_opts_default();
    if (opt.version == 0) opt.version = FS_CPU_DECODE_VERSIONS;
    if (opt.version < 1 || opt.version > FS_CPU_DECODE_VERSIONS || opt.threads < 1 ||
        opt.threads > FS_CPU_MAX_THREADS || opt.split_len < 0 ||
        (int)opt.isa < 0 || opt.isa >= FS_CPU_ISA_COUNT)
        return FS_ERR_ARG;
    if (kv) {
        if (opt.version < 4 || kv->page_size < 1 || kv->n_pages < 1 || !kv->block_table ||
            !kv->K_pool || !kv->V_pool || kv->blocks_per_seq < 1 ||
            (int64_t)kv->blocks_per_seq * kv->page_size < a->n_kv)
            return FS_ERR_ARG;
        int32_t used = (a->n_kv + kv->page_size - 1) / kv->page_size;
        for (int32_t b = 0; b < a->batch; b++)
            for (int32_t k = 0; k < used; k++) {
                int32_t page = kv->block_table[(int64_t)b * kv->blocks_per_seq + k];
                if (page < 0 || page >= kv->n_pages) return FS_ERR_ARG;
            }
    }
    const cpu_isa_ops *ops = fs_cpu_isa_ops(opt.isa);
    if (!ops) return FS_ERR_ARG;
    if (cpu_dropout_on(a)) return FS_ERR_ARG;   /* inference: no dropout */

    decode_run *run = calloc(1, sizeof *run);
    if (!run) return FS_ERR_NOMEM;
    cpu_decode *p = &run->p;
    run->ops = ops;
    p->a = a;
    p->group = a->n_q_heads / a->n_kv_heads;
    p->rows = p->group * a->n_q;
    p->version = opt.version;
    p->K = kv ? kv->K_pool : a->K;
    p->V = kv ? kv->V_pool : a->V;
    p->page_size = kv ? kv->page_size : 0;
    p->blocks_per_seq = kv ? kv->blocks_per_seq : 0;
    p->block_table = kv ? kv->block_table : NULL;
    /* prefetch: contiguous rows, a few keys ahead into L1; paged, where one item walks every
     * head's rows of a page, the next block into L2 only (a head's 16 rows of a block lie
     * n_kv_heads · d elements apart, 4 KiB at 8 heads × 128 floats, so they share L1 sets and a
     * block prefetched into L1 is evicted before it is read; measured in docs/benchmarks.md) */
    p->pf_near = kv ? 0 : a->dtype == FS_CPU_DTYPE_F32 ? FS_CPU_DEC4_NEAR_F32 : FS_CPU_DEC4_NEAR_16;
    p->pf_far = kv ? FS_CPU_DEC4_FAR_PAGED : 0;
    if (opt.version >= 5) {   /* version 5: its own L1 requests, and the L2 stream */
        p->pf_near = p->pf_far = 0;
        p->pf5_far = kv ? FS_CPU_DEC5_FAR_PAGED
                        : a->dtype == FS_CPU_DTYPE_F32 ? FS_CPU_DEC5_FAR_F32 : FS_CPU_DEC5_FAR_16;
    }
    int32_t d = a->d, R = p->rows;
    int64_t heads = (int64_t)a->batch * a->n_kv_heads;
    /* paged: one item walks every KV head of its batch element through each page */
    p->all_heads = kv != NULL;
    int64_t units = p->all_heads ? a->batch : heads;
    int32_t Hs = p->all_heads ? a->n_kv_heads : 1;
    /* Splits: enough items for every thread to take several (load balance), none shorter than
     * 256 positions (so that a split's fixed costs stay small next to its reading). */
    if (opt.split_len > 0) {
        p->split_len = opt.split_len;
    } else {
        int64_t want = (8 * (int64_t)opt.threads + units - 1) / units;
        int64_t len = (a->n_kv + want - 1) / want;
        len = (len + 63) / 64 * 64;
        p->split_len = (int32_t)(len < 256 ? 256 : len);
    }
    p->n_splits = (a->n_kv + p->split_len - 1) / p->split_len;
    p->scale2 = scale_of(a) * FS_CPU_LOG2E;
    int64_t n_items = units * p->n_splits;
    int32_t threads = opt.threads < n_items ? opt.threads : (int32_t)n_items;

    size_t nQ = (size_t)heads * R * d, nP = (size_t)heads * p->n_splits * R;
    size_t per = (size_t)R * FS_CPU_DEC_BLOCK + (size_t)Hs * R * d + 3 * (size_t)Hs * R +
                 2 * (size_t)FS_CPU_DEC_BLOCK * d + 64;
    float *mem = malloc((nQ + 2 * nP + nP * d + (size_t)threads * per) * sizeof(float));
    if (!mem) {
        free(run);
        return FS_ERR_NOMEM;
    }
    p->Qs = mem;
    p->part_m = mem + nQ;
    p->part_l = p->part_m + nP;
    p->part_o = p->part_l + nP;
    float *s = p->part_o + nP * d;
    for (int32_t t = 0; t < threads; t++) {
        cpu_decode_scratch *sc = &run->sc[t];
        sc->s = s; s += (size_t)R * FS_CPU_DEC_BLOCK;
        sc->o = s; s += (size_t)Hs * R * d;
        sc->m = s; s += (size_t)Hs * R;
        sc->l = s; s += (size_t)Hs * R;
        sc->alpha = s; s += (size_t)Hs * R;
        sc->krow = s; s += (size_t)FS_CPU_DEC_BLOCK * d;
        sc->vrow = s; s += (size_t)FS_CPU_DEC_BLOCK * d;
        s += 64;
    }
    /* Q as float, times scale·log2(e), grouped by the KV head it reads: row r = hh·n_q + i. */
    for (int32_t b = 0; b < a->batch; b++)
        for (int32_t g = 0; g < a->n_kv_heads; g++)
            for (int32_t r = 0; r < R; r++) {
                int32_t h = g * p->group + r / a->n_q, i = r % a->n_q;
                float *q = p->Qs + (((size_t)b * a->n_kv_heads + g) * R + r) * d;
                cpu_get_row(a->dtype, a->Q, cpu_q_off(a, b, h, i), q, d);
                for (int32_t k = 0; k < d; k++) q[k] *= p->scale2;
            }

    fs_cpu_parallel(threads, n_items, decode_item, run);

    /* Merge the partials left to right (decode.h, unnormalized, base 2):
     *     m = max(m_a, m_b), c_a = 2^(m_a − m), c_b = 2^(m_b − m), ℓ = c_a ℓ_a + c_b ℓ_b,
     *     o = c_a o_a + c_b o_b;   then O = o / ℓ. */
    float *o = malloc((size_t)d * sizeof(float));
    if (!o) {
        free(mem);
        free(run);
        return FS_ERR_NOMEM;
    }
    for (int64_t bg = 0; bg < heads; bg++)
        for (int32_t r = 0; r < R; r++) {
            float m = -INFINITY, l = 0.0f;
            memset(o, 0, (size_t)d * sizeof(float));
            for (int32_t sp = 0; sp < p->n_splits; sp++) {
                size_t at = ((size_t)bg * p->n_splits + sp) * R + r;
                float m_b = p->part_m[at], l_b = p->part_l[at];
                if (m_b == -INFINITY) continue;   /* the identity partial */
                const float *o_b = p->part_o + at * d;
                float mn = fmaxf(m, m_b), c_a = exp2f(m - mn), c_b = exp2f(m_b - mn);
                l = c_a * l + c_b * l_b;
                for (int32_t k = 0; k < d; k++) o[k] = c_a * o[k] + c_b * o_b[k];
                m = mn;
            }
            int32_t b = (int32_t)(bg / a->n_kv_heads), g = (int32_t)(bg % a->n_kv_heads);
            int32_t h = g * p->group + r / a->n_q, i = r % a->n_q;
            float inv = l > 0.0f ? 1.0f / l : 0.0f;
            int64_t off = cpu_q_off(a, b, h, i);
            for (int32_t k = 0; k < d; k++) cpu_put(a->dtype, a->O, off + k, o[k] * inv);
            if (a->L) a->L[off / d] = l > 0.0f ? (m + log2f(l)) * FS_CPU_LN2 : -INFINITY;
        }
    free(o);
    free(mem);
    free(run);
    return FS_OK;
}

fs_status fs_cpu_decode(const fs_cpu_attn *a, const fs_cpu_decode_opts *opts)
{
    return decode_run_all(a, NULL, opts);
}

fs_status fs_cpu_decode_paged(const fs_cpu_attn *a, const fs_cpu_paged_kv *kv,
                              const fs_cpu_decode_opts *opts)
{
    if (!a || !kv) return FS_ERR_ARG;
    return decode_run_all(a, kv, opts);
}
