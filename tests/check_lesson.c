/* check_lesson.c: the lesson module (src/lesson): verdicts, printed numbers, expressions,
 * parsing and its located errors, the lesson files of documents 000 and 002.
 *
 * The verdict tests include the cases where a claim must NOT hold (one unit off in the last
 * digit, the wrong reading of MB, an unmarked approximation), because a verifier that accepts
 * everything would pass every other test here.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lesson/lesson.h"
#include "engine/reference.h"
#include "test_util.h"

/* ---- printed numbers and rounding ---- */

START_TEST(test_printed_parse)
{
    double v, h;
    ck_assert(fs_printed_parse("0.5580", &v, &h));
    ck_assert_double_eq_tol(v, 0.558, 1e-15);
    ck_assert_double_eq_tol(h, 0.00005, 1e-18);
    ck_assert(fs_printed_parse("2.69e43", &v, &h));
    ck_assert_double_eq_tol(v / 1e43, 2.69, 1e-12);
    ck_assert_double_eq_tol(h / 1e41, 0.5, 1e-12);
    ck_assert(fs_printed_parse("64", &v, &h));
    ck_assert_double_eq(h, 0.5);
    ck_assert(fs_printed_parse("-0.113", &v, &h));
    ck_assert_double_eq_tol(v, -0.113, 1e-15);
    ck_assert(fs_printed_parse("34,359,738,368", &v, &h));
    ck_assert_double_eq(v, 34359738368.0);
    ck_assert(fs_printed_parse("+inf", &v, &h) && isinf(v) && v > 0);
    ck_assert(fs_printed_parse("-inf", &v, &h) && isinf(v) && v < 0);
    ck_assert(fs_printed_parse("nan", &v, &h) && isnan(v));
    ck_assert(!fs_printed_parse("abc", &v, &h));
    ck_assert(!fs_printed_parse("1.2.3", &v, &h));
    ck_assert(!fs_printed_parse("1e", &v, &h));
    ck_assert(!fs_printed_parse("", &v, &h));
    ck_assert(!fs_printed_parse(",5", &v, &h));
}
END_TEST

START_TEST(test_rounds_to)
{
    ck_assert(fs_rounds_to(exp(-3), "0.0498"));
    ck_assert(fs_rounds_to(1.0 / 2.2374, "0.4469"));
    ck_assert(!fs_rounds_to(1.0 / 2.2374, "0.4470"));   /* 000's erratum: one unit too high */
    ck_assert(!fs_rounds_to(0.557920, "0.5580"));
    /* half-way cases hold in both directions */
    ck_assert(fs_rounds_to(0.125, "0.12"));
    ck_assert(fs_rounds_to(0.125, "0.13"));
    ck_assert(!fs_rounds_to(0.1251, "0.12"));
    /* trailing zeros are digits: 1.43598 is 1.4360, not 1.436 at one more digit */
    ck_assert(fs_rounds_to(1.4359821, "1.4360"));
    ck_assert(!fs_rounds_to(1.4359821, "1.43600"));
    ck_assert(fs_rounds_to(INFINITY, "+inf"));
    ck_assert(!fs_rounds_to(3e38, "+inf"));
    ck_assert(fs_rounds_to(NAN, "nan"));
    ck_assert(!fs_rounds_to(0.0, "nan"));
    ck_assert(!fs_rounds_to(NAN, "0"));
}
END_TEST

static fs_verdict judge(const char *printed, fs_unit u, bool approx, double exact, bool chain, double cv,
                        fs_claim_out *o)
{
    fs_claim_in in = {printed, u, approx, 0, exact, chain, cv};
    return fs_claim_judge(&in, o);
}

START_TEST(test_verdicts)
{
    fs_claim_out o;
    /* holds */
    ck_assert_int_eq(judge("0.0498", FS_UNIT_NONE, false, exp(-3), false, 0, &o), FS_VERDICT_HOLDS);
    /* 2^31 bytes read as 2 GB holds in both readings (2.147 rounds to 2) */
    ck_assert_int_eq(judge("2", FS_UNIT_GB, false, 2147483648.0, false, 0, &o), FS_VERDICT_HOLDS);
    /* 64 MB for 4096² floats: binary only */
    ck_assert_int_eq(judge("64", FS_UNIT_MB, false, 4096.0 * 4096 * 4, false, 0, &o), FS_VERDICT_UNITS);
    ck_assert_str_eq(o.reading, "binary");
    ck_assert_double_eq(o.exact, 64);
    /* 262K FLOPs for 262,144: decimal only */
    ck_assert_int_eq(judge("262", FS_UNIT_K, false, 262144, false, 0, &o), FS_VERDICT_UNITS);
    ck_assert_str_eq(o.reading, "decimal");
    /* MiB is never ambiguous: the decimal reading does not rescue it */
    ck_assert_int_eq(judge("67", FS_UNIT_MIB, false, 4096.0 * 4096 * 4, false, 0, &o), FS_VERDICT_ERRATUM);
    /* the chain of rounded intermediates */
    ck_assert_int_eq(judge("1.0001", FS_UNIT_NONE, false, 1.0, true, 0.0347 + 0.6964 + 0.0128 + 0.2562, &o),
                     FS_VERDICT_ROUNDED);
    /* a chain that does not reproduce the number does not help */
    ck_assert_int_eq(judge("1.0001", FS_UNIT_NONE, false, 1.0, true, 1.0, &o), FS_VERDICT_ERRATUM);
    /* approximations: marked and within 5% */
    ck_assert_int_eq(judge("0.32", FS_UNIT_MS, true, 0.3355e-3, false, 0, &o), FS_VERDICT_APPROX);
    /* the same number unmarked is an erratum */
    ck_assert_int_eq(judge("0.32", FS_UNIT_MS, false, 0.3355e-3, false, 0, &o), FS_VERDICT_ERRATUM);
    /* marked but far off */
    ck_assert_int_eq(judge("500", FS_UNIT_X, true, 512 * 1.2, false, 0, &o), FS_VERDICT_ERRATUM);
    /* a stated tolerance */
    fs_claim_in in = {"500", FS_UNIT_X, true, 0.03, 512, false, 0};
    ck_assert_int_eq(fs_claim_judge(&in, &o), FS_VERDICT_APPROX);
    in.tol = 0.01;
    ck_assert_int_eq(fs_claim_judge(&in, &o), FS_VERDICT_ERRATUM);
    /* milliseconds from seconds */
    ck_assert_int_eq(judge("1.3", FS_UNIT_MS, false, 16.0 * 4096 * 4096 / 200e9, false, 0, &o), FS_VERDICT_HOLDS);
    ck_assert_double_eq_tol(o.exact, 1.342177, 1e-6);
    /* overflow */
    ck_assert_int_eq(judge("2.69e43", FS_UNIT_NONE, false, (double)expf(100.0f), false, 0, &o), FS_VERDICT_ERRATUM);
    ck_assert_int_eq(judge("+inf", FS_UNIT_NONE, false, (double)expf(90.0f), false, 0, &o), FS_VERDICT_HOLDS);
    /* unparsable printed value */
    ck_assert_int_eq(judge("x", FS_UNIT_NONE, false, 1, false, 0, &o), FS_VERDICT_ERRATUM);
    ck_assert_str_eq(fs_verdict_str(FS_VERDICT_ROUNDED), "rounded-intermediates");
    fs_verdict v;
    ck_assert(fs_verdict_parse("approximate", &v) && v == FS_VERDICT_APPROX);
    ck_assert(!fs_verdict_parse("maybe", &v));
    fs_unit u;
    ck_assert(fs_unit_parse("FLOP/B", &u) && u == FS_UNIT_FLOP_PER_B);
    ck_assert(!fs_unit_parse("parsec", &u));
    ck_assert(fs_unit_ambiguous(FS_UNIT_KB) && !fs_unit_ambiguous(FS_UNIT_KIB));
}
END_TEST

/* Random exact values: the printed number made by rounding must always hold; one unit more in
 * the last digit must never hold, unless x lies within the judge's relative slack of 1e-12 of
 * the half-way point between the two (where either printed value holds, by the rule). */
START_TEST(test_verdicts_random)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int i = 0; i < 2000; i++) {
        /* up to 10 significant digits: more than any document prints, and far above the
         * relative slack of 1e-12 the judge allows for the recomputation's own rounding */
        double x = fs_rng_uniform(&r, -1000, 1000) * pow(10, fs_rng_int(&r, -6, 2));
        int dec = fs_rng_int(&r, 0, 4);
        char p[64], q[64];
        snprintf(p, sizeof p, "%.*f", dec, x);
        double step = pow(10, -dec), lo = strtod(p, NULL);
        snprintf(q, sizeof q, "%.*f", dec, lo + step);          /* exactly one unit more */
        FS_ASSERT_SEED(fs_rounds_to(x, p), seed, "%.17g should round to %s", x, p);
        bool half_way = fabs(x - (lo + 0.5 * step)) <= 2e-12 * fabs(x);
        FS_ASSERT_SEED(half_way || !fs_rounds_to(x, q), seed, "%.17g should not round to %s", x, q);
    }
}
END_TEST

/* ---- expressions ---- */

static double ev(const char *s)
{
    double v = NAN;
    fs_loc_error e;
    ck_assert_msg(fs_expr_eval(s, strlen(s), "t", 1, 1, &v, &e), "%s: %s", s, e.msg);
    return v;
}

static void ev_fail(const char *s, int col, const char *frag)
{
    double v;
    fs_loc_error e;
    memset(&e, 0, sizeof e);
    ck_assert_msg(!fs_expr_eval(s, strlen(s), "t", 3, 10, &v, &e), "%s should fail", s);
    ck_assert_int_eq(e.line, 3);
    ck_assert_msg(e.col == 10 + col, "%s: col %d, want %d", s, e.col, 10 + col);
    ck_assert_msg(strstr(e.msg, frag), "%s: '%s' lacks '%s'", s, e.msg, frag);
}

START_TEST(test_expr)
{
    ck_assert_double_eq(ev("1 + 2 * 3"), 7);
    ck_assert_double_eq(ev("(1 + 2) * 3"), 9);
    ck_assert_double_eq(ev("2^3^2"), 512);
    ck_assert_double_eq(ev("-2^2"), -4);
    ck_assert_double_eq(ev("4096^2 * 4 / 2^20"), 64);
    ck_assert_double_eq(ev("1e-4 * 1e4"), 1);
    ck_assert_double_eq(ev("min(3, 1, 2) + max(1, 5)"), 6);
    ck_assert_double_eq_tol(ev("exp(-0.3)"), 0.7408182206817179, 1e-15);
    ck_assert(isinf(ev("expf32(90)")));
    ck_assert(isinf(ev("expf32(89)")));
    ck_assert(!isinf(ev("expf32(88)")));
    ck_assert_double_eq(ev("expf32(-104)"), 0);
    ck_assert_double_eq(ev("f32(0.1)"), (double)0.1f);
    ck_assert_double_eq(ev("sp_bytes(4096, 4096, 1, 4)"), 2.0 * 4096 * 4096 * 4);
    ck_assert_double_eq(ev("tile_sram(32, 32, 128, 2, 4)"), 28672);
    ck_assert_double_eq(ev("kv_bytes(4096, 128, 1, 2)"), 2097152);
    ck_assert_double_eq(ev("tiles_computed(16, 4, 4, 1)"), 10);
    ck_assert_double_eq(ev("tiles_computed(16, 4, 4, 0)"), 16);
    /* causal, n = 4096, Bq = Bk = 32, d = 128, FP16: Q and O once, K and V for 128·129/2 tiles */
    ck_assert_double_eq(ev("tiled_traffic(4096, 128, 32, 32, 1, 2)"),
                        2.0 * 4096 * 128 * 2 + 128.0 * 129 / 2 * 32 * 256 * 2);
    ev_fail("tiles_computed(0, 4, 4, 1)", 0, "NaN");
    ev_fail("1 + * 2", 4, "expected a number");
    ev_fail("sine(1)", 0, "unknown function");
    ev_fail("exp(1, 2)", 0, "takes 1 argument");
    ev_fail("(1 + 2", 0, "unclosed");
    ev_fail("1 2", 2, "unexpected character");
    ev_fail("foo", 0, "unknown name");
    ev_fail("0/0", 0, "NaN");
    char deep[400];
    memset(deep, '(', 200);
    deep[200] = '1';
    memset(deep + 201, ')', 199);
    deep[399] = 0;
    double v;
    fs_loc_error e;
    ck_assert(!fs_expr_eval(deep, strlen(deep), "t", 1, 1, &v, &e));
    ck_assert(strstr(e.msg, "nested too deeply"));
}
END_TEST

/* ---- parsing and running ---- */

static fs_lesson *parse_ok(const char *text)
{
    fs_lesson *l = NULL;
    fs_loc_error e;
    bool ok = fs_lesson_parse(text, strlen(text), "mem.lesson", &l, &e);
    ck_assert_msg(ok, "%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
    return l;
}

static void parse_fail(const char *text, int line, int col, const char *frag)
{
    fs_lesson *l = NULL;
    fs_loc_error e;
    ck_assert(!fs_lesson_parse(text, strlen(text), "mem.lesson", &l, &e));
    ck_assert_ptr_null(l);
    ck_assert_str_eq(e.file, "mem.lesson");
    ck_assert_msg(e.line == line && e.col == col, "'%s' at %d:%d, want %d:%d", e.msg, e.line, e.col, line, col);
    ck_assert_msg(strstr(e.msg, frag), "'%s' lacks '%s'", e.msg, frag);
}

#define HEAD "title: t\nsource: 000_a9212bbbb0f7e97c.txt, §x\n"

START_TEST(test_parse_softmax)
{
    fs_lesson *l = parse_ok(HEAD "algo: softmax\nintro: one\n  two\n  .\n  three\nz: 2 5 1 4\n"
                                 "step 1: new max\n  here\n"
                                 "expect step 1 correction = 0.0498\n  claim: c\n"
                                 "expect out[0][1] = 0.6964\n"
                                 "expect expr exp(-3) = 0.0497\n"
                                 "expect step 3 l_new = 1.4361\n  verdict: erratum\n  why: one\n    two\n");
    ck_assert_str_eq(fs_lesson_title(l), "t");
    ck_assert_str_eq(fs_lesson_intro(l), "one two\n\nthree");
    ck_assert_int_eq(fs_lesson_scene(l), FS_SCENE_SOFTMAX);
    ck_assert_int_eq(fs_lesson_trace(l)->n, 5);
    ck_assert_str_eq(fs_lesson_narration(l, 1), "new max here");
    ck_assert_ptr_null(fs_lesson_narration(l, 2));
    ck_assert_int_eq(fs_lesson_check_count(l), 4);
    ck_assert_str_eq(fs_lesson_check(l, 0)->claim, "c");
    ck_assert_int_eq(fs_lesson_check(l, 0)->got.verdict, FS_VERDICT_HOLDS);
    ck_assert(fs_lesson_check(l, 0)->agrees);
    ck_assert_int_eq(fs_lesson_check(l, 1)->got.verdict, FS_VERDICT_HOLDS);
    /* one unit off in the last digit: erratum, and the lesson said holds */
    ck_assert_int_eq(fs_lesson_check(l, 2)->got.verdict, FS_VERDICT_ERRATUM);
    ck_assert(!fs_lesson_check(l, 2)->agrees);
    ck_assert_int_eq(fs_lesson_check(l, 3)->got.verdict, FS_VERDICT_ERRATUM);
    ck_assert(fs_lesson_check(l, 3)->agrees);
    ck_assert_str_eq(fs_lesson_check(l, 3)->why, "one two");
    ck_assert_int_eq(fs_lesson_check_failures(l), 1);
    char buf[512];
    fs_lesson_describe(l, fs_lesson_trace(l), 1, 4, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "exp(2.0000 − 5.0000) = 0.0498"), "%s", buf);
    /* a tiny buffer is truncated, not overrun, and the wanted length is returned */
    size_t want = fs_lesson_describe(l, fs_lesson_trace(l), 1, 4, buf, 8);
    ck_assert_uint_gt(want, 8);
    ck_assert_uint_eq(strlen(buf), 7);
    fs_lesson_free(l);
}
END_TEST

START_TEST(test_parse_tiled_tree_gqa)
{
    fs_lesson *l = parse_ok(HEAD "algo: tiled\nlabels: A B C\ntree: -1 0 0\n"
                                 "Q: random 3x2 seed=1\nK: random 3x2 seed=2\nV: random 3x2 seed=3\n"
                                 "bq: 2\nbk: 2\nform: unnormalized\n"
                                 "expect mask =\n  1 0 0\n  1 1 0\n  1 0 1\n"
                                 "expect mask[2][1] = 0\nexpect count skip reason=tree = 1\n"
                                 "expect maxerr <= 1e-12\n  own: yes\n");
    ck_assert_int_eq(fs_lesson_scene(l), FS_SCENE_TREE);
    int32_t n;
    const int32_t *par = fs_lesson_tree_parent(l, &n);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(par[2], 0);
    ck_assert_str_eq(fs_lesson_label(l, 1), "B");
    ck_assert_ptr_null(fs_lesson_label(l, 3));
    for (int i = 0; i < fs_lesson_check_count(l); i++)
        ck_assert_msg(fs_lesson_check(l, i)->agrees, "check %d", i);
    ck_assert(fs_lesson_check(l, 3)->own);
    fs_lesson_free(l);
    /* a wrong printed mask is an erratum */
    l = parse_ok(HEAD "algo: tiled\ntree: -1 0 0\nQ: random 3x2\nK: random 3x2\nV: random 3x2\n"
                      "expect mask =\n  1 0 0\n  1 1 0\n  1 1 1\n");
    ck_assert_int_eq(fs_lesson_check(l, 0)->got.verdict, FS_VERDICT_ERRATUM);
    fs_lesson_free(l);
    /* GQA: heads stack in the matrices */
    l = parse_ok(HEAD "algo: tiled\nheads: 4 2\nQ: random 8x2\nK: random 6x2\nV: random 6x3\n"
                      "expect kv_head[3] = 1\nexpect out[3][1][2] = 0\n  verdict: erratum\n");
    ck_assert_int_eq(fs_lesson_scene(l), FS_SCENE_GQA);
    ck_assert_int_eq(fs_lesson_run(l)->attn.n_q, 2);
    ck_assert_int_eq(fs_lesson_run(l)->attn.n_kv, 3);
    ck_assert(fs_lesson_check(l, 0)->agrees);
    fs_lesson_free(l);
}
END_TEST

START_TEST(test_parse_pitfall_scores)
{
    /* scores given, V absent: V = identity, so O = P; a pitfall runs beside the correct one */
    fs_lesson *l = parse_ok(HEAD "algo: tiled\nS:\n  0.8 0.3 -0.1 0.5 1.2 -0.4 0.6 0.1\n"
                                 "bq: 1\nbk: 4\npitfall: no-rescale\n"
                                 "expect compare[0][4] = 0.2545\n  own: yes\n"
                                 "expect drift > 0.01\n  own: yes\n");
    ck_assert_int_eq(fs_lesson_scene(l), FS_SCENE_PITFALL);
    ck_assert_ptr_nonnull(fs_lesson_compare_trace(l));
    ck_assert_ptr_nonnull(fs_lesson_compare_result(l));
    double s = 0, w[8] = {0.8, 0.3, -0.1, 0.5, 1.2, -0.4, 0.6, 0.1};
    for (int j = 0; j < 8; j++) s += exp(w[j] - 1.2);
    ck_assert_double_eq_tol(fs_lesson_compare_result(l)->O[4], 1.0 / s, 1e-12);
    ck_assert_msg(fs_lesson_check(l, 0)->agrees, "P[4] = %g", fs_lesson_compare_result(l)->O[4]);
    ck_assert(fs_lesson_check(l, 1)->agrees);
    fs_lesson_free(l);
}
END_TEST

START_TEST(test_parse_fp8)
{
    /* an fp8 lesson: the low-precision run, the float64 tiled run beside it, rmse targets equal
     * what the engine computes directly, and the trace fields of the recipe */
    const char *M = "Q:\n  0.5 -1 0.25 2\n  1.5 0.1 -0.7 0.3\n  -0.2 0.9 0.4 -1.1\n"
                    "K:\n  1 0.5 -0.5 0.2\n  -0.3 0.8 1.2 -0.6\n  0.7 -0.9 0.1 0.4\n"
                    "V:\n  1 2\n  -1 0.5\n  0.25 -2\n";
    char text[1024];
    snprintf(text, sizeof text, HEAD "algo: tiled\nfp8: e4m3 block hadamard seed=5\n%sbq: 2\nbk: 2\n"
                                     "expect rmse > 0\n  own: yes\nexpect rmse e5m2 / f16 > 1\n  own: yes\n"
                                     "expect tile qt=0 kt=1 k_scale > 0\n  own: yes\nexpect row #2 q8[3] > -9\n  own: yes\n", M);
    fs_lesson *l = parse_ok(text);
    ck_assert_int_eq(fs_lesson_scene(l), FS_SCENE_PITFALL);
    const fs_run *r = fs_lesson_run(l);
    ck_assert(r->lowp && r->recipe.hadamard && r->recipe.seed == 5 && r->recipe.scaling == FS_SCALE_BLOCK);
    ck_assert(!fs_lesson_compare_run(l)->lowp);
    double O[6], R[6], O2[6];
    ck_assert(fs_lowp_tiled(&r->attn, 2, 2, &r->recipe, O, NULL, NULL, NULL) == FS_OK);
    ck_assert(fs_reference(&r->attn, R, NULL, NULL) == FS_OK);
    for (int k = 0; k < 6; k++) ck_assert(O[k] == fs_lesson_result(l)->O[k]);   /* the lesson ran the recipe */
    const fs_check *c = fs_lesson_check(l, 0);
    ck_assert(c->got.exact == fs_lowp_rmse(O, R, 6));
    fs_lowp_recipe a = fs_lowp_recipe_default(), b = fs_lowp_recipe_default();
    a.fmt = FS_LOWP_E5M2;
    b.fmt = FS_LOWP_F16;
    b.scaling = FS_SCALE_NONE;
    b.p_scale = 1;
    ck_assert(fs_lowp_tiled(&r->attn, 2, 2, &a, O, NULL, NULL, NULL) == FS_OK);
    ck_assert(fs_lowp_tiled(&r->attn, 2, 2, &b, O2, NULL, NULL, NULL) == FS_OK);
    ck_assert(fs_lesson_check(l, 1)->got.exact == fs_lowp_rmse(O, R, 6) / fs_lowp_rmse(O2, R, 6));
    for (int k = 0; k < fs_lesson_check_count(l); k++) ck_assert_msg(fs_lesson_check(l, k)->agrees, "check %d", k);
    fs_lesson_free(l);
}
END_TEST

START_TEST(test_parse_errors)
{
    parse_fail(HEAD "colour: red\nalgo: none\n", 3, 1, "unknown key 'colour'");
    parse_fail("source: x\nalgo: none\n", 2, 1, "missing 'title:'");
    parse_fail(HEAD "algo: softmax\nz: 1 2 x\n", 4, 8, "not a number");
    parse_fail(HEAD "algo: softmax\nz: 1 2 3\nexpect step 9 alpha = 1\n", 5, 13, "step 9 does not exist");
    parse_fail(HEAD "algo: softmax\nz: 1 2 3\nexpect step 0 gamma = 1\n", 5, 15, "unknown field");
    parse_fail(HEAD "algo: softmax\nz: 1 2 3\nexpect step 0 s[5] = 1\n", 5, 15, "out of range");
    parse_fail(HEAD "algo: softmax\nz: 1 2 3\nexpect out[0][3] = 1\n", 5, 8, "outside");
    parse_fail(HEAD "algo: softmax\nz: 1 2 3\nstep 7: no\n", 5, 6, "step 7 does not exist");
    parse_fail(HEAD "algo: softmax\nz: 1 2 3\nstep 1: a\nstep 1: b\n", 6, 6, "already has narration");
    parse_fail(HEAD "algo: softmax\nz: 1 2 3\nexpect elem #5 alpha = 1\n", 5, 8, "no elem event matches");
    parse_fail(HEAD "algo: softmax\nz: 1 2 3\nexpect tile qt=0 l_new = 1\n", 5, 8, "no tile event");
    parse_fail(HEAD "algo: none\nexpect expr 1 = 1 furlongs\n", 4, 19, "unknown unit");
    parse_fail(HEAD "algo: none\nexpect expr 1 = 1\n  verdict: sure\n", 5, 12, "unknown verdict");
    parse_fail(HEAD "algo: none\nexpect expr 1 = 1\n  flavour: x\n", 5, 3, "unknown attribute");
    parse_fail(HEAD "algo: none\nexpect expr 1 1 = 1\n", 4, 15, "unexpected character");
    parse_fail(HEAD "algo: tiled\nQ:\n  1 0\n  0 1 2\nK: random 2x2\nV: random 2x2\n", 6, 7, "more than 2 numbers");
    parse_fail(HEAD "algo: tiled\nQ: random 2x2\nK: random 2x3\nV: random 2x2\n", 5, 1, "K has 3 columns");
    parse_fail(HEAD "algo: tiled\nQ: random 2x2\nK: random 2x2\nV: random 3x2\n", 6, 1, "V has 3 rows");
    parse_fail(HEAD "algo: tiled\ntree: -1 2 1\nQ: random 3x2\nK: random 3x2\nV: random 3x2\n", 4, 7, "not a tree");
    parse_fail(HEAD "algo: tiled\nQ: random 2x2\nK: random 2x2\nV: random 2x2\nbq: 0\n", 7, 5, "out of range");
    parse_fail(HEAD "algo: tiled\nQ: random 2x2\nK: random 2x2\nV: random 2x2\nmask: sideways\n", 7, 7, "unknown mask");
    parse_fail(HEAD "algo: tiled\nQ: random 2x2\nK: random 2x2\n", 3, 1, "needs 'V:'");
    parse_fail(HEAD "algo: none\nexpect mask =\n  1 0\n", 4, 8, "mask needs an attention problem");
    /* found by the fuzzer: too few indices must be refused before any index is read */
    parse_fail(HEAD "algo: tiled\nQ: random 2x2\nK: random 2x2\nV: random 2x2\nexpect score[1] = 0\n", 7, 8,
               "score needs [i][j]");
    parse_fail(HEAD "algo: tiled\nQ: random 2x2\nK: random 2x2\nV: random 2x2\nexpect m[0][0][0] = 0\n", 7, 8,
               "m needs [row]");
    parse_fail(HEAD HEAD "algo: none\n", 3, 1, "'title' given twice");
    parse_fail(HEAD "algo: none\nexpect expr 1 = 1\n   \n  claim: x\nz: 1\n", 7, 1, "'z:' is not used with algo: none");
    /* quiz: names the fresh questions of a lesson about claims; a lesson that runs names one only
     * when it has claims (else it is quizzed on its run) */
    parse_fail(HEAD "algo: none\nquiz: pagez\n", 4, 7,
               "unknown quiz 'pagez' (memory, pages, e4m3, ring, stability, kernel, roofline, io)");
    /* pages: and table: (a decode through a paged cache) */
#define DEC HEAD "algo: decode\nQ: random 1x2\nK: random 5x2\nV: random 5x2\n"
    parse_fail(DEC "table: 1 0\n", 7, 1, "'table:' needs 'pages:'");
    parse_fail(DEC "pages: 2\ntable: 1 0\n", 8, 1, "the table has 2 entries but the sequence has 3 blocks");
    parse_fail(DEC "pages: 2\ntable: 1 0 1\n", 8, 1, "entries 0 and 2 both name page 1");
    parse_fail(DEC "pages: 2\ntable: 1 0 -1\n", 8, 1, "entry 2: page -1 is out of range");
    parse_fail(DEC "pages: 0\n", 7, 8, "out of range");
    parse_fail(HEAD "algo: tiled\nQ: random 2x2\nK: random 2x2\nV: random 2x2\npages: 2\n", 7, 1, "'pages:'");
#undef DEC
    parse_fail(HEAD "algo: softmax\nz: 1 2\nquiz: pages\n", 5, 1, "'quiz:' on a lesson that runs names the kind of its claims");
}
END_TEST

/* Random problems written as lessons: the loader, the engine and the verdicts agree with the
 * reference on fresh inputs every run. */
START_TEST(test_random_lessons)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int it = 0; it < 30; it++) {
        int nq = fs_rng_int(&r, 1, 7), nkv = fs_rng_int(&r, 1, 7), d = fs_rng_int(&r, 1, 3);
        char text[4096];
        int w = snprintf(text, sizeof text, HEAD "algo: %s\nbk: %d\n%s%s", fs_rng_int(&r, 0, 1) ? "tiled" : "decode",
                         fs_rng_int(&r, 1, 4), fs_rng_int(&r, 0, 1) ? "mask: causal\n" : "",
                         fs_rng_int(&r, 0, 1) ? "form: unnormalized\n" : "");
        const char *names[3] = {"Q", "K", "V"};
        int rows[3] = {nq, nkv, nkv};
        for (int m = 0; m < 3; m++) {
            w += snprintf(text + w, sizeof text - (size_t)w, "%s:\n", names[m]);
            for (int i = 0; i < rows[m]; i++) {
                w += snprintf(text + w, sizeof text - (size_t)w, " ");
                for (int c = 0; c < d; c++)
                    w += snprintf(text + w, sizeof text - (size_t)w, " %.6f", fs_rng_uniform(&r, -2, 2));
                w += snprintf(text + w, sizeof text - (size_t)w, "\n");
            }
        }
        snprintf(text + w, sizeof text - (size_t)w, "expect maxerr <= 1e-12\nexpect count out = %d\n", nq);
        fs_lesson *l = NULL;
        fs_loc_error e;
        FS_ASSERT_SEED(fs_lesson_parse(text, strlen(text), "rand.lesson", &l, &e), seed, "rand.lesson:%d:%d: %.200s",
                       e.line, e.col, e.msg);
        FS_ASSERT_SEED(fs_lesson_check_failures(l) == 0, seed, "a check failed on %.300s", text);
        fs_lesson_free(l);
    }
}
END_TEST

/* The lesson files of 000 and 002 and the malformed fixtures (run from the repository root). */
/* Words that were false on screen: on a ring every backward tile claimed "final so far: dQ rows
 * 2-7" from its first tile on (rows the device's own numbering never reaches counted as
 * finished); the homeward hop said the next device "works on" a shard it only receives; and a row
 * that sees no key showed P = exp(S − (-inf)) over scores of -inf, the form the guard never takes. */
START_TEST(test_words_that_were_false)
{
    fs_lesson *l;
    fs_loc_error e;
    char buf[4096];
    ck_assert_msg(fs_lesson_load("lessons/ring_05_backward.lesson", &l, &e), "%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
    const fs_trace *t = fs_lesson_trace(l);
    int btiles = 0, homes = 0;
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *ev = &t->ev[k];
        if (ev->kind == FS_EV_BTILE && ev->device >= 0) {
            fs_lesson_describe(l, t, k, 4, buf, sizeof buf);
            ck_assert_msg(!strstr(buf, "final so far"), "step %lld: %s", (long long)k, buf);
            btiles++;
        }
        if (ev->kind == FS_EV_BKEY && ev->device >= 0) {   /* a shard's key named by its position, as a query is */
            char want[64];
            snprintf(want, sizeof want, "the key at position %d", ev->pos);
            fs_lesson_generate(l, t, k, buf, sizeof buf);
            ck_assert_msg(strstr(buf, want), "step %lld: %s", (long long)k, buf);
        }
        if (ev->kind == FS_EV_SEND && ev->tensor == 2) {
            fs_lesson_generate(l, t, k, buf, sizeof buf);
            ck_assert_msg(strstr(buf, "owner") && !strstr(buf, "works on it next"), "step %lld: %s", (long long)k, buf);
            homes++;
        }
    }
    ck_assert_int_gt(btiles, 0);
    ck_assert_int_gt(homes, 0);
    /* a dQ row whose shares cancel (query 2's: 0.1111 and -0.1111) is said to be zero but for
     * rounding, not left as a bare 2.776e-17; a row with a real value is not */
    int cancels = 0;
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *ev = &t->ev[k];
        if (ev->kind != FS_EV_GRAD || ev->tensor != FS_GRAD_DQ) continue;
        const double *v = fs_trace_at(t, ev->o_new);
        bool tiny = v && v[0] != 0 && fabs(v[0]) < 1e-12;
        fs_lesson_generate(l, t, k, buf, sizeof buf);
        ck_assert_msg(!tiny == !strstr(buf, "zero but for rounding"), "step %lld: %s", (long long)k, buf);
        cancels += tiny;
    }
    ck_assert_int_gt(cancels, 0);
    fs_lesson_free(l);
    ck_assert_msg(fs_lesson_load("lessons/001_17_backward_masked_row.lesson", &l, &e), "%s:%d:%d: %s", e.file, e.line, e.col,
                  e.msg);
    t = fs_lesson_trace(l);
    int blind = 0;
    for (int64_t k = 0; k < t->n; k++) {
        const fs_event *ev = &t->ev[k];
        if (ev->kind != FS_EV_BROW || ev->x != -INFINITY) continue;
        fs_lesson_describe(l, t, k, 4, buf, sizeof buf);
        ck_assert_msg(!strstr(buf, "exp(S") && strstr(buf, "P = [0.0000"), "step %lld: %s", (long long)k, buf);
        blind++;
    }
    ck_assert_int_gt(blind, 0);
    /* a backward tile off the ring still lists its finished rows, and none before any row's last tile */
    for (int64_t k = 0; k < t->n; k++)
        if (t->ev[k].kind == FS_EV_BTILE) {
            fs_lesson_describe(l, t, k, 4, buf, sizeof buf);
            ck_assert_msg(strstr(buf, "final so far: dQ rows none"), "step %lld: %s", (long long)k, buf);
            break;
        }
    fs_lesson_free(l);
}
END_TEST

START_TEST(test_lesson_files)
{
    char **paths;
    int n;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    ck_assert_int_ge(n, 12);
    ck_assert_msg(strstr(paths[0], "000_00_four_numbers"), "first lesson is %s", paths[0]);
    for (int i = 1; i < n; i++) ck_assert(strcmp(paths[i - 1], paths[i]) < 0);
    int ours = 0;
    for (int i = 0; i < n; i++) {
        const char *base = strrchr(paths[i], '/') + 1;
        if (strncmp(base, "000_", 4) && strncmp(base, "002_", 4)) continue;
        ours++;
        fs_lesson *l;
        fs_loc_error e;
        ck_assert_msg(fs_lesson_load(paths[i], &l, &e), "%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
        ck_assert_msg(fs_lesson_check_failures(l) == 0, "%s: %d checks disagree", paths[i], fs_lesson_check_failures(l));
        ck_assert(strstr(fs_lesson_source(l), base[2] == '0' ? "000_a9212bbbb0f7e97c.txt, §" : "002_41e4155167b0c491.txt, §"));
        fs_lesson_free(l);
    }
    ck_assert_int_ge(ours, 12);
    char buf[4096];
    ck_assert(fs_lesson_resolve("000_04", "lessons", buf, sizeof buf));
    ck_assert(strstr(buf, "000_04_tiled_causal_n6.lesson"));
    ck_assert(fs_lesson_resolve("000_04_tiled_causal_n6", "lessons", buf, sizeof buf));
    ck_assert(!fs_lesson_resolve("000_", "lessons", buf, sizeof buf));   /* ambiguous */
    ck_assert(strstr(buf, "matches"));
    ck_assert(!fs_lesson_resolve("no_such_lesson", "lessons", buf, sizeof buf));
    fs_lesson_list_free(paths, n);

    /* every fixture either fails to load at the place it names or loads and says so */
    ck_assert_int_eq(fs_lesson_list("tests/lessons", &paths, &n), 0);
    ck_assert_int_ge(n, 20);
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(paths[i], "r");
        ck_assert_ptr_nonnull(f);
        char head[256] = "";
        ck_assert_ptr_nonnull(fgets(head, sizeof head, f));
        fclose(f);
        fs_lesson *l = NULL;
        fs_loc_error e;
        bool ok = fs_lesson_load(paths[i], &l, &e);
        int line, col;
        if (sscanf(head, "# expect-error: %d:%d:", &line, &col) == 2) {
            ck_assert_msg(!ok, "%s loaded", paths[i]);
            ck_assert_msg(e.line == line && e.col == col, "%s: error at %d:%d (%s), want %d:%d", paths[i], e.line,
                          e.col, e.msg, line, col);
        } else {
            int rc;
            ck_assert_msg(sscanf(head, "# expect-exit: %d", &rc) == 1, "%s: no header", paths[i]);
            ck_assert_msg(ok, "%s: %s", paths[i], e.msg);
            ck_assert_int_eq(fs_lesson_check_failures(l) > 0, rc == 1);
            fs_lesson_free(l);
        }
    }
    fs_lesson_list_free(paths, n);
}
END_TEST

/* The complete example of docs/lesson-format.md is a valid lesson whose verdicts all agree. */
START_TEST(test_doc_example)
{
    FILE *f = fopen("docs/lesson-format.md", "rb");
    ck_assert_ptr_nonnull(f);
    static char doc[1 << 16];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = 0;
    char *a = strstr(doc, "## A complete example");
    ck_assert_ptr_nonnull(a);
    a = strstr(a, "```\n");
    ck_assert_ptr_nonnull(a);
    a += 4;
    char *b = strstr(a, "```");
    ck_assert_ptr_nonnull(b);
    fs_lesson *l = NULL;
    fs_loc_error e;
    ck_assert_msg(fs_lesson_parse(a, (size_t)(b - a), "docs/lesson-format.md", &l, &e), "%d:%d: %s", e.line, e.col,
                  e.msg);
    ck_assert_int_eq(fs_lesson_check_count(l), 7);
    ck_assert_int_eq(fs_lesson_check_failures(l), 0);
    ck_assert_int_eq(fs_lesson_check(l, 3)->got.verdict, FS_VERDICT_ROUNDED);
    ck_assert_int_eq(fs_lesson_check(l, 4)->got.verdict, FS_VERDICT_UNITS);
    ck_assert_int_eq(fs_lesson_check(l, 5)->got.verdict, FS_VERDICT_ERRATUM);
    ck_assert_ptr_nonnull(fs_lesson_narration(l, 1));
    fs_lesson_free(l);
}
END_TEST

/* The documents by their titles; the course: every lesson of lessons/ exactly once, in sections,
 * starting from online softmax; malformed course files refused at their line and column. */
START_TEST(test_course)
{
    ck_assert_str_eq(fs_document_title("000_a9212bbbb0f7e97c.txt, §A Complete Numerical Example with Tiling"),
                     "FlashAttention: Theory and Practice");
    ck_assert_ptr_null(fs_document_title("your own inputs"));
    char w[256];
    fs_source_words("004_80094ccf861f664e.txt, §Softmax", w, sizeof w);
    ck_assert_str_eq(w, "FlashAttention & Memory Efficiency, §Softmax");
    fs_source_words("a saved trace", w, sizeof w);
    ck_assert_str_eq(w, "a saved trace");
    fs_source_words("none, §Ring attention", w, sizeof w);
    ck_assert_str_eq(w, "beyond the five documents, §Ring attention");
    fs_source_words("nonesuch.txt", w, sizeof w);
    ck_assert_str_eq(w, "nonesuch.txt");

    fs_course c;
    fs_loc_error e;
    ck_assert_msg(fs_course_load("lessons", &c, &e), "%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
    char **paths;
    int n;
    ck_assert_int_eq(fs_lesson_list("lessons", &paths, &n), 0);
    ck_assert_msg(c.n == n, "the course has %d lessons, lessons/ %d", c.n, n);
    for (int i = 0; i < n; i++) {
        char stem[256];
        const char *base = strrchr(paths[i], '/') + 1;
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(base) - strlen(".lesson")), base);
        ck_assert_msg(fs_course_find(&c, stem) >= 0, "%s is not in lessons/course.txt", stem);
    }
    fs_lesson_list_free(paths, n);
    ck_assert_int_ge(c.n_sections, 8);
    ck_assert(strstr(c.sections[0], "oftmax"));
    for (int i = 1; i < c.n; i++) ck_assert_int_ge(c.section_of[i], c.section_of[i - 1]);
    /* the forward before decoding, decoding before the backward, the backward before FP8 */
    ck_assert_int_lt(fs_course_find(&c, "000_04_tiled_causal_n6"), fs_course_find(&c, "000_05_flashdecoding_merge"));
    ck_assert_int_lt(fs_course_find(&c, "000_05_flashdecoding_merge"), fs_course_find(&c, "000_11_backward_n6"));
    ck_assert_int_lt(fs_course_find(&c, "000_11_backward_n6"), fs_course_find(&c, "004_09_fp8_e4m3"));
    fs_course_free(&c);

    /* malformed courses, in a directory of their own with one lesson */
    char dir[] = "/tmp/fs_course_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char lp[512], cp[512];
    snprintf(lp, sizeof lp, "%s/a_lesson.lesson", dir);
    snprintf(cp, sizeof cp, "%s/course.txt", dir);
    FILE *f = fopen(lp, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    static const struct { const char *text; int line, col; const char *says; } bad[] = {
        {"a_lesson\n", 1, 1, "before the first section"},
        {"## One\na_lesson\na_lesson\n", 3, 1, "twice"},
        {"## One\n  no_such\n", 2, 3, "no lesson no_such.lesson"},
        {"## One\na_les\x1bson\n", 2, 6, "0x1b"},
        {"##\n", 1, 3, "needs a title"},
        {"# nothing\n## One\n", 2, 0, "names no lesson"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = fopen(cp, "w");
        ck_assert_ptr_nonnull(f);
        fputs(bad[i].text, f);
        fclose(f);
        ck_assert_msg(!fs_course_load(dir, &c, &e), "course %zu loaded", i);
        ck_assert_msg(e.line == bad[i].line && e.col == bad[i].col && strstr(e.msg, bad[i].says) && strstr(e.file, "course.txt"),
                      "course %zu: %s:%d:%d: %s", i, e.file, e.line, e.col, e.msg);
    }
    f = fopen(cp, "w");
    ck_assert_ptr_nonnull(f);
    fputs("# a comment\n## One\n\na_lesson\n", f);
    fclose(f);
    ck_assert_msg(fs_course_load(dir, &c, &e), "%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
    ck_assert_int_eq(c.n, 1);
    ck_assert_str_eq(c.sections[0], "One");
    fs_course_free(&c);
    remove(cp);
    ck_assert_int_eq(fs_course_load(dir, &c, &e), false);
    remove(lp);
    rmdir(dir);
}
END_TEST

Suite *lesson_suite(void)
{
    Suite *s = suite_create("lesson");
    TCase *tc = tcase_create("verdicts");
    tcase_add_test(tc, test_printed_parse);
    tcase_add_test(tc, test_rounds_to);
    tcase_add_test(tc, test_verdicts);
    tcase_add_test(tc, test_verdicts_random);
    tcase_add_test(tc, test_expr);
    suite_add_tcase(s, tc);
    tc = tcase_create("lessons");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_parse_softmax);
    tcase_add_test(tc, test_parse_tiled_tree_gqa);
    tcase_add_test(tc, test_parse_pitfall_scores);
    tcase_add_test(tc, test_parse_fp8);
    tcase_add_test(tc, test_parse_errors);
    tcase_add_test(tc, test_random_lessons);
    tcase_add_test(tc, test_lesson_files);
    tcase_add_test(tc, test_words_that_were_false);
    tcase_add_test(tc, test_doc_example);
    tcase_add_test(tc, test_course);
    suite_add_tcase(s, tc);
    return s;
}
