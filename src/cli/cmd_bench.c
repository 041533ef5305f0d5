/* cmd_bench.c: `flashstep bench`, the timing of the full-size CPU kernels (src/kernels/cpu)
 * against the materializing baseline, with this machine's FMA peak and read bandwidth measured
 * on the spot so that every figure is also a share of what the machine can do.
 *
 * Phases: parse and check every argument (exit 2 before any work), measure the machine, then
 * for each configuration allocate inputs, time the kernel (best of a few runs), read the peak
 * resident memory, free; rows are printed as they come (table, CSV or JSONL); last, the plot.
 * Measured figures only: nothing here is estimated except the memory a configuration needs,
 * which decides before any work whether it can run at all. The arguments are in
 * bench_options.c, the printing and the plot in bench_report.c (bench.h).
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
#include "cli/bench.h"
#include "kernels/cpu/cpu_attn.h"


/* Seconds on the clock rows are timed by: CLOCK_MONOTONIC (the wall clock), or with --cpu-time
 * CLOCK_PROCESS_CPUTIME_ID (one-thread rows only, where the two agree on an idle core). */
static double now_s(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
    double pooled = 0;   /* the largest paged copy: N rounded up to whole pages */
    for (int i = 0; i < o->decode_pages.n; i++) {
        double pg = o->decode_pages.v[i];
        if (pg > 0) {
            double rows = ceil(N / pg) * pg * o->batch * o->decode_kv_heads * o->decode_d;
            if (rows > pooled) pooled = rows;
        }
    }
    /* K and V, the probe's buffer of the same size, and the paged copy */
    return (2 * kv + 2 * kv + 2 * pooled) * es + 1e6;
}

/* ---- inputs ---------------------------------------------------------------------------- */

static void *alloc_fill(size_t count, fs_cpu_dtype t, uint64_t *state, bool big)
{
    size_t es = fs_cpu_dtype_size(t);
    void *p = big ? fs_cpu_alloc_big(count * es) : malloc(count * es);
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

/* big: K and V on huge pages where the system allows (fs_cpu_alloc_big), as the decode rows
 * have them (a KV cache is one large allocation) */
static bool inputs_make(inputs *in, int32_t batch, int32_t hq, int32_t hkv, int32_t n_q,
                        int32_t n_kv, int32_t d, fs_cpu_dtype t, bool causal, bool big)
{
    memset(in, 0, sizeof *in);
    uint64_t s = 0x5eed;
    size_t nq = (size_t)batch * hq * n_q * d, nk = (size_t)batch * hkv * n_kv * d;
    in->Q = alloc_fill(nq, t, &s, false);
    in->K = alloc_fill(nk, t, &s, big);
    in->V = alloc_fill(nk, t, &s, big);
    in->O = alloc_fill(nq, t, &s, false);
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

/* A paged copy of a decode problem's K and V: vLLM's pools (n_pages, page, n_kv_heads, d) with
 * the logical blocks of every batch element scattered over the pool by a shuffled block table
 * (a fixed seed), so that consecutive blocks are not neighbours in memory. */
typedef struct {
    fs_cpu_paged_kv kv;
    void *K, *V;
    int32_t *table;
} paged;

static bool paged_make(paged *pk, const fs_cpu_attn *a, int32_t page)
{
    memset(pk, 0, sizeof *pk);
    int32_t per = (a->n_kv + page - 1) / page;
    int64_t n_pages = (int64_t)a->batch * per;
    size_t es = fs_cpu_dtype_size(a->dtype), row = (size_t)a->d * es;
    size_t bytes = (size_t)n_pages * page * a->n_kv_heads * row;
    pk->K = fs_cpu_alloc_big(bytes);
    pk->V = fs_cpu_alloc_big(bytes);
    pk->table = malloc((size_t)n_pages * sizeof(int32_t));
    if (!pk->K || !pk->V || !pk->table || n_pages > INT32_MAX) return false;
    for (int64_t k = 0; k < n_pages; k++) pk->table[k] = (int32_t)k;
    uint64_t s = 0x9a9e;
    for (int64_t k = n_pages - 1; k > 0; k--) {   /* Fisher–Yates */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int64_t j = (int64_t)((s >> 33) % (uint64_t)(k + 1));
        int32_t t = pk->table[k];
        pk->table[k] = pk->table[j];
        pk->table[j] = t;
    }
    for (int32_t b = 0; b < a->batch; b++)
        for (int32_t g = 0; g < a->n_kv_heads; g++)
            for (int32_t j = 0; j < a->n_kv; j++) {
                int64_t ph = pk->table[(int64_t)b * per + j / page];
                size_t dst = (size_t)(((ph * page + j % page) * a->n_kv_heads + g)) * row;
                size_t src = (size_t)((((int64_t)b * a->n_kv_heads + g) * a->n_kv + j)) * row;
                memcpy((char *)pk->K + dst, (const char *)a->K + src, row);
                memcpy((char *)pk->V + dst, (const char *)a->V + src, row);
            }
    pk->kv = (fs_cpu_paged_kv){.page_size = page, .n_pages = (int32_t)n_pages,
                               .blocks_per_seq = per, .block_table = pk->table,
                               .K_pool = pk->K, .V_pool = pk->V};
    return true;
}

static void paged_free(paged *pk)
{
    free(pk->K);
    free(pk->V);
    free(pk->table);
}

/* ---- timing ---------------------------------------------------------------------------- */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    double call_s;       /* median seconds of one kernel call */
    double probe_gbps;   /* median rate of the probe passes */
    double ratio;        /* median over the pairs of (kernel GB/s) / (probe GB/s of the pass
                            just before it) */
    int pairs;
} decode_timing;

#define DECODE_MAX_PAIRS 1001

/* Decode rows: probe pass and kernel call alternate. The probe reads a buffer of the kernel's
 * own byte count (`bytes`, the K and V it reads) with the same number of threads, started the
 * same way, so both sides see the same cache sizes, the same thread start-up and, pass by pass,
 * the same moment of the machine. Pairs go on until 0.3 s have passed (smoke: 0.02 s) and at
 * least 11 pairs have run (at most DECODE_MAX_PAIRS). One warm-up call and pass first. Both
 * sides are timed on the rows' clock (--cpu-time: the process's CPU time). */
static bool time_decode(clockid_t clk, const fs_cpu_attn *a, const fs_cpu_paged_kv *kv,
                        int32_t version, int32_t threads, fs_cpu_isa isa, size_t bytes, bool smoke,
                        decode_timing *tm, char *why, size_t n)
{
    size_t nf = bytes / sizeof(float);
    float *x = fs_cpu_alloc_big(nf * sizeof(float));
    double *tk = malloc(DECODE_MAX_PAIRS * sizeof(double));
    double *tp = malloc(DECODE_MAX_PAIRS * sizeof(double));
    double *ra = malloc(DECODE_MAX_PAIRS * sizeof(double));
    bool ok = false;
    if (!x || !tk || !tp || !ra) {
        snprintf(why, n, "cannot allocate the probe's buffer");
        goto done;
    }
    for (size_t k = 0; k < nf; k++) x[k] = 1.0f;   /* touch every page before timing */
    fs_cpu_decode_opts o = fs_cpu_decode_opts_default();
    o.version = version;
    o.threads = threads;
    o.isa = isa;
    double budget = smoke ? 0.02 : 0.3, t_start = now_s(CLOCK_MONOTONIC);
    int pairs = 0;
    for (int it = -1; it < DECODE_MAX_PAIRS; it++) {   /* it = −1: warm-up */
        double t0 = now_s(clk);
        fs_cpu_read_pass_s(threads, x, nf);
        double p = now_s(clk) - t0;
        t0 = now_s(clk);
        fs_status st = kv ? fs_cpu_decode_paged(a, kv, &o) : fs_cpu_decode(a, &o);
        double t = now_s(clk) - t0;
        if (st != FS_OK) {
            snprintf(why, n, "%s", fs_status_str(st));
            goto done;
        }
        if (it < 0) continue;
        tk[pairs] = t;
        tp[pairs] = p > 0 ? (double)(nf * sizeof(float)) / p * 1e-9 : 0.0;
        ra[pairs] = tp[pairs] > 0 ? (double)bytes / t * 1e-9 / tp[pairs] : 0.0;
        pairs++;
        if (pairs >= 11 && now_s(CLOCK_MONOTONIC) - t_start >= budget) break;
    }
    tm->pairs = pairs;
    tm->call_s = median(tk, pairs);
    tm->probe_gbps = median(tp, pairs);
    tm->ratio = median(ra, pairs);
    ok = true;
done:
    free(x);
    free(tk);
    free(tp);
    free(ra);
    return ok;
}


typedef enum { RUN_PREFILL, RUN_BASELINE } run_kind;

/* The FMA peak of this moment, for the run that follows it: a short probe (five bursts of
 * 10 ms, best kept; smoke: 1 ms) with the row's threads, on the row's clock. */
static double fma_now(clockid_t clk, int32_t threads, bool smoke)
{
    double s = smoke ? 0.005 : 0.05;
    return clk == CLOCK_MONOTONIC ? fs_cpu_measure_fma_gflops(threads, s) : fs_cpu_measure_fma_gflops_cputime(s);
}

/* Prefill and backward rows' share of the peak: each timed run follows a probe of the FMA peak
 * (fma_now), so that both see the same moment of the machine (its clock, the other processes);
 * the share is the median over the runs of (the run's GFLOP/s) / (the probe's just before it).
 * A peak measured once at the start moves, by the time a row runs, by as much as the 15 points
 * the same kernel's share moved between two commands on a virtual Xeon (docs/benchmarks.md,
 * "Intel and AMD"). */
typedef struct {
    double flops;        /* of one call, 0: no pairing (the share is then not measured here) */
    double ratio[101];   /* per run: GFLOP/s over the probe's */
    double probe[101];   /* per run: the probe's GFLOP/s */
    int n;
} peak_pairs;

static void pairs_add(peak_pairs *pp, double t, double probe)
{
    if (!pp || !(pp->flops > 0) || pp->n >= 101 || !(t > 0) || !(probe > 0)) return;
    pp->probe[pp->n] = probe;
    pp->ratio[pp->n++] = pp->flops / t * 1e-9 / probe;
}

/* The median share and the median probe (0 when nothing was paired). */
static double pairs_share(peak_pairs *pp, double *probe)
{
    if (!pp || pp->n == 0) return *probe = 0.0;
    *probe = median(pp->probe, pp->n);
    return median(pp->ratio, pp->n);
}

/* A kernel's workspace of `bytes` (0: none, *work = NULL), allocated and touched once before a
 * row's timed calls, as a framework's allocator keeps one. false when it cannot be had (why
 * filled). */
static bool bench_work(size_t bytes, void **work, char *why, size_t n)
{
    *work = bytes ? fs_cpu_alloc_big(bytes) : NULL;
    if (bytes && !*work) {
        snprintf(why, n, "cannot allocate the workspace");
        return false;
    }
    if (*work) memset(*work, 0, bytes);
    return true;
}

/* Best time in seconds over the runs; < 0 when the kernel refused (why filled). With pp, each
 * run follows a probe of the FMA peak (peak_pairs). */
static double time_runs(clockid_t clk, run_kind k, const fs_cpu_attn *a, int32_t version, int32_t threads,
                        fs_cpu_isa isa, int32_t block, int32_t Bq, int32_t Bk, int32_t reps, bool smoke,
                        bool fresh, peak_pairs *pp, char *why, size_t n)
{
    fs_cpu_opts o = fs_cpu_opts_default();
    o.version = version;
    o.threads = threads;
    o.isa = isa;
    o.Bq = Bq;
    o.Bk = Bk;
    o.block = block;
    /* fresh: each call allocates its own memory (--alloc-per-call) */
    o.work_bytes = k == RUN_PREFILL && !fresh ? fs_cpu_prefill_workspace(a, &o) : 0;
    if (!bench_work(o.work_bytes, &o.work, why, n)) return -1.0;
    double best = INFINITY;
    for (int32_t r = 0; r < reps; r++) {
        fs_status st = FS_OK;
        double probe = pp ? fma_now(clk, threads, smoke) : 0.0;
        double t0 = now_s(clk), t;
        if (k == RUN_PREFILL) {
            st = fs_cpu_prefill(a, &o);
            if (st != FS_OK) snprintf(why, n, "%s", fs_status_str(st));
        } else if (k == RUN_BASELINE) {
            st = fs_cpu_baseline(a, threads, why, n);
        }
        if (st != FS_OK) {
            best = -1.0;
            break;
        }
        t = now_s(clk) - t0;
        pairs_add(pp, t, probe);
        if (t < best) best = t;
        if (t > 2.0) break;   /* long rows run once: the spread is small next to the cost */
    }
    free(o.work);
    return best;
}

/* Backward rows: the forward (newest version) runs once, untimed, for O and L; then the best of
 * the runs of the backward of that version (baseline: the materializing one). Time in seconds;
 * < 0 when the kernel refused or memory ran out (why filled). */
static double time_backward(clockid_t clk, bool base, fs_cpu_attn *a, int32_t version, int32_t threads,
                            fs_cpu_isa isa, int32_t Bq, int32_t Bk, int32_t reps, bool smoke,
                            bool fresh, peak_pairs *pp, char *why, size_t n)
{
    size_t nq = (size_t)a->batch * a->n_q_heads * a->n_q * a->d;
    size_t nk = (size_t)a->batch * a->n_kv_heads * a->n_kv * a->d;
    uint64_t seed = 0xd0;
    float *dO = alloc_fill(nq, FS_CPU_DTYPE_F32, &seed, false);
    float *dQ = malloc(nq * sizeof(float)), *dK = malloc(nk * sizeof(float));
    float *dV = malloc(nk * sizeof(float));
    float *L = malloc((size_t)a->batch * a->n_q_heads * a->n_q * sizeof(float));
    double best = -1.0;
    fs_cpu_backward_opts o = fs_cpu_backward_opts_default();   /* before any goto: done frees its work */
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
    o.version = version;
    o.threads = threads;
    o.isa = isa;
    o.Bq = Bq;
    o.Bk = Bk;
    o.work_bytes = !base && !fresh ? fs_cpu_backward_workspace(a, &o) : 0;
    if (!bench_work(o.work_bytes, &o.work, why, n)) goto done;
    best = INFINITY;
    for (int32_t r = 0; r < reps; r++) {
        double probe = pp ? fma_now(clk, threads, smoke) : 0.0;
        double t0 = now_s(clk);
        if (base) {
            st = fs_cpu_baseline_backward(a, dO, dQ, dK, dV, threads, why, n);
        } else {
            st = fs_cpu_backward(a, dO, dQ, dK, dV, &o);
            if (st != FS_OK) snprintf(why, n, "%s", fs_status_str(st));
        }
        if (st != FS_OK) {
            best = -1.0;
            break;
        }
        double t = now_s(clk) - t0;
        pairs_add(pp, t, probe);
        if (t < best) best = t;
        if (t > 2.0) break;
    }
done:
    a->L = NULL;
    free(o.work);
    free(dO);
    free(dQ);
    free(dK);
    free(dV);
    free(L);
    return best;
}

/* --dropout: a row's kernel timed without and with dropout (t[0], t[1]), one run of each in
 * turn, best of each kept, so that a busy machine slows both alike. The prefill or (bwd) the
 * backward of that version. false when a run refused (why filled). */
static bool time_dropout_pair(clockid_t clk, fs_cpu_attn *a, bool bwd, int32_t version, int32_t threads,
                              fs_cpu_isa isa, int32_t block, int32_t Bq, int32_t Bk, int32_t reps,
                              bool fresh, double p, double t[2], char *why, size_t n)
{
    fs_dropout dr = {true, p, 0x5eed};
    t[0] = t[1] = INFINITY;
    for (int32_t r = 0; r < reps; r++)
        for (int w = 0; w < 2; w++) {
            a->dropout = w ? &dr : NULL;
            double x = bwd ? time_backward(clk, false, a, version, threads, isa, Bq, Bk, 1, false, fresh, NULL, why, n)
                           : time_runs(clk, RUN_PREFILL, a, version, threads, isa, block, Bq, Bk, 1, false, fresh,
                                       NULL, why, n);
            a->dropout = NULL;
            if (x < 0) return false;
            if (x < t[w]) t[w] = x;
        }
    return true;
}

/* The row with dropout beside a row without (r0), from the pair's times. */
static void dropout_row(const bench_opts *o, const bench_row *r0, const double t[2], double flops, double bytes,
                        double peak, bench_row *r, char *note, size_t n)
{
    bench_row out = *r0;
    size_t k = strlen(out.kernel);
    if (k > sizeof out.kernel - 6) k = sizeof out.kernel - 6;
    memcpy(out.kernel + k, "+drop", 6);
    *r = out;
    r->ms = t[1] * 1e3;
    r->gflops = flops / t[1] * 1e-9;
    r->peak_fraction = peak > 0 ? r->gflops / peak : 0.0;
    r->gbps = bytes / t[1] * 1e-9;
    snprintf(note, n, "dropout %g: %.2fx the time without (interleaved)", o->dropout, t[1] / t[0]);
}

int cli_bench(int argc, char **argv)
{
    bench_opts o;
    int rc = bench_parse_args(argc, argv, &o);
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
    bench_machine_line(&o, &m);
    const clockid_t clk = o.cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
    if (o.cpu_time) {
        fprintf(o.format == FORMAT_TABLE ? stdout : stderr,
                "# rows and the FMA peak timed by the process's CPU time (--cpu-time), not the wall clock\n");
    }
    bench_print_header(&o);

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
                            if (!inputs_make(&in, o.batch, o.heads, o.kv_heads, N, N, d, o.dtype, causal, false)) {
                                snprintf(why, sizeof why, "cannot allocate the inputs");
                            } else if (base && fs_cpu_baseline_bytes(&in.a) > o.mem_limit) {
                                snprintf(why, sizeof why, "cannot allocate: S and P need %.1f GiB, "
                                         "over the limit of %.1f GiB (--mem-limit)",
                                         fs_cpu_baseline_bytes(&in.a) / (1u << 30), o.mem_limit / (1u << 30));
                            } else if (o.dropout >= 0 && !base && version >= 4) {
                                double t[2];
                                if (time_dropout_pair(clk, &in.a, false, version, r.threads, o.isa, o.block, o.Bq, o.Bk, o.reps,
                                                      o.alloc_per_call, o.dropout, t, why, sizeof why)) {
                                    r.ok = true;
                                    r.ms = t[0] * 1e3;
                                    r.gflops = flops / t[0] * 1e-9;
                                    r.peak_fraction = m.fma[r.threads] > 0 ? r.gflops / m.fma[r.threads] : 0.0;
                                    r.gbps = bytes / t[0] * 1e-9;
                                    r.rss_mb = fs_cpu_rss_peak_mb();
                                    rows[n_rows++] = r;
                                    bench_print_row(&o, &r, why);
                                    if (n_rows < cap) {
                                        char note[120];
                                        dropout_row(&o, &r, t, flops, bytes, m.fma[r.threads], &r, note, sizeof note);
                                        rows[n_rows++] = r;
                                        bench_print_row(&o, &r, note);
                                    }
                                    inputs_free(&in);
                                    continue;
                                }
                            } else {
                                peak_pairs pp = {.flops = flops};
                                double t = time_runs(clk, base ? RUN_BASELINE : RUN_PREFILL, &in.a, version,
                                                     r.threads, o.isa, o.block, o.Bq, o.Bk, o.reps, o.smoke,
                                                     o.alloc_per_call, &pp, why, sizeof why);
                                if (t > 0) {
                                    r.ok = true;
                                    r.ms = t * 1e3;
                                    r.gflops = flops / t * 1e-9;
                                    r.peak_fraction = pairs_share(&pp, &r.fma_now);
                                    r.pairs = pp.n;
                                    r.gbps = bytes / t * 1e-9;
                                    r.rss_mb = fs_cpu_rss_peak_mb();
                                } else if (base && !strncmp(why, "S and P", 7)) {
                                    char tmp[sizeof why];
                                    /* the reason, cut to what fits after the prefix */
                                    snprintf(tmp, sizeof tmp, "cannot allocate: %.*s", (int)(sizeof tmp - sizeof "cannot allocate: "), why);
                                    memcpy(why, tmp, sizeof why);
                                }
                            }
                            inputs_free(&in);
                            rows[n_rows++] = r;
                            bench_print_row(&o, &r, why);
                        }
                    }
    if (o.backward)
        for (int di = 0; di < o.d.n; di++)
            for (int ci = 0; ci < o.causal.n; ci++)
                for (int ni = 0; ni < o.backward_N.n; ni++)
                    for (int ti = 0; ti < o.threads.n; ti++)
                        for (int k = 0; k < o.backward_versions.n + (o.baseline ? 1 : 0) && n_rows < cap; k++) {
                            bool base = k == o.backward_versions.n;   /* the versions, then the baseline */
                            int32_t bv = base ? 0 : o.backward_versions.v[k];
                            int32_t N = o.backward_N.v[ni], d = o.d.v[di], causal = o.causal.v[ci];
                            int32_t threads = o.threads.v[ti];
                            bench_row r = {.N = N, .d = d, .causal = causal, .threads = threads};
                            if (base) snprintf(r.kernel, sizeof r.kernel, "baseline-bwd");
                            else snprintf(r.kernel, sizeof r.kernel, "flash-bwd-v%d", (int)bv);
                            double flops = 10.0 * N * (double)N * d * o.heads * o.batch * (causal ? 0.5 : 1.0);
                            /* read Q, K, V, O, dO, L; written dQ, dK, dV */
                            double bytes = (4.0 * o.heads + 4.0 * o.kv_heads) * o.batch * N * d * 4.0;
                            why[0] = '\0';
                            fs_cpu_rss_reset();
                            inputs in;
                            if (!inputs_make(&in, o.batch, o.heads, o.kv_heads, N, N, d, FS_CPU_DTYPE_F32, causal, false)) {
                                snprintf(why, sizeof why, "cannot allocate the inputs");
                            } else if (base && fs_cpu_baseline_bytes(&in.a) > o.mem_limit) {
                                snprintf(why, sizeof why, "cannot allocate: P and dP need %.1f GiB, "
                                         "over the limit of %.1f GiB (--mem-limit)",
                                         fs_cpu_baseline_bytes(&in.a) / (1u << 30), o.mem_limit / (1u << 30));
                            } else if (prefill_bytes(&o, N, d) * 2 > o.mem_limit) {
                                snprintf(why, sizeof why, "cannot allocate: over the limit of %.1f GiB "
                                         "(--mem-limit)", o.mem_limit / (1u << 30));
                            } else if (o.dropout >= 0 && !base) {
                                double t[2];
                                if (time_dropout_pair(clk, &in.a, true, bv, threads, o.isa, 0, o.Bq, o.Bk, o.reps, o.alloc_per_call, o.dropout, t, why,
                                                      sizeof why)) {
                                    r.ok = true;
                                    r.ms = t[0] * 1e3;
                                    r.gflops = flops / t[0] * 1e-9;
                                    r.peak_fraction = m.fma[threads] > 0 ? r.gflops / m.fma[threads] : 0.0;
                                    r.gbps = bytes / t[0] * 1e-9;
                                    r.rss_mb = fs_cpu_rss_peak_mb();
                                    rows[n_rows++] = r;
                                    bench_print_row(&o, &r, why);
                                    if (n_rows < cap) {
                                        char note[120];
                                        dropout_row(&o, &r, t, flops, bytes, m.fma[threads], &r, note, sizeof note);
                                        rows[n_rows++] = r;
                                        bench_print_row(&o, &r, note);
                                    }
                                    inputs_free(&in);
                                    continue;
                                }
                            } else {
                                peak_pairs pp = {.flops = flops};
                                double t = time_backward(clk, base, &in.a, bv, threads, o.isa, o.Bq, o.Bk, o.reps,
                                                         o.smoke, o.alloc_per_call, &pp, why, sizeof why);
                                if (t > 0) {
                                    r.ok = true;
                                    r.ms = t * 1e3;
                                    r.gflops = flops / t * 1e-9;
                                    r.peak_fraction = pairs_share(&pp, &r.fma_now);
                                    r.pairs = pp.n;
                                    r.gbps = bytes / t * 1e-9;
                                    r.rss_mb = fs_cpu_rss_peak_mb();
                                }
                            }
                            inputs_free(&in);
                            rows[n_rows++] = r;
                            bench_print_row(&o, &r, why);
                        }
    if (o.decode)
        for (int ni = 0; ni < o.decode_N.n; ni++)
            for (int ti = 0; ti < o.threads.n; ti++)
                for (int ei = 0; ei < o.n_decode_dtypes; ei++)
                for (int pi = 0; pi < o.decode_pages.n; pi++)
                for (int vi = 0; vi < o.decode_versions.n && n_rows < cap; vi++) {
                    int32_t N = o.decode_N.v[ni], threads = o.threads.v[ti], d = o.decode_d;
                    int32_t version = o.decode_versions.v[vi], page = o.decode_pages.v[pi];
                    fs_cpu_dtype dt = o.decode_dtypes[ei];
                    if (o.decode_f16_longest_only && ei > 0 && ni != o.decode_N.n - 1) continue;
                    if (page > 0 && version < 4) continue;   /* paged: version 4 on */
                    bench_row r = {.N = N, .d = d, .causal = 0, .threads = threads};
                    char pg[16] = "";
                    if (page > 0) snprintf(pg, sizeof pg, "-p%d", page);
                    if (dt == FS_CPU_DTYPE_F32)
                        snprintf(r.kernel, sizeof r.kernel, "decode-v%d%s", version, pg);
                    else
                        snprintf(r.kernel, sizeof r.kernel, "decode-v%d-%s%s", version,
                                 fs_cpu_dtype_str(dt), pg);
                    why[0] = '\0';
                    fs_cpu_rss_reset();
                    inputs in;
                    paged pk = {0};
                    bool ok = inputs_make(&in, o.batch, o.decode_heads, o.decode_kv_heads,
                                          o.decode_rows, N, d, dt, false, true) &&
                              (page == 0 || paged_make(&pk, &in.a, page));
                    if (!ok) {
                        snprintf(why, sizeof why, "cannot allocate the inputs");
                    } else {
                        double bytes = 2.0 * o.batch * o.decode_kv_heads * N * d *
                                       (double)fs_cpu_dtype_size(dt);
                        decode_timing tm;
                        if (time_decode(clk, &in.a, page > 0 ? &pk.kv : NULL, version, threads, o.isa,
                                        (size_t)bytes, o.smoke, &tm, why, sizeof why)) {
                            double flops = 4.0 * N * d * (double)o.decode_heads * o.decode_rows * o.batch;
                            r.ok = true;
                            r.ms = tm.call_s * 1e3;
                            r.gflops = flops / tm.call_s * 1e-9;
                            r.gbps = bytes / tm.call_s * 1e-9;
                            r.peak_fraction = tm.ratio;
                            r.bw_now = tm.probe_gbps;
                            r.pairs = tm.pairs;
                            r.rss_mb = fs_cpu_rss_peak_mb();
                        }
                    }
                    paged_free(&pk);
                    inputs_free(&in);
                    rows[n_rows++] = r;
                    bench_print_row(&o, &r, why);
                }
    if (o.plot) bench_plot(&o, rows, n_rows, m.max_threads);
    free(rows);
    free(m.fma);
    free(m.bw);
    return 0;
}

