/* cpu_baseline_backward.c: the backward pass the way a user with a BLAS writes it, keeping the
 * whole attention matrix, for comparison with the recomputing kernel (cpu_backward.c).
 *
 *     P  = softmax(scale · Q Kᵀ)   (batch, heads, n_q, n_kv) held in full    cblas_sgemm + rows
 *     dP = dO Vᵀ                   (batch, heads, n_q, n_kv) held in full    cblas_sgemm
 *     D  = rowsum(dO ∘ O),  dS = P ∘ (dP − D)   (in place of dP)
 *     dV = Σ_group Pᵀ dO,  dQ = scale · dS K,  dK = Σ_group scale · dSᵀ Q       cblas_sgemm
 *
 * Its memory grows as n_q · n_kv; it refuses, before allocating, what would not fit.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cpu/cpu_internal.h"

typedef struct {
    const fs_cpu_attn *a;
    const float *dO;
    float *P, *dS;
    float scale;
    int64_t rows, rows_per_item;
} bwd_job;

/* Rows [item · rows_per_item, …) of every (b, h): P = masked softmax of the scaled scores
 * (already in P); a row that sees nothing gets P = 0. */
static void softmax_rows(void *ctx, int32_t thread, int64_t item)
{
    const bwd_job *job = ctx;
    const fs_cpu_attn *a = job->a;
    int64_t r1 = (item + 1) * job->rows_per_item < job->rows ? (item + 1) * job->rows_per_item
                                                             : job->rows;
    for (int64_t row = item * job->rows_per_item; row < r1; row++) {
        int32_t i = (int32_t)(row % a->n_q);
        float *p = job->P + row * a->n_kv, mx = -INFINITY;
        for (int32_t j = 0; j < a->n_kv; j++) {
            if (a->mask.kind != FS_MASK_NONE && !cpu_visible(&a->mask, a->n_q, a->n_kv, i, j))
                p[j] = -INFINITY;
            mx = fmaxf(mx, p[j]);
        }
        if (mx == -INFINITY) {
            memset(p, 0, (size_t)a->n_kv * sizeof(float));
            continue;
        }
        float sum = 0.0f;
        for (int32_t j = 0; j < a->n_kv; j++) {
            p[j] = expf(p[j] - mx);
            sum += p[j];
        }
        for (int32_t j = 0; j < a->n_kv; j++) p[j] /= sum;
    }
}

/* Same rows: dS = P ∘ (dP − D), D = Σ dO ∘ O. */
static void ds_rows(void *ctx, int32_t thread, int64_t item)
{
    const bwd_job *job = ctx;
    const fs_cpu_attn *a = job->a;
    int64_t r1 = (item + 1) * job->rows_per_item < job->rows ? (item + 1) * job->rows_per_item
                                                             : job->rows;
    for (int64_t row = item * job->rows_per_item; row < r1; row++) {
        const float *g = job->dO + row * a->d, *o = (const float *)a->O + row * a->d;
        float D = 0.0f;
        for (int32_t k = 0; k < a->d; k++) D += g[k] * o[k];
        const float *p = job->P + row * a->n_kv;
        float *ds = job->dS + row * a->n_kv;
        for (int32_t j = 0; j < a->n_kv; j++) ds[j] = p[j] * (ds[j] - D);
    }
}

fs_status fs_cpu_baseline_backward(const fs_cpu_attn *a, const float *dO, float *dQ, float *dK,
                                   float *dV, int32_t threads, char *why, size_t n)
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
    if (!dO || !dQ || !dK || !dV) {
        snprintf(why, n, "the baseline backward wants every gradient buffer");
        return FS_ERR_ARG;
    }
    float *P, *dS;
    fs_status st = cpu_baseline_begin(a, threads, "P and dP", &P, &dS, why, n);
    if (st != FS_OK) return st;
    int32_t d = a->d, group = a->n_q_heads / a->n_kv_heads;
    float scale = a->scale > 0.0f ? a->scale : 1.0f / sqrtf((float)d);
    size_t nn = (size_t)a->n_q * a->n_kv;
    const float *Q = a->Q, *K = a->K, *V = a->V;
    for (int32_t b = 0; b < a->batch; b++)
        for (int32_t h = 0; h < a->n_q_heads; h++) {
            size_t bh = (size_t)b * a->n_q_heads + h;
            int64_t qo = cpu_q_off(a, b, h, 0), ko = cpu_kv_off(a, b, h / group, 0);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, a->n_q, a->n_kv, d, scale,
                        Q + qo, d, K + ko, d, 0.0f, P + bh * nn, a->n_kv);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, a->n_q, a->n_kv, d, 1.0f,
                        dO + qo, d, V + ko, d, 0.0f, dS + bh * nn, a->n_kv);
        }
    bwd_job job = {.a = a, .dO = dO, .P = P, .dS = dS, .scale = scale,
                   .rows = (int64_t)a->batch * a->n_q_heads * a->n_q, .rows_per_item = 16};
    int64_t items = (job.rows + job.rows_per_item - 1) / job.rows_per_item;
    fs_cpu_parallel(threads, items, softmax_rows, &job);
    fs_cpu_parallel(threads, items, ds_rows, &job);
    for (int32_t b = 0; b < a->batch; b++)
        for (int32_t h = 0; h < a->n_q_heads; h++) {
            size_t bh = (size_t)b * a->n_q_heads + h;
            int64_t qo = cpu_q_off(a, b, h, 0), ko = cpu_kv_off(a, b, h / group, 0);
            float beta = h % group == 0 ? 0.0f : 1.0f;   /* the group's first head overwrites */
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, a->n_kv, d, a->n_q, 1.0f,
                        P + bh * nn, a->n_kv, dO + qo, d, beta, dV + ko, d);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, a->n_q, d, a->n_kv, scale,
                        dS + bh * nn, a->n_kv, K + ko, d, 0.0f, dQ + qo, d);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, a->n_kv, d, a->n_q, scale,
                        dS + bh * nn, a->n_kv, Q + qo, d, beta, dK + ko, d);
        }
    free(P);
    free(dS);
    return FS_OK;
}
