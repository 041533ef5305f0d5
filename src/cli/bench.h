/* bench.h: what the files of `flashstep bench` share (internal to src/cli; the command is
 * cli_bench in cli.h).
 *
 *   bench_options.c   the arguments: parsed and checked together before any work (exit 2)
 *   bench_report.c    the output: the machine line, the header, one row at a time (table, CSV
 *                     or JSONL), and the PNG plot through gnuplot
 *   cmd_bench.c       the work: memory each configuration needs, inputs, timing, the main loop
 */
#ifndef FS_CLI_BENCH_H
#define FS_CLI_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/cpu/cpu_attn.h"

#define MAX_LIST 32

typedef enum { FORMAT_TABLE = 0, FORMAT_CSV, FORMAT_JSONL } bench_format;

typedef struct {
    int32_t v[MAX_LIST];
    int n;
} int_list;

typedef struct {
    int_list N, d, causal, threads, versions, decode_versions, decode_N, backward_N;
    int_list backward_versions;
    int_list decode_pages;   /* page sizes of the decode rows, 0 = contiguous K/V (default 0) */
    int32_t heads, kv_heads, batch;
    int32_t Bq, Bk;      /* prefill and backward tile sizes, 0 = the kernel's defaults */
    int32_t block;       /* prefill micro-tile (fs_cpu_opts.block), 0 = this CPU's choice */
    int32_t decode_heads, decode_kv_heads, decode_d, decode_rows;
    fs_cpu_dtype dtype;
    fs_cpu_dtype decode_dtypes[3];   /* storage types of the decode rows (default: dtype) */
    int n_decode_dtypes;
    fs_cpu_isa isa;
    bool baseline, prefill, decode, backward;
    bool smoke;          /* --smoke: also shorter machine measurements */
    bool cpu_time;       /* --cpu-time: rows timed by the process's CPU time (1 thread only) */
    bool decode_f16_longest_only;   /* --quick: the float16 decode row at the longest N only */
    bool alloc_per_call; /* --alloc-per-call: each prefill and backward call allocates its own
                            memory instead of the row's workspace (fs_cpu_opts.work,
                            fs_cpu_backward_opts.work) */
    int32_t reps;
    double dropout;      /* --dropout P: also time each prefill (versions ≥ 4) and backward row
                            with dropout, alternating with the row without; < 0: not asked */
    double mem_limit;    /* bytes a configuration may use (inputs, scratch, baseline S and P) */
    bench_format format;
    const char *plot;    /* PNG path or NULL */
} bench_opts;

typedef struct {
    char kernel[40];
    int32_t N, d, causal, threads;
    bool ok;             /* false: it did not run (see the message printed with it) */
    double ms, gflops, peak_fraction, gbps, rss_mb;
    double bw_now;       /* decode rows: median rate of the probe passes between the calls (GB/s) */
    double fma_now;      /* prefill and backward rows: median FMA peak probed before each run (GFLOP/s) */
    int pairs;           /* probe passes and kernel calls timed, alternating (decode: read
                            probe; prefill and backward: FMA probe) */
} bench_row;

typedef struct {
    double *fma;         /* GFLOP/s by thread count, index = threads */
    double *bw;          /* GB/s by thread count */
    double ghz;          /* the clock of one thread, 0 if not measured */
    int32_t max_threads;
} machine;

/* bench_options.c: fill o from argv (defaults, then every option, then the checks that need them
 * all). 0, or −1 after --help (printed), or 2 with the message printed. */
int bench_parse_args(int argc, char **argv, bench_opts *o);

/* bench_options.c: the cores the threads can use (the default thread counts). */
int32_t bench_cores(void);

/* bench_report.c */
void bench_machine_line(const bench_opts *o, const machine *m);   /* the "# machine" lines */
void bench_print_header(const bench_opts *o);
void bench_print_row(const bench_opts *o, const bench_row *r, const char *note);
void bench_plot(const bench_opts *o, const bench_row *rows, int n_rows, int32_t threads);

#endif
