/* bench_report.c: what `flashstep bench` prints: the machine, the rows (table, CSV or JSONL) and
 * the plot (bench.h). */
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


/* ---- output ---------------------------------------------------------------------------- */

void bench_print_header(const bench_opts *o)
{
    if (o->format == FORMAT_CSV)
        printf("kernel,N,d,causal,threads,ms,gflops,peak_fraction,gbps,rss_mb\n");
    else if (o->format == FORMAT_TABLE)
        printf("%-16s %7s %5s %6s %7s %11s %9s %9s %8s %9s\n", "kernel", "N", "d", "causal",
               "threads", "ms", "GFLOP/s", "of peak", "GB/s", "RSS MiB");
}

void bench_print_row(const bench_opts *o, const bench_row *r, const char *note)
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
        if (r->ok) {
            printf("{\"kernel\":\"%s\",\"N\":%d,\"d\":%d,\"causal\":%s,\"threads\":%d,"
                   "\"ms\":%.4f,\"gflops\":%.3f,\"peak_fraction\":%.4f,\"gbps\":%.3f,"
                   "\"rss_mb\":%.1f",
                   r->kernel, r->N, r->d, r->causal ? "true" : "false", r->threads, r->ms,
                   r->gflops, r->peak_fraction, r->gbps, r->rss_mb);
            if (dec)   /* the probe's median rate and the number of alternating pairs */
                printf(",\"probe_gbps\":%.3f,\"pairs\":%d", r->bw_now, r->pairs);
            else if (r->pairs)   /* the FMA probe's median and the number of runs paired with it */
                printf(",\"peak_gflops\":%.3f,\"pairs\":%d", r->fma_now, r->pairs);
            printf("}\n");
        } else {
            printf("{\"kernel\":\"%s\",\"N\":%d,\"d\":%d,\"causal\":%s,\"threads\":%d,"
                   "\"ms\":null,\"gflops\":null,\"peak_fraction\":null,\"gbps\":null,"
                   "\"rss_mb\":null}\n",
                   r->kernel, r->N, r->d, r->causal ? "true" : "false", r->threads);
        }
        break;
    default:
        if (r->ok)
            printf("%-16s %7d %5d %6s %7d %11.3f %9.1f %8.1f%% %8.2f %9.1f%s", r->kernel, r->N,
                   r->d, r->causal ? "yes" : "no", r->threads, r->ms, r->gflops,
                   100 * r->peak_fraction, r->gbps, r->rss_mb, dec ? "  (of the probe" : "");
        if (r->ok && dec)
            printf(": median of %d alternating calls and passes, probe %.1f GB/s)", r->pairs,
                   r->bw_now);
        if (r->ok && note && note[0] && strstr(r->kernel, "+drop"))   /* its time over the row without */
            printf("  %s", note);
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


/* ---- the plot -------------------------------------------------------------------------- */

static void series_name(const bench_row *r, char *name, size_t n)
{
    snprintf(name, n, "%s d=%d%s", r->kernel, r->d, r->causal ? " causal" : "");
}

void bench_plot(const bench_opts *o, const bench_row *rows, int n_rows, int32_t threads)
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


void bench_machine_line(const bench_opts *o, const machine *m)
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
    fprintf(f, "# %s, %d cores, kernels: %s (prefill micro-tile %s), storage %s\n", model, bench_cores(),
            fs_cpu_isa_str(isa), fs_cpu_prefill_block_str(isa, o->block), fs_cpu_dtype_str(o->dtype));
    fprintf(f, "# load average (1, 5, 15 min; running/total; last pid): %s — other work on the "
               "machine slows every row\n", load);
    for (int32_t t = 1; t <= m->max_threads; t++) {
        if (m->fma[t] <= 0) continue;
        fprintf(f, "# measured at %d thread%s: FMA peak %.1f GFLOP/s, read bandwidth %.1f GB/s\n",
                t, t > 1 ? "s" : "", m->fma[t], m->bw[t]);
    }
    /* the largest thread count measured: do its threads have a core each? */
    for (int32_t t = m->max_threads; t > 1; t--) {
        if (m->fma[t] <= 0) continue;
        if (fs_cpu_threads_share_cores(m->fma[1], m->fma[t], t))
            fprintf(f, "# at %d threads the FMA peak is %.1f times the 1-thread one: these threads share cores' "
                       "FMA pipes (%s), and the shares at %d threads are of that shared peak\n",
                    t, m->fma[t] / m->fma[1],
                    t > bench_cores() ? "more threads than the cores this process may run on"
                                      : "hyperthreads, or a host placing vCPUs together", t);
        break;
    }
    /* The FMA probe runs the best instruction set; its float32 lanes say what a cycle can hold. */
    fs_cpu_isa best = fs_cpu_isa_best();
    int32_t lanes = best == FS_CPU_ISA_AVX512 ? 16 : best == FS_CPU_ISA_AVX2 ? 8 : best == FS_CPU_ISA_NEON ? 4 : 1;
    if (m->ghz > 0 && m->fma[1] > 0 && fs_cpu_clock_plausible(m->fma[1], m->ghz, lanes))
        fprintf(f, "# clock %.2f GHz (a chain of dependent multiplies, one thread): the 1-thread FMA peak is "
                   "%.1f FLOP per cycle\n", m->ghz, m->fma[1] / m->ghz);
    else if (m->ghz > 0 && m->fma[1] > 0)
        fprintf(f, "# clock not shown: %.2f GHz from dependent multiplies would make the 1-thread FMA peak "
                   "%.1f FLOP per cycle, which no core with %d-lane FMAs does\n", m->ghz, m->fma[1] / m->ghz, lanes);
    fflush(f);
}

