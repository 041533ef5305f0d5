/* cpu_measure.c: what the bench divides by, measured on the spot: the float32 FMA peak, the
 * memory read bandwidth, and the process's peak resident memory. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "kernels/cpu/cpu_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The process's CPU time: what a thread ran, not counting the time other processes held its core. */
static double cpu_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    const cpu_isa_ops *ops;
    int64_t iters;
    const float *x;
    size_t n;
    volatile float sink;
} probe;

static void fma_item(void *ctx, int32_t thread, int64_t item)
{
    probe *p = ctx;
    p->sink = p->ops->fma_loop(p->iters);
}

static double fma_gflops(int32_t threads, double seconds, double (*clock_s)(void));

double fs_cpu_measure_fma_gflops(int32_t threads, double seconds)
{
    return fma_gflops(threads, seconds, now_s);
}

double fs_cpu_measure_fma_gflops_cputime(double seconds)
{
    return fma_gflops(1, seconds, cpu_now_s);
}

static double fma_gflops(int32_t threads, double seconds, double (*clock_s)(void))
{
    const cpu_isa_ops *ops = fs_cpu_isa_ops(FS_CPU_ISA_AUTO);
    if (!ops || threads < 1) return 0.0;
    probe p = {.ops = ops, .iters = 1 << 20};
    /* calibrate on one thread, then five short runs of seconds / 5 each; the best is kept, as
     * the machine's peak is what it reaches when nothing else runs (shared machines) */
    double t0 = clock_s();
    p.sink = ops->fma_loop(p.iters);
    double t1 = clock_s() - t0;
    if (t1 > 0) p.iters = (int64_t)((double)p.iters * seconds / 5 / t1) + 1;
    double best = 0.0;
    for (int rep = 0; rep < 5; rep++) {
        t0 = clock_s();
        fs_cpu_parallel(threads, threads, fma_item, &p);
        double t = clock_s() - t0;
        double flops = 2.0 * 12.0 * ops->lanes * (double)p.iters * threads;
        if (t > 0 && flops / t > best) best = flops / t;
    }
    return best * 1e-9;
}

double fs_cpu_measure_clock_ghz(void)
{
#if defined(__x86_64__)
    /* A chain of dependent 64-bit integer multiplies: 3 cycles each on every x86-64 core in use
     * (Intel since Sandy Bridge, AMD since Zen), so multiplies per second × 3 is the clock this
     * thread runs at (turbo included), whatever the TSC says. Not adds: a recent Intel core
     * (Golden Cove and later) retires a chain of add-immediates faster than one a cycle, which
     * read 11.8 GHz on a Xeon. Timed by CPU time, so that time the thread spent descheduled does
     * not count. fs_cpu_clock_plausible says whether to believe it. */
    double best = 0.0;
    /* rep 0 (about 0.1 s) only warms up: an idle core ramps its clock up over tens of ms (a Xeon
     * read 2.36 GHz cold, 2.7-3.0 warm) */
    for (int rep = 0; rep < 6; rep++) {
        uint64_t v = 1, n = rep ? 16000000 : 128000000, k = 3;   /* multiplies; about 12 ms at 4 GHz */
        double t0 = cpu_now_s();
        __asm__ volatile("1:\n\t"
                         "imul %2, %0\n\timul %2, %0\n\timul %2, %0\n\timul %2, %0\n\t"
                         "imul %2, %0\n\timul %2, %0\n\timul %2, %0\n\timul %2, %0\n\t"
                         "sub $8, %1\n\tjnz 1b"
                         : "+r"(v), "+r"(n)
                         : "r"(k));
        double t = cpu_now_s() - t0;
        if (rep && t > 0 && 3.0 * 1.6e7 / t > best) best = 3.0 * 1.6e7 / t;
    }
    return best * 1e-9;
#else
    return 0.0;
#endif
}

bool fs_cpu_clock_plausible(double fma1_gflops, double ghz, int32_t lanes)
{
    if (!(fma1_gflops > 0) || !(ghz > 0) || lanes < 1) return false;
    double per = fma1_gflops / ghz;   /* float32 FLOP per cycle of one core */
    /* one FMA pipe of the vector's full width (or a 512-bit FMA in two halves), or two */
    for (int pipes = 1; pipes <= 2; pipes++) {
        double want = 2.0 * lanes * pipes;
        if (per >= 0.9 * want && per <= 1.1 * want) return true;
    }
    return false;
}

bool fs_cpu_threads_share_cores(double fma1_gflops, double fman_gflops, int32_t threads)
{
    if (threads < 2 || !(fma1_gflops > 0) || !(fman_gflops > 0)) return false;
    return fman_gflops < 0.75 * threads * fma1_gflops;
}

static void read_item(void *ctx, int32_t thread, int64_t item)
{
    probe *p = ctx;
    size_t per = p->n / (size_t)p->iters;   /* iters = number of slices here */
    p->sink = p->ops->read_sum(p->x + (size_t)item * per, per);
}

double fs_cpu_measure_read_gbps(int32_t threads, size_t bytes)
{
    const cpu_isa_ops *ops = fs_cpu_isa_ops(FS_CPU_ISA_AUTO);
    size_t n = bytes / sizeof(float);
    if (!ops || threads < 1 || n < (size_t)threads * 64) return 0.0;
    float *x = malloc(n * sizeof(float));
    if (!x) return 0.0;
    for (size_t k = 0; k < n; k++) x[k] = 1.0f;   /* touch every page before timing */
    probe p = {.ops = ops, .iters = threads, .x = x, .n = n};
    double best = 0.0;
    for (int rep = 0; rep < 6; rep++) {   /* best of six passes */
        double t0 = now_s();
        fs_cpu_parallel(threads, threads, read_item, &p);
        double t = now_s() - t0;
        size_t read = n / (size_t)threads * (size_t)threads * sizeof(float);
        if (t > 0 && (double)read / t > best) best = (double)read / t;
    }
    free(x);
    return best * 1e-9;
}

double fs_cpu_read_pass_s(int32_t threads, const float *x, size_t n)
{
    const cpu_isa_ops *ops = fs_cpu_isa_ops(FS_CPU_ISA_AUTO);
    if (!ops || threads < 1 || !x || n < (size_t)threads * 64) return 0.0;
    /* 8 slices per thread handed out by the runner's counter, as the decode's work items are:
     * a thread slowed by another process then leaves slices to the others, on both sides of the
     * bench's ratio alike (with one slice per thread the pass would wait for the slowest) */
    int64_t slices = (int64_t)threads * 8;
    if (n < (size_t)slices * 64) slices = threads;
    probe p = {.ops = ops, .iters = slices, .x = x, .n = n};
    double t0 = now_s();
    fs_cpu_parallel(threads, slices, read_item, &p);
    return now_s() - t0;
}

static double status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1.0;
    char line[256];
    double kb = -1.0;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) {
            kb = atof(line + n);
            break;
        }
    fclose(f);
    return kb;
}

void fs_cpu_rss_reset(void)
{
    /* Linux: writing 5 to clear_refs resets the peak (VmHWM) to the current resident size. */
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return;
    fputs("5", f);
    fclose(f);
}

double fs_cpu_rss_peak_mb(void)
{
    double kb = status_kb("VmHWM:");
    if (kb >= 0) return kb / 1024.0;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;
    return (double)ru.ru_maxrss / 1024.0;   /* kilobytes on Linux and the BSDs */
}

double fs_cpu_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0.0;
    char line[256];
    double kb = 0.0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "MemAvailable:", 13)) {
            kb = atof(line + 13);
            break;
        }
    fclose(f);
    return kb * 1024.0;
}
