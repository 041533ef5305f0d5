/* check_range.c: finite inputs never give NaN or ±∞ in an output.
 *
 * Inputs are drawn with magnitudes spread over the whole float64 range (10^-300 … 10^308) and
 * scales up to 10^300, fresh each run (seed printed on failure). For each problem, either the
 * engine refuses it before running (FS_ERR_RANGE, with the score or V entry it names really out
 * of range) or every algorithm (reference, one query, tiled in both forms, both orders, with and
 * without exp2, decode with both merges, online softmax, the backward) returns only finite outputs: every O,
 * every ℓ, and m for every row that sees a key. 001's pitfall variants are left out: the
 * masked-nan one exists to show a NaN.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/run.h"
#include "test_util.h"

/* A magnitude spread log-uniformly over 10^lo … 10^hi, with a random sign. */
static double wide(fs_rng *r, double lo, double hi)
{
    double x = pow(10.0, fs_rng_uniform(r, lo, hi));
    if (!isfinite(x)) x = DBL_MAX;
    return fs_rng_int(r, 0, 1) ? x : -x;
}

static bool row_sees_a_key(const fs_attn *a, int32_t i)
{
    for (int32_t j = 0; j < a->n_kv; j++)
        if (fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j)) return true;
    return false;
}

/* Every output finite; returns a description of the first that is not, or NULL. */
static const char *outputs_finite(const fs_attn *a, const fs_result *res, char *buf, size_t n)
{
    for (int32_t h = 0; h < res->n_heads; h++)
        for (int32_t i = 0; i < res->n_rows; i++) {
            size_t row = (size_t)h * res->n_rows + i;
            for (int32_t c = 0; c < res->n_cols; c++)
                if (!isfinite(res->O[row * res->n_cols + c])) {
                    snprintf(buf, n, "O[%d][%d][%d] = %g", h, i, c, res->O[row * res->n_cols + c]);
                    return buf;
                }
            if (res->l && !isfinite(res->l[row])) {
                snprintf(buf, n, "l[%d][%d] = %g", h, i, res->l[row]);
                return buf;
            }
            if (res->m && row_sees_a_key(a, i) && !isfinite(res->m[row])) {
                snprintf(buf, n, "m[%d][%d] = %g", h, i, res->m[row]);
                return buf;
            }
        }
    return NULL;
}

START_TEST(test_finite_inputs_finite_outputs)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    int n_q = fs_rng_int(&r, 1, 6), n_kv = fs_rng_int(&r, 1, 7), d = fs_rng_int(&r, 1, 4);
    int dv = fs_rng_int(&r, 1, 3);
    double *Q = malloc(sizeof(double) * n_q * d), *K = malloc(sizeof(double) * n_kv * d);
    double *V = malloc(sizeof(double) * n_kv * dv);
    /* Each matrix gets its own top magnitude, so some problems are ordinary, some extreme. */
    double top_q = fs_rng_uniform(&r, 0, 308), top_k = fs_rng_uniform(&r, 0, 308);
    double top_v = fs_rng_uniform(&r, 0, 308);
    for (int x = 0; x < n_q * d; x++) Q[x] = wide(&r, -300, top_q);
    for (int x = 0; x < n_kv * d; x++) K[x] = wide(&r, -300, top_k);
    for (int x = 0; x < n_kv * dv; x++) V[x] = wide(&r, -300, top_v);

    fs_attn a = fs_attn_make(n_q, n_kv, d, dv);
    a.Q = Q;
    a.K = K;
    a.V = V;
    if (fs_rng_int(&r, 0, 2) == 0) a.scale = pow(10.0, fs_rng_uniform(&r, -300, 300));
    if (fs_rng_int(&r, 0, 3) == 0) a.softcap = fs_rng_uniform(&r, 0.5, 50);
    if (fs_rng_int(&r, 0, 1)) a.mask.kind = FS_MASK_CAUSAL;

    fs_range_issue w;
    fs_status st = fs_attn_check_range(&a, &w);
    if (st == FS_ERR_RANGE) {
        /* A refusal must name something that is really out of range. */
        if (w.in_v)
            FS_ASSERT_SEED(fabs(V[((size_t)w.row) * dv + w.col]) * n_kv > FS_VALUE_LIMIT, seed,
                           "refused V[%d][%d] which is in range", w.row, w.col);
        else
            FS_ASSERT_SEED(!(fabsl(w.value) <= FS_SCORE_LIMIT) && (a.softcap == 0 || isnan(w.value)), seed,
                           "refused score (%d,%d) = %Lg in range",
                           w.row, w.col, w.value);
        fs_result res;
        fs_run run = fs_run_make(FS_ALGO_TILED);
        run.attn = a;
        FS_ASSERT_SEED(fs_run_exec(&run, &res, NULL) == FS_ERR_RANGE, seed, "tiled ran a refused problem");
        fs_result_free(&res);
    } else {
        FS_ASSERT_SEED(st == FS_OK, seed, "status %d", st);
        for (int v = 0; v < 12; v++) {
            fs_run run;
            switch (v) {
            case 0: run = fs_run_make(FS_ALGO_REFERENCE); break;
            case 1: run = fs_run_make(FS_ALGO_QUERY); break;
            case 2: run = fs_run_make(FS_ALGO_QUERY); run.tiling.exp2 = true; break;
            case 3: case 4: case 5: case 6: case 7: case 8: case 9:
                run = fs_run_make(FS_ALGO_TILED);
                run.tiling.Bq = fs_rng_int(&r, 1, 3);
                run.tiling.Bk = fs_rng_int(&r, 1, 3);
                run.tiling.form = (v & 1) ? FS_FORM_UNNORMALIZED : FS_FORM_NORMALIZED;
                run.tiling.order = (v & 2) ? FS_ORDER_KV_OUTER : FS_ORDER_Q_OUTER;
                run.tiling.exp2 = v >= 7;
                break;
            default:
                run = fs_run_make(FS_ALGO_DECODE);
                run.decoding.Bk = fs_rng_int(&r, 1, 3);
                run.decoding.merge = v == 10 ? FS_MERGE_SEQUENTIAL : FS_MERGE_TREE;
                run.decoding.form = fs_rng_int(&r, 0, 1) ? FS_FORM_UNNORMALIZED : FS_FORM_NORMALIZED;
                break;
            }
            run.attn = a;
            fs_result res;
            fs_trace tr = {0};
            tr.max_events = 100000;
            st = fs_run_exec(&run, &res, &tr);
            FS_ASSERT_SEED(st == FS_OK, seed, "variant %d: status %d", v, st);
            char buf[128];
            const char *bad = outputs_finite(&a, &res, buf, sizeof buf);
            FS_ASSERT_SEED(!bad, seed, "variant %d (%s): %s (top magnitudes 1e%.0f 1e%.0f 1e%.0f, scale %g)",
                           v, fs_algo_str(run.algo), bad ? bad : "", top_q, top_k, top_v, a.scale);
            fs_result_free(&res);
            fs_trace_free(&tr);
        }
    }
    free(Q);
    free(K);
    free(V);
}
END_TEST

/* The two cases that used to print "nan": entries of 1e308, and --scale 1e300 on a score of 10. */
START_TEST(test_refusals_name_the_score)
{
    double q[2] = {1e308, 1}, k[2] = {1, 1e308}, v[1] = {1};
    fs_attn a = fs_attn_make(1, 1, 2, 1);
    a.Q = q;
    a.K = k;
    a.V = v;
    fs_range_issue w;
    ck_assert_int_eq(fs_attn_check(&a), FS_ERR_RANGE);
    ck_assert_int_eq(fs_attn_check_range(&a, &w), FS_ERR_RANGE);
    ck_assert(!w.in_v && w.row == 0 && w.col == 0);
    ck_assert(fabsl(w.value - 2e308L / sqrtl(2)) < 1e300L); /* beyond double, held in long double */
    char buf[320];
    fs_attn_status_detail(&a, FS_ERR_RANGE, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "query row 0 and key 0") && strstr(buf, "e+308"), "%s", buf);

    double q2[1] = {10}, k2[2] = {1, 2}, v2[2] = {1, 2};
    fs_attn b = fs_attn_make(1, 2, 1, 1);
    b.Q = q2;
    b.K = k2;
    b.V = v2;
    b.scale = 1e300;
    ck_assert_int_eq(fs_attn_check(&b), FS_OK);         /* 2e301 is still safe */
    b.scale = 3e306;
    ck_assert_int_eq(fs_attn_check_range(&b, &w), FS_ERR_RANGE);
    ck_assert(w.col == 1);                              /* 10 · 2 · 3e306 = 6e307: the second key */
    ck_assert_int_eq(fs_attn_check_range(&b, NULL), FS_ERR_RANGE);

    /* Values whose running sum would overflow: 1e308 over two keys. */
    double v3[2] = {1e308, 1e308};
    b.scale = 1;
    b.V = v3;
    ck_assert_int_eq(fs_attn_check_range(&b, &w), FS_ERR_RANGE);
    ck_assert(w.in_v && w.row == 0);
}
END_TEST

/* Online softmax of a vector: any finite z gives finite p, m and ℓ (no limit is needed there:
 * z − m is ≤ 0, and −∞ after overflow only makes exp 0). */
START_TEST(test_softmax_wide_values)
{
    uint64_t seed = fs_test_seed() + 77u * (uint64_t)_i;
    fs_rng r = {seed};
    int n = fs_rng_int(&r, 1, 9);
    double z[9];
    for (int i = 0; i < n; i++) z[i] = fs_rng_int(&r, 0, 4) ? wide(&r, -300, 308.25) : -INFINITY;
    z[fs_rng_int(&r, 0, n - 1)] = wide(&r, -300, 308.25);
    fs_run run = fs_run_make(FS_ALGO_SOFTMAX);
    run.z = z;
    run.n_z = n;
    run.chunk = fs_rng_int(&r, 1, 4);
    fs_result res;
    FS_ASSERT_SEED(fs_run_exec(&run, &res, NULL) == FS_OK, seed, "softmax refused");
    double sum = 0;
    for (int i = 0; i < n; i++) {
        FS_ASSERT_SEED(isfinite(res.O[i]) && res.O[i] >= 0, seed, "p[%d] = %g", i, res.O[i]);
        sum += res.O[i];
    }
    FS_ASSERT_SEED(isfinite(res.m[0]) && isfinite(res.l[0]), seed, "m %g l %g", res.m[0], res.l[0]);
    FS_ASSERT_SEED(fabs(sum - 1) < 1e-12, seed, "sum of p = %.17g", sum);
    fs_result_free(&res);
}
END_TEST

/* The backward by recomputation: either refused (a gradient bound passes float64) or every
 * gradient, D and L finite where the row sees a key. dO is drawn over the whole range too. */
START_TEST(test_backward_finite)
{
    uint64_t seed = fs_test_seed() + 131u * (uint64_t)_i;
    fs_rng r = {seed};
    int n_q = fs_rng_int(&r, 1, 5), n_kv = fs_rng_int(&r, 1, 6), d = fs_rng_int(&r, 1, 3), dv = fs_rng_int(&r, 1, 3);
    double Q[15], K[18], V[18], dO[15];
    double tq = fs_rng_uniform(&r, 0, 160), tk = fs_rng_uniform(&r, 0, 160), tv = fs_rng_uniform(&r, 0, 308);
    double tdo = fs_rng_uniform(&r, 0, 308);
    for (int x = 0; x < n_q * d; x++) Q[x] = wide(&r, -300, tq);
    for (int x = 0; x < n_kv * d; x++) K[x] = wide(&r, -300, tk);
    for (int x = 0; x < n_kv * dv; x++) V[x] = wide(&r, -300, tv);
    for (int x = 0; x < n_q * dv; x++) dO[x] = wide(&r, -300, tdo);
    fs_run run = fs_run_make(FS_ALGO_BACKWARD);
    run.attn = fs_attn_make(n_q, n_kv, d, dv);
    run.attn.Q = Q;
    run.attn.K = K;
    run.attn.V = V;
    if (fs_rng_int(&r, 0, 1)) run.attn.mask.kind = FS_MASK_CAUSAL;
    run.tiling.Bq = fs_rng_int(&r, 1, 3);
    run.tiling.Bk = fs_rng_int(&r, 1, 3);
    run.tiling.order = fs_rng_int(&r, 0, 1) ? FS_ORDER_KV_OUTER : FS_ORDER_Q_OUTER;
    run.dO = fs_rng_int(&r, 0, 4) ? dO : NULL;
    fs_result res;
    fs_status st = fs_run_exec(&run, &res, NULL);
    if (st == FS_ERR_RANGE) {
        char why[400];
        fs_run_status_detail(&run, st, why, sizeof why);
        FS_ASSERT_SEED(strstr(why, "beyond"), seed, "refusal without a reason: %s", why);
        return;
    }
    FS_ASSERT_SEED(st == FS_OK, seed, "status %d", st);
    const double *t[3] = {res.dQ, res.dK, res.dV};
    long n[3] = {(long)n_q * d, (long)n_kv * d, (long)n_kv * dv};
    for (int k = 0; k < 3; k++)
        for (long x = 0; x < n[k]; x++)
            FS_ASSERT_SEED(isfinite(t[k][x]), seed, "%s[%ld] = %g (tops 1e%.0f 1e%.0f 1e%.0f 1e%.0f)",
                           k == 0 ? "dQ" : k == 1 ? "dK" : "dV", x, t[k][x], tq, tk, tv, tdo);
    for (int i = 0; i < n_q; i++) FS_ASSERT_SEED(isfinite(res.D[i]), seed, "D[%d] = %g", i, res.D[i]);
    fs_result_free(&res);
}
END_TEST

Suite *range_suite(void)
{
    Suite *s = suite_create("range");
    TCase *tc = tcase_create("range");
    tcase_add_loop_test(tc, test_finite_inputs_finite_outputs, 0, 400);
    tcase_add_test(tc, test_refusals_name_the_score);
    tcase_add_loop_test(tc, test_softmax_wide_values, 0, 100);
    tcase_add_loop_test(tc, test_backward_finite, 0, 300);
    suite_add_tcase(s, tc);
    return s;
}
