/* bench_options.c: `flashstep bench`'s arguments, parsed and checked before any work (bench.h). */
#if defined(__linux__)
#define _GNU_SOURCE   /* sched_getaffinity: the cores this process may run on */
#include <sched.h>
#endif
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
#include "cli/bench.h"
#include "kernels/cpu/cpu_attn.h"


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
        "ms (best of the timed runs; decode: the median call), GFLOP/s (4·N²·d per head,\n"
        "halved when causal; decode 4·N·d per query row and head), peak_fraction (prefill and\n"
        "backward: of the FMA peak at that thread count, the median over the timed runs of\n"
        "the run's GFLOP/s over a short FMA probe's just before it; decode: of the read\n"
        "bandwidth, the median over\n"
        "alternating pairs of one probe pass and one call of the kernel's GB/s over the GB/s\n"
        "of the pass before it, the probe reading as many bytes as the kernel with as many\n"
        "threads; pairs run for 0.3 s and at least 11),\n"
        "GB/s (prefill: Q, K, V, O moved once; decode: the K and V read), rss_mb (peak\n"
        "resident memory of the process during the row: inputs, scratch, and for the\n"
        "baseline its S and P).\n"
        "\n"
        "options (LIST is comma-separated numbers):\n"
        "  --quick             under two minutes: prefill d=128, N=512..4096, causal and not,\n"
        "                      backward d=128, N=4096, decode at 4096 and 32768 positions\n"
        "                      (float32, and float16 K/V at 32768), all at all threads\n"
        "  --smoke             a few seconds, tiny sizes, decode versions 4 and %d, contiguous\n"
        "                      and in 16-token pages (what `make test` runs)\n"
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
        "  --block RxC         prefill micro-tile, rows x keys (AVX-512: 6x64 or 12x32;\n"
        "                      default: the one chosen for this CPU, named in the header)\n"
        "  --dtype T           storage: f32, f16, bf16    (default f32; the baseline is f32 only)\n"
        "  --isa I             auto, scalar, avx2, avx512, neon (default auto)\n"
        "  --decode-n LIST     decode KV lengths          (default 4096,8192,...,131072)\n"
        "  --decode-heads Q/K  decode query/KV heads      (default 32/8)\n"
        "  --decode-d D        decode head dimension      (default 128)\n"
        "  --decode-rows R     query rows per head        (default 1)\n"
        "  --decode-dtype LIST storage of the decode rows: f32, f16, bf16 (default: --dtype)\n"
        "  --decode-page LIST  decode K/V layout: 0 contiguous, P in 1..65536 a paged cache of\n"
        "                      P-token pages in vLLM's layout, its block table shuffled (rows\n"
        "                      decode-vK-pP, versions 4 and later only; default 0)\n"
        "  --backward-n LIST   backward lengths (d, causal, threads as for prefill;\n"
        "                      default 1024,2048,4096). Backward rows: flash-bwd-vK (recomputation,\n"
        "                      K/V-outer) and baseline-bwd (P and dP held in full, OpenBLAS);\n"
        "                      GFLOP/s counts 10·N²·d per head (2.5 times the forward's five\n"
        "                      products of 2·N²·d, against the forward's two), halved when\n"
        "                      causal; the forward that gives O and L runs before, untimed\n"
        "  --backward-version LIST  backward kernel versions 1..%d (default %d)\n"
        "  --no-baseline, --no-prefill, --no-decode, --no-backward   leave a part out\n"
        "  --cpu-time          time rows by the process's CPU time, not the wall clock: on\n"
        "                      a loaded machine this leaves out the time other processes held\n"
        "                      the core (caches and memory stay shared). One thread only\n"
        "                      (--threads 1); the FMA peak and the decode rows' probe passes\n"
        "                      are then timed the same way, the read bandwidth of the header\n"
        "                      stays wall-clock\n"
        "  --dropout P         beside each prefill row of versions 4-%d and each backward row, the\n"
        "                      same kernel with dropout P (0 <= P < 1; kernel name +drop), the\n"
        "                      two run alternately, best of each kept, and the row with dropout\n"
        "                      notes its time over the one without\n"
        "  --alloc-per-call    each prefill and backward call allocates its own memory (packed\n"
        "                      K and V, scratch), which the system clears page by page; by\n"
        "                      default a row's calls share one workspace allocated before they\n"
        "                      are timed (fs_cpu_opts.work, fs_cpu_backward_opts.work)\n"
        "  --reps R            timed runs per prefill and backward row, best kept (default 3;\n"
        "                      a row whose first run takes over 2 s runs once); decode rows\n"
        "                      time alternating pairs instead (above)\n"
        "  --mem-limit GIB     memory one row may use     (default: half of what is available)\n"
        "  --format F          table, csv or jsonl        (default table)\n"
        "  --plot FILE.png     GFLOP/s and peak memory against N (needs gnuplot)\n"
        "  --help              this text\n",
        FS_CPU_DECODE_VERSIONS, FS_CPU_MAX_D, FS_CPU_VERSIONS, FS_CPU_VERSIONS,
        FS_CPU_DECODE_VERSIONS, FS_CPU_DECODE_VERSIONS, FS_CPU_BACKWARD_VERSIONS,
        FS_CPU_BACKWARD_VERSIONS, FS_CPU_VERSIONS);
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

#define BENCH_STR_(x) #x
#define BENCH_STR(x) BENCH_STR_(x)   /* a macro's value as a string literal */

static int bad(const char *fmt, const char *what)
{
    fprintf(stderr, "flashstep bench: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, " (see flashstep bench --help)\n");
    return 2;
}

int32_t bench_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
#if defined(__linux__)
    /* pinned (taskset), the cores of the pin: 16 threads on 2 pinned cores time the switching */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 1 && CPU_COUNT(&set) < n)
        n = CPU_COUNT(&set);
#endif
    return n < 1 ? 1 : n > FS_CPU_MAX_THREADS ? FS_CPU_MAX_THREADS : (int32_t)n;
}

/* Returns 0, or 2 after printing why. */
int bench_parse_args(int argc, char **argv, bench_opts *o)
{
    int32_t all = bench_cores();
    memset(o, 0, sizeof *o);
    list_range_pow2(&o->N, 512, 32768);
    o->d = (int_list){{64, 128}, 2};
    o->causal = (int_list){{0, 1}, 2};
    o->threads.n = 0;
    for (int32_t t = 1; t <= all && o->threads.n < MAX_LIST; t++) o->threads.v[o->threads.n++] = t;
    o->versions = (int_list){{FS_CPU_VERSIONS}, 1};
    o->decode_versions = (int_list){{FS_CPU_DECODE_VERSIONS}, 1};
    o->backward_versions = (int_list){{FS_CPU_BACKWARD_VERSIONS}, 1};
    o->decode_pages = (int_list){{0}, 1};
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
    o->dropout = -1;
    o->mem_limit = 0;
    bool quick = false, smoke = false, explicit_n = false, explicit_dn = false,
         explicit_d = false, explicit_t = false, explicit_bn = false, explicit_pages = false,
         explicit_dv = false;
    bool quick_f16_longest = false;
    const char *block_name = NULL;
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
        } else if (!strcmp(a, "--alloc-per-call")) {
            o->alloc_per_call = true;
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
        } else if (!strcmp(a, "--block")) {
            NEED_VALUE();
            block_name = v;   /* resolved below, once --isa is known */
        } else if (!strcmp(a, "--batch")) {
            NEED_VALUE();
            if (!parse_int(v, 1, 1024, &o->batch)) return bad("--batch wants 1..1024, not '%s'", v);
        } else if (!strcmp(a, "--version")) {
            NEED_VALUE();
            if (!parse_list(v, 1, FS_CPU_VERSIONS, &o->versions))
                return bad("--version wants kernel versions 1.." BENCH_STR(FS_CPU_VERSIONS)
                           " separated by commas, not '%s'", v);
        } else if (!strcmp(a, "--decode-version")) {
            NEED_VALUE();
            explicit_dv = true;
            if (!parse_list(v, 1, FS_CPU_DECODE_VERSIONS, &o->decode_versions))
                return bad("--decode-version wants decode versions 1.." BENCH_STR(FS_CPU_DECODE_VERSIONS)
                           " separated by commas, not '%s'", v);
        } else if (!strcmp(a, "--backward-version")) {
            NEED_VALUE();
            if (!parse_list(v, 1, FS_CPU_BACKWARD_VERSIONS, &o->backward_versions))
                return bad("--backward-version wants backward versions 1.." BENCH_STR(FS_CPU_BACKWARD_VERSIONS)
                           " separated by commas, not '%s'", v);
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
        } else if (!strcmp(a, "--decode-page")) {
            NEED_VALUE();
            explicit_pages = true;
            if (!parse_list(v, 0, 65536, &o->decode_pages))
                return bad("--decode-page wants page sizes 0..65536 (0 = contiguous) separated by commas, not '%s'", v);
        } else if (!strcmp(a, "--decode-d")) {
            NEED_VALUE();
            if (!parse_int(v, FS_CPU_MIN_D, FS_CPU_MAX_D, &o->decode_d)) return bad("--decode-d wants 1..512, not '%s'", v);
        } else if (!strcmp(a, "--decode-rows")) {
            NEED_VALUE();
            if (!parse_int(v, 1, 64, &o->decode_rows)) return bad("--decode-rows wants 1..64, not '%s'", v);
        } else if (!strcmp(a, "--dropout")) {
            NEED_VALUE();
            char *end;
            double p = strtod(v, &end);
            if (end == v || *end || !(p >= 0 && p < 1))
                return bad("--dropout wants a probability from 0 up to but not including 1, not '%s'", v);
            o->dropout = p;
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
    if (block_name) {
        int32_t nb = fs_cpu_prefill_blocks(o->isa), k = 1;
        while (k <= nb && strcmp(block_name, fs_cpu_prefill_block_str(o->isa, k))) k++;
        if (k > nb)
            return bad("--block wants a micro-tile of these kernels (the header names the default), not '%s'",
                       block_name);
        o->block = k;
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
        if (o->reps > 3) o->reps = 3;   /* three pairs: the share is their median */
    }
    o->smoke = smoke;
    if (smoke) {
        if (!explicit_n) o->N = (int_list){{64, 256}, 2};
        if (!explicit_d) o->d = (int_list){{32, 64}, 2};
        if (!explicit_t) o->threads = (int_list){{1, all}, all > 1 ? 2 : 1};
        if (!explicit_dn) o->decode_N = (int_list){{1024}, 1};
        if (!explicit_bn) o->backward_N = (int_list){{64, 256}, 2};
        if (!explicit_pages) o->decode_pages = (int_list){{0, 16}, 2};
        if (!explicit_dv) o->decode_versions = (int_list){{4, FS_CPU_DECODE_VERSIONS}, 2};
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

