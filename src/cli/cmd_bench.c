/* cmd_bench.c: `flashstep bench`, the timing of the full-size CPU kernels (src/kernels/cpu)
 * against the materializing baseline, with this machine's FMA peak and read bandwidth measured
 * on the spot so that every figure is also a share of what the machine can do.
 *
 * Phases: parse and check every argument (exit 2 before any work), measure the machine, then
 * for each configuration allocate inputs, time the kernel (best of a few runs), read the peak
 * resident memory, free; rows are printed as they come (table, CSV or JSONL); last, the plot.
 * Measured figures only: nothing here is estimated except the memory a configuration needs,
 * which decides before any work whether it can run at all.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "kernels/cpu/cpu_attn.h"

#define MAX_LIST 32

typedef enum { FORMAT_TABLE = 0, FORMAT_CSV, FORMAT_JSONL } bench_format;

typedef struct {
    int32_t v[MAX_LIST];
    int n;
} int_list;

typedef struct {
    int_list N, d, causal, threads, versions, decode_versions, decode_N, backward_N;
    int32_t heads, kv_heads, batch;
    int32_t Bq, Bk;      /* prefill and backward tile sizes, 0 = the kernel's defaults */
    int32_t decode_heads, decode_kv_heads, decode_d, decode_rows;
    fs_cpu_dtype dtype;
    fs_cpu_dtype decode_dtypes[3];   /* storage types of the decode rows (default: dtype) */
    int n_decode_dtypes;
    fs_cpu_isa isa;
    bool baseline, prefill, decode, backward;
    bool smoke;          /* --smoke: also shorter machine measurements */
    bool cpu_time;       /* --cpu-time: rows timed by the process's CPU time (1 thread only) */
    bool decode_f16_longest_only;   /* --quick: the float16 decode row at the longest N only */
    int32_t reps;
    double mem_limit;    /* bytes a configuration may use (inputs, scratch, baseline S and P) */
    bench_format format;
    const char *plot;    /* PNG path or NULL */
} bench_opts;

typedef struct {
    char kernel[40];
    int32_t N, d, causal, threads;
    bool ok;             /* false: it did not run (see the message printed with it) */
    double ms, gflops, peak_fraction, gbps, rss_mb;
    double bw_now;       /* decode rows: the read bandwidth measured just before (GB/s) */
} bench_row;

typedef struct {
    double *fma;         /* GFLOP/s by thread count, index = threads */
    double *bw;          /* GB/s by thread count */
    double ghz;          /* the clock of one thread, 0 if not measured */
    int32_t max_threads;
} machine;

/* Seconds on the clock rows are timed by: CLOCK_MONOTONIC (the wall clock), or with --cpu-time
 * CLOCK_PROCESS_CPUTIME_ID (one-thread rows only, where the two agree on an idle core). */
static double now_s(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: flashstep bench [OPTIONS]\n"
        "\n"
        "Time the full-size CPU FlashAttention kernels (prefill and decode) and the\n"
        "materializing baseline (S and P held in full, products through OpenBLAS) in the\n"
        "same process. The float32 FMA peak and the read bandwidth of this machine are\n"
        "measured first, for each thread count, and every row is also given as a share of them.\n"
        "\n"
        "Rows: kernel, N (sequence length; for decode rows the KV length), d, causal, threads,\n"
        "ms (best of the timed runs), GFLOP/s (4·N²·d per head, halved when causal; decode\n"
        "4·N·d per query row and head), peak_fraction (prefill: of the FMA peak at that\n"
        "thread count; decode: of the read bandwidth, measured again just before the row),\n"
        "GB/s (prefill: Q, K, V, O moved once; decode: the K and V read), rss_mb (peak\n"
        "resident memory of the process during the row: inputs, scratch, and for the\n"
        "baseline its S and P).\n"
        "\n"
        "options (LIST is comma-separated numbers):\n"
        "  --quick             under two minutes: prefill d=128, N=512..4096, causal and not,\n"
        "                      backward d=128, N=4096, decode at 4096 and 32768 positions\n"
        "                      (float32, and float16 K/V at 32768), all at all threads\n"
        "  --smoke             a few seconds, tiny sizes (what `make test` runs)\n"
        "  --n LIST            prefill lengths            (default 512,1024,...,32768)\n"
        "  --d LIST            head dimensions 1..%d      (default 64,128)\n"
        "  --causal LIST       0 and/or 1                 (default 0,1)\n"
        "  --threads LIST      thread counts              (default 1..all cores)\n"
        "  --heads H           query heads, prefill       (default 8)\n"
        "  --kv-heads H        KV heads, prefill          (default = heads; must divide heads)\n"
        "  --batch B           batch size                 (default 1)\n"
        "  --version LIST      prefill kernel versions 1..%d (default %d; 1 always runs on 1 thread)\n"
        "  --decode-version LIST  decode kernel versions 1..%d (default %d)\n"
"  --bq B, --bk B      prefill and backward tile sizes (default: each version's own)\n"
        "  --dtype T           storage: f32, f16, bf16    (default f32; the baseline is f32 only)\n"
        "  --isa I             auto, scalar, avx2, avx512, neon (default auto)\n"
        "  --decode-n LIST     decode KV lengths          (default 4096,8192,...,131072)\n"
        "  --decode-heads Q/K  decode query/KV heads      (default 32/8)\n"
        "  --decode-d D        decode head dimension      (default 128)\n"
        "  --decode-rows R     query rows per head        (default 1)\n"
        "  --decode-dtype LIST storage of the decode rows: f32, f16, bf16 (default: --dtype)\n"
        "  --backward-n LIST   backward lengths (d, causal, threads as for prefill;\n"
        "                      default 1024,2048,4096). Backward rows: flash-bwd-v1 (recomputation,\n"
        "                      K/V-outer) and baseline-bwd (P and dP held in full, OpenBLAS);\n"
        "                      GFLOP/s counts 10·N²·d per head (2.5 times the forward's five\n"
        "                      products of 2·N²·d, against the forward's two), halved when\n"
        "                      causal; the forward that gives O and L runs before, untimed\n"
        "  --no-baseline, --no-prefill, --no-decode, --no-backward   leave a part out\n"
        "  --cpu-time          time rows by the process's CPU time, not the wall clock: on\n"
        "                      a loaded machine this leaves out the time other processes held\n"
        "                      the core (caches and memory stay shared). One thread only\n"
        "                      (--threads 1); the FMA peak is then timed the same way, the\n"
        "                      read bandwidth stays wall-clock\n"
        "  --reps R            timed runs per row, best kept (default 3; a row whose first\n"
        "                      run takes over 2 s runs once)\n"
        "  --mem-limit GIB     memory one row may use     (default: half of what is available)\n"
        "  --format F          table, csv or jsonl        (default table)\n"
        "  --plot FILE.png     GFLOP/s and peak memory against N (needs gnuplot)\n"
        "  --help              this text\n",
        FS_CPU_MAX_D, FS_CPU_VERSIONS, FS_CPU_VERSIONS, FS_CPU_DECODE_VERSIONS,
        FS_CPU_DECODE_VERSIONS);
}

/* ---- argument parsing ------------------------------------------------------------------ */

/* cli_parse_int into an int32_t (the ranges here all fit one). */
static bool parse_int(const char *s, long lo, long hi, int32_t *out)
{
    long v;
    if (!cli_parse_int(s, lo, hi, &v)) return false;
    *out = (int32_t)v;
    return true;
}

static bool parse_list(const char *s, long lo, long hi, int_list *out)
{
    out->n = 0;
    char buf[512];
    if (strlen(s) >= sizeof buf || !*s) return false;
    strcpy(buf, s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (out->n == MAX_LIST || !parse_int(tok, lo, hi, &out->v[out->n])) return false;
        out->n++;
    }
    return out->n > 0;
}

static void list_range_pow2(int_list *l, int32_t lo, int32_t hi)
{
    l->n = 0;
    for (int32_t x = lo; x <= hi && l->n < MAX_LIST; x *= 2) l->v[l->n++] = x;
}

static int bad(const char *fmt, const char *what)
{
    fprintf(stderr, "flashstep bench: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, " (see flashstep bench --help)\n");
    return 2;
}

static int32_t cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > FS_CPU_MAX_THREADS ? FS_CPU_MAX_THREADS : (int32_t)n;
}

/* Returns 0, or 2 after printing why. */
static int parse_args(int argc, char **argv, bench_opts *o)
{
    int32_t all = cores();
    memset(o, 0, sizeof *o);
    list_range_pow2(&o->N, 512, 32768);
    o->d = (int_list){{64, 128}, 2};
    o->causal = (int_list){{0, 1}, 2};
    o->threads.n = 0;
    for (int32_t t = 1; t <= all && o->threads.n < MAX_LIST; t++) o->threads.v[o->threads.n++] = t;
    o->versions = (int_list){{FS_CPU_VERSIONS}, 1};
    o->decode_versions = (int_list){{FS_CPU_DECODE_VERSIONS}, 1};
    list_range_pow2(&o->decode_N, 4096, 131072);
    o->backward_N = (int_list){{1024, 2048, 4096}, 3};
    o->heads = 8;
    o->kv_heads = 0;
    o->batch = 1;
    o->decode_heads = 32;
    o->decode_kv_heads = 8;
    o->decode_d = 128;
    o->decode_rows = 1;
    o->baseline = o->prefill = o->decode = o->backward = true;
    o->reps = 3;
    o->mem_limit = 0;
    bool quick = false, smoke = false, explicit_n = false, explicit_dn = false,
         explicit_d = false, explicit_t = false, explicit_bn = false;
    bool quick_f16_longest = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE() \
    do { if (!v) return bad("option %s needs a value", a); i++; } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--quick")) {
            quick = true;
        } else if (!strcmp(a, "--smoke")) {
            smoke = true;
        } else if (!strcmp(a, "--no-baseline")) {
            o->baseline = false;
        } else if (!strcmp(a, "--no-prefill")) {
            o->prefill = false;
        } else if (!strcmp(a, "--no-decode")) {
            o->decode = false;
        } else if (!strcmp(a, "--cpu-time")) {
            o->cpu_time = true;
        } else if (!strcmp(a, "--no-backward")) {
            o->backward = false;
        } else if (!strcmp(a, "--backward-n")) {
            NEED_VALUE();
            if (!parse_list(v, 1, FS_MAX_DIM, &o->backward_N))
                return bad("--backward-n wants lengths 1..1048576 separated by commas, not '%s'", v);
            explicit_bn = true;
        } else if (!strcmp(a, "--n")) {
            NEED_VALUE();
            if (!parse_list(v, 1, FS_MAX_DIM, &o->N))
                return bad("--n wants lengths 1..1048576 separated by commas, not '%s'", v);
            explicit_n = true;
        } else if (!strcmp(a, "--d")) {
            NEED_VALUE();
            if (!parse_list(v, FS_CPU_MIN_D, FS_CPU_MAX_D, &o->d))
                return bad("--d wants head dimensions 1..512 separated by commas, not '%s'", v);
            explicit_d = true;
        } else if (!strcmp(a, "--causal")) {
            NEED_VALUE();
            if (!parse_list(v, 0, 1, &o->causal)) return bad("--causal wants 0 and/or 1, not '%s'", v);
        } else if (!strcmp(a, "--threads")) {
            NEED_VALUE();
            if (!parse_list(v, 1, FS_CPU_MAX_THREADS, &o->threads))
                return bad("--threads wants thread counts 1..256 separated by commas, not '%s'", v);
            explicit_t = true;
        } else if (!strcmp(a, "--heads")) {
            NEED_VALUE();
            if (!parse_int(v, 1, FS_MAX_HEADS, &o->heads)) return bad("--heads wants 1..1024, not '%s'", v);
        } else if (!strcmp(a, "--kv-heads")) {
            NEED_VALUE();
            if (!parse_int(v, 1, FS_MAX_HEADS, &o->kv_heads)) return bad("--kv-heads wants 1..1024, not '%s'", v);
        } else if (!strcmp(a, "--bq") || !strcmp(a, "--bk")) {
            NEED_VALUE();
            if (!parse_int(v, 1, 4096, a[3] == 'q' ? &o->Bq : &o->Bk))
                return bad("--bq and --bk want tile sizes 1..4096, not '%s'", v);
        } else if (!strcmp(a, "--batch")) {
            NEED_VALUE();
            if (!parse_int(v, 1, 1024, &o->batch)) return bad("--batch wants 1..1024, not '%s'", v);
        } else if (!strcmp(a, "--version")) {
            NEED_VALUE();
            if (!parse_list(v, 1, FS_CPU_VERSIONS, &o->versions))
                return bad("--version wants kernel versions 1..6 separated by commas, not '%s'", v);
        } else if (!strcmp(a, "--decode-version")) {
            NEED_VALUE();
            if (!parse_list(v, 1, FS_CPU_DECODE_VERSIONS, &o->decode_versions))
                return bad("--decode-version wants decode versions 1..3 separated by commas, not '%s'", v);
        } else if (!strcmp(a, "--dtype")) {
            NEED_VALUE();
            if (!strcmp(v, "f32")) o->dtype = FS_CPU_DTYPE_F32;
            else if (!strcmp(v, "f16")) o->dtype = FS_CPU_DTYPE_F16;
            else if (!strcmp(v, "bf16")) o->dtype = FS_CPU_DTYPE_BF16;
            else return bad("--dtype wants f32, f16 or bf16, not '%s'", v);
        } else if (!strcmp(a, "--isa")) {
            NEED_VALUE();
            int k;
            for (k = 0; k < FS_CPU_ISA_COUNT; k++)
                if (!strcmp(v, fs_cpu_isa_str((fs_cpu_isa)k))) break;
            if (k == FS_CPU_ISA_COUNT) return bad("--isa wants auto, scalar, avx2, avx512 or neon, not '%s'", v);
            if (!fs_cpu_isa_supported((fs_cpu_isa)k))
                return bad("--isa %s: this CPU (or this build) cannot run it", v);
            o->isa = (fs_cpu_isa)k;
        } else if (!strcmp(a, "--decode-n")) {
            NEED_VALUE();
            if (!parse_list(v, 1, FS_MAX_DIM, &o->decode_N))
                return bad("--decode-n wants lengths 1..1048576 separated by commas, not '%s'", v);
            explicit_dn = true;
        } else if (!strcmp(a, "--decode-heads")) {
            NEED_VALUE();
            char buf[64];
            const char *slash = strchr(v, '/');
            if (!slash || strlen(v) >= sizeof buf) return bad("--decode-heads wants Q/KV such as 32/8, not '%s'", v);
            memcpy(buf, v, (size_t)(slash - v));
            buf[slash - v] = '\0';
            if (!parse_int(buf, 1, FS_MAX_HEADS, &o->decode_heads) ||
                !parse_int(slash + 1, 1, FS_MAX_HEADS, &o->decode_kv_heads))
                return bad("--decode-heads wants Q/KV such as 32/8, not '%s'", v);
            if (o->decode_heads % o->decode_kv_heads)
                return bad("--decode-heads %s: the query heads must be a multiple of the KV heads", v);
        } else if (!strcmp(a, "--decode-dtype")) {
            NEED_VALUE();
            char buf[64];
            if (strlen(v) >= sizeof buf) return bad("--decode-dtype wants f32, f16 and/or bf16, not '%s'", v);
            strcpy(buf, v);
            o->n_decode_dtypes = 0;
            for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                fs_cpu_dtype t;
                if (!strcmp(tok, "f32")) t = FS_CPU_DTYPE_F32;
                else if (!strcmp(tok, "f16")) t = FS_CPU_DTYPE_F16;
                else if (!strcmp(tok, "bf16")) t = FS_CPU_DTYPE_BF16;
                else return bad("--decode-dtype wants f32, f16 and/or bf16, not '%s'", v);
                if (o->n_decode_dtypes == 3) return bad("--decode-dtype takes at most three types: '%s'", v);
                o->decode_dtypes[o->n_decode_dtypes++] = t;
            }
            if (o->n_decode_dtypes == 0) return bad("--decode-dtype wants f32, f16 and/or bf16, not '%s'", v);
        } else if (!strcmp(a, "--decode-d")) {
            NEED_VALUE();
            if (!parse_int(v, FS_CPU_MIN_D, FS_CPU_MAX_D, &o->decode_d)) return bad("--decode-d wants 1..512, not '%s'", v);
        } else if (!strcmp(a, "--decode-rows")) {
            NEED_VALUE();
            if (!parse_int(v, 1, 64, &o->decode_rows)) return bad("--decode-rows wants 1..64, not '%s'", v);
        } else if (!strcmp(a, "--reps")) {
            NEED_VALUE();
            if (!parse_int(v, 1, 100, &o->reps)) return bad("--reps wants 1..100, not '%s'", v);
        } else if (!strcmp(a, "--mem-limit")) {
            NEED_VALUE();
            char *end;
            double g = strtod(v, &end);
            if (end == v || *end || !(g > 0) || g > 1e6) return bad("--mem-limit wants a positive number of GiB, not '%s'", v);
            o->mem_limit = g * (double)(1u << 30);
        } else if (!strcmp(a, "--format")) {
            NEED_VALUE();
            if (!strcmp(v, "table")) o->format = FORMAT_TABLE;
            else if (!strcmp(v, "csv")) o->format = FORMAT_CSV;
            else if (!strcmp(v, "jsonl")) o->format = FORMAT_JSONL;
            else return bad("--format wants table, csv or jsonl, not '%s'", v);
        } else if (!strcmp(a, "--plot")) {
            NEED_VALUE();
            size_t n = strlen(v);
            if (n < 5 || strcmp(v + n - 4, ".png")) return bad("--plot wants a file name ending in .png, not '%s'", v);
            o->plot = v;
        } else {
            return bad("unknown option '%s'", a);
        }
#undef NEED_VALUE
    }
    if (quick && smoke) return bad("%s", "--quick and --smoke exclude each other");
    if (quick) {
        if (!explicit_n) o->N = (int_list){{512, 1024, 2048, 4096}, 4};
        if (!explicit_d) o->d = (int_list){{128}, 1};
        if (!explicit_t) o->threads = (int_list){{all}, 1};
        if (!explicit_dn) o->decode_N = (int_list){{4096, 32768}, 2};
        if (!explicit_bn) o->backward_N = (int_list){{4096}, 1};
        if (o->n_decode_dtypes == 0) {   /* float32 rows, and float16 K/V at the longest */
            o->decode_dtypes[0] = o->dtype;
            o->decode_dtypes[1] = FS_CPU_DTYPE_F16;
            o->n_decode_dtypes = o->dtype == FS_CPU_DTYPE_F16 ? 1 : 2;
            quick_f16_longest = true;
        }
        if (o->reps > 2) o->reps = 2;
    }
    o->smoke = smoke;
    if (smoke) {
        if (!explicit_n) o->N = (int_list){{64, 256}, 2};
        if (!explicit_d) o->d = (int_list){{32, 64}, 2};
        if (!explicit_t) o->threads = (int_list){{1, all}, all > 1 ? 2 : 1};
        if (!explicit_dn) o->decode_N = (int_list){{1024}, 1};
        if (!explicit_bn) o->backward_N = (int_list){{64, 256}, 2};
        o->reps = 1;
    }
    if (o->n_decode_dtypes == 0) {
        o->decode_dtypes[0] = o->dtype;
        o->n_decode_dtypes = 1;
    }
    o->decode_f16_longest_only = quick_f16_longest;
    if (o->kv_heads == 0) o->kv_heads = o->heads;
    if (o->heads % o->kv_heads) {
        fprintf(stderr, "flashstep bench: %d query heads cannot be shared by %d KV heads "
                        "(the query heads must be a multiple of the KV heads)\n",
                o->heads, o->kv_heads);
        return 2;
    }
    if (o->cpu_time)
        for (int i = 0; i < o->threads.n; i++)
            if (o->threads.v[i] != 1) return bad("%s", "--cpu-time times one-thread rows only: add --threads 1");
    if (o->dtype != FS_CPU_DTYPE_F32) o->backward = false;   /* float32 only */
    if (!o->prefill && !o->decode && !o->backward)
        return bad("%s", "--no-prefill, --no-decode and --no-backward leave nothing to run");
    double avail = fs_cpu_mem_available();
    if (o->mem_limit == 0) o->mem_limit = avail > 0 ? 0.5 * avail : 4.0 * (1u << 30);
    if (avail > 0 && o->mem_limit > 0.9 * avail) {
        fprintf(stderr, "flashstep bench: --mem-limit %.1f GiB is more than the %.1f GiB available\n",
                o->mem_limit / (1u << 30), avail / (1u << 30));
        return 2;
    }
    return 0;
}

/* ---- memory each configuration needs (decided before any work) ------------------------ */

static double prefill_bytes(const bench_opts *o, int32_t N, int32_t d)
{
    double es = (double)fs_cpu_dtype_size(o->dtype);
    double q = (double)o->batch * o->heads * N * d, kv = (double)o->batch * o->kv_heads * N * d;
    return (2 * q + 2 * kv) * es + 2 * (kv + 4096.0 * d) * 4;   /* + packed K, V (float) */
}

static double decode_bytes(const bench_opts *o, int32_t N)
{
    double es = 2.0;   /* the widest storage among the decode rows */
    for (int i = 0; i < o->n_decode_dtypes; i++)
        if ((double)fs_cpu_dtype_size(o->decode_dtypes[i]) > es) es = (double)fs_cpu_dtype_size(o->decode_dtypes[i]);
    double kv = (double)o->batch * o->decode_kv_heads * N * o->decode_d;
    return 2 * kv * es + 1e6;
}

/* ---- output ---------------------------------------------------------------------------- */

static void print_header(const bench_opts *o)
{
    if (o->format == FORMAT_CSV)
        printf("kernel,N,d,causal,threads,ms,gflops,peak_fraction,gbps,rss_mb\n");
    else if (o->format == FORMAT_TABLE)
        printf("%-16s %7s %5s %6s %7s %11s %9s %9s %8s %9s\n", "kernel", "N", "d", "causal",
               "threads", "ms", "GFLOP/s", "of peak", "GB/s", "RSS MiB");
}

static void print_row(const bench_opts *o, const bench_row *r, const char *note)
{
    bool dec = !strncmp(r->kernel, "decode", 6);
    switch (o->format) {
    case FORMAT_CSV:
        if (r->ok)
            printf("%s,%d,%d,%d,%d,%.4f,%.3f,%.4f,%.3f,%.1f\n", r->kernel, r->N, r->d, r->causal,
                   r->threads, r->ms, r->gflops, r->peak_fraction, r->gbps, r->rss_mb);
        else
            printf("%s,%d,%d,%d,%d,,,,,\n", r->kernel, r->N, r->d, r->causal, r->threads);
        break;
    case FORMAT_JSONL:
        if (r->ok)
            printf("{\"kernel\":\"%s\",\"N\":%d,\"d\":%d,\"causal\":%s,\"threads\":%d,"
                   "\"ms\":%.4f,\"gflops\":%.3f,\"peak_fraction\":%.4f,\"gbps\":%.3f,"
                   "\"rss_mb\":%.1f}\n",
                   r->kernel, r->N, r->d, r->causal ? "true" : "false", r->threads, r->ms,
                   r->gflops, r->peak_fraction, r->gbps, r->rss_mb);
        else
            printf("{\"kernel\":\"%s\",\"N\":%d,\"d\":%d,\"causal\":%s,\"threads\":%d,"
                   "\"ms\":null,\"gflops\":null,\"peak_fraction\":null,\"gbps\":null,"
                   "\"rss_mb\":null}\n",
                   r->kernel, r->N, r->d, r->causal ? "true" : "false", r->threads);
        break;
    default:
        if (r->ok)
            printf("%-16s %7d %5d %6s %7d %11.3f %9.1f %8.1f%% %8.2f %9.1f%s", r->kernel, r->N,
                   r->d, r->causal ? "yes" : "no", r->threads, r->ms, r->gflops,
                   100 * r->peak_fraction, r->gbps, r->rss_mb, dec ? "  (of the read bandwidth" : "");
        if (r->ok && dec) printf(", %.1f GB/s just before)", r->bw_now);
        if (r->ok) printf("\n");
        else
            printf("%-16s %7d %5d %6s %7d   not run: %s\n", r->kernel, r->N, r->d,
                   r->causal ? "yes" : "no", r->threads, note);
        break;
    }
    if (!r->ok && o->format != FORMAT_TABLE)
        fprintf(stderr, "flashstep bench: %s N=%d d=%d causal=%d threads=%d not run: %s\n",
                r->kernel, r->N, r->d, r->causal, r->threads, note);
    fflush(stdout);
}

/* ---- inputs ---------------------------------------------------------------------------- */

static void *alloc_fill(size_t count, fs_cpu_dtype t, uint64_t *state)
{
    size_t es = fs_cpu_dtype_size(t);
    void *p = malloc(count * es);
    if (!p) return NULL;
    for (size_t i = 0; i < count; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        float x = (float)((*state >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
        if (t == FS_CPU_DTYPE_F16) ((uint16_t *)p)[i] = fs_cpu_f32_to_f16(x);
        else if (t == FS_CPU_DTYPE_BF16) ((uint16_t *)p)[i] = fs_cpu_f32_to_bf16(x);
        else ((float *)p)[i] = x;
    }
    return p;
}

typedef struct {
    fs_cpu_attn a;
    void *Q, *K, *V, *O;
} inputs;

static bool inputs_make(inputs *in, int32_t batch, int32_t hq, int32_t hkv, int32_t n_q,
                        int32_t n_kv, int32_t d, fs_cpu_dtype t, bool causal)
{
    memset(in, 0, sizeof *in);
    uint64_t s = 0x5eed;
    size_t nq = (size_t)batch * hq * n_q * d, nk = (size_t)batch * hkv * n_kv * d;
    in->Q = alloc_fill(nq, t, &s);
    in->K = alloc_fill(nk, t, &s);
    in->V = alloc_fill(nk, t, &s);
    in->O = alloc_fill(nq, t, &s);
    fs_cpu_attn *a = &in->a;
    a->batch = batch;
    a->n_q_heads = hq;
    a->n_kv_heads = hkv;
    a->n_q = n_q;
    a->n_kv = n_kv;
    a->d = d;
    a->dtype = t;
    a->Q = in->Q;
    a->K = in->K;
    a->V = in->V;
    a->O = in->O;
    a->mask.kind = causal ? FS_MASK_CAUSAL : FS_MASK_NONE;
    return in->Q && in->K && in->V && in->O;
}

static void inputs_free(inputs *in)
{
    free(in->Q);
    free(in->K);
    free(in->V);
    free(in->O);
}

/* ---- timing ---------------------------------------------------------------------------- */

typedef enum { RUN_PREFILL, RUN_BASELINE, RUN_DECODE } run_kind;

/* Best time in seconds over the runs; < 0 when the kernel refused (why filled). */
static double time_runs(clockid_t clk, run_kind k, const fs_cpu_attn *a, int32_t version, int32_t threads,
                        fs_cpu_isa isa, int32_t Bq, int32_t Bk, int32_t reps, char *why, size_t n)
{
    double best = INFINITY;
    for (int32_t r = 0; r < reps; r++) {
        fs_status st = FS_OK;
        int inner = 1;
        double t0 = now_s(clk), t;
        for (;;) {   /* decode steps are short: repeat until 50 ms have passed */
            if (k == RUN_PREFILL) {
                fs_cpu_opts o = fs_cpu_opts_default();
                o.version = version;
                o.threads = threads;
                o.isa = isa;
                o.Bq = Bq;
                o.Bk = Bk;
                st = fs_cpu_prefill(a, &o);
                if (st != FS_OK) snprintf(why, n, "%s", fs_status_str(st));
            } else if (k == RUN_BASELINE) {
                st = fs_cpu_baseline(a, threads, why, n);
            } else {
                fs_cpu_decode_opts o = fs_cpu_decode_opts_default();
                o.version = version;
                o.threads = threads;
                o.isa = isa;
                st = fs_cpu_decode(a, &o);
                if (st != FS_OK) snprintf(why, n, "%s", fs_status_str(st));
            }
            if (st != FS_OK) return -1.0;
            t = now_s(clk) - t0;
            if (k != RUN_DECODE || t >= 0.05) break;
            inner++;
        }
        t /= inner;
        if (t < best) best = t;
        if (t > 2.0) break;   /* long rows run once: the spread is small next to the cost */
    }
    return best;
}

/* Backward rows: the forward (newest version) runs once, untimed, for O and L; then the best of
 * the runs of the backward (baseline: the materializing one). Time in seconds; < 0 when the
 * kernel refused or memory ran out (why filled). */
static double time_backward(clockid_t clk, bool base, fs_cpu_attn *a, int32_t threads, fs_cpu_isa isa,
                            int32_t Bq, int32_t Bk, int32_t reps, char *why, size_t n)
{
    size_t nq = (size_t)a->batch * a->n_q_heads * a->n_q * a->d;
    size_t nk = (size_t)a->batch * a->n_kv_heads * a->n_kv * a->d;
    uint64_t seed = 0xd0;
    float *dO = alloc_fill(nq, FS_CPU_DTYPE_F32, &seed);
    float *dQ = malloc(nq * sizeof(float)), *dK = malloc(nk * sizeof(float));
    float *dV = malloc(nk * sizeof(float));
    float *L = malloc((size_t)a->batch * a->n_q_heads * a->n_q * sizeof(float));
    double best = -1.0;
    if (!dO || !dQ || !dK || !dV || !L) {
        snprintf(why, n, "cannot allocate the gradients");
        goto done;
    }
    a->L = L;
    fs_cpu_opts fo = fs_cpu_opts_default();
    fo.threads = threads;
    fo.isa = isa;
    fs_status st = fs_cpu_prefill(a, &fo);
    if (st != FS_OK) {
        snprintf(why, n, "forward: %s", fs_status_str(st));
        goto done;
    }
    best = INFINITY;
    for (int32_t r = 0; r < reps; r++) {
        double t0 = now_s(clk);
        if (base) {
            st = fs_cpu_baseline_backward(a, dO, dQ, dK, dV, threads, why, n);
        } else {
            fs_cpu_backward_opts o = fs_cpu_backward_opts_default();
            o.threads = threads;
            o.isa = isa;
            o.Bq = Bq;
            o.Bk = Bk;
            st = fs_cpu_backward(a, dO, dQ, dK, dV, &o);
            if (st != FS_OK) snprintf(why, n, "%s", fs_status_str(st));
        }
        if (st != FS_OK) {
            best = -1.0;
            break;
        }
        double t = now_s(clk) - t0;
        if (t < best) best = t;
        if (t > 2.0) break;
    }
done:
    a->L = NULL;
    free(dO);
    free(dQ);
    free(dK);
    free(dV);
    free(L);
    return best;
}

/* ---- the plot -------------------------------------------------------------------------- */

static void series_name(const bench_row *r, char *name, size_t n)
{
    snprintf(name, n, "%s d=%d%s", r->kernel, r->d, r->causal ? " causal" : "");
}

static void plot(const bench_opts *o, const bench_row *rows, int n_rows, int32_t threads)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stderr, "flashstep bench: gnuplot not found: no plot written (install gnuplot-nox)\n");
        return;
    }
    char dat[] = "/tmp/flashstep-bench-XXXXXX";
    int fd = mkstemp(dat);
    if (fd < 0) {
        fprintf(stderr, "flashstep bench: cannot create a temporary file: no plot written\n");
        return;
    }
    /* one gnuplot data block per series (kernel, d, causal) at the largest thread count,
     * prefill rows only (decode N is another axis); each block opens with its title */
    char series[64][64];
    int n_series = 0;
    for (int i = 0; i < n_rows; i++) {
        const bench_row *r = &rows[i];
        if (!r->ok || r->threads != threads || !strncmp(r->kernel, "decode", 6)) continue;
        char name[64];
        series_name(r, name, sizeof name);
        int s;
        for (s = 0; s < n_series; s++)
            if (!strcmp(series[s], name)) break;
        if (s == n_series && n_series < 64) strcpy(series[n_series++], name);
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        remove(dat);
        return;
    }
    for (int s = 0; s < n_series; s++) {
        fprintf(f, "\"%s\" GFLOPs MiB\n", series[s]);
        for (int i = 0; i < n_rows; i++) {
            const bench_row *r = &rows[i];
            char name[64];
            series_name(r, name, sizeof name);
            if (r->ok && r->threads == threads && !strcmp(name, series[s]))
                fprintf(f, "%d %.3f %.1f\n", r->N, r->gflops, r->rss_mb);
        }
        fprintf(f, "\n\n");
    }
    fclose(f);
    if (n_series == 0) {
        fprintf(stderr, "flashstep bench: no prefill rows to plot\n");
        remove(dat);
        return;
    }
    char gp[] = "/tmp/flashstep-plot-XXXXXX";
    fd = mkstemp(gp);
    if (fd < 0) {
        remove(dat);
        return;
    }
    f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        remove(dat);
        remove(gp);
        return;
    }
    fprintf(f, "set terminal pngcairo size 1200,500 noenhanced\n"
               "set output '%s'\n"
               "set multiplot layout 1,2 title 'flashstep bench (%d threads)'\n"
               "set logscale x 2\nset xlabel 'N'\nset key left top font ',8'\nset grid\n"
               "set ylabel 'GFLOP/s'\nplot for [s=0:%d] '%s' index s using 1:2 with linespoints title columnheader(1)\n",
               o->plot, threads, n_series - 1, dat);
    fprintf(f, "set logscale y 2\nset ylabel 'peak resident memory (MiB)'\n"
               "plot for [s=0:%d] '%s' index s using 1:3 with linespoints title columnheader(1)\n"
               "unset multiplot\n", n_series - 1, dat);
    fclose(f);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 1>&2", gp);   /* its chatter to stderr */
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "flashstep bench: gnuplot failed (%d): no plot written\n", rc);
    else fprintf(stderr, "flashstep bench: plot written to %s\n", o->plot);
    remove(dat);
    remove(gp);
}

/* ---- main ------------------------------------------------------------------------------ */

static void machine_line(const bench_opts *o, const machine *m)
{
    FILE *f = o->format == FORMAT_TABLE ? stdout : stderr;
    char model[128] = "unknown CPU";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    if (ci) {
        char line[256];
        while (fgets(line, sizeof line, ci))
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c) {
                    snprintf(model, sizeof model, "%s", c + 2);
                    model[strcspn(model, "\n")] = '\0';
                }
                break;
            }
        fclose(ci);
    }
    char load[64] = "unknown";
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fgets(load, sizeof load, la)) load[strcspn(load, "\n")] = '\0';
        fclose(la);
    }
    fs_cpu_isa isa = o->isa == FS_CPU_ISA_AUTO ? fs_cpu_isa_best() : o->isa;
    fprintf(f, "# %s, %d cores, kernels: %s, storage %s\n", model, cores(), fs_cpu_isa_str(isa),
            fs_cpu_dtype_str(o->dtype));
    fprintf(f, "# load average (1, 5, 15 min; running/total; last pid): %s — other work on the "
               "machine slows every row\n", load);
    for (int32_t t = 1; t <= m->max_threads; t++) {
        if (m->fma[t] <= 0) continue;
        fprintf(f, "# measured at %d thread%s: FMA peak %.1f GFLOP/s, read bandwidth %.1f GB/s\n",
                t, t > 1 ? "s" : "", m->fma[t], m->bw[t]);
    }
    if (m->ghz > 0 && m->fma[1] > 0)
        fprintf(f, "# clock %.2f GHz (a chain of dependent adds, one thread): the 1-thread FMA peak is "
                   "%.1f FLOP per cycle\n", m->ghz, m->fma[1] / m->ghz);
    fflush(f);
}

int cli_bench(int argc, char **argv)
{
    bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc == -1) return 0;
    if (rc) return rc;

    /* sizes past memory: refuse before any work */
    if (o.prefill)
        for (int i = 0; i < o.N.n; i++)
            for (int j = 0; j < o.d.n; j++)
                if (prefill_bytes(&o, o.N.v[i], o.d.v[j]) > o.mem_limit) {
                    fprintf(stderr, "flashstep bench: prefill N=%d d=%d needs %.1f GiB of inputs, "
                                    "more than the limit of %.1f GiB (--mem-limit)\n",
                            o.N.v[i], o.d.v[j], prefill_bytes(&o, o.N.v[i], o.d.v[j]) / (1u << 30),
                            o.mem_limit / (1u << 30));
                    return 2;
                }
    if (o.decode)
        for (int i = 0; i < o.decode_N.n; i++)
            if (decode_bytes(&o, o.decode_N.v[i]) > o.mem_limit) {
                fprintf(stderr, "flashstep bench: decode N=%d needs %.1f GiB of KV cache, more "
                                "than the limit of %.1f GiB (--mem-limit)\n",
                        o.decode_N.v[i], decode_bytes(&o, o.decode_N.v[i]) / (1u << 30),
                        o.mem_limit / (1u << 30));
                return 2;
            }

    machine m = {0};
    for (int i = 0; i < o.threads.n; i++)
        if (o.threads.v[i] > m.max_threads) m.max_threads = o.threads.v[i];
    m.fma = calloc((size_t)m.max_threads + 1, sizeof(double));
    m.bw = calloc((size_t)m.max_threads + 1, sizeof(double));
    int cap = 4096, n_rows = 0;
    bench_row *rows = malloc((size_t)cap * sizeof *rows);
    if (!m.fma || !m.bw || !rows) {
        fprintf(stderr, "flashstep bench: out of memory\n");
        free(m.fma); free(m.bw); free(rows);
        return 1;
    }
    for (int i = -1; i < o.threads.n; i++) {   /* -1: one thread, for version 1's rows */
        int32_t t = i < 0 ? 1 : o.threads.v[i];
        if (m.fma[t] > 0) continue;
        m.fma[t] = fs_cpu_measure_fma_gflops(t, o.smoke ? 0.02 : 0.25);
        m.bw[t] = fs_cpu_measure_read_gbps(t, o.smoke ? (size_t)32 << 20 : (size_t)512 << 20);
    }
    if (o.cpu_time)   /* one thread, and the peak on the same clock as the rows */
        m.fma[1] = fs_cpu_measure_fma_gflops_cputime(o.smoke ? 0.02 : 0.25);
    m.ghz = o.smoke ? 0.0 : fs_cpu_measure_clock_ghz();
    machine_line(&o, &m);
    const clockid_t clk = o.cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
    if (o.cpu_time) {
        fprintf(o.format == FORMAT_TABLE ? stdout : stderr,
                "# rows and the FMA peak timed by the process's CPU time (--cpu-time), not the wall clock\n");
    }
    print_header(&o);

    char why[160];
    if (o.prefill)
        for (int di = 0; di < o.d.n; di++)
            for (int ci = 0; ci < o.causal.n; ci++)
                for (int ni = 0; ni < o.N.n; ni++)
                    for (int ti = 0; ti < o.threads.n; ti++) {
                        int32_t N = o.N.v[ni], d = o.d.v[di], causal = o.causal.v[ci];
                        int32_t threads = o.threads.v[ti];
                        double flops = 4.0 * N * (double)N * d * o.heads * o.batch * (causal ? 0.5 : 1.0);
                        double bytes = (2.0 * o.heads + 2.0 * o.kv_heads) * o.batch * N * d *
                                       (double)fs_cpu_dtype_size(o.dtype);
                        int n_kernels = o.versions.n + (o.baseline ? 1 : 0);
                        for (int k = 0; k < n_kernels && n_rows < cap; k++) {
                            bool base = k == o.versions.n;
                            int32_t version = base ? 0 : o.versions.v[k];
                            bench_row r = {.N = N, .d = d, .causal = causal,
                                           .threads = version == 1 ? 1 : threads};
                            if (base)
                                snprintf(r.kernel, sizeof r.kernel, "baseline-blas");
                            else if (o.dtype == FS_CPU_DTYPE_F32)
                                snprintf(r.kernel, sizeof r.kernel, "flash-v%d", version);
                            else
                                snprintf(r.kernel, sizeof r.kernel, "flash-v%d-%s", version,
                                         fs_cpu_dtype_str(o.dtype));
                            if (version == 1 && threads != o.threads.v[0]) continue;   /* once */
                            if (base && o.dtype != FS_CPU_DTYPE_F32) continue;
                            why[0] = '\0';
                            fs_cpu_rss_reset();
                            inputs in;
                            if (!inputs_make(&in, o.batch, o.heads, o.kv_heads, N, N, d, o.dtype, causal)) {
                                snprintf(why, sizeof why, "cannot allocate the inputs");
                            } else if (base && fs_cpu_baseline_bytes(&in.a) > o.mem_limit) {
                                snprintf(why, sizeof why, "cannot allocate: S and P need %.1f GiB, "
                                         "over the limit of %.1f GiB (--mem-limit)",
                                         fs_cpu_baseline_bytes(&in.a) / (1u << 30), o.mem_limit / (1u << 30));
                            } else {
                                double t = time_runs(clk, base ? RUN_BASELINE : RUN_PREFILL, &in.a, version,
                                                     r.threads, o.isa, o.Bq, o.Bk, o.reps, why, sizeof why);
                                if (t > 0) {
                                    r.ok = true;
                                    r.ms = t * 1e3;
                                    r.gflops = flops / t * 1e-9;
                                    r.peak_fraction = m.fma[r.threads] > 0 ? r.gflops / m.fma[r.threads] : 0.0;
                                    r.gbps = bytes / t * 1e-9;
                                    r.rss_mb = fs_cpu_rss_peak_mb();
                                } else if (base && !strncmp(why, "S and P", 7)) {
                                    char tmp[sizeof why];
                                    snprintf(tmp, sizeof tmp, "cannot allocate: %s", why);
                                    memcpy(why, tmp, sizeof why);
                                }
                            }
                            inputs_free(&in);
                            rows[n_rows++] = r;
                            print_row(&o, &r, why);
                        }
                    }
    if (o.backward)
        for (int di = 0; di < o.d.n; di++)
            for (int ci = 0; ci < o.causal.n; ci++)
                for (int ni = 0; ni < o.backward_N.n; ni++)
                    for (int ti = 0; ti < o.threads.n; ti++)
                        for (int k = 0; k < (o.baseline ? 2 : 1) && n_rows < cap; k++) {
                            bool base = k == 1;
                            int32_t N = o.backward_N.v[ni], d = o.d.v[di], causal = o.causal.v[ci];
                            int32_t threads = o.threads.v[ti];
                            bench_row r = {.N = N, .d = d, .causal = causal, .threads = threads};
                            snprintf(r.kernel, sizeof r.kernel, base ? "baseline-bwd" : "flash-bwd-v1");
                            double flops = 10.0 * N * (double)N * d * o.heads * o.batch * (causal ? 0.5 : 1.0);
                            /* read Q, K, V, O, dO, L; written dQ, dK, dV */
                            double bytes = (4.0 * o.heads + 4.0 * o.kv_heads) * o.batch * N * d * 4.0;
                            why[0] = '\0';
                            fs_cpu_rss_reset();
                            inputs in;
                            if (!inputs_make(&in, o.batch, o.heads, o.kv_heads, N, N, d, FS_CPU_DTYPE_F32, causal)) {
                                snprintf(why, sizeof why, "cannot allocate the inputs");
                            } else if (base && fs_cpu_baseline_bytes(&in.a) > o.mem_limit) {
                                snprintf(why, sizeof why, "cannot allocate: P and dP need %.1f GiB, "
                                         "over the limit of %.1f GiB (--mem-limit)",
                                         fs_cpu_baseline_bytes(&in.a) / (1u << 30), o.mem_limit / (1u << 30));
                            } else if (prefill_bytes(&o, N, d) * 2 > o.mem_limit) {
                                snprintf(why, sizeof why, "cannot allocate: over the limit of %.1f GiB "
                                         "(--mem-limit)", o.mem_limit / (1u << 30));
                            } else {
                                double t = time_backward(clk, base, &in.a, threads, o.isa, o.Bq, o.Bk, o.reps, why, sizeof why);
                                if (t > 0) {
                                    r.ok = true;
                                    r.ms = t * 1e3;
                                    r.gflops = flops / t * 1e-9;
                                    r.peak_fraction = m.fma[threads] > 0 ? r.gflops / m.fma[threads] : 0.0;
                                    r.gbps = bytes / t * 1e-9;
                                    r.rss_mb = fs_cpu_rss_peak_mb();
                                }
                            }
                            inputs_free(&in);
                            rows[n_rows++] = r;
                            print_row(&o, &r, why);
                        }
    if (o.decode)
        for (int ni = 0; ni < o.decode_N.n; ni++)
            for (int ti = 0; ti < o.threads.n; ti++)
                for (int ei = 0; ei < o.n_decode_dtypes; ei++)
                for (int vi = 0; vi < o.decode_versions.n && n_rows < cap; vi++) {
                    int32_t N = o.decode_N.v[ni], threads = o.threads.v[ti], d = o.decode_d;
                    int32_t version = o.decode_versions.v[vi];
                    fs_cpu_dtype dt = o.decode_dtypes[ei];
                    if (o.decode_f16_longest_only && ei > 0 && ni != o.decode_N.n - 1) continue;
                    bench_row r = {.N = N, .d = d, .causal = 0, .threads = threads};
                    if (dt == FS_CPU_DTYPE_F32)
                        snprintf(r.kernel, sizeof r.kernel, "decode-v%d", version);
                    else
                        snprintf(r.kernel, sizeof r.kernel, "decode-v%d-%s", version,
                                 fs_cpu_dtype_str(dt));
                    why[0] = '\0';
                    /* the read bandwidth again, just before the row: on a shared machine (and a
                     * shared host) it moves by tens of percent within minutes, and decode is
                     * judged against what memory gives at the same time */
                    double bw_now = fs_cpu_measure_read_gbps(threads, o.smoke ? (size_t)32 << 20
                                                                             : (size_t)512 << 20);
                    fs_cpu_rss_reset();
                    inputs in;
                    if (!inputs_make(&in, o.batch, o.decode_heads, o.decode_kv_heads, o.decode_rows,
                                     N, d, dt, false)) {
                        snprintf(why, sizeof why, "cannot allocate the inputs");
                    } else {
                        double t = time_runs(clk, RUN_DECODE, &in.a, version, threads, o.isa, 0, 0, o.reps,
                                             why, sizeof why);
                        if (t > 0) {
                            double bytes = 2.0 * o.batch * o.decode_kv_heads * N * d *
                                           (double)fs_cpu_dtype_size(dt);
                            double flops = 4.0 * N * d * (double)o.decode_heads * o.decode_rows * o.batch;
                            r.ok = true;
                            r.ms = t * 1e3;
                            r.gflops = flops / t * 1e-9;
                            r.gbps = bytes / t * 1e-9;
                            r.peak_fraction = bw_now > 0 ? r.gbps / bw_now : 0.0;
                            r.bw_now = bw_now;
                            r.rss_mb = fs_cpu_rss_peak_mb();
                        }
                    }
                    inputs_free(&in);
                    rows[n_rows++] = r;
                    print_row(&o, &r, why);
                }
    if (o.plot) plot(&o, rows, n_rows, m.max_threads);
    free(rows);
    free(m.fma);
    free(m.bw);
    return 0;
}
