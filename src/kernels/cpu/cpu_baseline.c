/* cpu_baseline.c: attention the way a user writes it with a BLAS at hand, for comparison.
 *
 *     S = scale · Q Kᵀ      (batch, heads, n_q, n_kv) held in full      cblas_sgemm
 *     P = softmax(S)        (batch, heads, n_q, n_kv) held in full      one pass per row
 *     O = P V                                                             cblas_sgemm
 *
 * Its memory grows as n_q · n_kv; the bench shows where it stops fitting. Before allocating it
 * compares what it needs with what the system says is available, so that it reports "cannot
 * allocate" instead of being killed by the kernel's out-of-memory handler later.
 */
#include <cblas.h>
#include <stdio.h>
#ifndef OPENBLAS_VERSION
#error "this cblas.h is not OpenBLAS's (the reference BLAS's lacks openblas_set_num_threads): install OpenBLAS (scripts/install-deps.sh)"
#endif
#include <stdlib.h>

#include "kernels/cpu/cpu_internal.h"

double fs_cpu_baseline_bytes(const fs_cpu_attn *a)
{
    return 2.0 * a->batch * a->n_q_heads * (double)a->n_q * a->n_kv * sizeof(float);
}

typedef struct {
    const fs_cpu_attn *a;
    float *S, *P;
    int64_t rows, rows_per_item;
} softmax_job;

/* Rows [item · rows_per_item, …) of all (b, h): mask, max, exp, sum, divide. */
static void softmax_rows(void *ctx, int32_t thread, int64_t item)
{
    const softmax_job *job = ctx;
    const fs_cpu_attn *a = job->a;
    int64_t r0 = item * job->rows_per_item, r1 = r0 + job->rows_per_item;
    if (r1 > job->rows) r1 = job->rows;
    for (int64_t row = r0; row < r1; row++) {
        int32_t i = (int32_t)(row % a->n_q);
        float *s = job->S + row * a->n_kv, *p = job->P + row * a->n_kv;
        float mx = -INFINITY;
        for (int32_t j = 0; j < a->n_kv; j++) {
            if (a->mask.kind != FS_MASK_NONE && !cpu_visible(&a->mask, a->n_q, a->n_kv, i, j))
                s[j] = -INFINITY;
            mx = fmaxf(mx, s[j]);
        }
        if (mx == -INFINITY) {   /* nothing visible: P = 0, so O = 0 as in the reference */
            memset(p, 0, (size_t)a->n_kv * sizeof(float));
            continue;
        }
        float sum = 0.0f;
        for (int32_t j = 0; j < a->n_kv; j++) {
            p[j] = expf(s[j] - mx);
            sum += p[j];
        }
        float inv = 1.0f / sum;
        for (int32_t j = 0; j < a->n_kv; j++) p[j] *= inv;
    }
}

fs_status cpu_baseline_begin(const fs_cpu_attn *a, int32_t threads, const char *names, float **X, float **Y,
                             char *why, size_t n)
{
    /* X, Y: (batch, n_q_heads, n_q, n_kv) each, allocated here */
    *X = *Y = NULL;
    fs_status st = fs_cpu_attn_check(a);
    if (st != FS_OK) {
        snprintf(why, n, "%s", fs_status_str(st));
        return st;
    }
    if (a->dtype != FS_CPU_DTYPE_F32) {
        snprintf(why, n, "the baseline is float32 only");
        return FS_ERR_ARG;
    }
    if (threads < 1 || threads > FS_CPU_MAX_THREADS) {
        snprintf(why, n, "threads must be 1 … %d", FS_CPU_MAX_THREADS);
        return FS_ERR_ARG;
    }
    double need = fs_cpu_baseline_bytes(a), avail = fs_cpu_mem_available();
    if (need > (double)SIZE_MAX / 2 || (avail > 0 && need > 0.9 * avail)) {
        snprintf(why, n, "%s need %.1f GiB, %.1f GiB available", names, need / (1u << 30), avail / (1u << 30));
        return FS_ERR_NOMEM;
    }
    size_t count = (size_t)a->batch * a->n_q_heads * a->n_q * a->n_kv;
    *X = malloc(count * sizeof(float));
    *Y = malloc(count * sizeof(float));
    if (!*X || !*Y) {
        free(*X);
        free(*Y);
        *X = *Y = NULL;
        snprintf(why, n, "malloc of %.1f GiB for %s failed", need / (1u << 30), names);
        return FS_ERR_NOMEM;
    }
    openblas_set_num_threads(threads);
    return FS_OK;
}

fs_status fs_cpu_baseline(const fs_cpu_attn *a, int32_t threads, char *why, size_t n)
{
    char dummy[8];
    if (!why || n == 0) {
        why = dummy;
        n = sizeof dummy;
    }
    why[0] = '\0';
    if (a && a->dropout && a->dropout->on) {   /* the baselines compute attention without dropout */
        snprintf(why, n, "the baseline has no dropout");
        return FS_ERR_ARG;
    }
    float *S, *P;
    fs_status st = cpu_baseline_begin(a, threads, "S and P", &S, &P, why, n);
    if (st != FS_OK) return st;
    int32_t d = a->d, group = a->n_q_heads / a->n_kv_heads;
    float scale = a->scale > 0.0f ? a->scale : 1.0f / sqrtf((float)d);
    size_t nn = (size_t)a->n_q * a->n_kv;
    for (int32_t b = 0; b < a->batch; b++)
        for (int32_t h = 0; h < a->n_q_heads; h++) {
            size_t bh = (size_t)b * a->n_q_heads + h;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, a->n_q, a->n_kv, d, scale,
                        (const float *)a->Q + cpu_q_off(a, b, h, 0), d,
                        (const float *)a->K + cpu_kv_off(a, b, h / group, 0), d, 0.0f,
                        S + bh * nn, a->n_kv);
        }
    softmax_job job = {.a = a, .S = S, .P = P,
                       .rows = (int64_t)a->batch * a->n_q_heads * a->n_q, .rows_per_item = 16};
    fs_cpu_parallel(threads, (job.rows + job.rows_per_item - 1) / job.rows_per_item,
                    softmax_rows, &job);
    for (int32_t b = 0; b < a->batch; b++)
        for (int32_t h = 0; h < a->n_q_heads; h++) {
            size_t bh = (size_t)b * a->n_q_heads + h;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, a->n_q, d, a->n_kv, 1.0f,
                        P + bh * nn, a->n_kv,
                        (const float *)a->V + cpu_kv_off(a, b, h / group, 0), d, 0.0f,
                        (float *)a->O + cpu_q_off(a, b, h, 0), d);
        }
    free(S);
    free(P);
    return FS_OK;
}
