/* test_util.h: what every Check suite shares: a seeded random source and comparisons.
 *
 * Random inputs are drawn fresh each run. The seed comes from FS_SEED when set (to replay a
 * failure), otherwise from the clock, read once a process (Check runs each test in a process of
 * its own); every failing assertion that uses random data prints it. Tests derive their draws'
 * seeds from it (fs_test_seed() + 17, + _i, ...), so the number to replay with is the base, not
 * the draw's: FS_ASSERT_SEED prints both.
 */
#ifndef FS_TEST_UTIL_H
#define FS_TEST_UTIL_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct { uint64_t s; } fs_rng;

/* The process's base seed, read on the first call; with drawn non-NULL, only whether it has
 * been read (into *drawn) and its value. */
static inline uint64_t fs_test_seed_state(int *drawn)
{
    static uint64_t base;
    static int read;
    if (drawn) {
        *drawn = read;
        return base;
    }
    if (!read) {
        const char *e = getenv("FS_SEED");
        if (e && *e) base = strtoull(e, NULL, 0);
        else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            base = (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
        }
        read = 1;
    }
    return base;
}

static inline uint64_t fs_test_seed(void) { return fs_test_seed_state(NULL); }

/* splitmix64 */
static inline uint64_t fs_rng_next(fs_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* uniform in [lo, hi) */
static inline double fs_rng_uniform(fs_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * (double)(fs_rng_next(r) >> 11) * 0x1.0p-53;
}
/* integer in [lo, hi] */
static inline int fs_rng_int(fs_rng *r, int lo, int hi)
{
    return lo + (int)(fs_rng_next(r) % (uint64_t)(hi - lo + 1));
}
static inline void fs_rng_fill(fs_rng *r, double *x, long n, double lo, double hi)
{
    for (long i = 0; i < n; i++) x[i] = fs_rng_uniform(r, lo, hi);
}

/* Largest |a − b| / max(1, |b|) over n values; NaN anywhere gives +inf. */
static inline double fs_max_rel_err(const double *a, const double *b, long n)
{
    double w = 0;
    for (long i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i])) return INFINITY;
        double d = fabs(a[i] - b[i]) / fmax(1.0, fabs(b[i]));
        if (d > w) w = d;
    }
    return w;
}

/* Assert with the seed in the message, so a failure can be replayed: FS_SEED=<the base> when
 * the test drew from fs_test_seed() (seed, the draw's own, is printed beside it when it differs),
 * else the draw's seed alone. */
#define FS_ASSERT_SEED(cond, seed, ...)                                                          \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            char fs_msg_[512];                                                                   \
            int fs_read_;                                                                        \
            const unsigned long long fs_base_ = fs_test_seed_state(&fs_read_), fs_draw_ = (seed); \
            snprintf(fs_msg_, sizeof fs_msg_, __VA_ARGS__);                                      \
            if (!fs_read_) ck_abort_msg("%s [seed %llu]", fs_msg_, fs_draw_);                    \
            else if (fs_draw_ == fs_base_) ck_abort_msg("%s [replay with FS_SEED=%llu]", fs_msg_, fs_base_); \
            else ck_abort_msg("%s [replay with FS_SEED=%llu; this draw's seed %llu]", fs_msg_, fs_base_, fs_draw_); \
        }                                                                                        \
    } while (0)

#endif
