/* check_check.c: the judge of `flashstep check`. Every wrong variant is built by the engine from a
 * random problem drawn fresh each run (seed printed on failure, FS_SEED=... replays it), rounded
 * to float32 or float16 as a kernel's output would be, and must get its diagnosis; correct outputs
 * rounded to float32, float16 or bfloat16 must pass. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check/check.h"
#include "check/prec.h"
#include "engine/reference.h"
#include "engine/tiled.h"
#include "io/matrix_io.h"
#include "lesson/lesson.h"
#include "test_problem.h"
#include "test_util.h"

START_TEST(test_round)
{
    /* float16: ties to even, the largest finite value, overflow, subnormals */
    ck_assert(fs_prec_round(FS_PREC_F16, 1 + 0x1p-11) == 1);
    ck_assert(fs_prec_round(FS_PREC_F16, 1 + 3 * 0x1p-11) == 1 + 0x1p-9);
    ck_assert(fs_prec_round(FS_PREC_F16, 65519) == 65504);
    ck_assert(isinf(fs_prec_round(FS_PREC_F16, 65520)));
    ck_assert(fs_prec_round(FS_PREC_F16, 0x1p-25) == 0);
    ck_assert(fs_prec_round(FS_PREC_F16, 3 * 0x1p-26) == 0x1p-24);
    ck_assert(fs_prec_round(FS_PREC_F16, -0.1) == -0.0999755859375);
    /* bfloat16: 8 significant bits */
    ck_assert(fs_prec_round(FS_PREC_BF16, 1 + 0x1p-8) == 1);
    ck_assert(fs_prec_round(FS_PREC_BF16, 1 + 3 * 0x1p-8) == 1 + 0x1p-6);
    ck_assert(fs_prec_round(FS_PREC_BF16, 3.14159265) == 3.140625);
    ck_assert(fs_prec_round(FS_PREC_F32, 0.1) == (double)0.1f);
    ck_assert(fs_prec_round(FS_PREC_F64, 0.1) == 0.1);
    ck_assert(fs_prec_round(FS_PREC_F16, 65503.9) == 65504);
    ck_assert(fs_prec_round(FS_PREC_F16, 2047.5) == 2048 && fs_prec_round(FS_PREC_F16, 2046.5) == 2046);
    /* the fast path on the bits agrees with rounding by scaling, on random values of every size */
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int i = 0; i < 100000; i++) {
        double x = ldexp(fs_rng_uniform(&r, -1, 1), fs_rng_int(&r, -30, 18));
        if (i % 7 == 0) x = ldexp(1 + 0x1p-11 * fs_rng_int(&r, 0, 8) / 2.0, fs_rng_int(&r, -16, 15));   /* ties */
        int e;
        frexp(x, &e);
        int E = e - 1 < -14 ? -14 : e - 1;
        double q = ldexp(1.0, E - 10), want = nearbyint(x / q) * q;
        if (fabs(want) > 65504) want = copysign(INFINITY, x);
        FS_ASSERT_SEED(fs_prec_round(FS_PREC_F16, x) == want || (x == 0 && want == 0), seed, "f16 of %a: %a, want %a", x,
                       fs_prec_round(FS_PREC_F16, x), want);
        /* bfloat16 of a float32 value: round its bits, as PyTorch does */
        float f = (float)x, g;
        uint32_t u;
        memcpy(&u, &f, 4);
        uint32_t rb = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
        memcpy(&g, &rb, 4);
        FS_ASSERT_SEED(fs_prec_round(FS_PREC_BF16, (double)f) == (double)g, seed, "bf16 of %a: %a, want %a",
                       (double)f, fs_prec_round(FS_PREC_BF16, (double)f), (double)g);
    }
}
END_TEST

/* A random problem: 1 to 4 query heads (GQA groups of 1 or 2), n_q and n_kv from 20 to 80, d from
 * 4 to 16; inputs rounded to the precision, as a kernel would hold them. */
typedef struct {
    fs_attn a;
    double *Q, *K, *V, *O;
    size_t no;
} problem;

static void problem_make(problem *p, fs_rng *r, fs_prec prec, int n_q, int n_kv, int d, fs_mask_kind mask)
{
    int hkv = fs_rng_int(r, 1, 2), hq = hkv * fs_rng_int(r, 1, 2);
    p->a = fs_attn_make(n_q, n_kv, d, d);
    p->a.n_q_heads = hq;
    p->a.n_kv_heads = hkv;
    p->a.mask.kind = mask;
    if (mask == FS_MASK_WINDOW) p->a.mask.window = fs_rng_int(r, 1, n_kv / 2 > 1 ? n_kv / 2 : 1);
    size_t nq = (size_t)hq * n_q * d, nk = (size_t)hkv * n_kv * d;
    p->Q = malloc(sizeof(double) * nq);
    p->K = malloc(sizeof(double) * nk);
    p->V = malloc(sizeof(double) * nk);
    p->no = (size_t)hq * n_q * d;
    p->O = malloc(sizeof(double) * p->no);
    ck_assert(p->Q && p->K && p->V && p->O);
    /* scores of a few units, as trained models have: the running max moves often */
    fs_rng_fill(r, p->Q, (long)nq, -2, 2);
    fs_rng_fill(r, p->K, (long)nk, -2, 2);
    fs_rng_fill(r, p->V, (long)nk, -1, 1);
    for (size_t i = 0; i < nq; i++) p->Q[i] = fs_prec_round(prec, p->Q[i]);
    for (size_t i = 0; i < nk; i++) {
        p->K[i] = fs_prec_round(prec, p->K[i]);
        p->V[i] = fs_prec_round(prec, p->V[i]);
    }
    p->a.Q = p->Q;
    p->a.K = p->K;
    p->a.V = p->V;
}

static void problem_free(problem *p)
{
    free(p->Q);
    free(p->K);
    free(p->V);
    free(p->O);
}

static void round_all(fs_prec prec, double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = fs_prec_round(prec, x[i]);
}

static fs_check_result judge(const problem *p, fs_prec prec, const double *lse)
{
    fs_check_opts o = fs_check_opts_default();
    o.prec = prec;
    o.lse = lse;
    fs_check_result res;
    ck_assert(fs_check_judge(&p->a, p->O, &o, &res) == FS_OK);
    return res;
}

/* Correct outputs, rounded to each precision, pass; so does the plain implementation's own. */
START_TEST(test_correct_passes)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    const fs_prec precs[] = {FS_PREC_F32, FS_PREC_F16, FS_PREC_BF16, FS_PREC_F64};
    for (int t = 0; t < 4; t++) {
        fs_prec prec = precs[t];
        fs_mask_kind mk = (fs_mask_kind)fs_rng_int(&r, 0, 2);
        problem p;
        problem_make(&p, &r, prec, fs_rng_int(&r, 1, 60), fs_rng_int(&r, 1, 80), fs_rng_int(&r, 1, 16), mk);
        int64_t rows = (int64_t)p.a.n_q_heads * p.a.n_q;
        double *m = malloc(sizeof(double) * (size_t)rows), *l = malloc(sizeof(double) * (size_t)rows);
        ck_assert(fs_reference(&p.a, p.O, m, l) == FS_OK);
        round_all(prec, p.O, p.no);
        for (int64_t k = 0; k < rows; k++) m[k] = l[k] > 0 ? fs_prec_round(prec, m[k] + log(l[k])) : -INFINITY;
        fs_check_result res = judge(&p, prec, m);
        FS_ASSERT_SEED(res.pass && res.diag == FS_DIAG_OK, seed, "%s: rounded reference fails: err %g, tol %g; %s",
                       fs_prec_str(prec), res.max_abs_err, res.tolerance, res.detail);
        FS_ASSERT_SEED(res.lse_checked && res.lse_pass, seed, "%s: lse fails", fs_prec_str(prec));
        fs_check_result_free(&res);
        if (prec != FS_PREC_F64) {
            ck_assert(fs_check_plain(&p.a, prec, p.O, NULL) == FS_OK);
            res = judge(&p, prec, NULL);
            FS_ASSERT_SEED(res.pass, seed, "%s: the plain implementation fails itself", fs_prec_str(prec));
            fs_check_result_free(&res);
            /* the log-sum-exp in base 2 is caught, and named */
            for (int64_t k = 0; k < rows; k++) m[k] *= 1.4426950408889634074;
            res = judge(&p, prec, m);
            bool any = false;
            for (int64_t k = 0; k < rows; k++) any |= l[k] > 0 && fabs(m[k]) > 1;
            if (any)
                FS_ASSERT_SEED(!res.pass && strstr(res.detail, "base 2"), seed, "%s: base-2 lse: %s",
                               fs_prec_str(prec), res.detail);
            fs_check_result_free(&res);
        }
        free(m);
        free(l);
        problem_free(&p);
    }
}
END_TEST

/* Build variant `which` of a random problem, round it, and require its diagnosis. */
enum { V_SCALE_D, V_SCALE_FIT, V_MASK, V_WINDOW, V_DIAG_OUT, V_FUTURE, V_TOP_LEFT, V_NO_RESCALE, V_NO_BETA,
       V_UNNORM, V_NAN, V_KT, V_SWAP, V_SLIP_O, V_SLIP_L, V_COUNT };

static const char *vname[] = {"scale 1/d", "fitted scale", "mask missing", "window missing", "diagonal excluded",
                              "one future key", "top-left", "no-rescale", "no-beta", "unnormalized",
                              "nan rows", "K transposed", "Q K swapped",
                              "accumulator not rescaled", "sum not rescaled"};

/* The unnormalized form (divide by l at the end) with blocks of bk keys, one head, no mask,
 * leaving α off the accumulator (slip 1) or off the sum (slip 2): written here again, plainly. */
static void slip_run(const fs_attn *a, int h, int bk, int slip, double *O)
{
    int g = fs_attn_kv_head(a, h);
    for (int i = 0; i < a->n_q; i++) {
        double *o = O + ((size_t)h * a->n_q + i) * a->d_v, m = -INFINITY, l = 0;
        for (int c = 0; c < a->d_v; c++) o[c] = 0;
        for (int c0 = 0; c0 < a->n_kv; c0 += bk) {
            int c1 = c0 + bk < a->n_kv ? c0 + bk : a->n_kv;
            double s[512], mb = -INFINITY, sum = 0;
            for (int j = c0; j < c1; j++) {
                double dot = 0;
                for (int c = 0; c < a->d; c++)
                    dot += a->Q[((size_t)h * a->n_q + i) * a->d + c] * a->K[((size_t)g * a->n_kv + j) * a->d + c];
                s[j - c0] = a->scale * dot;
                mb = fmax(mb, s[j - c0]);
            }
            double mn = fmax(m, mb), alpha = exp(m - mn);
            if (slip != 1)
                for (int c = 0; c < a->d_v; c++) o[c] *= alpha;
            for (int j = c0; j < c1; j++) {
                double p = exp(s[j - c0] - mn);
                sum += p;
                for (int c = 0; c < a->d_v; c++) o[c] += p * a->V[((size_t)g * a->n_kv + j) * a->d_v + c];
            }
            l = (slip == 2 ? l : alpha * l) + sum;
            m = mn;
        }
        for (int c = 0; c < a->d_v; c++) o[c] /= l;
    }
}

/* A kernel that forgets the final division, computing in precision p with every operation
 * rounded (one block: o = Σ exp(s − m) V, rows summed at ℓ times the output's scale). */
static void unnorm_run(const fs_attn *a, int h, fs_prec p, double *O)
{
    int g = fs_attn_kv_head(a, h);
    for (int i = 0; i < a->n_q; i++) {
        double *o = O + ((size_t)h * a->n_q + i) * a->d_v, s[512], m = -INFINITY;
        for (int j = 0; j < a->n_kv; j++) m = fmax(m, s[j] = fs_check_plain_score(a, p, h, i, j));
        for (int c = 0; c < a->d_v; c++) {
            o[c] = 0;
            for (int j = 0; j < a->n_kv; j++) {
                if (s[j] == -INFINITY) continue;
                double pj = fs_prec_round(p, exp(fs_prec_round(p, s[j] - m)));
                o[c] = fs_prec_round(p, o[c] + fs_prec_round(p, pj * a->V[((size_t)g * a->n_kv + j) * a->d_v + c]));
            }
        }
    }
}

static void one_variant(int which, fs_prec prec, uint64_t seed)
{
    fs_rng r = {seed};
    int n_q = fs_rng_int(&r, 20, 70), n_kv = fs_rng_int(&r, 40, 90), d = fs_rng_int(&r, 4, 16);
    fs_mask_kind mk = FS_MASK_CAUSAL;
    if (which == V_SCALE_D || which == V_SCALE_FIT || which == V_UNNORM) mk = (fs_mask_kind)fs_rng_int(&r, 0, 1);
    if (which == V_WINDOW) mk = FS_MASK_WINDOW;
    if (which == V_NO_RESCALE || which == V_NO_BETA || which == V_KT || which == V_SWAP || which >= V_SLIP_O)
        mk = FS_MASK_NONE;
    if (which == V_TOP_LEFT) n_q = n_kv - fs_rng_int(&r, 5, 20);
    if (which == V_NAN) n_q = n_kv + fs_rng_int(&r, 1, 10);   /* the first rows see no key */
    if (which == V_KT) n_kv = d = fs_rng_int(&r, 20, 40);
    if (which == V_SWAP) n_q = n_kv;
    problem p;
    problem_make(&p, &r, prec, n_q, n_kv, d, mk);
    fs_attn b = p.a;
    fs_diag want = FS_DIAG_UNKNOWN;
    int32_t bk = fs_rng_int(&r, 0, 1) ? 16 : 32;
    fs_pitfall pf = FS_PITFALL_NONE;
    double *Kt = NULL;
    switch (which) {
    case V_SCALE_D: b.scale = 1.0 / d; want = FS_DIAG_WRONG_SCALE; break;
    case V_SCALE_FIT: b.scale *= fs_rng_int(&r, 0, 1) ? 0.6 : 1.7; want = FS_DIAG_WRONG_SCALE; break;
    case V_MASK: b.mask.kind = FS_MASK_NONE; want = FS_DIAG_MASK_MISSING; break;
    case V_WINDOW: b.mask.kind = FS_MASK_CAUSAL; want = FS_DIAG_MASK_MISSING; break;
    case V_DIAG_OUT:
    case V_FUTURE:
        b.mask.has_offset = true;
        b.mask.offset = n_kv - n_q + (which == V_DIAG_OUT ? -1 : 1);
        want = FS_DIAG_CAUSAL_SHIFT;
        break;
    case V_TOP_LEFT: b.mask.has_offset = true; b.mask.offset = 0; want = FS_DIAG_CAUSAL_SHIFT; break;
    case V_NO_RESCALE: pf = FS_PITFALL_NO_RESCALE; want = FS_DIAG_NO_RESCALE; break;
    case V_NO_BETA: pf = FS_PITFALL_BLOCK_MAX_NO_BETA; want = FS_DIAG_NO_BETA; break;
    case V_UNNORM: want = FS_DIAG_UNNORMALIZED; break;
    case V_NAN: want = FS_DIAG_NAN_ROWS; break;
    case V_KT:
        Kt = malloc(sizeof(double) * (size_t)p.a.n_kv_heads * d * d);
        for (int g = 0; g < p.a.n_kv_heads; g++)
            for (int j = 0; j < d; j++)
                for (int c = 0; c < d; c++)
                    Kt[((size_t)g * d + j) * d + c] = p.K[((size_t)g * d + c) * d + j];
        b.K = Kt;
        want = FS_DIAG_K_TRANSPOSED;
        break;
    case V_SWAP: {
        /* S = K Qᵀ per query head: build it with one KV head per query head */
        want = FS_DIAG_Q_K_SWAPPED;
        break;
    }
    default: break;
    }
    if (which == V_UNNORM) {
        for (int h = 0; h < p.a.n_q_heads; h++) unnorm_run(&p.a, h, prec, p.O);
    } else if (which == V_SLIP_O || which == V_SLIP_L) {
        want = FS_DIAG_NO_RESCALE;
        for (int h = 0; h < p.a.n_q_heads; h++) slip_run(&p.a, h, bk, which == V_SLIP_O ? 1 : 2, p.O);
    } else if (which == V_SWAP) {
        int hq = p.a.n_q_heads;
        for (int h = 0; h < hq; h++) {
            fs_attn s1 = p.a;
            int g = fs_attn_kv_head(&p.a, h);
            s1.n_q_heads = s1.n_kv_heads = 1;
            s1.Q = p.K + (size_t)g * n_kv * d;
            s1.K = p.Q + (size_t)h * n_q * d;
            s1.V = p.V + (size_t)g * n_kv * d;
            ck_assert(fs_reference(&s1, p.O + (size_t)h * n_q * d, NULL, NULL) == FS_OK);
        }
    } else if (pf != FS_PITFALL_NONE) {
        fs_tiling t = fs_tiling_default();
        t.Bk = bk;
        t.pitfall = pf;
        ck_assert(fs_tiled(&b, &t, p.O, NULL, NULL, NULL) == FS_OK);
    } else {
        int64_t rows = (int64_t)b.n_q_heads * b.n_q;
        double *l = malloc(sizeof(double) * (size_t)rows);
        ck_assert(fs_reference(&b, p.O, NULL, l) == FS_OK);
        for (int64_t k = 0; k < rows; k++)
            for (int c = 0; c < b.d_v; c++) {
                double *x = &p.O[(size_t)k * b.d_v + c];
                if (which == V_NAN && l[k] == 0) *x = NAN;
            }
        free(l);
    }
    round_all(prec, p.O, p.no);
    fs_check_result res = judge(&p, prec, NULL);
    FS_ASSERT_SEED(!res.pass, seed, "%s (%s): passes (err %g, tol %g)", vname[which], fs_prec_str(prec),
                   res.max_abs_err, res.tolerance);
    FS_ASSERT_SEED(res.diag == want, seed, "%s (%s, n_q %d, n_kv %d, d %d, mask %s): diagnosed %s, want %s: %s",
                   vname[which], fs_prec_str(prec), n_q, n_kv, d, fs_mask_kind_str(mk), fs_diag_str(res.diag),
                   fs_diag_str(want), res.detail);
    if (which == V_NO_RESCALE || which == V_NO_BETA || which >= V_SLIP_O)
        FS_ASSERT_SEED(res.fit_bk == bk, seed, "%s: block %d found, %d used", vname[which], res.fit_bk, bk);
    if (which >= V_SLIP_O)
        FS_ASSERT_SEED(res.fit_slip == (which == V_SLIP_O ? 1 : 2), seed, "%s: slip %d found", vname[which], res.fit_slip);
    if (which == V_SCALE_D || which == V_SCALE_FIT)
        FS_ASSERT_SEED(fabs(res.fit_scale - b.scale) <= 1e-3 * b.scale, seed, "scale %g found, %g used", res.fit_scale,
                       b.scale);
    if (which == V_SCALE_D) FS_ASSERT_SEED(strstr(res.detail, "1/d") != NULL, seed, "1/d not named: %s", res.detail);
    if (which == V_DIAG_OUT || which == V_FUTURE || which == V_TOP_LEFT)
        FS_ASSERT_SEED(res.fit_offset == b.mask.offset, seed, "offset %d found, %d used", res.fit_offset, b.mask.offset);
    fs_check_result_free(&res);
    free(Kt);
    problem_free(&p);
}

START_TEST(test_variants_f32)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i * 7919u;
    one_variant(_i, FS_PREC_F32, seed);
}
END_TEST

START_TEST(test_variants_f16)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i * 7919u;
    one_variant(_i, FS_PREC_F16, seed);
}
END_TEST

/* A wrong output like none of the variants is `unknown`, with where it sits. */
START_TEST(test_unknown)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    problem p;
    problem_make(&p, &r, FS_PREC_F32, 30, 50, 8, FS_MASK_CAUSAL);
    ck_assert(fs_reference(&p.a, p.O, NULL, NULL) == FS_OK);
    int row = fs_rng_int(&r, 0, 29);
    p.O[(size_t)row * 8 + 3] += 0.25;   /* one element of one row of head 0 */
    fs_check_result res = judge(&p, FS_PREC_F32, NULL);
    FS_ASSERT_SEED(!res.pass && res.diag == FS_DIAG_UNKNOWN && res.rows_over == 1 && res.worst == row &&
                       res.worst_col == 3, seed, "diag %s, rows over %lld, worst %lld col %d: %s",
                   fs_diag_str(res.diag), (long long)res.rows_over, (long long)res.worst, res.worst_col, res.detail);
    FS_ASSERT_SEED(strstr(res.detail, "1 of") != NULL, seed, "detail: %s", res.detail);
    fs_check_result_free(&res);
    problem_free(&p);
}
END_TEST

/* Noise just over the tolerance is a fail, but no known mistake: not a scale a hair off. */
START_TEST(test_noise_is_unknown)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    fs_prec prec = _i % 2 ? FS_PREC_F16 : FS_PREC_F32;
    problem p;
    problem_make(&p, &r, prec, fs_rng_int(&r, 20, 60), fs_rng_int(&r, 20, 80), fs_rng_int(&r, 2, 16),
                 (fs_mask_kind)fs_rng_int(&r, 0, 1));
    ck_assert(fs_reference(&p.a, p.O, NULL, NULL) == FS_OK);
    fs_check_result res = judge(&p, prec, NULL);
    double tol = res.tolerance;
    fs_check_result_free(&res);
    for (size_t i = 0; i < p.no; i++) p.O[i] += (fs_rng_int(&r, 0, 1) ? 1.5 : -1.5) * tol;
    res = judge(&p, prec, NULL);
    FS_ASSERT_SEED(!res.pass && res.diag == FS_DIAG_UNKNOWN, seed, "%s: noise of 1.5 x tolerance diagnosed %s: %s",
                   fs_prec_str(prec), fs_diag_str(res.diag), res.detail);
    fs_check_result_free(&res);
    problem_free(&p);
}
END_TEST

/* More rows than the diagnosis takes whole: it runs on the block of rows around the worst one,
 * which must keep the rows' positions (a sliding window of 8 with the diagonal excluded). */
START_TEST(test_large)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    problem p;
    int n = fs_rng_int(&r, 4100, 4400);
    problem_make(&p, &r, FS_PREC_F32, n, n, 2, FS_MASK_WINDOW);
    p.a.mask.window = 8;
    fs_attn b = p.a;
    b.mask.has_offset = true;
    b.mask.offset = -1;
    ck_assert(fs_reference(&b, p.O, NULL, NULL) == FS_OK);
    fs_check_result res = judge(&p, FS_PREC_F32, NULL);
    FS_ASSERT_SEED(!res.pass && res.diag == FS_DIAG_CAUSAL_SHIFT && res.fit_offset == -1, seed,
                   "%d rows x %d heads, worst %lld: %s (offset %d): %s", n, p.a.n_q_heads, (long long)res.worst,
                   fs_diag_str(res.diag), res.fit_offset, res.detail);
    fs_check_result_free(&res);
    problem_free(&p);
}
END_TEST

/* Inputs beyond the precision's range: the plain float16 run's scores overflow to -inf. That
 * row must not count as one that sees no key (plain O = 0, an error as large as O_ref itself,
 * which let an output of zeros pass); the row has no plain bound and the floor judges it. */
START_TEST(test_plain_overflow)
{
    /* Q (1, 1), K (2, 1), V (2, 2): scores 300 · -300 = -90000, beyond float16's 65504 */
    const double Q[] = {300}, K[] = {-300, -300}, V[] = {1000, -500, 1000, -500};
    fs_attn a = fs_attn_make(1, 2, 1, 2);
    a.Q = Q;
    a.K = K;
    a.V = V;
    a.scale = 1;
    fs_check_opts o = fs_check_opts_default();
    o.prec = FS_PREC_F16;
    fs_check_result res;
    const double zeros[] = {0, 0}, right[] = {1000, -500};
    ck_assert(fs_check_judge(&a, zeros, &o, &res) == FS_OK);
    ck_assert_msg(!res.pass && isinf(res.row_ref_err[0]) && res.reference_err == 0, "O = 0 passed: %s", res.detail);
    ck_assert(res.plain_overflow_rows == 1);
    fs_check_result_free(&res);
    ck_assert(fs_check_judge(&a, right, &o, &res) == FS_OK);
    ck_assert_msg(res.pass, "the right output failed: %s", res.detail);
    fs_check_result_free(&res);
    /* float32 holds these scores: nothing overflows there */
    o.prec = FS_PREC_F32;
    ck_assert(fs_check_judge(&a, right, &o, &res) == FS_OK);
    ck_assert(res.pass && res.plain_overflow_rows == 0 && isfinite(res.row_ref_err[0]));
    fs_check_result_free(&res);
}
END_TEST

/* A finite output so far off that O - O_ref overflows: its error is reported as DBL_MAX, not inf
 * (inf is kept for an O holding inf or NaN); the same for the log-sum-exp. */
START_TEST(test_error_overflow)
{
    const double Q[] = {1}, K[] = {1, 1}, V[] = {-2e307, -2e307};
    fs_attn a = fs_attn_make(1, 2, 1, 1);
    a.Q = Q;
    a.K = K;
    a.V = V;
    const double O[] = {1.7e308}, lse[] = {-1.7e308};
    fs_check_opts o = fs_check_opts_default();
    o.lse = lse;
    o.diagnose = false;
    fs_check_result res;
    ck_assert(fs_check_judge(&a, O, &o, &res) == FS_OK);
    ck_assert_msg(!res.pass && res.max_abs_err == DBL_MAX && res.row_err[0] == DBL_MAX && res.nan_rows == 0,
                  "error %g", res.max_abs_err);
    fs_check_result_free(&res);
    const double lse_far[] = {-DBL_MAX};
    o.lse = lse_far;
    const double Vbig[] = {1, 1};
    a.V = Vbig;
    a.scale = 4e307;   /* m + log l = 4e307 + log 2: -DBL_MAX - that overflows */
    const double Oright[] = {1};
    ck_assert(fs_check_judge(&a, Oright, &o, &res) == FS_OK);
    ck_assert_msg(!res.pass && res.lse_err == DBL_MAX, "lse error %g", res.lse_err);
    fs_check_result_free(&res);
}
END_TEST

/* The lesson that plays a diagnosis (001_18) and the example of docs/check.md tell the truth:
 * its wrong run, and the example's o.txt, are diagnosed no-rescale with blocks of 4 keys. */
START_TEST(test_lesson_and_example)
{
    fs_lesson *l;
    fs_loc_error e;
    ck_assert_msg(fs_lesson_load("lessons/001_18_check_names_no_rescale.lesson", &l, &e), "%s:%d:%d: %s", e.file,
                  e.line, e.col, e.msg);
    const fs_attn *a = &fs_lesson_run(l)->attn;
    const fs_result *wrong = fs_lesson_result(l);
    size_t n = (size_t)a->n_q_heads * a->n_q * a->d_v;
    double *O = malloc(sizeof(double) * n);
    ck_assert(O);
    for (size_t i = 0; i < n; i++) O[i] = fs_prec_round(FS_PREC_F32, wrong->O[i]);
    fs_check_opts o = fs_check_opts_default();
    fs_check_result res;
    ck_assert(fs_check_judge(a, O, &o, &res) == FS_OK);
    ck_assert_msg(!res.pass && res.diag == FS_DIAG_NO_RESCALE && res.fit_bk == 4, "%s: %s", fs_diag_str(res.diag),
                  res.detail);
    ck_assert(fabs(res.max_abs_err - 0.2177) < 5e-5);
    fs_check_result_free(&res);
    /* docs/check-example holds the same problem and the kernel's output, printed in float32 */
    fs_matrix Q, K, V, Oc;
    ck_assert(fs_matrix_read("docs/check-example/q.txt", false, &Q, &e));
    ck_assert(fs_matrix_read("docs/check-example/k.txt", false, &K, &e));
    ck_assert(fs_matrix_read("docs/check-example/v.txt", false, &V, &e));
    ck_assert(fs_matrix_read("docs/check-example/o.txt", false, &Oc, &e));
    ck_assert(Q.rows == a->n_q && K.rows == a->n_kv && Oc.rows == a->n_q && Oc.cols == a->d_v);
    for (int i = 0; i < Q.rows * Q.cols; i++) ck_assert(Q.data[i] == a->Q[i]);
    for (int i = 0; i < K.rows * K.cols; i++) ck_assert(K.data[i] == a->K[i] && V.data[i] == a->V[i]);
    ck_assert(fs_check_judge(a, Oc.data, &o, &res) == FS_OK);
    ck_assert_msg(!res.pass && res.diag == FS_DIAG_NO_RESCALE && res.fit_bk == 4, "%s", res.detail);
    fs_check_result_free(&res);
    fs_matrix_free(&Q);
    fs_matrix_free(&K);
    fs_matrix_free(&V);
    fs_matrix_free(&Oc);
    free(O);
    fs_lesson_free(l);
}
END_TEST


/* Equal as bits (NaN equal to NaN, and 0 ≠ −0). */
static bool same_bits(const double *x, const double *y, size_t n, size_t *at)
{
    for (size_t e = 0; e < n; e++) {
        if (memcmp(&x[e], &y[e], sizeof(double)) && !(isnan(x[e]) && isnan(y[e]))) {
            *at = e;
            return false;
        }
    }
    return true;
}

/* Version 2 of the verdict's passes (rows.c: keys side by side, float32 arithmetic for float16 and
 * bfloat16, threads) against version 1 (fs_check_plain_rows_v1) and the engine's fs_reference,
 * bit for bit, on random problems of every mask kind, with the soft-cap and other scales, the
 * inputs scaled by 2^k so that the formats' subnormal range and overflow are reached. */
START_TEST(test_rows_bit_identical)
{
    uint64_t seed = fs_test_seed() + 7919 * (uint64_t)_i;
    fs_rng r = {seed};
    const fs_test_problem_spec spec = {40, 48, 24, 24, 6, 12, 0.6, false, false, true, true};
    for (int rep = 0; rep < 12; rep++) {
        fs_test_problem tp;
        fs_test_problem_draw(&tp, &r, (rep + _i) % FS_TEST_MASKS, &spec);
        fs_attn *a = &tp.a;
        fs_prec prec = (fs_prec)((rep + 3 * _i) % (FS_PREC_BF16 + 1));   /* the formats version 2 rounds */
        /* the values' size: ordinary, tiny (float16's subnormals), or huge (its overflow) */
        int k = rep % 3 == 0 ? 0 : rep % 3 == 1 ? fs_rng_int(&r, -14, -6) : fs_rng_int(&r, 4, 8);
        size_t nq = (size_t)a->n_q_heads * a->n_q * a->d, nk = (size_t)a->n_kv_heads * a->n_kv * a->d;
        size_t nv = (size_t)a->n_kv_heads * a->n_kv * a->d_v;
        for (size_t e = 0; e < nq; e++) tp.Q[e] = fs_prec_round(prec, ldexp(tp.Q[e], k));
        for (size_t e = 0; e < nk; e++) tp.K[e] = fs_prec_round(prec, ldexp(tp.K[e], k));
        for (size_t e = 0; e < nv; e++) tp.V[e] = fs_prec_round(prec, ldexp(tp.V[e], k / 2));
        int64_t rows = (int64_t)a->n_q_heads * a->n_q;
        size_t no = (size_t)rows * a->d_v;
        double *o1 = malloc(sizeof(double) * no), *o2 = malloc(sizeof(double) * no);
        double *l1 = malloc(sizeof(double) * rows), *l2 = malloc(sizeof(double) * rows);
        double *m1 = malloc(sizeof(double) * rows), *m2 = malloc(sizeof(double) * rows);
        ck_assert(o1 && o2 && l1 && l2 && m1 && m2);
        size_t at = 0;
        /* the plain run, in blocks of rows of random sizes */
        for (int32_t h = 0; h < a->n_q_heads; h++) {
            for (int32_t r0 = 0; r0 < a->n_q;) {
                int32_t r1 = r0 + fs_rng_int(&r, 1, a->n_q);
                if (r1 > a->n_q) r1 = a->n_q;
                size_t row = (size_t)h * a->n_q + r0;
                ck_assert(fs_check_plain_rows_v1(a, prec, h, r0, r1, o1 + row * a->d_v, l1 + row) == FS_OK);
                ck_assert(fs_check_plain_rows(a, prec, h, r0, r1, o2 + row * a->d_v, l2 + row) == FS_OK);
                r0 = r1;
            }
        }
        FS_ASSERT_SEED(same_bits(o1, o2, no, &at), seed, "%s, mask %d, 2^%d: plain O[%zu] %a (v1) vs %a (v2)",
                       fs_prec_str(prec), (rep + _i) % FS_TEST_MASKS, k, at, o1[at], o2[at]);
        FS_ASSERT_SEED(same_bits(l1, l2, (size_t)rows, &at), seed, "%s: plain lse[%zu] %a (v1) vs %a (v2)",
                       fs_prec_str(prec), at, l1[at], l2[at]);
        /* the reference, a head at a time */
        if (fs_attn_check(a) == FS_OK) {
            ck_assert(fs_reference(a, o1, m1, l1) == FS_OK);
            for (int32_t h = 0; h < a->n_q_heads; h++) {
                size_t row = (size_t)h * a->n_q;
                ck_assert(fs_check_reference_rows(a, h, 0, a->n_q, o2 + row * a->d_v, m2 + row, l2 + row) == FS_OK);
            }
            FS_ASSERT_SEED(same_bits(o1, o2, no, &at) && same_bits(m1, m2, (size_t)rows, &at) &&
                               same_bits(l1, l2, (size_t)rows, &at),
                           seed, "reference, mask %d, 2^%d: differs from fs_reference at %zu", (rep + _i) % FS_TEST_MASKS,
                           k, at);
        }
        free(o1), free(o2), free(l1), free(l2), free(m1), free(m2);
        fs_test_problem_free(&tp);
    }
}
END_TEST

/* The verdict does not depend on the number of threads. */
START_TEST(test_threads_same_verdict)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    problem p;
    problem_make(&p, &r, FS_PREC_F16, 300, 310, 8, FS_MASK_CAUSAL);
    ck_assert(fs_reference(&p.a, p.O, NULL, NULL) == FS_OK);
    round_all(FS_PREC_F16, p.O, p.no);
    fs_check_result res[3];
    for (int t = 0; t < 3; t++) {
        fs_check_opts o = fs_check_opts_default();
        o.prec = FS_PREC_F16;
        o.threads = t + 1;
        ck_assert(fs_check_judge(&p.a, p.O, &o, &res[t]) == FS_OK);
    }
    for (int t = 1; t < 3; t++)
        FS_ASSERT_SEED(res[t].pass == res[0].pass && res[t].max_abs_err == res[0].max_abs_err &&
                           res[t].reference_err == res[0].reference_err,
                       seed, "%d threads: err %a, plain %a; 1 thread: %a, %a", t + 1, res[t].max_abs_err,
                       res[t].reference_err, res[0].max_abs_err, res[0].reference_err);
    for (int t = 0; t < 3; t++) fs_check_result_free(&res[t]);
    problem_free(&p);
}
END_TEST

Suite *check_suite(void)
{
    Suite *s = suite_create("check");
    TCase *tc = tcase_create("judge");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_round);
    tcase_add_loop_test(tc, test_rows_bit_identical, 0, 4);
    tcase_add_test(tc, test_threads_same_verdict);
    tcase_add_loop_test(tc, test_correct_passes, 0, 4);
    tcase_add_loop_test(tc, test_variants_f32, 0, V_COUNT);
    tcase_add_loop_test(tc, test_variants_f16, 0, V_COUNT);
    tcase_add_test(tc, test_unknown);
    tcase_add_test(tc, test_lesson_and_example);
    tcase_add_test(tc, test_plain_overflow);
    tcase_add_test(tc, test_error_overflow);
    tcase_add_test(tc, test_large);
    tcase_add_loop_test(tc, test_noise_is_unknown, 0, 6);
    suite_add_tcase(s, tc);
    return s;
}
