/* check_fp8.c: the 8-bit formats e4m3 and e5m2 (src/engine/fp8.h): every one of the 256 codes of
 * each, the standard's landmarks (largest finite, smallest subnormal, the NaN and infinity codes),
 * ties to even, saturation; and on random values drawn fresh each run (seed printed on failure),
 * rounding against a brute-force search over all 256 codes. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "engine/fp8.h"
#include "test_util.h"

START_TEST(test_every_code)
{
    for (int f = 0; f < FS_FP8_COUNT; f++) {
        int nan = 0, inf = 0;
        for (int b = 0; b < 256; b++) {
            double v = fs_fp8_value((fs_fp8)f, (uint8_t)b);
            if (isnan(v)) { nan++; continue; }
            if (isinf(v)) { inf++; continue; }
            ck_assert_msg(fs_fp8_round((fs_fp8)f, v) == v, "%s: code %02x = %a is not its own rounding", fs_fp8_str((fs_fp8)f), b, v);
            ck_assert_msg(fs_fp8_bits((fs_fp8)f, v) == b, "%s: code %02x = %a encodes as %02x", fs_fp8_str((fs_fp8)f), b, v,
                          fs_fp8_bits((fs_fp8)f, v));
            ck_assert(fabs(v) <= fs_fp8_max((fs_fp8)f));
        }
        /* e4m3: S.1111.111 is NaN, no infinities; e5m2: S.11111.xx, xx ≠ 0 NaN, xx = 0 ±inf */
        ck_assert_int_eq(nan, f == FS_FP8_E4M3 ? 2 : 6);
        ck_assert_int_eq(inf, f == FS_FP8_E4M3 ? 0 : 2);
    }
    ck_assert(fs_fp8_value(FS_FP8_E4M3, 0x7e) == 448 && fs_fp8_value(FS_FP8_E4M3, 0x01) == 0x1p-9);
    ck_assert(fs_fp8_value(FS_FP8_E4M3, 0x08) == 0x1p-6 && fs_fp8_value(FS_FP8_E4M3, 0x38) == 1);
    ck_assert(fs_fp8_value(FS_FP8_E5M2, 0x7b) == 57344 && fs_fp8_value(FS_FP8_E5M2, 0x01) == 0x1p-16);
    ck_assert(fs_fp8_value(FS_FP8_E5M2, 0x04) == 0x1p-14 && fs_fp8_value(FS_FP8_E5M2, 0x3c) == 1);
    ck_assert(isinf(fs_fp8_value(FS_FP8_E5M2, 0x7c)) && fs_fp8_value(FS_FP8_E5M2, 0xfc) < 0);
}
END_TEST

START_TEST(test_ties_and_saturation)
{
    /* ties to even: 1.0625 lies between 1 (fraction 000) and 1.125 (001) */
    ck_assert(fs_fp8_round(FS_FP8_E4M3, 1.0625) == 1);
    ck_assert(fs_fp8_round(FS_FP8_E4M3, 1.1875) == 1.25);
    ck_assert(fs_fp8_round(FS_FP8_E4M3, 0x1p-10) == 0);           /* half the smallest subnormal */
    ck_assert(fs_fp8_round(FS_FP8_E4M3, 3 * 0x1p-10) == 0x1p-8);  /* between codes 01 and 02 */
    ck_assert(fs_fp8_round(FS_FP8_E5M2, 1.125) == 1 && fs_fp8_round(FS_FP8_E5M2, 1.375) == 1.5);
    ck_assert(fs_fp8_round(FS_FP8_E4M3, 0.3) == 0.3125);
    /* saturation: beyond the largest finite value, and the infinities e4m3 does not have */
    ck_assert(fs_fp8_round(FS_FP8_E4M3, 464) == 448 && fs_fp8_round(FS_FP8_E4M3, 1e9) == 448);
    ck_assert(fs_fp8_round(FS_FP8_E4M3, -INFINITY) == -448 && fs_fp8_bits(FS_FP8_E4M3, 1e9) == 0x7e);
    ck_assert(fs_fp8_round(FS_FP8_E5M2, 1e9) == 57344 && isinf(fs_fp8_round(FS_FP8_E5M2, INFINITY)));
    ck_assert(isnan(fs_fp8_round(FS_FP8_E4M3, NAN)) && fs_fp8_bits(FS_FP8_E4M3, NAN) == 0x7f);
    ck_assert(fs_fp8_bits(FS_FP8_E4M3, -0.0) == 0x80 && fs_fp8_bits(FS_FP8_E5M2, -1e-30) == 0x80);
}
END_TEST

/* The nearest code by brute force (ties to the even code: the one whose fraction's last bit is 0),
 * saturating beyond the largest finite value. */
static double nearest(fs_fp8 f, double x)
{
    double best = NAN, bd = INFINITY;
    int bb = 0;
    double mx = fs_fp8_max(f);
    if (fabs(x) > mx) return copysign(mx, x);
    for (int b = 0; b < 256; b++) {
        double v = fs_fp8_value(f, (uint8_t)b);
        if (!isfinite(v) || (signbit(v) != signbit(x) && v != 0)) continue;
        double d = fabs(v - x);
        if (d < bd || (d == bd && (b & 1) == 0 && (bb & 1) == 1)) { bd = d; best = v; bb = b; }
    }
    return x == 0 || best == 0 ? copysign(0.0, x) : best;
}

START_TEST(test_random_against_search)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int i = 0; i < 20000; i++) {
        fs_fp8 f = (fs_fp8)(i & 1);
        double x = ldexp(fs_rng_uniform(&r, -1, 1), fs_rng_int(&r, -20, 18));
        if (i % 5 == 0) {   /* exactly halfway between two neighbouring codes */
            double a = fs_fp8_value(f, (uint8_t)fs_rng_int(&r, 0, 0x7a));
            double b = fs_fp8_value(f, (uint8_t)(fs_fp8_bits(f, a) + 1));
            if (isfinite(b)) x = (a + b) / 2 * (i % 10 == 0 ? -1 : 1);
        }
        double got = fs_fp8_round(f, x), want = nearest(f, x);
        FS_ASSERT_SEED(got == want && signbit(got) == signbit(want), seed, "%s(%a) = %a, want %a", fs_fp8_str(f), x, got, want);
    }
}
END_TEST

Suite *fp8_suite(void)
{
    Suite *s = suite_create("fp8");
    TCase *tc = tcase_create("formats");
    tcase_add_test(tc, test_every_code);
    tcase_add_test(tc, test_ties_and_saturation);
    tcase_add_test(tc, test_random_against_search);
    suite_add_tcase(s, tc);
    return s;
}
