/* cmd_fp8.c: `flashstep fp8`: what low-precision inputs cost, as a table of RMSE against the
 * float64 reference: FlashAttention-3's measurement (Q, K, V with entries N(0, 1), 0.1 % of them
 * N(0, 10)) repeated with our own numbers, or the same table for the user's matrices.
 *
 * Each row is one recipe of src/engine/lowp.h run on the same inputs (tiled, every operation
 * rounded as float32 rounds it); the last column divides by the plain per-tensor e4m3 row.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "engine/decode.h"
#include "engine/lowp.h"
#include "engine/reference.h"
#include "io/matrix_io.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashstep fp8 [--n N] [--d D] [--seed S] [--outliers F] [--outlier-std X] [--kv-cache]\n"
            "                     [--q FILE --k FILE --v FILE] [--bq N] [--bk N] [--mask none|causal]\n"
            "                     [--recipe WORDS]... [--format table|jsonl]\n\n"
            "The error of attention with low-precision inputs: the root mean square of O - O_ref\n"
            "against the float64 reference, for each recipe on the same inputs. Every recipe runs the\n"
            "tiled algorithm with every operation rounded as float32 rounds it (FlashAttention-3's\n"
            "FP8 recipe: scales folded into the softmax scale, P rounded to e4m3 before P V).\n\n"
            "Without --q/--k/--v it repeats FlashAttention-3's measurement: Q, K and V (n x d, one\n"
            "head) with entries N(0, 1), a fraction of them replaced by N(0, outlier-std).\n\n"
            "  --n N             rows of Q, K and V (default 1024)\n"
            "  --d D             head dimension (default 128; a power of two for hadamard)\n"
            "  --seed S          seed of the inputs (default 1; the Hadamard's signs take the recipe's\n"
            "                    seed=N, default 1)\n"
            "  --outliers F      fraction of entries that are outliers (default 0.001)\n"
            "  --outlier-std X   their standard deviation (default 10)\n"
            "  --q FILE --k FILE --v FILE   your own matrices instead (text or .npy, as for trace)\n"
            "  --bq N --bk N     tile sizes, also the blocks of per-block scaling (default 64, 64)\n"
            "  --mask none|causal   (default none)\n"
            "  --recipe WORDS    a recipe to measure (repeatable; replaces the default list). Words:\n"
            "                    a format e4m3, e5m2, f16, bf16 or f32; a scaling tensor, block or\n"
            "                    none (FP8 only; default tensor); hadamard; seed=N; p-scale=X (default\n"
            "                    256 for FP8). Default list: f32, f16, bf16, 'e4m3 none', 'e4m3 tensor\n"
            "                    p-scale=1', e4m3, 'e4m3 block', 'e4m3 hadamard', 'e4m3 block\n"
            "                    hadamard', e5m2\n"
            "  --format table|jsonl   (default table; jsonl: one object per recipe)\n"
            "  --kv-cache        instead, a decode over a low-precision KV cache (FlashDecoding,\n"
            "                    splits of --bk keys): Q (32 rows, one decode step of 32 query heads\n"
            "                    on one KV head) against n keys (default 8192, 004's prompt), as\n"
            "                    the float16 cache, the e4m3 cache with one scale per head and with\n"
            "                    one per page of 16 positions; Q float16, S, P, O float32\n\n"
            "Exit 0, or 2 on bad input (file:line:column for a file).\n");
}

static const char *const default_recipes[] = {"f32",        "f16",           "bf16",    "e4m3 none", "e4m3 tensor p-scale=1",
                                              "e4m3",       "e4m3 block",    "e4m3 hadamard", "e4m3 block hadamard", "e5m2"};

static int read_matrix(const char *path, fs_matrix *m)
{
    fs_loc_error err;
    if (fs_matrix_read(path, false, m, &err)) return 1;
    char buf[600];
    fs_loc_error_format(&err, buf, sizeof buf);
    fprintf(stderr, "flashstep fp8: %s\n", buf);
    return 0;
}

/* --kv-cache: the decode over each cache format on the same inputs, RMSE against float64. */
static int kv_cache_table(long n, long d, long bk, unsigned long long seed, double frac, double sigma, const char *qf,
                          const char *kf, const char *vf, bool causal, bool jsonl)
{
    char shown[300];
    fs_matrix Q = {0}, K = {0}, V = {0};
    double *gen = NULL, *R = NULL, *O = NULL;
    fs_attn a;
    int rc = 2;
    if (qf) {
        if (!read_matrix(qf, &Q) || !read_matrix(kf, &K) || !read_matrix(vf, &V)) goto out;
        if (K.cols != Q.cols || V.rows != K.rows) {
            fprintf(stderr, "flashstep fp8: %s:1:1: K is %d x %d, Q has %d columns and V %d rows: K must have Q's columns "
                    "and V's rows\n", cli_shown(kf, shown, sizeof shown), K.rows, K.cols, Q.cols, V.rows);
            goto out;
        }
        a = fs_attn_make(Q.rows, K.rows, Q.cols, V.cols);
        a.Q = Q.data; a.K = K.data; a.V = V.data;
    } else {
        const long rows = 32;
        gen = malloc(sizeof(double) * (size_t)d * (size_t)(rows + 2 * n));
        if (!gen) { fprintf(stderr, "flashstep fp8: out of memory\n"); goto out; }
        uint64_t st = seed;
        fs_lowp_fill_outliers(gen, (size_t)d * (size_t)(rows + 2 * n), frac, sigma, &st);
        a = fs_attn_make((int32_t)rows, (int32_t)n, (int32_t)d, (int32_t)d);
        a.Q = gen; a.K = gen + (size_t)rows * d; a.V = a.K + (size_t)n * d;
    }
    if (causal) a.mask.kind = FS_MASK_CAUSAL;
    fs_status st = fs_attn_check(&a);
    if (st != FS_OK) {
        char why[300];
        fprintf(stderr, "flashstep fp8: %s\n", fs_attn_status_detail(&a, st, why, sizeof why));
        goto out;
    }
    const size_t no = (size_t)a.n_q * a.d_v;
    R = malloc(sizeof(double) * no);
    O = malloc(sizeof(double) * no);
    if (!R || !O || fs_reference(&a, R, NULL, NULL) != FS_OK) {
        fprintf(stderr, "flashstep fp8: the reference cannot run (out of memory?)\n");
        goto out;
    }
    fs_decoding dc = fs_decoding_default();
    dc.Bk = (int32_t)bk;
    const fs_kv_store kinds[] = {{FS_KV_F16, 0}, {FS_KV_E4M3, 0}, {FS_KV_E4M3, 16}};
    const char *names[] = {"f16 cache", "e4m3 cache, one scale per head", "e4m3 cache, one scale per page of 16"};
    double base = NAN;
    if (!jsonl) {
        if (qf)
            printf("decode over a KV cache: %s, %s, %s: %d query rows, %d keys, d = %d, d_v = %d\n",
                   cli_shown(qf, shown, sizeof shown), cli_shown(kf, shown + 100, 100), cli_shown(vf, shown + 200, 100), a.n_q,
                   a.n_kv, a.d, a.d_v);
        else
            printf("decode over a KV cache: %d query rows against %d keys, d = %d; entries N(0, 1), %g %% of them N(0, %g), "
                   "seed %llu\n", a.n_q, a.n_kv, a.d, frac * 100, sigma, seed);
        printf("splits of %ld keys, mask %s; Q float16, S, P, O float32; RMSE of O against float64\n\n", bk,
               causal ? "causal" : "none");
        printf("%-44s %12s  %s\n", "cache", "RMSE", "vs f16 cache");
    }
    for (int k = 0; k < 3; k++) {
        st = fs_decode_kv(&a, &dc, &kinds[k], NULL, O, NULL, NULL, NULL);
        if (st != FS_OK) {
            fprintf(stderr, "flashstep fp8: the %s cannot run: %s (a value beyond float16?)\n", names[k], fs_status_str(st));
            goto out;
        }
        double e = fs_lowp_rmse(O, R, no);
        if (k == 0) base = e;
        if (jsonl)
            printf("{\"cache\":\"%s\",\"page\":%d,\"rmse\":%.17g,\"n_q\":%d,\"n_kv\":%d,\"d\":%d,\"bk\":%ld}\n",
                   fs_kv_fmt_str(kinds[k].fmt), kinds[k].page_size, e, a.n_q, a.n_kv, a.d, bk);
        else if (base > 0)
            printf("%-44s %12.3e  %.2fx\n", names[k], e, e / base);
        else
            printf("%-44s %12.3e\n", names[k], e);
    }
    rc = 0;
out:
    free(R); free(O); free(gen);
    fs_matrix_free(&Q); fs_matrix_free(&K); fs_matrix_free(&V);
    return rc;
}

int cli_fp8(int argc, char **argv)
{
    long n = 1024, d = 128, bq = 64, bk = 64;
    unsigned long long seed = 1;
    double frac = 0.001, sigma = 10;
    const char *qf = NULL, *kf = NULL, *vf = NULL;
    bool causal = false, jsonl = false, kv_cache = false, n_given = false;
    enum { MAX_RECIPES = 32 };
    const char *rtext[MAX_RECIPES];
    fs_lowp_recipe rec[MAX_RECIPES];
    int nr = 0;
    bool nr_given = false;
    char shown[300];
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(o, "--kv-cache")) {
            kv_cache = true;
            continue;
        }
        if (i + 1 >= argc) {
            if (!strncmp(o, "--", 2)) return cli_fail("fp8", "%s needs a value, or is unknown", cli_shown(o, shown, sizeof shown));
            return cli_fail("fp8", "unexpected argument '%s'", cli_shown(o, shown, sizeof shown));
        }
        const char *v = argv[++i];
        long x;
        if (!strcmp(o, "--n")) {
            if (!cli_parse_int(v, 1, 16384, &n)) return cli_fail("fp8", "--n is 1 to 16384, not '%s'", v);
            n_given = true;
        } else if (!strcmp(o, "--d")) {
            if (!cli_parse_int(v, 1, 1024, &d)) return cli_fail("fp8", "--d is 1 to 1024, not '%s'", v);
        } else if (!strcmp(o, "--bq")) {
            if (!cli_parse_int(v, 1, 1 << 20, &bq)) return cli_fail("fp8", "--bq is a positive integer, not '%s'", v);
        } else if (!strcmp(o, "--bk")) {
            if (!cli_parse_int(v, 1, 1 << 20, &bk)) return cli_fail("fp8", "--bk is a positive integer, not '%s'", v);
        } else if (!strcmp(o, "--seed")) {
            if (!cli_parse_int(v, 0, 2147483647L, &x)) return cli_fail("fp8", "--seed is 0 to 2147483647, not '%s'", v);
            seed = (unsigned long long)x;
        } else if (!strcmp(o, "--outliers")) {
            if (!cli_parse_double(v, &frac) || frac < 0 || frac > 1) return cli_fail("fp8", "--outliers is a fraction from 0 to 1, not '%s'", v);
        } else if (!strcmp(o, "--outlier-std")) {
            if (!cli_parse_double(v, &sigma) || sigma <= 0 || sigma > 1e6)
                return cli_fail("fp8", "--outlier-std is a positive number up to 1e6, not '%s'", v);
        } else if (!strcmp(o, "--q")) {
            qf = v;
        } else if (!strcmp(o, "--k")) {
            kf = v;
        } else if (!strcmp(o, "--v")) {
            vf = v;
        } else if (!strcmp(o, "--mask")) {
            if (!strcmp(v, "causal")) causal = true;
            else if (strcmp(v, "none")) return cli_fail("fp8", "--mask is none or causal, not '%s'", v);
        } else if (!strcmp(o, "--format")) {
            if (!strcmp(v, "jsonl")) jsonl = true;
            else if (strcmp(v, "table")) return cli_fail("fp8", "--format is table or jsonl, not '%s'", v);
        } else if (!strcmp(o, "--recipe")) {
            if (nr == MAX_RECIPES) return cli_fail("fp8", "at most 32 --recipe, not more (%s)", "");
            size_t at;
            char why[200];
            if (!fs_lowp_recipe_parse(v, strlen(v), &rec[nr], &at, why, sizeof why)) {
                fprintf(stderr, "flashstep fp8: --recipe '%s', column %zu: %s\n(see flashstep fp8 --help)\n",
                        cli_shown(v, shown, sizeof shown), at + 1, why);
                return 2;
            }
            rtext[nr++] = v;
            nr_given = true;
        } else {
            return cli_fail("fp8", "unknown option '%s'", cli_shown(o, shown, sizeof shown));
        }
    }
    if (nr == 0)
        for (; nr < (int)(sizeof default_recipes / sizeof default_recipes[0]); nr++) {
            size_t at;
            char why[200];
            rtext[nr] = default_recipes[nr];
            if (!fs_lowp_recipe_parse(rtext[nr], strlen(rtext[nr]), &rec[nr], &at, why, sizeof why)) return 2;
        }
    if ((qf || kf || vf) && !(qf && kf && vf)) return cli_fail("fp8", "%s", "give all of --q, --k and --v, or none");
    if (kv_cache) {
        if (nr_given) return cli_fail("fp8", "%s", "--recipe is for the forward; --kv-cache measures the cache formats");
        return kv_cache_table(n_given ? n : 8192, d, bk, seed, frac, sigma, qf, kf, vf, causal, jsonl);
    }

    fs_matrix Q = {0}, K = {0}, V = {0};
    double *gen = NULL;
    fs_attn a;
    if (qf) {
        if (!read_matrix(qf, &Q) || !read_matrix(kf, &K) || !read_matrix(vf, &V)) goto bad;
        if (K.cols != Q.cols) {
            fprintf(stderr, "flashstep fp8: %s:1:1: K has %d columns but Q has %d: they must share d\n",
                    cli_shown(kf, shown, sizeof shown), K.cols, Q.cols);
            goto bad;
        }
        if (V.rows != K.rows) {
            fprintf(stderr, "flashstep fp8: %s:1:1: V has %d rows but K has %d (one per key)\n", cli_shown(vf, shown, sizeof shown),
                    V.rows, K.rows);
            goto bad;
        }
        a = fs_attn_make(Q.rows, K.rows, Q.cols, V.cols);
        a.Q = Q.data; a.K = K.data; a.V = V.data;
    } else {
        gen = malloc(sizeof(double) * (size_t)n * (size_t)d * 3);
        if (!gen) return cli_fail("fp8", "%s", "out of memory");
        uint64_t st = seed;
        fs_lowp_fill_outliers(gen, (size_t)n * (size_t)d * 3, frac, sigma, &st);
        a = fs_attn_make((int32_t)n, (int32_t)n, (int32_t)d, (int32_t)d);
        a.Q = gen; a.K = gen + (size_t)n * d; a.V = gen + 2 * (size_t)n * d;
    }
    if (causal) a.mask.kind = FS_MASK_CAUSAL;
    fs_status st = fs_attn_check(&a);
    if (st != FS_OK) {
        char why[300];
        fprintf(stderr, "flashstep fp8: %s\n", fs_attn_status_detail(&a, st, why, sizeof why));
        goto bad;
    }
    size_t no = (size_t)a.n_q * a.d_v;
    double *R = malloc(sizeof(double) * no), *O = malloc(sizeof(double) * no), *rmse = malloc(sizeof(double) * nr);
    if (!R || !O || !rmse || fs_reference(&a, R, NULL, NULL) != FS_OK) {
        free(R); free(O); free(rmse);
        fprintf(stderr, "flashstep fp8: the reference cannot run (out of memory?)\n");
        goto bad;
    }
    double base = NAN;
    for (int k = 0; k < nr; k++) {
        st = fs_lowp_tiled(&a, (int32_t)bq, (int32_t)bk, &rec[k], O, NULL, NULL, NULL);
        if (st == FS_ERR_ARG && rec[k].hadamard) {
            fprintf(stderr, "flashstep fp8: --recipe '%s': hadamard needs d a power of two, not %d\n",
                    cli_shown(rtext[k], shown, sizeof shown), a.d);
            free(R); free(O); free(rmse);
            goto bad;
        }
        if (st != FS_OK) {
            fprintf(stderr, "flashstep fp8: recipe '%s' cannot run: %s (an input beyond float32?)\n",
                    cli_shown(rtext[k], shown, sizeof shown), fs_status_str(st));
            free(R); free(O); free(rmse);
            goto bad;
        }
        rmse[k] = fs_lowp_rmse(O, R, no);
        if (rec[k].fmt == FS_LOWP_E4M3 && rec[k].scaling == FS_SCALE_TENSOR && !rec[k].hadamard && rec[k].p_scale == 256 &&
            isnan(base))
            base = rmse[k];
    }
    char words[160];
    if (!jsonl) {
        if (qf)
            printf("O = softmax(Q K^T / sqrt(d)) V of %s, %s, %s: n_q = %d, n_kv = %d, d = %d, d_v = %d\n",
                   cli_shown(qf, shown, sizeof shown), cli_shown(kf, shown + 100, 100), cli_shown(vf, shown + 200, 100), a.n_q,
                   a.n_kv, a.d, a.d_v);
        else
            printf("O = softmax(Q K^T / sqrt(d)) V, Q K V of %ld x %ld entries N(0, 1), %g %% of them N(0, %g), seed %llu\n", n, d,
                   frac * 100, sigma, seed);
        printf("tiles %ld x %ld, mask %s; RMSE of O against float64 (every operation float32)\n\n", bq, bk,
               causal ? "causal" : "none");
        printf("%-44s %12s  %s\n", "recipe", "RMSE", isnan(base) ? "" : "vs e4m3 per tensor");
    }
    for (int k = 0; k < nr; k++) {
        fs_lowp_recipe_str(&rec[k], words, sizeof words);
        if (jsonl)
            printf("{\"recipe\":\"%s\",\"rmse\":%.17g,\"n_q\":%d,\"n_kv\":%d,\"d\":%d,\"bq\":%ld,\"bk\":%ld,\"causal\":%s}\n", words,
                   rmse[k], a.n_q, a.n_kv, a.d, bq, bk, causal ? "true" : "false");
        else if (isnan(base) || base == 0)
            printf("%-44s %12.3e\n", words, rmse[k]);
        else
            printf("%-44s %12.3e  %.2fx\n", words, rmse[k], rmse[k] / base);
    }
    free(R); free(O); free(rmse);
    free(gen);
    fs_matrix_free(&Q); fs_matrix_free(&K); fs_matrix_free(&V);
    return 0;
bad:
    free(gen);
    fs_matrix_free(&Q); fs_matrix_free(&K); fs_matrix_free(&V);
    return 2;
}
