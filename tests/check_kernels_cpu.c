/* check_kernels_cpu.c: the CPU kernels (src/kernels/cpu) against the engine's float64
 * reference (fs_reference), on random shapes, masks, tile sizes and thread counts drawn fresh
 * each run (the seed is printed on failure; FS_SEED=… replays it).
 *
 * Tolerances, as |kernel − reference| / max(1, |reference|) over every output element:
 *   float32 storage: 1e-5. Outputs are averages of V rows (|O| ≤ max |V| = 1 here), so this
 *     is an absolute error of 1e-5: float32 rounding (6e-8 per operation) over sums of at most a
 *     few hundred terms, plus the vector exp2's 2e-7, stays one to two orders below it.
 *   float16 storage: 1e-3; bfloat16: 8e-3. The reference is fed the same rounded inputs, so
 *     what remains is the rounding of O to 16 bits (half an ulp: 2^−11 = 4.9e-4 for float16,
 *     2^−8 = 3.9e-3 for bfloat16) plus the float32 error above.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/attn.h"
#include "engine/dropout.h"
#include "engine/reference.h"
#include "kernels/cpu/cpu_attn.h"
#include "kernels/cpu/cpu_internal.h"   /* fs_cpu_parallel */
#include "test_problem.h"
#include "test_util.h"

/* One random problem, its float64 copy for the reference, and buffers in its storage type. */
typedef struct {
    fs_cpu_attn a;
    double *Qd, *Kd, *Vd, *Od;   /* values as stored (after rounding to 16 bits) */
    void *Q, *K, *V, *O;
    uint64_t *bits;
    char what[256];              /* the shape, for failure messages */
} problem;

static void store(fs_cpu_dtype t, void *base, long e, double x, double *rounded)
{
    switch (t) {
    case FS_CPU_DTYPE_F16: {
        uint16_t h = fs_cpu_f32_to_f16((float)x);
        ((uint16_t *)base)[e] = h;
        *rounded = fs_cpu_f16_to_f32(h);
    } break;
    case FS_CPU_DTYPE_BF16: {
        uint16_t h = fs_cpu_f32_to_bf16((float)x);
        ((uint16_t *)base)[e] = h;
        *rounded = fs_cpu_bf16_to_f32(h);
    } break;
    default:
        ((float *)base)[e] = (float)x;
        *rounded = (float)x;
        break;
    }
}

static double load(fs_cpu_dtype t, const void *base, long e)
{
    switch (t) {
    case FS_CPU_DTYPE_F16: return fs_cpu_f16_to_f32(((const uint16_t *)base)[e]);
    case FS_CPU_DTYPE_BF16: return fs_cpu_bf16_to_f32(((const uint16_t *)base)[e]);
    default: return ((const float *)base)[e];
    }
}

static void problem_fill(problem *p, fs_rng *r);

/* Draw a problem: n_q, n_kv up to max_n, d in [32, d_max], GQA, any mask. */
static void problem_draw(problem *p, fs_rng *r, fs_cpu_dtype t, int max_q, int max_kv, int d_max)
{
    memset(p, 0, sizeof *p);
    fs_cpu_attn *a = &p->a;
    a->batch = fs_rng_int(r, 1, 2);
    a->n_kv_heads = fs_rng_int(r, 1, 2);
    a->n_q_heads = a->n_kv_heads * fs_rng_int(r, 1, 3);
    a->n_q = fs_rng_int(r, 1, max_q);
    a->n_kv = fs_rng_int(r, 1, max_kv);
    if (fs_rng_int(r, 0, 3) > 0 && a->n_kv < a->n_q) a->n_kv = a->n_q;   /* usually a cache */
    a->d = fs_rng_int(r, 0, 4) == 0 ? fs_rng_int(r, 32, d_max) : fs_rng_int(r, 32, 80);
    a->dtype = t;
    /* 0 (the default 1/√d) or an explicit scale that keeps scores of a few units (scale·√d ≤ 2;
     * at d = 230 a scale of 0.43 made scores of ±30, whose float32 rounding alone moves the
     * output by 1e-5, in every version alike) */
    a->scale = fs_rng_int(r, 0, 1) ? 0.0f : (float)fs_rng_uniform(r, 0.05, fmin(0.5, 2.0 / sqrt((double)a->d)));
    int kind = fs_rng_int(r, 0, 4);
    fs_mask *m = &a->mask;
    switch (kind) {
    case 0: m->kind = FS_MASK_NONE; break;
    case 1: m->kind = FS_MASK_CAUSAL; break;
    case 2:
        m->kind = FS_MASK_WINDOW;
        m->window = fs_rng_int(r, 1, a->n_kv + 2);
        break;
    default:   /* random bits, or a tree when square */
        if (kind == 3 && a->n_q == a->n_kv)
            *m = fs_test_mask_tree(r, a->n_q, &p->bits, NULL);
        else   /* sparse to dense: each key visible with chance 1/4, 2/4, 3/4 or 1 */
            *m = fs_test_mask_bits(r, a->n_q, a->n_kv, fs_rng_int(r, 1, 4) / 4.0, &p->bits);
        break;
    }
    if (m->kind != FS_MASK_NONE && m->kind != FS_MASK_BITS && fs_rng_int(r, 0, 3) == 0) {
        m->has_offset = true;
        m->offset = fs_rng_int(r, -3, a->n_kv);
    }
    problem_fill(p, r);
}

/* Buffers and random values for the shape and mask already in p->a (storage p->a.dtype). */
static void problem_fill(problem *p, fs_rng *r)
{
    fs_cpu_attn *a = &p->a;
    fs_mask *m = &a->mask;
    fs_cpu_dtype t = a->dtype;
    long nq = (long)a->batch * a->n_q_heads * a->n_q * a->d;
    long nk = (long)a->batch * a->n_kv_heads * a->n_kv * a->d;
    size_t es = fs_cpu_dtype_size(t);
    p->Qd = malloc(nq * sizeof(double));
    p->Kd = malloc(nk * sizeof(double));
    p->Vd = malloc(nk * sizeof(double));
    p->Od = malloc(nq * sizeof(double));
    p->Q = malloc(nq * es);
    p->K = malloc(nk * es);
    p->V = malloc(nk * es);
    p->O = malloc(nq * es);
    ck_assert(p->Qd && p->Kd && p->Vd && p->Od && p->Q && p->K && p->V && p->O);
    /* Q, K spread enough that the softmax is far from uniform (scores of a few units). */
    for (long e = 0; e < nq; e++) store(t, p->Q, e, fs_rng_uniform(r, -2, 2), &p->Qd[e]);
    for (long e = 0; e < nk; e++) store(t, p->K, e, fs_rng_uniform(r, -2, 2), &p->Kd[e]);
    for (long e = 0; e < nk; e++) store(t, p->V, e, fs_rng_uniform(r, -1, 1), &p->Vd[e]);
    memset(p->O, 0xff, nq * es);   /* NaN everywhere: an unwritten element fails */
    a->Q = p->Q;
    a->K = p->K;
    a->V = p->V;
    a->O = p->O;
    snprintf(p->what, sizeof p->what,
             "%s batch %d heads %d/%d n_q %d n_kv %d d %d scale %s%.3g mask %s window %d offset %s%d",
             fs_cpu_dtype_str(t), a->batch, a->n_q_heads, a->n_kv_heads, a->n_q, a->n_kv, a->d,
             a->scale > 0 ? "" : "1/sqrt(d)=", a->scale > 0 ? a->scale : 1 / sqrt((double)a->d),
             fs_mask_kind_str(m->kind), m->window, m->has_offset ? "" : "default/",
             m->has_offset ? m->offset : a->n_kv - a->n_q);
}

static void problem_free(problem *p)
{
    free(p->Qd); free(p->Kd); free(p->Vd); free(p->Od);
    free(p->Q); free(p->K); free(p->V); free(p->O);
    free(p->bits);
}

/* fs_reference on each batch element (the engine has no batch axis: one slice each). */
static void problem_reference(problem *p)
{
    const fs_cpu_attn *a = &p->a;
    long qs = (long)a->n_q_heads * a->n_q * a->d, ks = (long)a->n_kv_heads * a->n_kv * a->d;
    for (int32_t b = 0; b < a->batch; b++) {
        fs_attn r = fs_attn_make(a->n_q, a->n_kv, a->d, a->d);
        r.n_q_heads = a->n_q_heads;
        r.n_kv_heads = a->n_kv_heads;
        r.Q = p->Qd + b * qs;
        r.K = p->Kd + b * ks;
        r.V = p->Vd + b * ks;
        r.scale = a->scale > 0.0f ? (double)a->scale : 1.0 / sqrt((double)a->d);
        r.mask = a->mask;
        ck_assert_int_eq(fs_reference(&r, p->Od + b * qs, NULL, NULL), FS_OK);
    }
}

static double problem_error(const problem *p)
{
    long n = (long)p->a.batch * p->a.n_q_heads * p->a.n_q * p->a.d;
    double *got = malloc(n * sizeof(double));
    ck_assert_ptr_nonnull(got);
    for (long e = 0; e < n; e++) got[e] = load(p->a.dtype, p->O, e);
    double err = fs_max_rel_err(got, p->Od, n);
    free(got);
    return err;
}

static double tolerance(fs_cpu_dtype t)
{
    return t == FS_CPU_DTYPE_F16 ? 1e-3 : t == FS_CPU_DTYPE_BF16 ? 8e-3 : 1e-5;
}

static const fs_cpu_isa isas[] = {FS_CPU_ISA_SCALAR, FS_CPU_ISA_AVX2, FS_CPU_ISA_AVX512,
                                  FS_CPU_ISA_NEON};
#define N_ISAS 4

/* Prefill: loop index = (version − 1) · N_ISAS + isa. Versions 1 and 2 are scalar by
 * definition, so they run once (isa index 0). */
START_TEST(test_prefill_matches_reference)
{
    int version = _i / N_ISAS + 1;
    fs_cpu_isa isa = isas[_i % N_ISAS];
    if (version <= 2 && isa != FS_CPU_ISA_SCALAR) return;
    if (!fs_cpu_isa_supported(isa)) return;
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int trial = 0; trial < 10; trial++) {
        fs_cpu_dtype t = trial < 8 ? FS_CPU_DTYPE_F32 : (fs_cpu_dtype)(trial - 7);
        problem p;
        problem_draw(&p, &r, t, 100, 200, 256);
        fs_cpu_opts o = fs_cpu_opts_default();
        o.version = version;
        o.isa = isa;
        o.threads = fs_rng_int(&r, 1, 3);
        if (fs_rng_int(&r, 0, 1)) {   /* odd tiles: many partial and skipped tiles, tails */
            o.Bq = fs_rng_int(&r, 1, 40);
            /* or whole 64-key strips, several tiles of them (the defaults, up to 256 keys, may
             * cover all of a problem's keys in one tile) */
            o.Bk = fs_rng_int(&r, 0, 3) ? fs_rng_int(&r, 1, 40) : 64 * fs_rng_int(&r, 1, 2);
        }
        /* half the time the caller's workspace, of exactly the size asked and full of NaN: a
         * kernel that reads memory it has not written fails */
        size_t wb = fs_cpu_prefill_workspace(&p.a, &o);
        FS_ASSERT_SEED((wb > 0) == (version > 1), seed, "v%d: workspace of %zu bytes on %s", version,
                       wb, p.what);
        if (wb && fs_rng_int(&r, 0, 1)) {
            o.work = aligned_alloc(64, (wb + 63) / 64 * 64);
            ck_assert(o.work);
            memset(o.work, 0xff, wb);
            o.work_bytes = wb;
        }
        problem_reference(&p);
        fs_status st = fs_cpu_prefill(&p.a, &o);
        FS_ASSERT_SEED(st == FS_OK, seed, "v%d %s: status %s on %s", version,
                       fs_cpu_isa_str(isa), fs_status_str(st), p.what);
        double err = problem_error(&p);
        FS_ASSERT_SEED(err <= tolerance(t), seed,
                       "v%d %s threads %d Bq %d Bk %d%s: error %.3g > %.1g on %s", version,
                       fs_cpu_isa_str(isa), o.threads, o.Bq, o.Bk, o.work ? " workspace" : "", err,
                       tolerance(t), p.what);
        free(o.work);
        problem_free(&p);
    }
}
END_TEST

/* Every prefill micro-tile of every instruction set (AVX-512 has several, one chosen per CPU
 * vendor: the others must be right too). Loop index = version 4 … FS_CPU_VERSIONS × block 1 … 8. */
#define N_BLOCKS_MAX 8
START_TEST(test_prefill_blocks_match_reference)
{
    int version = 4 + _i / N_BLOCKS_MAX, block = 1 + _i % N_BLOCKS_MAX;
    fs_cpu_isa isa = fs_cpu_isa_best();
    ck_assert_int_le(fs_cpu_prefill_blocks(isa), N_BLOCKS_MAX);
    if (block > fs_cpu_prefill_blocks(isa)) return;
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int trial = 0; trial < 8; trial++) {
        fs_cpu_dtype t = trial < 7 ? FS_CPU_DTYPE_F32 : FS_CPU_DTYPE_F16;
        problem p;
        problem_draw(&p, &r, t, 100, 200, 256);
        fs_cpu_opts o = fs_cpu_opts_default();
        o.version = version;
        o.isa = isa;
        o.block = block;
        o.threads = fs_rng_int(&r, 1, 3);
        if (fs_rng_int(&r, 0, 1)) {
            o.Bq = fs_rng_int(&r, 1, 40);
            /* or whole 64-key strips, several tiles of them (the defaults, up to 256 keys, may
             * cover all of a problem's keys in one tile) */
            o.Bk = fs_rng_int(&r, 0, 3) ? fs_rng_int(&r, 1, 40) : 64 * fs_rng_int(&r, 1, 2);
        }
        problem_reference(&p);
        fs_status st = fs_cpu_prefill(&p.a, &o);
        FS_ASSERT_SEED(st == FS_OK, seed, "v%d %s block %s: status %s on %s", version, fs_cpu_isa_str(isa),
                       fs_cpu_prefill_block_str(isa, block), fs_status_str(st), p.what);
        double err = problem_error(&p);
        FS_ASSERT_SEED(err <= tolerance(t), seed,
                       "v%d %s block %s threads %d Bq %d Bk %d: error %.3g > %.1g on %s", version,
                       fs_cpu_isa_str(isa), fs_cpu_prefill_block_str(isa, block), o.threads, o.Bq, o.Bk,
                       err, tolerance(t), p.what);
        problem_free(&p);
    }
    /* a block that does not exist is refused */
    fs_cpu_opts o = fs_cpu_opts_default();
    o.block = fs_cpu_prefill_blocks(isa) + 1;
    problem p;
    problem_draw(&p, &r, FS_CPU_DTYPE_F32, 10, 10, 32);
    ck_assert_int_eq(fs_cpu_prefill(&p.a, &o), FS_ERR_ARG);
    problem_free(&p);
}
END_TEST

/* Decode: a few query rows, a longer cache, splits of random length, every mask.
 * Loop index = (version − 1) · N_ISAS + isa. */
START_TEST(test_decode_matches_reference)
{
    int version = _i / N_ISAS + 1;
    fs_cpu_isa isa = isas[_i % N_ISAS];
    if (!fs_cpu_isa_supported(isa)) return;
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int trial = 0; trial < 10; trial++) {
        fs_cpu_dtype t = trial < 8 ? FS_CPU_DTYPE_F32 : (fs_cpu_dtype)(trial - 7);
        problem p;
        problem_draw(&p, &r, t, 4, 1000, 256);
        fs_cpu_decode_opts o = fs_cpu_decode_opts_default();
        o.version = version;
        o.isa = isa;
        o.threads = fs_rng_int(&r, 1, 3);
        o.split_len = fs_rng_int(&r, 0, 1) ? 0 : fs_rng_int(&r, 1, 300);
        problem_reference(&p);
        fs_status st = fs_cpu_decode(&p.a, &o);
        FS_ASSERT_SEED(st == FS_OK, seed, "decode v%d %s: status %s on %s", version,
                       fs_cpu_isa_str(isa), fs_status_str(st), p.what);
        double err = problem_error(&p);
        FS_ASSERT_SEED(err <= tolerance(t), seed,
                       "decode v%d %s threads %d split %d: error %.3g > %.1g on %s", version,
                       fs_cpu_isa_str(isa), o.threads, o.split_len, err, tolerance(t), p.what);
        problem_free(&p);
    }
}
END_TEST

/* A paged copy of p's K and V in vLLM's layout, pool (n_pages, page, n_kv_heads, d): the
 * logical blocks of every batch element land in pages drawn by a random shuffle of the pool,
 * which also holds a few pages no table names (filled with NaN: a read of one fails). */
typedef struct {
    fs_cpu_paged_kv kv;
    void *K, *V;
    int32_t *table;
} paged_copy;

static void paged_make(paged_copy *pc, const problem *p, fs_rng *r, int32_t page)
{
    const fs_cpu_attn *a = &p->a;
    int32_t per = (a->n_kv + page - 1) / page;
    int32_t spare = fs_rng_int(r, 0, 3);
    int32_t n_pages = a->batch * per + spare;
    size_t es = fs_cpu_dtype_size(a->dtype), row = (size_t)a->d * es;
    size_t bytes = (size_t)n_pages * page * a->n_kv_heads * row;
    pc->K = malloc(bytes);
    pc->V = malloc(bytes);
    int32_t *perm = malloc((size_t)n_pages * sizeof(int32_t));
    pc->table = malloc((size_t)a->batch * per * sizeof(int32_t));
    ck_assert(pc->K && pc->V && perm && pc->table);
    memset(pc->K, 0xff, bytes);   /* NaN in every storage type */
    memset(pc->V, 0xff, bytes);
    for (int32_t k = 0; k < n_pages; k++) perm[k] = k;
    for (int32_t k = n_pages - 1; k > 0; k--) {   /* Fisher–Yates */
        int32_t j = fs_rng_int(r, 0, k), t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
    }
    for (int32_t k = 0; k < a->batch * per; k++) pc->table[k] = perm[k];
    for (int32_t b = 0; b < a->batch; b++)
        for (int32_t g = 0; g < a->n_kv_heads; g++)
            for (int32_t j = 0; j < a->n_kv; j++) {
                size_t ph = (size_t)pc->table[b * per + j / page];
                size_t dst = ((ph * page + j % page) * a->n_kv_heads + g) * row;
                size_t src = (((size_t)b * a->n_kv_heads + g) * a->n_kv + j) * row;
                memcpy((char *)pc->K + dst, (const char *)p->K + src, row);
                memcpy((char *)pc->V + dst, (const char *)p->V + src, row);
            }
    free(perm);
    pc->kv = (fs_cpu_paged_kv){.page_size = page, .n_pages = n_pages, .blocks_per_seq = per,
                               .block_table = pc->table, .K_pool = pc->K, .V_pool = pc->V};
}

static void paged_free(paged_copy *pc)
{
    free(pc->K);
    free(pc->V);
    free(pc->table);
}

/* Paged decode and contiguous decode of the same version (4 and later; the newest also as
 * version 0) on the same problems: half of them drawn like the decode test above (every mask,
 * odd d, any GQA), half in the shape decode has in practice and the AVX-512 path of versions 4
 * and 5 takes (GQA 4, one query row, d a multiple of 16, no mask, long enough for many full
 * blocks and for version 5's prefetch to run ahead). Page sizes 16, 256 and random 1–40. Loop
 * index = (version − 4) · N_ISAS + isa. */
START_TEST(test_decode_paged_matches_reference)
{
    int version = 4 + _i / N_ISAS;
    fs_cpu_isa isa = isas[_i % N_ISAS];
    if (!fs_cpu_isa_supported(isa)) return;
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int trial = 0; trial < 12; trial++) {
        fs_cpu_dtype t = trial % 4 == 3 ? (fs_cpu_dtype)fs_rng_int(&r, 1, 2) : FS_CPU_DTYPE_F32;
        problem p;
        if (trial % 2 == 0) {
            problem_draw(&p, &r, t, 4, 1000, 256);
        } else {
            memset(&p, 0, sizeof p);
            fs_cpu_attn *a = &p.a;
            a->batch = fs_rng_int(&r, 1, 2);
            a->n_kv_heads = fs_rng_int(&r, 1, 3);
            a->n_q_heads = 4 * a->n_kv_heads * fs_rng_int(&r, 1, 2);
            a->n_q = 1;
            a->n_kv = fs_rng_int(&r, 200, 1500);
            a->d = 16 * fs_rng_int(&r, 2, 8);
            a->dtype = t;
            problem_fill(&p, &r);
        }
        int32_t pages[3] = {16, 256, fs_rng_int(&r, 1, 40)};
        int32_t page = pages[trial % 3];
        snprintf(p.what + strlen(p.what), sizeof p.what - strlen(p.what), " page %d", page);
        problem_reference(&p);
        paged_copy pc;
        paged_make(&pc, &p, &r, page);
        fs_cpu_decode_opts o = fs_cpu_decode_opts_default();
        o.version = version == FS_CPU_DECODE_VERSIONS && fs_rng_int(&r, 0, 1) ? 0 : version;
        o.isa = isa;
        o.threads = fs_rng_int(&r, 1, 3);
        o.split_len = fs_rng_int(&r, 0, 1) ? 0 : fs_rng_int(&r, 1, 300);
        fs_cpu_attn pa = p.a;
        pa.K = pa.V = NULL;   /* the paged kernel reads the pools only */
        fs_status st = fs_cpu_decode_paged(&pa, &pc.kv, &o);
        FS_ASSERT_SEED(st == FS_OK, seed, "paged decode %s: status %s on %s", fs_cpu_isa_str(isa),
                       fs_status_str(st), p.what);
        double err = problem_error(&p);
        FS_ASSERT_SEED(err <= tolerance(t), seed,
                       "paged decode v%d %s threads %d split %d: error %.3g > %.1g on %s",
                       o.version, fs_cpu_isa_str(isa), o.threads, o.split_len, err, tolerance(t),
                       p.what);
        /* contiguous decode of the same version on the same problem */
        memset(p.O, 0xff, (size_t)p.a.batch * p.a.n_q_heads * p.a.n_q * p.a.d *
                              fs_cpu_dtype_size(t));
        o.version = version;
        st = fs_cpu_decode(&p.a, &o);
        FS_ASSERT_SEED(st == FS_OK, seed, "decode v%d %s: status %s on %s", version,
                       fs_cpu_isa_str(isa), fs_status_str(st), p.what);
        err = problem_error(&p);
        FS_ASSERT_SEED(err <= tolerance(t), seed,
                       "decode v%d %s threads %d split %d: error %.3g > %.1g on %s", version,
                       fs_cpu_isa_str(isa), o.threads, o.split_len, err, tolerance(t), p.what);
        paged_free(&pc);
        problem_free(&p);
    }
}
END_TEST

/* What the paged entry refuses: versions before 4, a page size below 1, a table too short for
 * n_kv, a table entry outside the pool. */
START_TEST(test_decode_paged_refusals)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    problem p;
    problem_draw(&p, &r, FS_CPU_DTYPE_F32, 2, 300, 64);
    paged_copy pc;
    paged_make(&pc, &p, &r, 16);
    fs_cpu_decode_opts o = fs_cpu_decode_opts_default();
    ck_assert_int_eq(fs_cpu_decode_paged(&p.a, &pc.kv, &o), FS_OK);
    o.version = 3;
    ck_assert_int_eq(fs_cpu_decode_paged(&p.a, &pc.kv, &o), FS_ERR_ARG);
    o.version = 0;
    fs_cpu_paged_kv bad = pc.kv;
    bad.page_size = 0;
    ck_assert_int_eq(fs_cpu_decode_paged(&p.a, &bad, &o), FS_ERR_ARG);
    bad = pc.kv;
    bad.blocks_per_seq = (p.a.n_kv + 15) / 16 - 1;
    if (bad.blocks_per_seq >= 1) ck_assert_int_eq(fs_cpu_decode_paged(&p.a, &bad, &o), FS_ERR_ARG);
    int32_t keep = pc.table[0];
    pc.table[0] = pc.kv.n_pages;
    ck_assert_int_eq(fs_cpu_decode_paged(&p.a, &pc.kv, &o), FS_ERR_ARG);
    pc.table[0] = -1;
    ck_assert_int_eq(fs_cpu_decode_paged(&p.a, &pc.kv, &o), FS_ERR_ARG);
    pc.table[0] = keep;
    ck_assert_int_eq(fs_cpu_decode_paged(&p.a, NULL, &o), FS_ERR_ARG);
    paged_free(&pc);
    problem_free(&p);
}
END_TEST

START_TEST(test_baseline_matches_reference)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int trial = 0; trial < 4; trial++) {
        problem p;
        problem_draw(&p, &r, FS_CPU_DTYPE_F32, 70, 140, 160);
        problem_reference(&p);
        char why[128];
        int threads = fs_rng_int(&r, 1, 2);
        fs_status st = fs_cpu_baseline(&p.a, threads, why, sizeof why);
        FS_ASSERT_SEED(st == FS_OK, seed, "baseline: %s on %s", why, p.what);
        double err = problem_error(&p);
        FS_ASSERT_SEED(err <= 1e-5, seed, "baseline: error %.3g on %s", err, p.what);
        problem_free(&p);
    }
}
END_TEST

/* ---- backward ------------------------------------------------------------------------ */

/* The analytic backward in float64, dense, per batch element and query head: S = scale·Q Kᵀ
 * with the mask (fs_reference_score), P = softmax(S) row by row (0 for a row that sees no key),
 * dP = dO Vᵀ, D = rowsum(dO ∘ O) with O the reference's, dS = P ∘ (dP − D), then
 *     dQ = scale·dS K,   dK = Σ over the group's heads scale·dSᵀ Q,   dV = Σ over them Pᵀ dO.
 * dO is (batch, n_q_heads, n_q, d) in double; dQ, dK, dV are written in double, zeroed here. */
static void backward_reference(const problem *p, const double *dO, double *dQ, double *dK,
                               double *dV)
{
    const fs_cpu_attn *a = &p->a;
    int32_t d = a->d, nq = a->n_q, nk = a->n_kv, group = a->n_q_heads / a->n_kv_heads;
    long qs = (long)a->n_q_heads * nq * d, ks = (long)a->n_kv_heads * nk * d;
    memset(dQ, 0, (size_t)a->batch * qs * sizeof(double));
    memset(dK, 0, (size_t)a->batch * ks * sizeof(double));
    memset(dV, 0, (size_t)a->batch * ks * sizeof(double));
    double *P = malloc((size_t)nk * sizeof(double)), *S = malloc((size_t)nk * sizeof(double));
    ck_assert(P && S);
    double scale = a->scale > 0.0f ? (double)a->scale : 1.0 / sqrt((double)d);
    for (int32_t b = 0; b < a->batch; b++) {
        fs_attn r = fs_attn_make(nq, nk, d, d);
        r.n_q_heads = a->n_q_heads;
        r.n_kv_heads = a->n_kv_heads;
        r.Q = p->Qd + b * qs;
        r.K = p->Kd + b * ks;
        r.V = p->Vd + b * ks;
        r.scale = scale;
        r.mask = a->mask;
        for (int32_t h = 0; h < a->n_q_heads; h++)
            for (int32_t i = 0; i < nq; i++) {
                double mx = -INFINITY;
                for (int32_t j = 0; j < nk; j++) {
                    S[j] = fs_reference_score(&r, h, i, j);
                    mx = fmax(mx, S[j]);
                }
                if (mx == -INFINITY) continue;   /* sees nothing: P = 0, no gradient */
                double sum = 0.0;
                for (int32_t j = 0; j < nk; j++) sum += P[j] = exp(S[j] - mx);
                for (int32_t j = 0; j < nk; j++) P[j] /= sum;
                long qi = b * qs + ((long)h * nq + i) * d;
                long k0 = b * ks + (long)(h / group) * nk * d;
                double D = 0.0;
                for (int32_t k = 0; k < d; k++) D += dO[qi + k] * p->Od[qi + k];
                for (int32_t j = 0; j < nk; j++) {
                    if (P[j] == 0.0) continue;
                    double dP = 0.0;
                    for (int32_t k = 0; k < d; k++) dP += dO[qi + k] * p->Vd[k0 + (long)j * d + k];
                    double dS = P[j] * (dP - D);
                    for (int32_t k = 0; k < d; k++) {
                        dQ[qi + k] += scale * dS * p->Kd[k0 + (long)j * d + k];
                        dK[k0 + (long)j * d + k] += scale * dS * p->Qd[qi + k];
                        dV[k0 + (long)j * d + k] += P[j] * dO[qi + k];
                    }
                }
            }
    }
    free(P);
    free(S);
}

/* max |got − want| / max(1, max |want|): the error of a whole gradient against its scale. */
static double normwise_err(const float *got, const double *want, long n)
{
    double err = 0.0, big = 1.0;
    for (long e = 0; e < n; e++) {
        big = fmax(big, fabs(want[e]));
        double x = got[e];
        err = isfinite(x) ? fmax(err, fabs(x - want[e])) : INFINITY;
    }
    return err / big;
}

/* Forward (version 4, with L) then backward on each instruction set this CPU runs (loop index
 * 1 … N_ISAS), or the baseline backward (loop index 0), against
 * the float64 analytic gradients, on random problems of every mask (tests of causal and no mask
 * guaranteed among them), float32. Tolerance 2e-5 of each gradient's largest element: the
 * float32 forward's O and L (errors ~1e-6) enter D and P, and sums of a few hundred terms round
 * at ~1e-6 relative. Also checks the forward's L against the reference's m + ln ℓ. */
START_TEST(test_backward_matches_reference)
{
    bool baseline = _i == 0;
    fs_cpu_isa isa = baseline ? FS_CPU_ISA_AUTO : isas[_i - 1];
    if (!fs_cpu_isa_supported(isa)) return;
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int trial = 0; trial < 10; trial++) {
        problem p;
        problem_draw(&p, &r, FS_CPU_DTYPE_F32, 100, 200, 160);
        if (trial < 2) {   /* one unmasked and one causal problem in every run */
            free(p.bits);
            p.bits = NULL;
            p.a.mask = (fs_mask){.kind = trial == 0 ? FS_MASK_NONE : FS_MASK_CAUSAL};
        }
        fs_cpu_attn *a = &p.a;
        long nq = (long)a->batch * a->n_q_heads * a->n_q * a->d;
        long nk = (long)a->batch * a->n_kv_heads * a->n_kv * a->d;
        long nrow = (long)a->batch * a->n_q_heads * a->n_q;
        double *dOd = malloc(nq * sizeof(double)), *dQd = malloc(nq * sizeof(double));
        double *dKd = malloc(nk * sizeof(double)), *dVd = malloc(nk * sizeof(double));
        double *md = malloc(nrow * sizeof(double)), *ld = malloc(nrow * sizeof(double));
        float *dO = malloc(nq * sizeof(float)), *dQ = malloc(nq * sizeof(float));
        float *dK = malloc(nk * sizeof(float)), *dV = malloc(nk * sizeof(float));
        float *L = malloc(nrow * sizeof(float));
        ck_assert(dOd && dQd && dKd && dVd && md && ld && dO && dQ && dK && dV && L);
        for (long e = 0; e < nq; e++) dOd[e] = dO[e] = (float)fs_rng_uniform(&r, -1, 1);
        memset(dQ, 0xff, nq * sizeof(float));   /* NaN: an unwritten element fails */
        memset(dK, 0xff, nk * sizeof(float));
        memset(dV, 0xff, nk * sizeof(float));
        /* the reference's O, m, ℓ per batch element */
        long qs = (long)a->n_q_heads * a->n_q * a->d, ks = (long)a->n_kv_heads * a->n_kv * a->d;
        for (int32_t b = 0; b < a->batch; b++) {
            fs_attn ra = fs_attn_make(a->n_q, a->n_kv, a->d, a->d);
            ra.n_q_heads = a->n_q_heads;
            ra.n_kv_heads = a->n_kv_heads;
            ra.Q = p.Qd + b * qs;
            ra.K = p.Kd + b * ks;
            ra.V = p.Vd + b * ks;
            ra.scale = a->scale > 0.0f ? (double)a->scale : 1.0 / sqrt((double)a->d);
            ra.mask = a->mask;
            long rs = (long)a->n_q_heads * a->n_q;
            ck_assert_int_eq(fs_reference(&ra, p.Od + b * qs, md + b * rs, ld + b * rs), FS_OK);
        }
        backward_reference(&p, dOd, dQd, dKd, dVd);
        a->L = L;
        fs_cpu_opts fo = fs_cpu_opts_default();
        fo.threads = fs_rng_int(&r, 1, 3);
        ck_assert_int_eq(fs_cpu_prefill(a, &fo), FS_OK);
        for (long row = 0; row < nrow; row++) {
            double want = ld[row] > 0 ? md[row] + log(ld[row]) : -INFINITY;
            FS_ASSERT_SEED(want == -INFINITY ? L[row] == -INFINITY
                                             : fabs(L[row] - want) <= 1e-5 * fmax(1.0, fabs(want)),
                           seed, "L of row %ld: %.9g, reference %.9g on %s", row, L[row], want,
                           p.what);
        }
        fs_status st;
        char why[128] = "";
        int threads = fs_rng_int(&r, 1, 3);
        fs_cpu_backward_opts bo = fs_cpu_backward_opts_default();
        if (baseline) {
            st = fs_cpu_baseline_backward(a, dO, dQ, dK, dV, threads, why, sizeof why);
        } else {
            bo.version = fs_rng_int(&r, 1, FS_CPU_BACKWARD_VERSIONS);
            bo.threads = threads;
            bo.isa = isa;
            if (fs_rng_int(&r, 0, 1)) {   /* odd tiles: partial and skipped ones, tails */
                bo.Bq = fs_rng_int(&r, 1, 40);
                bo.Bk = fs_rng_int(&r, 1, 40);
            }
            /* half the time a workspace of exactly the size asked, full of NaN */
            size_t wb = fs_cpu_backward_workspace(a, &bo);
            FS_ASSERT_SEED(wb > 0, seed, "backward workspace of 0 bytes on %s", p.what);
            if (fs_rng_int(&r, 0, 1)) {
                bo.work = aligned_alloc(64, (wb + 63) / 64 * 64);
                ck_assert(bo.work);
                memset(bo.work, 0xff, wb);
                bo.work_bytes = wb;
            }
            st = fs_cpu_backward(a, dO, dQ, dK, dV, &bo);
            free(bo.work);
        }
        FS_ASSERT_SEED(st == FS_OK, seed, "%s: status %s %s on %s",
                       baseline ? "baseline backward" : "backward", fs_status_str(st), why, p.what);
        double eq = normwise_err(dQ, dQd, nq), ek = normwise_err(dK, dKd, nk),
               ev = normwise_err(dV, dVd, nk);
        FS_ASSERT_SEED(eq <= 2e-5 && ek <= 2e-5 && ev <= 2e-5, seed,
                       "%s v%d %s threads %d Bq %d Bk %d: errors dQ %.3g dK %.3g dV %.3g > 2e-5 on %s",
                       baseline ? "baseline backward" : "backward", bo.version, fs_cpu_isa_str(isa), threads,
                       bo.Bq, bo.Bk, eq, ek, ev, p.what);
        free(dOd); free(dQd); free(dKd); free(dVd); free(md); free(ld);
        free(dO); free(dQ); free(dK); free(dV); free(L);
        problem_free(&p);
    }
}
END_TEST

/* Dropout (engine/dropout.h's mapping): the forward (versions 4 on) and the backward on each
 * instruction set this CPU runs (loop index = isa), float32, against the engine's dense spec
 * with the whole mask materialized cell by cell (fs_dropout_dropped, batch b of the layout as
 * the counter's batch), on random problems of every mask with random p and seed. Tolerances:
 * O 2e-5 relative (|O| ≤ 1/(1 − p) ≤ 5 here), gradients 2e-5 of their largest element, as the
 * test above. Also: L is the log-sum-exp of P before dropout (the reference without dropout),
 * and p = 0 gives the run without dropout bit for bit. */
START_TEST(test_dropout_matches_engine)
{
    fs_cpu_isa isa = isas[_i];
    if (!fs_cpu_isa_supported(isa)) return;
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    for (int trial = 0; trial < 8; trial++) {
        problem p;
        problem_draw(&p, &r, FS_CPU_DTYPE_F32, 80, 160, 128);
        fs_cpu_attn *a = &p.a;
        fs_dropout dr = {true, trial == 0 ? 0.0 : fs_rng_uniform(&r, 0.05, 0.8), fs_rng_next(&r)};
        long nq = (long)a->batch * a->n_q_heads * a->n_q * a->d;
        long nk = (long)a->batch * a->n_kv_heads * a->n_kv * a->d;
        long nrow = (long)a->batch * a->n_q_heads * a->n_q;
        long qs = (long)a->n_q_heads * a->n_q * a->d, ks = (long)a->n_kv_heads * a->n_kv * a->d;
        long rs = (long)a->n_q_heads * a->n_q, cells = rs * a->n_kv;
        double *dOd = malloc(nq * sizeof(double)), *dQd = malloc(nq * sizeof(double));
        double *dKd = malloc(nk * sizeof(double)), *dVd = malloc(nk * sizeof(double));
        double *O0 = malloc(nq * sizeof(double)), *md = malloc(nrow * sizeof(double)), *ld = malloc(nrow * sizeof(double));
        float *dO = malloc(nq * sizeof(float)), *dQ = malloc(nq * sizeof(float));
        float *dK = malloc(nk * sizeof(float)), *dV = malloc(nk * sizeof(float)), *L = malloc(nrow * sizeof(float));
        float *Oplain = malloc(nq * sizeof(float)), *g0 = malloc((2 * nq + 2 * nk) * sizeof(float));
        uint8_t *Z = malloc((size_t)cells);
        ck_assert(dOd && dQd && dKd && dVd && O0 && md && ld && dO && dQ && dK && dV && L && Oplain && g0 && Z);
        for (long e = 0; e < nq; e++) dOd[e] = dO[e] = (float)fs_rng_uniform(&r, -1, 1);
        /* The dense spec per batch element, its mask drawn cell by cell. */
        for (int32_t b = 0; b < a->batch; b++) {
            fs_attn ra = fs_attn_make(a->n_q, a->n_kv, a->d, a->d);
            ra.n_q_heads = a->n_q_heads;
            ra.n_kv_heads = a->n_kv_heads;
            ra.Q = p.Qd + b * qs;
            ra.K = p.Kd + b * ks;
            ra.V = p.Vd + b * ks;
            ra.scale = a->scale > 0.0f ? (double)a->scale : 1.0 / sqrt((double)a->d);
            ra.mask = a->mask;
            for (int32_t h = 0; h < a->n_q_heads; h++)
                for (int32_t i = 0; i < a->n_q; i++)
                    for (int32_t j = 0; j < a->n_kv; j++)
                        Z[((long)h * a->n_q + i) * a->n_kv + j] =
                            !fs_dropout_dropped(&dr, (uint32_t)b, (uint32_t)h, (uint32_t)i, (uint32_t)j);
            ck_assert_int_eq(fs_dropout_reference(&ra, Z, dr.p, p.Od + b * qs), FS_OK);
            ck_assert_int_eq(fs_dropout_backward_dense(&ra, Z, dr.p, dOd + b * qs, dQd + b * qs, dKd + b * ks, dVd + b * ks),
                             FS_OK);
            ck_assert_int_eq(fs_reference(&ra, O0 + b * qs, md + b * rs, ld + b * rs), FS_OK);
        }
        fs_cpu_opts fo = fs_cpu_opts_default();
        fo.version = fs_rng_int(&r, 4, FS_CPU_VERSIONS);
        fo.threads = fs_rng_int(&r, 1, 3);
        fo.isa = isa;
        if (fs_rng_int(&r, 0, 1)) {   /* odd tiles */
            fo.Bq = fs_rng_int(&r, 1, 40);
            fo.Bk = fs_rng_int(&r, 1, 40);
        }
        /* Without dropout first (for p = 0's bit-for-bit check), then with. */
        a->O = Oplain;
        a->L = NULL;
        ck_assert_int_eq(fs_cpu_prefill(a, &fo), FS_OK);
        a->O = p.O;
        a->L = L;
        a->dropout = &dr;
        fs_status st = fs_cpu_prefill(a, &fo);
        FS_ASSERT_SEED(st == FS_OK, seed, "prefill with dropout: %s", fs_status_str(st));
        double eo = problem_error(&p);
        FS_ASSERT_SEED(eo <= 2e-5, seed, "forward %s version %d Bq %d Bk %d p %.3f: O error %.3g on %s", fs_cpu_isa_str(isa),
                       fo.version, fo.Bq, fo.Bk, dr.p, eo, p.what);
        for (long row = 0; row < nrow; row++) {
            double want = ld[row] > 0 ? md[row] + log(ld[row]) : -INFINITY;
            FS_ASSERT_SEED(want == -INFINITY ? L[row] == -INFINITY : fabs(L[row] - want) <= 1e-5 * fmax(1.0, fabs(want)),
                           seed, "L of row %ld with dropout: %.9g, the reference without %.9g", row, L[row], want);
        }
        if (dr.p == 0)
            FS_ASSERT_SEED(!memcmp(Oplain, p.O, nq * sizeof(float)), seed, "p = 0 is not the run without dropout");
        fs_cpu_backward_opts bo = fs_cpu_backward_opts_default();
        /* one thread at p = 0: threads add their dQ copies in the order they finish, which is
         * not the same from run to run */
        bo.threads = dr.p == 0 ? 1 : fs_rng_int(&r, 1, 3);
        bo.version = fs_rng_int(&r, 1, FS_CPU_BACKWARD_VERSIONS);
        bo.isa = isa;
        if (fs_rng_int(&r, 0, 1)) {
            bo.Bq = fs_rng_int(&r, 1, 40);
            bo.Bk = fs_rng_int(&r, 1, 40);
        }
        if (dr.p == 0) {   /* the backward without dropout, for the bit-for-bit check */
            a->dropout = NULL;
            ck_assert_int_eq(fs_cpu_backward(a, dO, g0, g0 + nq, g0 + nq + nk, &bo), FS_OK);
            a->dropout = &dr;
        }
        st = fs_cpu_backward(a, dO, dQ, dK, dV, &bo);
        FS_ASSERT_SEED(st == FS_OK, seed, "backward with dropout: %s", fs_status_str(st));
        double eq = normwise_err(dQ, dQd, nq), ek = normwise_err(dK, dKd, nk), ev = normwise_err(dV, dVd, nk);
        FS_ASSERT_SEED(eq <= 2e-5 && ek <= 2e-5 && ev <= 2e-5, seed,
                       "backward v%d %s threads %d Bq %d Bk %d p %.3f: errors dQ %.3g dK %.3g dV %.3g > 2e-5 on %s",
                       bo.version, fs_cpu_isa_str(isa), bo.threads, bo.Bq, bo.Bk, dr.p, eq, ek, ev, p.what);
        if (dr.p == 0)
            FS_ASSERT_SEED(!memcmp(g0, dQ, nq * sizeof(float)) && !memcmp(g0 + nq, dK, nk * sizeof(float)) &&
                               !memcmp(g0 + nq + nk, dV, nk * sizeof(float)),
                           seed, "backward at p = 0 is not the run without dropout");
        free(dOd); free(dQd); free(dKd); free(dVd); free(O0); free(md); free(ld);
        free(dO); free(dQ); free(dK); free(dV); free(L); free(Oplain); free(g0); free(Z);
        problem_free(&p);
    }
}
END_TEST

/* Dropout where it does not apply: versions 1 to 3, decode, the baselines; p out of range. */
START_TEST(test_dropout_refusals)
{
    fs_rng r = {fs_test_seed()};
    problem p;
    problem_draw(&p, &r, FS_CPU_DTYPE_F32, 8, 8, 32);
    fs_cpu_attn *a = &p.a;
    fs_dropout dr = {true, 0.25, 1};
    a->dropout = &dr;
    for (int v = 1; v <= 3; v++) {
        fs_cpu_opts o = fs_cpu_opts_default();
        o.version = v;
        ck_assert_int_eq(fs_cpu_prefill(a, &o), FS_ERR_ARG);
    }
    ck_assert_int_eq(fs_cpu_decode(a, NULL), FS_ERR_ARG);
    char why[64];
    ck_assert_int_eq(fs_cpu_baseline(a, 1, why, sizeof why), FS_ERR_ARG);
    dr.p = 1.0;
    ck_assert_int_eq(fs_cpu_prefill(a, NULL), FS_ERR_ARG);
    dr.on = false;   /* off: the same problem runs */
    ck_assert_int_eq(fs_cpu_prefill(a, NULL), FS_OK);
    problem_free(&p);
}
END_TEST

/* Rows that see no key get zero gradients, no NaN: a causal mask with an offset that hides
 * every key from the first rows. */
START_TEST(test_backward_empty_rows)
{
    enum { NQ = 8, NK = 8, D = 16 };
    float Q[NQ * D], K[NK * D], V[NK * D], O[NQ * D], L[NQ], dO[NQ * D], dQ[NQ * D], dK[NK * D],
        dV[NK * D];
    for (int e = 0; e < NQ * D; e++) Q[e] = dO[e] = (float)((e * 7) % 11) / 11.0f - 0.5f;
    for (int e = 0; e < NK * D; e++) K[e] = V[e] = (float)((e * 5) % 13) / 13.0f - 0.5f;
    fs_cpu_attn a = {.batch = 1, .n_q_heads = 1, .n_kv_heads = 1, .n_q = NQ, .n_kv = NK,
                     .d = D, .Q = Q, .K = K, .V = V, .O = O, .L = L,
                     .mask = {.kind = FS_MASK_CAUSAL, .has_offset = true, .offset = -3}};
    fs_cpu_opts fo = fs_cpu_opts_default();
    ck_assert_int_eq(fs_cpu_prefill(&a, &fo), FS_OK);
    for (int i = 0; i < 3; i++) ck_assert(L[i] == -INFINITY);
    fs_cpu_backward_opts bo = fs_cpu_backward_opts_default();
    ck_assert_int_eq(fs_cpu_backward(&a, dO, dQ, dK, dV, &bo), FS_OK);
    for (int e = 0; e < 3 * D; e++) ck_assert(dQ[e] == 0.0f);
    for (int e = 0; e < NQ * D; e++) ck_assert(isfinite(dQ[e]));
    for (int e = 0; e < NK * D; e++) ck_assert(isfinite(dK[e]) && isfinite(dV[e]));
    for (int e = 5 * D; e < NK * D; e++) ck_assert(dK[e] == 0.0f && dV[e] == 0.0f);   /* unseen keys */
    /* a workspace smaller than asked, misaligned or of no size is refused; one of the size
     * asked serves */
    size_t wb = fs_cpu_backward_workspace(&a, &bo);
    ck_assert_uint_gt(wb, 0);
    char *w = aligned_alloc(64, (wb + 64 + 63) / 64 * 64);
    ck_assert(w);
    bo.work = w;
    bo.work_bytes = wb - 1;
    ck_assert_int_eq(fs_cpu_backward(&a, dO, dQ, dK, dV, &bo), FS_ERR_ARG);
    bo.work_bytes = 0;
    ck_assert_int_eq(fs_cpu_backward(&a, dO, dQ, dK, dV, &bo), FS_ERR_ARG);
    bo.work = w + 4;
    bo.work_bytes = wb;
    ck_assert_int_eq(fs_cpu_backward(&a, dO, dQ, dK, dV, &bo), FS_ERR_ARG);
    bo.work = w;
    ck_assert_int_eq(fs_cpu_backward(&a, dO, dQ, dK, dV, &bo), FS_OK);
    for (int e = 0; e < 3 * D; e++) ck_assert(dQ[e] == 0.0f);
    free(w);
    bo.work = NULL;
    bo.version = FS_CPU_BACKWARD_VERSIONS + 1;
    ck_assert_uint_eq(fs_cpu_backward_workspace(&a, &bo), 0);
    bo.version = 0;
    a.L = NULL;   /* the backward needs L */
    ck_assert_int_eq(fs_cpu_backward(&a, dO, dQ, dK, dV, &bo), FS_ERR_ARG);
}
END_TEST

/* The baseline refuses, without allocating, what cannot fit; the kernels reject bad problems. */
START_TEST(test_refusals)
{
    static float x[8 * 4 * 64];   /* Q (and O) of the 8-head, 4-row problem below that runs */
    fs_cpu_attn a = {.batch = 1, .n_q_heads = 8, .n_kv_heads = 8, .n_q = 1 << 20,
                     .n_kv = 1 << 20, .d = 64, .Q = x, .K = x, .V = x, .O = x};
    char why[128] = "";
    ck_assert_int_eq(fs_cpu_baseline(&a, 1, why, sizeof why), FS_ERR_NOMEM);
    ck_assert_msg(strstr(why, "GiB") != NULL, "why = '%s'", why);
    a.n_q = a.n_kv = 4;
    a.n_kv_heads = 3;   /* 8 query heads cannot share 3 KV heads */
    fs_cpu_opts o = fs_cpu_opts_default();
    ck_assert_int_eq(fs_cpu_prefill(&a, &o), FS_ERR_SHAPE);
    a.n_kv_heads = 2;
    o.threads = 0;
    ck_assert_int_eq(fs_cpu_prefill(&a, &o), FS_ERR_ARG);
    o.threads = 1;
    o.version = FS_CPU_VERSIONS + 1;
    ck_assert_int_eq(fs_cpu_prefill(&a, &o), FS_ERR_ARG);
    ck_assert_uint_eq(fs_cpu_prefill_workspace(&a, &o), 0);
    /* a workspace smaller than asked, misaligned, or of no size is refused */
    o.version = 0;
    size_t wb = fs_cpu_prefill_workspace(&a, &o);
    ck_assert_uint_gt(wb, 0);
    char *w = aligned_alloc(64, (wb + 64 + 63) / 64 * 64);
    ck_assert(w);
    o.work = w;
    o.work_bytes = wb - 1;
    ck_assert_int_eq(fs_cpu_prefill(&a, &o), FS_ERR_ARG);
    o.work_bytes = 0;
    ck_assert_int_eq(fs_cpu_prefill(&a, &o), FS_ERR_ARG);
    o.work = w + 4;
    o.work_bytes = wb;
    ck_assert_int_eq(fs_cpu_prefill(&a, &o), FS_ERR_ARG);
    o.work = w;
    ck_assert_int_eq(fs_cpu_prefill(&a, &o), FS_OK);
    free(w);
    o = fs_cpu_opts_default();
    a.mask.kind = FS_MASK_WINDOW;
    a.mask.window = 0;
    ck_assert_int_eq(fs_cpu_attn_check(&a), FS_ERR_MASK);
    fs_cpu_decode_opts dopt = fs_cpu_decode_opts_default();
    ck_assert_int_eq(fs_cpu_decode(&a, &dopt), FS_ERR_MASK);
    a.mask.kind = FS_MASK_NONE;
    a.d = 0;
    ck_assert_int_eq(fs_cpu_attn_check(&a), FS_ERR_SHAPE);
    a.d = 4;
    a.Q = NULL;
    ck_assert_int_eq(fs_cpu_attn_check(&a), FS_ERR_ARG);
}
END_TEST

START_TEST(test_conversions)
{
    ck_assert_uint_eq(fs_cpu_f32_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(fs_cpu_f32_to_f16(-2.0f), 0xc000);
    ck_assert_uint_eq(fs_cpu_f32_to_f16(65504.0f), 0x7bff);
    ck_assert_uint_eq(fs_cpu_f32_to_f16(65520.0f), 0x7c00);            /* rounds to ∞ */
    ck_assert_uint_eq(fs_cpu_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);   /* smallest subnormal */
    ck_assert_uint_eq(fs_cpu_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);   /* tie to even */
    ck_assert_uint_eq(fs_cpu_f32_to_f16(1.0f + ldexpf(3.0f, -11)), 0x3c02);   /* tie to even */
    ck_assert_uint_eq(fs_cpu_f32_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(fs_cpu_f32_to_bf16(1.0f + ldexpf(1.0f, -8)), 0x3f80);   /* tie to even */
    ck_assert_float_eq(fs_cpu_f16_to_f32(0x3555), 0.333251953125f);
    ck_assert_float_eq(fs_cpu_f16_to_f32(0x0001), ldexpf(1.0f, -24));
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int k = 0; k < 10000; k++) {
        float x = (float)fs_rng_uniform(&r, -1000, 1000);
        float h = fs_cpu_f16_to_f32(fs_cpu_f32_to_f16(x)), b = fs_cpu_bf16_to_f32(fs_cpu_f32_to_bf16(x));
        FS_ASSERT_SEED(fabsf(h - x) <= ldexpf(fabsf(x), -11) + ldexpf(1.0f, -25), seed,
                       "f16 round trip of %.9g gave %.9g", x, h);
        FS_ASSERT_SEED(fabsf(b - x) <= ldexpf(fabsf(x), -8), seed,
                       "bf16 round trip of %.9g gave %.9g", x, b);
        FS_ASSERT_SEED(fs_cpu_f32_to_f16(h) == fs_cpu_f32_to_f16(x), seed,
                       "f16 not idempotent at %.9g", x);
    }
}
END_TEST

/* The vector 2^x of every instruction set against libm's exp2 (in double), on the range the
 * softmax feeds it (x = s − m ≤ 0): relative error ≤ 2e-7 (the bound cpu_simd.h states; measured
 * worst 7.3e-8 on AVX-512 and AVX2, 5.9e-8 for libm's own exp2f in float) for x ≥ −126, where the
 * result is a normal float; below that 0 or 2^−126 and never a denormal (which costs an Intel
 * core a microcode assist per vector), −∞ included; 2^0 = 1. */
START_TEST(test_vexp2_against_libm)
{
    fs_cpu_isa isa = isas[_i];
    const cpu_isa_ops *ops = fs_cpu_isa_ops(isa);
    if (!ops) return;
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    enum { N = 20001 };
    static float x[N];
    static double want[N];
    for (int k = 0; k < N; k++) {
        double v = k < 2000 ? -0.01 * k                               /* a grid near 0 */
                 : k < 2100 ? -(double)(k - 2000) * 0.5              /* integers and halves */
                 : k < 2200 ? -140.0 - 0.1 * (k - 2100)              /* the subnormal range */
                            : fs_rng_uniform(&r, -160.0, 0.0);
        x[k] = (float)v;
        want[k] = exp2((double)x[k]);
    }
    ops->exp2_vec(x, N);
    for (int k = 0; k < N; k++) {
        double xin = log2(want[k]);   /* the input (exact enough to pick the regime) */
        if (want[k] < ldexp(1.0, -150) * 0.5 || xin < -126.0) {
            FS_ASSERT_SEED(x[k] == 0.0f || x[k] == ldexpf(1.0f, -126), seed,
                           "%s: 2^%.9g gave %.9g (0 or 2^-126 wanted, not a denormal)",
                           fs_cpu_isa_str(isa), xin, x[k]);
        } else {
            double rel = fabs(x[k] - want[k]) / want[k];
            FS_ASSERT_SEED(rel <= 2e-7, seed, "%s: 2^%.9g gave %.9g, libm %.9g (relative %.3g)",
                           fs_cpu_isa_str(isa), xin, x[k], want[k], rel);
        }
    }
    float one = 0.0f;
    ops->exp2_vec(&one, 1);
    ck_assert_float_eq_tol(one, 1.0f, 2e-7f);
    float big = -1000.0f, minf = -INFINITY;
    ops->exp2_vec(&big, 1);
    ops->exp2_vec(&minf, 1);
    /* 0 (AVX-512, scalar) or 2^−126 (AVX2 and NEON clamp their input to −126, cpu_simd.h) */
    ck_assert((big == 0.0f || big == ldexpf(1.0f, -126)) && (minf == 0.0f || minf == ldexpf(1.0f, -126)));
}
END_TEST

static void count_item(void *ctx, int32_t thread, int64_t item)
{
    (void)thread;
    __atomic_fetch_add(&((int *)ctx)[item], 1, __ATOMIC_RELAXED);
}

START_TEST(test_parallel_every_item_once)
{
    int seen[257];
    for (int threads = 1; threads <= 4; threads++) {
        memset(seen, 0, sizeof seen);
        fs_cpu_parallel(threads, 257, count_item, seen);
        for (int k = 0; k < 257; k++) ck_assert_int_eq(seen[k], 1);
    }
}
END_TEST

START_TEST(test_measurements_are_positive)
{
    ck_assert(fs_cpu_measure_fma_gflops(1, 0.005) > 0.1);
    ck_assert(fs_cpu_measure_read_gbps(1, 1 << 20) > 0.01);
    ck_assert(fs_cpu_rss_peak_mb() > 0.0);
    ck_assert(fs_cpu_isa_supported(fs_cpu_isa_best()));
#if defined(__x86_64__)
    double ghz = fs_cpu_measure_clock_ghz();
    ck_assert_msg(ghz > 0.1 && ghz < 20.0, "clock %.3g GHz", ghz);
#endif
}
END_TEST

/* The clock's plausibility check: 64 FLOP a cycle (two 512-bit FMA pipes) and 32 (one, or Zen 4's
 * halves) pass with 16 lanes, as 32 and 16 do with 8; the Xeon's add-chain reading (11.83 GHz
 * against a 1-thread peak of 175 GFLOP/s: 14.8 a cycle) and anything 10 % off do not. */
START_TEST(test_clock_plausible)
{
    ck_assert(fs_cpu_clock_plausible(3.7 * 64, 3.7, 16));
    ck_assert(fs_cpu_clock_plausible(3.0 * 32, 3.0, 16));
    ck_assert(fs_cpu_clock_plausible(3.0 * 32 * 1.08, 3.0, 16));
    ck_assert(fs_cpu_clock_plausible(2.5 * 16, 2.5, 8));
    ck_assert(!fs_cpu_clock_plausible(11.83 * 14.8, 11.83, 16));
    ck_assert(!fs_cpu_clock_plausible(3.0 * 48, 3.0, 16));
    ck_assert(!fs_cpu_clock_plausible(3.0 * 32 * 1.12, 3.0, 16));
    ck_assert(!fs_cpu_clock_plausible(100, 0, 16));
    ck_assert(!fs_cpu_clock_plausible(0, 3.0, 16));
    ck_assert(!fs_cpu_clock_plausible(100, 3.0, 0));
}
END_TEST

/* Threads that share cores: the lent Intel host's 16 vCPUs (1377.3 GFLOP/s against 175.3 on one)
 * and a pair of its vCPUs on one core (126.7 against 175), yes; Zen 4's two cores (232.1 against
 * 116.4) and exactly 3/4, no; one thread or a missing reading, no. */
START_TEST(test_threads_share_cores)
{
    ck_assert(fs_cpu_threads_share_cores(175.3, 1377.3, 16));
    ck_assert(fs_cpu_threads_share_cores(175.0, 126.7, 2));
    ck_assert(!fs_cpu_threads_share_cores(116.4, 232.1, 2));
    ck_assert(!fs_cpu_threads_share_cores(100.0, 300.0, 4));
    ck_assert(fs_cpu_threads_share_cores(100.0, 299.0, 4));
    ck_assert(!fs_cpu_threads_share_cores(100.0, 50.0, 1));
    ck_assert(!fs_cpu_threads_share_cores(0.0, 50.0, 2));
    ck_assert(!fs_cpu_threads_share_cores(100.0, 0.0, 2));
}
END_TEST

Suite *kernels_cpu_suite(void)
{
    Suite *s = suite_create("kernels_cpu");
    TCase *tc = tcase_create("reference");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_prefill_matches_reference, 0, FS_CPU_VERSIONS * N_ISAS);
    tcase_add_loop_test(tc, test_prefill_blocks_match_reference, 0,
                        (FS_CPU_VERSIONS - 3) * N_BLOCKS_MAX);
    tcase_add_loop_test(tc, test_decode_matches_reference, 0, FS_CPU_DECODE_VERSIONS * N_ISAS);
    tcase_add_loop_test(tc, test_decode_paged_matches_reference, 0,
                        (FS_CPU_DECODE_VERSIONS - 3) * N_ISAS);
    tcase_add_test(tc, test_baseline_matches_reference);
    tcase_add_loop_test(tc, test_backward_matches_reference, 0, 1 + N_ISAS);
    tcase_add_loop_test(tc, test_dropout_matches_engine, 0, N_ISAS);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("edges");
    tcase_set_timeout(tm, 60);
    tcase_add_test(tm, test_refusals);
    tcase_add_test(tm, test_dropout_refusals);
    tcase_add_test(tm, test_decode_paged_refusals);
    tcase_add_test(tm, test_backward_empty_rows);
    tcase_add_test(tm, test_conversions);
    tcase_add_loop_test(tm, test_vexp2_against_libm, 0, N_ISAS);
    tcase_add_test(tm, test_parallel_every_item_once);
    tcase_add_test(tm, test_measurements_are_positive);
    tcase_add_test(tm, test_clock_plausible);
    tcase_add_test(tm, test_threads_share_cores);
    suite_add_tcase(s, tm);
    return s;
}
