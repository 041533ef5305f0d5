/* cmd_check.c: `flashstep check`: judge the output of someone's attention kernel against the
 * float64 reference at the precision it ran in, and name the known mistake it matches.
 *
 * Data flow: options (check's own here; --mask, --window, --offset, --tree, --scale, --softcap
 * and --heads through problem.c's table, as trace reads them) → arrays (src/io, .npy or text)
 * → shapes → fs_attn → fs_check_judge (src/check) → a table for people or JSON lines for
 * programs → exit 0 (pass), 1 (fail), 2 (bad input).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check/check.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/problem.h"
#include "engine/fp8.h"
#include "io/matrix_io.h"

static const char *usage_text =
    "usage: flashstep check --q Q --k K --v V --o O [OPTIONS]\n"
    "\n"
    "Judge the output O of your attention kernel: is it right at the precision it ran in, and if\n"
    "not, which known mistake does it match?\n"
    "\n"
    "inputs (.npy float16 '<f2', float32 '<f4' or float64 '<f8', C or Fortran order, or text:\n"
    "        one row per line, numbers separated by spaces or commas, '#' comments):\n"
    "  --q FILE --k FILE --v FILE   Q (N, d), (HQ, N, d) or (B, HQ, N, d); K (N_kv, d) and V\n"
    "                               (N_kv, d_v) likewise with HKV heads\n"
    "  --o FILE                     your kernel's output, shaped like Q with d_v columns; NaN and\n"
    "                               inf are allowed here (they are judged)\n"
    "  --lse FILE                   your kernel's log-sum-exp m + log(l) per row (natural log),\n"
    "                               B x HQ x N numbers in any shape; rows that see no key may hold\n"
    "                               -inf or inf\n"
    "  --heads HQ:HKV               for 2-D inputs: Q and O hold HQ blocks of N rows, K and V HKV\n"
    "                               blocks (GQA); with 3-D/4-D inputs the heads come from the shape\n"
    "\n"
    "the problem:\n"
    "  --mask none|causal           (default none); causal puts query i at position i + N_kv - N\n"
    "                               (bottom-right aligned, as FlashAttention does)\n"
    "  --offset N                   query i sits at position i + N instead\n"
    "  --window W                   sliding window: the query at p sees keys p-W < j <= p\n"
    "  --tree FILE                  tree mask from parent indices (-1 for the root)\n"
    "  --scale S                    score scale (default 1/sqrt(d))\n"
    "  --softcap C                  S = C*tanh(S/C) before the softmax\n"
    "\n"
    "the judging:\n"
    "  --dtype f32|f16|bf16|f64     the precision your kernel ran in (default: f16 when O is a\n"
    "                               '<f2' file, else f32; a note suggests f16 or bf16 when every\n"
    "                               value of O is one). bf16: O may be float32 holding bfloat16\n"
    "                               values, or raw bfloat16 bits saved as uint16/int16 (any input)\n"
    "  --dtype e4m3|e5m2            an FP8 kernel (FlashAttention-3's recipe: Q, K, V in FP8, S and\n"
    "                               O accumulated in float32, P rounded to e4m3 before P V): Q, K, V\n"
    "                               as FP8 bits ('|u1', tensor.view(torch.uint8)) or floats that are\n"
    "                               FP8 values; O in any float format (bfloat16 bits as '<u2' too)\n"
    "  --q-scale X --k-scale X --v-scale X   FP8: the per-tensor descales (default 1): the inputs\n"
    "                               are the FP8 values times these\n"
    "  --kv-only                    with --dtype e4m3|e5m2: only K and V were stored in FP8 (a\n"
    "                               decode over an FP8 KV cache, as vLLM keeps one): Q is float16\n"
    "                               values ('<f2' or floats that are float16 numbers; no --q-scale),\n"
    "                               K and V FP8 times --k-scale and --v-scale; S, P and O in float32,\n"
    "                               P rounded to float16 (not FP8) before P V; the floor is f16's\n"
    "  --bk N                       the block size to try for no-rescale, no-beta and the blocks of\n"
    "                               nan-rows (default: each of 2, 4, 8, 16, 32, 64, 128, 256 below N_kv)\n"
    "  --format table|jsonl         (default table)\n"
    "  --rows N                     worst rows shown in the table (default 10)\n"
    "  --threads N                  threads to judge and diagnose with (default: one per core)\n"
    "  --quiet                      no progress line (it is shown only when stderr is a terminal)\n"
    "  --dry-run                    read the inputs, time a sample of the work and say how long the\n"
    "                               check will take, without judging (exit 0)\n"
    "\n"
    "The rule (as FlashAttention's tests judge a kernel): err = max |O - O_ref| against the float64\n"
    "reference passes when err <= 2 x err_plain + floor, where err_plain is the error of a\n"
    "straightforward implementation run in --dtype on the same inputs (every operation rounded to\n"
    "that precision), and floor = c x max(1, max |O_ref|) with c = 4u: 2^-22 (f32), 2^-9 (f16),\n"
    "2^-6 (bf16; also e4m3 and e5m2, whose kernels write bfloat16), and 1e-12 for f64. --lse is\n"
    "judged by the same rule.\n"
    "\n"
    "When O fails, the known wrong variants are computed on the same inputs and the closest one\n"
    "within the same rule is reported: wrong-scale (with the scale that fits), mask-missing,\n"
    "causal-shift (diagonal excluded, one future key, or top-left alignment), no-rescale (001's\n"
    "pitfall 1, or alpha left off o or l in the form that divides by l at the end) and no-beta\n"
    "(001's pitfall 2), with the block size that fits, unnormalized (no final division by l),\n"
    "nan-rows, k-transposed (when N_kv = d), q-k-swapped (when N = N_kv); else unknown, with where\n"
    "the error sits. More than 4096 rows: the variants run on the 512 rows around the worst one.\n"
    "\n"
    "--format jsonl prints one {\"event\":\"row\",...} per row (batch, head, row, max_abs_err,\n"
    "reference_err, col, and lse_err with --lse), then one {\"event\":\"verdict\",\"pass\":BOOL,\n"
    "\"max_abs_err\":X,\"reference_err\":Y,\"diagnosis\":\"ID\",\"detail\":\"...\"}; inf and nan are\n"
    "the strings \"inf\" and \"nan\".\n"
    "\n"
    "Cost: the verdict is two passes over the visible scores (the reference and the plain run), on\n"
    "every core; a failing output adds its diagnosis. --dry-run says how long a given problem takes.\n"
    "Ctrl-C stops at once (exit 130).\n"
    "\n"
    "Exit status: 0 pass, 1 fail, 2 bad input (file:line:column; NaN or inf in Q, K or V; shapes\n"
    "that do not fit each other), 130 interrupted. docs/check.md shows the round trip from PyTorch;\n"
    "python/flashstep_check.py calls this command from Python.\n";

static int fail(const char *fmt, const char *a) { return cli_fail("check", fmt, a); }

static int load(const char *path, unsigned flags, fs_array *a)
{
    fs_loc_error err;
    if (fs_array_read(path, flags, a, &err)) return 1;
    char buf[600];
    fs_loc_error_format(&err, buf, sizeof buf);
    fprintf(stderr, "flashstep check: %s\n", buf);
    return 0;
}

static void shape_str(const fs_array *a, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < a->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)a->dims[i]);
    if (k < n) snprintf(buf + k, n - k, "%s)", a->ndim == 1 ? "," : "");
}

/* file:1:1: message, exit 2 */
static int shape_err(const char *file, const char *msg)
{
    char name[300];
    fprintf(stderr, "flashstep check: %s:1:1: %s\n", cli_shown(file, name, sizeof name), msg);
    return 2;
}

/* B, H, N, d of an array read as Q/K/V/O: 1-D is one row, 2-D (rows, d) splits into `heads`
 * blocks, 3-D is (H, N, d), 4-D (B, H, N, d). 0 and a message when it does not fit. */
static int layout(const fs_array *a, int heads, int64_t *B, int64_t *H, int64_t *N, int64_t *d, char *msg, size_t n)
{
    *d = a->dims[a->ndim - 1];
    switch (a->ndim) {
    case 1: *B = 1; *H = 1; *N = 1; break;
    case 2:
        *B = 1;
        *H = heads;
        if (a->dims[0] % heads) {
            snprintf(msg, n, "%lld rows are not a multiple of the %d heads (--heads)", (long long)a->dims[0], heads);
            return 0;
        }
        *N = a->dims[0] / heads;
        break;
    case 3: *B = 1; *H = a->dims[0]; *N = a->dims[1]; break;
    default: *B = a->dims[0]; *H = a->dims[1]; *N = a->dims[2]; break;
    }
    if (a->ndim >= 3 && heads > 1 && *H != heads) {
        snprintf(msg, n, "the shape holds %lld heads but --heads says %d", (long long)*H, heads);
        return 0;
    }
    if (*H > FS_MAX_HEADS || *B * *H > FS_MAX_HEADS || *N > FS_MAX_DIM || *d > FS_MAX_HEAD) {
        snprintf(msg, n, "too large: at most %d heads in all (batch x heads), %d rows per head, %d columns",
                 FS_MAX_HEADS, FS_MAX_DIM, FS_MAX_HEAD);
        return 0;
    }
    return 1;
}

static void jnum(FILE *f, double x)
{
    if (isnan(x)) fputs("\"nan\"", f);
    else if (x == INFINITY) fputs("\"inf\"", f);
    else if (x == -INFINITY) fputs("\"-inf\"", f);
    else fprintf(f, "%.17g", x);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* Every value of O is a number of precision p, and there are enough of them to tell (a float32
 * result is a bfloat16 number by chance with odds 2^-16 per value, a float16 number with about
 * 2^-13)? Then the kernel likely ran in p and saved float32. */
static int looks_like(const fs_array *o, fs_prec p)
{
    int64_t n = 1, nonzero = 0;
    for (int i = 0; i < o->ndim; i++) n *= o->dims[i];
    for (int64_t i = 0; i < n; i++) {
        double x = o->data[i];
        if (isfinite(x) && fs_prec_round(p, x) != x) return 0;
        nonzero += isfinite(x) && x != 0;
    }
    return nonzero >= 16;
}

/* check's own options; the problem's (mask, window, offset, tree, scale, softcap, heads) are
 * read by problem.c's table into a cli_problem. */
typedef struct {
    const char *q, *k, *v, *o, *lse;
    int prec;          /* −1: from O's file */
    long bk, rows, threads;
    int jsonl, quiet, dry_run;
    double fp8_scale[3];   /* --q-scale, --k-scale, --v-scale (FP8 only); 0: not given */
    int kv_only;           /* --kv-only: K and V in FP8, Q float16 */
} opts;

/* ---- the progress line (stderr, when it is a terminal) and Ctrl-C ---- */

typedef struct {
    double t0, last;   /* start, last print (gui_now-like seconds) */
    const char *what;
    bool shown;
} progress_line;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* What is done, the rate and the time left, at most four times a second, on one line that the
 * next print overwrites; the verdict's pass reports work in multiply-adds. */
static void progress(void *ctx, const char *what, double done, double total)
{
    progress_line *P = ctx;
    double t = now_s();
    if (!P->what || strcmp(P->what, what)) { P->what = what; P->t0 = t; }
    if (t - P->last < 0.25 && done < total) return;
    P->last = t;
    double el = t - P->t0, frac = total > 0 ? done / total : 1;
    char left[32] = "";
    if (frac > 0.02 && frac < 1) snprintf(left, sizeof left, ", %.0f s left", el / frac - el);
    if (!strcmp(what, "judging"))
        fprintf(stderr, "\r\033[Kflashstep check: judging %3.0f %% (%.1f G multiply-adds/s%s)", 100 * frac,
                el > 0 ? done / el * 1e-9 : 0.0, left);
    else
        fprintf(stderr, "\r\033[Kflashstep check: %s: run %.0f of %.0f%s", what, done, total, left);
    fflush(stderr);
    P->shown = true;
}

static void progress_clear(progress_line *P)
{
    if (P->shown) fputs("\r\033[K", stderr);
    P->shown = false;
}

static void on_interrupt(int sig)
{
    (void)sig;
    static const char msg[] = "\r\033[Kflashstep check: interrupted\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(130);
}


/* the flat rows with the largest errors, largest first */
static int64_t *worst_rows(const fs_check_result *r, int64_t rows, int64_t k)
{
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(k > 0 ? k : 1));
    if (!idx) return NULL;
    int64_t have = 0;
    for (int64_t i = 0; i < rows; i++) {
        double e = isnan(r->row_err[i]) ? INFINITY : r->row_err[i];
        int64_t at = have < k ? have++ : k;
        if (at == k) {
            double last = isnan(r->row_err[idx[k - 1]]) ? INFINITY : r->row_err[idx[k - 1]];
            if (!(e > last)) continue;
            at = k - 1;
        }
        while (at > 0 && (isnan(r->row_err[idx[at - 1]]) ? INFINITY : r->row_err[idx[at - 1]]) < e) {
            idx[at] = idx[at - 1];
            at--;
        }
        idx[at] = i;
    }
    return idx;
}

/* The problem options check shares with trace, play and render (problem.c's table). */
static const char *const shared[] = {"--mask", "--window", "--offset", "--tree", "--scale", "--softcap", "--heads", NULL};

/* --dry-run: what the check of this problem will cost, from a timed sample of the verdict's passes
 * (fs_check_estimate). 0, or 2. */
static int dry_run(const fs_attn *a, const fs_check_opts *co, int64_t rows)
{
    fs_check_estimate e;
    fs_status st = fs_check_estimate_cost(a, co, &e);
    if (st != FS_OK) {
        fprintf(stderr, "flashstep check: %s\n", fs_status_str(st));
        return 2;
    }
    printf("problem: %lld rows (batch x heads x queries), %.4g G visible scores, %.4g G multiply-adds per pass\n",
           (long long)rows, e.scores * 1e-9, e.work * 1e-9);
    printf("threads: %d (--threads)\n", e.threads);
    printf("verdict: about %.1f s (the reference and the plain %s run; timed on a sample of %lld rows)\n", e.verdict_s,
           fs_prec_str(co->prec), (long long)e.sample_rows);
    printf("a failing output's diagnosis: up to about %.1f s more when a known mistake fits (often less), about %.1f s "
           "when none does (the scale is fitted)\n", e.diagnose_s, e.diagnose_max_s);
    return fflush(stdout) == 0 ? 0 : 2;
}

int cli_check(int argc, char **argv)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    opts o;
    memset(&o, 0, sizeof o);
    o.prec = -1;
    o.rows = 10;
    cli_problem pr;
    cli_problem_init(&pr, "check");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int r = cli_problem_option_of(&pr, shared, argc, argv, &i);
        if (r == 2) return 2;
        if (r == 1) continue;
#define NEED() do { if (!val) return fail("%s needs a value", a); i++; } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "--q")) { NEED(); o.q = val; }
        else if (!strcmp(a, "--k")) { NEED(); o.k = val; }
        else if (!strcmp(a, "--v")) { NEED(); o.v = val; }
        else if (!strcmp(a, "--o")) { NEED(); o.o = val; }
        else if (!strcmp(a, "--lse")) { NEED(); o.lse = val; }
        else if (!strcmp(a, "--bk")) {
            NEED();
            if (!cli_parse_int(val, 1, FS_MAX_DIM, &o.bk)) return fail("--bk must be an integer from 1 to 1048576, not '%s'", val);
        } else if (!strcmp(a, "--dtype")) {
            NEED();
            o.prec = !strcmp(val, "f32") ? FS_PREC_F32 : !strcmp(val, "f16") ? FS_PREC_F16
                   : !strcmp(val, "bf16") ? FS_PREC_BF16 : !strcmp(val, "f64") ? FS_PREC_F64
                   : !strcmp(val, "e4m3") ? FS_PREC_E4M3 : !strcmp(val, "e5m2") ? FS_PREC_E5M2 : -2;
            if (o.prec == -2) return fail("--dtype is f32, f16, bf16, f64, e4m3 or e5m2, not '%s'", val);
        } else if (!strcmp(a, "--format")) {
            NEED();
            if (!strcmp(val, "jsonl")) o.jsonl = 1;
            else if (!strcmp(val, "table")) o.jsonl = 0;
            else return fail("--format is table or jsonl, not '%s'", val);
        } else if (!strcmp(a, "--rows")) {
            NEED();
            if (!cli_parse_int(val, 0, 1000000, &o.rows)) return fail("--rows must be an integer from 0 to 1000000, not '%s'", val);
        } else if (!strcmp(a, "--threads")) {
            NEED();
            if (!cli_parse_int(val, 1, 256, &o.threads)) return fail("--threads must be an integer from 1 to 256, not '%s'", val);
        } else if (!strcmp(a, "--q-scale") || !strcmp(a, "--k-scale") || !strcmp(a, "--v-scale")) {
            NEED();
            int t = a[2] == 'q' ? 0 : a[2] == 'k' ? 1 : 2;
            char *end;
            double x = strtod(val, &end);
            if (*end || end == val || !(x > 0) || !isfinite(x)) {
                char shown[300];
                fprintf(stderr, "flashstep check: %s must be a positive number, not '%s'\n", a, cli_shown(val, shown, sizeof shown));
                return 2;
            }
            if (o.fp8_scale[t] != 0) return cli_fail("check", "%s given twice", a);
            o.fp8_scale[t] = x;
        } else if (!strcmp(a, "--kv-only")) {
            o.kv_only = 1;
        } else if (!strcmp(a, "--quiet")) {
            o.quiet = 1;
        } else if (!strcmp(a, "--dry-run")) {
            o.dry_run = 1;
        } else {
            return fail("unknown option '%s'", a);
        }
#undef NEED
    }
    if (!o.q || !o.k || !o.v || !o.o) return fail("%s", "need --q, --k, --v and --o");
    const bool fp8 = o.prec == FS_PREC_E4M3 || o.prec == FS_PREC_E5M2;
    if (!fp8 && (o.fp8_scale[0] != 0 || o.fp8_scale[1] != 0 || o.fp8_scale[2] != 0))
        return fail("%s", "--q-scale, --k-scale and --v-scale are the descales of FP8 inputs: give --dtype e4m3 or e5m2");
    if (o.kv_only && !fp8) return fail("%s", "--kv-only says K and V were stored in FP8: give --dtype e4m3 or e5m2 too");
    if (o.kv_only && o.fp8_scale[0] != 0) return fail("%s", "--kv-only: Q is float16, it has no descale (drop --q-scale)");
    for (int t = 0; t < 3; t++) if (o.fp8_scale[t] == 0) o.fp8_scale[t] = 1;
    if (pr.tree && (pr.mask_causal || pr.window)) return fail("%s", "--tree already decides visibility; drop --mask/--window");

    int rc = 2;
    char name[300];   /* a file's name for a message (cli_shown) */
    fs_array Q = {0}, K = {0}, V = {0}, O = {0}, L = {0};
    int32_t *parent = NULL;
    uint64_t *bits = NULL;
    fs_check_result res;
    memset(&res, 0, sizeof res);
    int64_t *top = NULL;
    unsigned in_flags = o.prec == FS_PREC_BF16 ? FS_IO_BF16_BITS
                      : o.prec == FS_PREC_E4M3 ? FS_IO_E4M3_BITS : o.prec == FS_PREC_E5M2 ? FS_IO_E5M2_BITS : 0;
    /* FP8: Q, K, V as bits ('|u1') or as floats that are FP8 values; O and the lse in any float
     * format, bfloat16 bits included (FlashAttention-3's FP8 kernel writes bfloat16) */
    unsigned out_flags = FS_IO_NONFINITE | (fp8 ? FS_IO_BF16_BITS : in_flags);
    if (!load(o.q, o.kv_only ? 0 : in_flags, &Q) || !load(o.k, in_flags, &K) || !load(o.v, in_flags, &V) ||
        !load(o.o, out_flags, &O) || (o.lse && !load(o.lse, out_flags, &L)))
        goto out;
    if (fp8) {   /* floats must already be FP8 values; then the descales make the inputs */
        const fs_array *in[3] = {&Q, &K, &V};
        const char *file[3] = {o.q, o.k, o.v};
        fs_fp8 f = o.prec == FS_PREC_E5M2 ? FS_FP8_E5M2 : FS_FP8_E4M3;
        for (int t = o.kv_only ? 1 : 0; t < 3; t++) {
            int64_t n = 1;
            for (int k = 0; k < in[t]->ndim; k++) n *= in[t]->dims[k];
            for (int64_t e = 0; e < n; e++) {
                double x = in[t]->data[e];
                if (fs_fp8_round(f, x) != x) {
                    fprintf(stderr, "flashstep check: %s:1:1: element %lld is %.17g, not an %s value (the nearest is "
                            "%.17g): give the FP8 values themselves, or their bits as '|u1'\n",
                            cli_shown(file[t], name, sizeof name), (long long)e, x, fs_fp8_str(f), fs_fp8_round(f, x));
                    goto out;
                }
                in[t]->data[e] = x * o.fp8_scale[t];
            }
        }
        int64_t n = 1;   /* --kv-only: Q must hold float16 numbers */
        for (int k = 0; o.kv_only && k < Q.ndim; k++) n *= Q.dims[k];
        for (int64_t e = 0; o.kv_only && e < n; e++) {
            double x = Q.data[e];
            if (fs_prec_round(FS_PREC_F16, x) != x || fabs(x) > 65504) {
                fprintf(stderr, "flashstep check: %s:1:1: element %lld is %.17g, not a float16 number (--kv-only takes Q "
                        "in float16; the nearest is %.17g)\n", cli_shown(o.q, name, sizeof name), (long long)e, x,
                        fs_prec_round(FS_PREC_F16, x));
                goto out;
            }
        }
    }

    /* shapes: Q (B, HQ, N, d), K (B, HKV, N_kv, d), V (B, HKV, N_kv, d_v), O (B, HQ, N, d_v) */
    char msg[400], s1[80], s2[80];
    int64_t B, HQ, N, d, Bk, HKV, Nkv, dk, Bv, Hv, Nv, dv, Bo, Ho, No, dvo;
    if (!layout(&Q, pr.hq, &B, &HQ, &N, &d, msg, sizeof msg)) { rc = shape_err(o.q, msg); goto out; }
    if (!layout(&K, pr.hkv, &Bk, &HKV, &Nkv, &dk, msg, sizeof msg)) { rc = shape_err(o.k, msg); goto out; }
    if (!layout(&V, pr.hkv, &Bv, &Hv, &Nv, &dv, msg, sizeof msg)) { rc = shape_err(o.v, msg); goto out; }
    if (!layout(&O, pr.hq, &Bo, &Ho, &No, &dvo, msg, sizeof msg)) { rc = shape_err(o.o, msg); goto out; }
    shape_str(&Q, s1, sizeof s1);
    if (Bk != B || dk != d || (Q.ndim >= 3 && K.ndim != Q.ndim)) {
        shape_str(&K, s2, sizeof s2);
        snprintf(msg, sizeof msg, "K has shape %s but Q is %s: they must share the batch and d", s2, s1);
        rc = shape_err(o.k, msg);
        goto out;
    }
    if (HQ % HKV) {
        snprintf(msg, sizeof msg, "Q has %lld heads, not a multiple of K's %lld", (long long)HQ, (long long)HKV);
        rc = shape_err(o.k, msg);
        goto out;
    }
    if (Bv != B || Hv != HKV || Nv != Nkv) {
        shape_str(&V, s2, sizeof s2);
        char s3[80];
        shape_str(&K, s3, sizeof s3);
        snprintf(msg, sizeof msg, "V has shape %s but K is %s: they must share batch, heads and keys", s2, s3);
        rc = shape_err(o.v, msg);
        goto out;
    }
    if (O.ndim != Q.ndim || Bo != B || Ho != HQ || No != N || dvo != dv) {
        shape_str(&O, s2, sizeof s2);
        snprintf(msg, sizeof msg, "O has shape %s but Q is %s and V has %lld columns: O must be shaped like Q, "
                 "with d_v columns%s", s2, s1, (long long)dv,
                 O.ndim == 4 && Q.ndim == 4 && O.dims[1] == N && O.dims[2] == HQ
                     ? " (flash_attn_func returns (B, N, H, d): save out.transpose(1, 2))" : "");
        rc = shape_err(o.o, msg);
        goto out;
    }
    const int64_t rows = B * HQ * N;
    if (o.lse) {
        int64_t nl = 1;
        for (int i = 0; i < L.ndim; i++) nl *= L.dims[i];
        if (nl != rows) {
            shape_str(&L, s2, sizeof s2);
            snprintf(msg, sizeof msg, "the log-sum-exp has shape %s (%lld numbers) but there are %lld rows "
                     "(batch x heads x queries)", s2, (long long)nl, (long long)rows);
            rc = shape_err(o.lse, msg);
            goto out;
        }
    }

    /* the problem: the batch folds into the heads (query head b·HQ + h reads KV head b·HKV + h/(HQ/HKV)) */
    fs_attn at = fs_attn_make((int32_t)N, (int32_t)Nkv, (int32_t)d, (int32_t)dv);
    at.n_q_heads = (int32_t)(B * HQ);
    at.n_kv_heads = (int32_t)(B * HKV);
    at.Q = Q.data;
    at.K = K.data;
    at.V = V.data;
    at.scale = isnan(pr.scale) ? fs_attn_default_scale((int32_t)d) : pr.scale;
    at.softcap = pr.run.attn.softcap;
    if (pr.tree) {
        fs_loc_error err;
        int32_t n;
        if (!fs_ints_read(pr.tree, &parent, &n, &err)) {
            char buf[600];
            fs_loc_error_format(&err, buf, sizeof buf);
            fprintf(stderr, "flashstep check: %s\n", buf);
            goto out;
        }
        if (n != N || n != Nkv) {
            fprintf(stderr, "flashstep check: %s:1:1: the tree has %d positions but there are %lld queries and %lld keys\n",
                    cli_shown(pr.tree, name, sizeof name), n, (long long)N, (long long)Nkv);
            goto out;
        }
        bits = calloc((size_t)n * fs_mask_words(n), sizeof(uint64_t));
        if (!bits) { fail("%s", "out of memory"); goto out; }
        int32_t bad;
        if (fs_mask_tree_build(parent, n, bits, &bad) != FS_OK) {
            int32_t line = 1, col = 1;
            fs_ints_locate(pr.tree, bad >= 0 ? bad : 0, &line, &col);
            fprintf(stderr, "flashstep check: %s:%d:%d: not a tree: position %d (parent %d) breaks it (exactly one -1 "
                    "root, parents in range, no cycles)\n", cli_shown(pr.tree, name, sizeof name), line, col, bad,
                    bad >= 0 ? parent[bad] : 0);
            goto out;
        }
        at.mask = fs_mask_tree(bits, n);
    } else if (pr.window) {
        at.mask.kind = FS_MASK_WINDOW;
        at.mask.window = pr.window;
    } else if (pr.mask_causal) {
        at.mask.kind = FS_MASK_CAUSAL;
    }
    at.mask.has_offset = pr.has_offset;
    at.mask.offset = (int32_t)pr.offset;
    fs_status st = fs_attn_check(&at);
    char why[320];
    if (st == FS_ERR_RANGE) {
        rc = cli_range_report("check", &at, NULL, o.q, o.k, o.v, NULL, NULL);
        goto out;
    }
    if (st != FS_OK) {
        fprintf(stderr, "flashstep check: %s\n", fs_attn_status_detail(&at, st, why, sizeof why));
        goto out;
    }

    fs_check_opts co = fs_check_opts_default();
    co.prec = o.prec >= 0 ? (fs_prec)o.prec : !strcmp(O.dtype, "f16") ? FS_PREC_F16 : FS_PREC_F32;
    co.bk = (int32_t)o.bk;
    co.lse = o.lse ? L.data : NULL;
    co.heads_per_batch = (int32_t)HQ;
    if (o.prec < 0 && co.prec == FS_PREC_F32) {   /* (never FP8: that needs --dtype) */
        fs_prec guess = looks_like(&O, FS_PREC_BF16) ? FS_PREC_BF16 : looks_like(&O, FS_PREC_F16) ? FS_PREC_F16
                                                                                                : FS_PREC_F32;
        if (guess != FS_PREC_F32)
            fprintf(stderr, "flashstep check: note: every value of %s is a %s number; if your kernel ran in %s, "
                    "pass --dtype %s\n", cli_shown(o.o, name, sizeof name), guess == FS_PREC_BF16 ? "bfloat16" : "float16",
                    guess == FS_PREC_BF16 ? "bfloat16" : "float16", fs_prec_str(guess));
    }
    co.threads = (int)o.threads;
    for (int t = 0; t < 3; t++) co.fp8_scale[t] = o.fp8_scale[t];
    co.kv_only = o.kv_only;
    if (o.dry_run) {
        rc = dry_run(&at, &co, rows);
        goto out;
    }
    progress_line pl;
    memset(&pl, 0, sizeof pl);
    if (!o.quiet && isatty(2)) {
        co.progress = progress;
        co.progress_ctx = &pl;
    }
    st = fs_check_judge(&at, O.data, &co, &res);
    progress_clear(&pl);
    if (st != FS_OK) {
        fprintf(stderr, "flashstep check: %s\n", fs_attn_status_detail(&at, st, why, sizeof why));
        goto out;
    }

    if (res.plain_overflow_rows > 0)
        fprintf(stderr, "flashstep check: note: the plain %s run overflows on %lld of %lld rows (inputs beyond "
                "%s's range): their plain error is inf; the other rows' plain error and the floor judge them\n",
                fs_prec_str(co.prec), (long long)res.plain_overflow_rows, (long long)rows, fs_prec_str(co.prec));
    const char *lesson = fs_diag_lesson(res.diag);
    char detail[900];
    if (res.diag == FS_DIAG_OK)
        snprintf(detail, sizeof detail, "%s", res.detail);
    else
        snprintf(detail, sizeof detail, "%s %s%s%s%s", fs_diag_sentence(res.diag), res.detail,
                 lesson ? " Lesson " : "", lesson ? lesson : "", lesson ? " shows it." : "");
    FILE *f = stdout;
    if (o.jsonl) {
        for (int64_t k = 0; k < rows; k++) {
            int64_t h = k / N;
            fprintf(f, "{\"event\":\"row\",\"batch\":%lld,\"head\":%lld,\"row\":%lld,\"max_abs_err\":", (long long)(h / HQ),
                    (long long)(h % HQ), (long long)(k % N));
            jnum(f, res.row_err[k]);
            fputs(",\"reference_err\":", f);
            jnum(f, res.row_ref_err[k]);
            fprintf(f, ",\"col\":%d", res.row_col[k]);
            if (res.row_lse_err) {
                fputs(",\"lse_err\":", f);
                jnum(f, res.row_lse_err[k]);
            }
            fputs("}\n", f);
        }
        fprintf(f, "{\"event\":\"verdict\",\"pass\":%s,\"max_abs_err\":", res.pass ? "true" : "false");
        jnum(f, res.max_abs_err);
        fputs(",\"reference_err\":", f);
        jnum(f, res.reference_err);
        fprintf(f, ",\"diagnosis\":\"%s\",\"detail\":", fs_diag_str(res.diag));
        jstr(f, detail);
        fputs("}\n", f);
    } else {
        const char *p = fs_prec_str(co.prec);
        fprintf(f, "problem: %lld batch%s x %lld:%lld heads, %lld queries, %lld keys, d %lld, d_v %lld, mask %s, scale %.6g, "
                "dtype %s%s\n", (long long)B, B == 1 ? "" : "es", (long long)HQ, (long long)HKV, (long long)N,
                (long long)Nkv, (long long)d, (long long)dv, pr.tree ? "tree" : fs_mask_kind_str(at.mask.kind), at.scale, p,
                o.kv_only ? " (K and V only; Q float16)" : "");
        int64_t k = o.rows < rows ? o.rows : rows;
        if (k > 0 && (top = worst_rows(&res, rows, k)) != NULL) {
            fprintf(f, "\nworst rows: your error against the float64 reference, and a plain %s implementation's\n", p);
            fprintf(f, "  %5s %5s %7s  %12s  %12s  %5s\n", "batch", "head", "row", "|O - ref|", "plain err", "col");
            for (int64_t t = 0; t < k; t++) {
                int64_t r = top[t], h = r / N;
                fprintf(f, "  %5lld %5lld %7lld  %12.4g  %12.4g  %5d\n", (long long)(h / HQ), (long long)(h % HQ),
                        (long long)(r % N), res.row_err[r], res.row_ref_err[r], res.row_col[r]);
            }
        }
        fprintf(f, "\nrule: max |O - ref| <= 2 x plain %s error + floor\n", p);
        fprintf(f, "  max |O - ref| = %.4g   plain error = %.4g   floor = %.4g   tolerance = %.4g   (%lld of %lld rows over)\n",
                res.max_abs_err, res.reference_err, res.floor, res.tolerance, (long long)res.rows_over, (long long)rows);
        if (res.lse_checked)
            fprintf(f, "  log-sum-exp: max error = %.4g   plain error = %.4g   tolerance = %.4g   %s\n", res.lse_err,
                    res.lse_reference_err, res.lse_tolerance, res.lse_pass ? "ok" : "over");
        fprintf(f, "\nverdict: %s\n", res.pass ? "PASS" : "FAIL");
        if (!res.pass) {
            fprintf(f, "diagnosis: %s\n  %s\n  %s\n", fs_diag_str(res.diag), fs_diag_sentence(res.diag), res.detail);
            if (lesson) fprintf(f, "  see it step by step: flashstep play %s\n", lesson);
        }
    }
    rc = fflush(stdout) != 0 ? 2 : res.pass ? 0 : 1;
out:
    cli_problem_free(&pr);
    free(top);
    fs_check_result_free(&res);
    fs_array_free(&Q);
    fs_array_free(&K);
    fs_array_free(&V);
    fs_array_free(&O);
    fs_array_free(&L);
    free(parent);
    free(bits);
    return rc;
}
