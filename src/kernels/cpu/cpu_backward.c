/* cpu_backward.c: the backward pass of attention on the CPU, by recomputation (FlashAttention 2's
 * K/V-outer order): the driver. The arithmetic is backward_item in cpu_kernels.inc, compiled
 * per instruction set like the forward's version 4, whose micro-kernel scheme it shares.
 *
 * Given Q, K, V, the forward's O and its per-row log-sum-exp L, and dO:
 *     D  = rowsum(dO ∘ O)                                        one pass over the rows
 *     per (KV tile, Q tile) the mask does not skip:
 *         S = scale·Q Kᵀ (masked),  P = exp(S − L),  dP = dO Vᵀ,  dS = P ∘ (dP − D)
 *         dV += Pᵀ dO,  dK += scale·dSᵀ Q,  dQ += scale·dS K
 * Five products of 2·n_q·n_kv·d FLOPs each per head: 2.5 times the forward's two.
 *
 * Threads share (KV tile, batch, KV head) items: each finishes its dK, dV rows alone. dQ gets
 * contributions from every KV tile, so each thread sums into its own copy and the copies are
 * added at the end (memory: threads · |Q|, linear in N; nothing n_q × n_kv is ever held).
 * Scores are computed in base 2 as in the forward (scale·log2 e folded into Q once), so
 * P = 2^(S₂ − L·log2 e); dK, built from that scaled Q, is multiplied by ln 2 when written.
 *
 * Versions (fs_cpu_backward_opts.version): 1 as above; 2 also asks, while a Q tile's S and dP
 * are computed, for the Q and dO rows of the next one into L2 (prefill version 7's stream):
 * 4-9 % fewer ms on this project's Zen 4 at N = 4096 (docs/benchmarks.md, zen4-stream).
 */
#include <stdlib.h>

#include "kernels/cpu/cpu_internal.h"

fs_cpu_backward_opts fs_cpu_backward_opts_default(void)
{
    return (fs_cpu_backward_opts){.version = 0, .threads = 1, .Bq = 0, .Bk = 0,
                                  .isa = FS_CPU_ISA_AUTO};
}

typedef struct {
    cpu_backward p;
    const cpu_isa_ops *ops;
    const float *dO;
    float *dQ;
    int64_t rows;             /* batch · n_q_heads · n_q */
    int32_t threads;
    float *Qs, *dOs, *L2, *D;
    cpu_backward_scratch sc[FS_CPU_MAX_THREADS];
} backward_run;

#define ROWS_PER_ITEM 64

/* Rows [item · 64, …): Qs = Q · scale2 and dOs = dO, padded to dp; L2 = L · log2 e;
 * D = Σ dO ∘ O (summed in double: dS = P ∘ (dP − D) subtracts it from dP). */
static void prep_rows(void *ctx, int32_t thread, int64_t item)
{
    backward_run *run = ctx;
    const cpu_backward *p = &run->p;
    const fs_cpu_attn *a = p->a;
    int32_t d = a->d, dp = p->dp;
    int64_t r1 = (item + 1) * ROWS_PER_ITEM < run->rows ? (item + 1) * ROWS_PER_ITEM : run->rows;
    for (int64_t row = item * ROWS_PER_ITEM; row < r1; row++) {
        const float *q = (const float *)a->Q + row * d, *o = (const float *)a->O + row * d;
        const float *g = run->dO + row * d;
        float *qs = run->Qs + row * dp, *gs = run->dOs + row * dp;
        double D = 0.0;
        for (int32_t k = 0; k < d; k++) {
            qs[k] = q[k] * p->scale2;
            gs[k] = g[k];
            D += (double)g[k] * o[k];
        }
        for (int32_t k = d; k < dp; k++) qs[k] = gs[k] = 0.0f;
        run->D[row] = (float)D;
        run->L2[row] = a->L[row] == -INFINITY ? -INFINITY : a->L[row] * FS_CPU_LOG2E;
    }
}

static void backward_item(void *ctx, int32_t thread, int64_t item)
{
    backward_run *run = ctx;
    run->ops->backward(&run->p, &run->sc[thread],
                       run->p.dQt + (size_t)thread * (size_t)run->rows * (size_t)run->p.dp, item);
}

/* Rows [item · 64, …) of dQ = scale · Σ over the threads' copies. */
static void reduce_rows(void *ctx, int32_t thread, int64_t item)
{
    backward_run *run = ctx;
    const cpu_backward *p = &run->p;
    int32_t d = p->a->d, dp = p->dp;
    size_t stride = (size_t)run->rows * dp;
    int64_t r1 = (item + 1) * ROWS_PER_ITEM < run->rows ? (item + 1) * ROWS_PER_ITEM : run->rows;
    for (int64_t row = item * ROWS_PER_ITEM; row < r1; row++)
        for (int32_t k = 0; k < d; k++) {
            float s = 0.0f;
            for (int32_t t = 0; t < run->threads; t++) s += p->dQt[t * stride + row * dp + k];
            run->dQ[row * d + k] = p->scale * s;
        }
}

static int32_t round_up(int32_t x, int32_t m) { return (x + m - 1) / m * m; }

/* The plan of a backward call: the problem and options checked (not the gradients' pointers),
 * tiles sized (run->p), the thread count. */
static fs_status backward_plan(const fs_cpu_attn *a, fs_cpu_backward_opts *opt, backward_run *run)
{
    fs_status st = fs_cpu_attn_check(a);
    if (st != FS_OK) return st;
    if (opt->version == 0) opt->version = FS_CPU_BACKWARD_VERSIONS;
    if (opt->version < 1 || opt->version > FS_CPU_BACKWARD_VERSIONS || opt->threads < 1 ||
        opt->threads > FS_CPU_MAX_THREADS || opt->Bq < 0 || opt->Bk < 0 ||
        (int)opt->isa < 0 || opt->isa >= FS_CPU_ISA_COUNT || (opt->work && opt->work_bytes == 0))
        return FS_ERR_ARG;
    if (a->dtype != FS_CPU_DTYPE_F32) return FS_ERR_ARG;
    if (cpu_dropout_on(a) && fs_dropout_check(a->dropout->p) != FS_OK) return FS_ERR_ARG;
    const cpu_isa_ops *ops = fs_cpu_isa_ops(opt->isa);
    if (!ops) return FS_ERR_ARG;
    memset(run, 0, sizeof *run);
    cpu_backward *p = &run->p;
    run->ops = ops;
    p->a = a;
    /* Tiles: Bk = 64 keys, so that a (d × 64) block of Kᵀ or Vᵀ (32 KiB at d = 128) is what one
     * micro-kernel column strip reads from L1; Bq = 96 query rows (a multiple of the 6-row
     * micro-tile). Per thread: Kᵀ, Vᵀ, K rows, dK and dV of the tile, S and dP of a pair:
     * 5 · 32 + 2 · 24 KiB at d = 128, inside a core's L2. */
    p->Bk = round_up(opt->Bk ? opt->Bk : 64, ops->nr);
    p->Bq = opt->Bq ? opt->Bq : 96;
    if (p->Bq > a->n_q) p->Bq = a->n_q;
    p->dp = round_up(a->d, ops->lanes);
    p->n_qt = (a->n_q + p->Bq - 1) / p->Bq;
    p->n_kt = (a->n_kv + p->Bk - 1) / p->Bk;
    p->group = a->n_q_heads / a->n_kv_heads;
    p->scale = a->scale > 0.0f ? a->scale : 1.0f / sqrtf((float)a->d);
    p->scale2 = p->scale * FS_CPU_LOG2E;
    run->rows = (int64_t)a->batch * a->n_q_heads * a->n_q;
    p->n_rows = run->rows;
    p->stream = opt->version >= 2;
    int64_t n_items = (int64_t)p->n_kt * a->batch * a->n_kv_heads;
    run->threads = opt->threads < n_items ? opt->threads : (int32_t)n_items;
    return FS_OK;
}

/* The memory of a planned call, in floats: Qs and dOs (rows × dp), L2 and D (rows), a dQ per
 * thread (rows × dp), then per thread Kᵀ, Vᵀ (d × Bk), K rows, dK, dV (Bk × dp), S and dP
 * (Bq × Bk). Given mem, also points the run's arrays and scratch into it: one function sizes and
 * lays out, so the two cannot disagree. */
static size_t backward_layout(backward_run *run, float *mem)
{
    cpu_backward *p = &run->p;
    size_t rowf = (size_t)run->rows * p->dp;
    size_t tile = (size_t)p->Bk * p->dp, tkv = (size_t)p->a->d * p->Bk, stile = (size_t)p->Bq * p->Bk;
    size_t per = 2 * tkv + 3 * tile + 2 * stile + 64;
    size_t shared = 2 * rowf + 2 * (size_t)run->rows + (size_t)run->threads * rowf;
    if (mem) {
        run->Qs = mem;
        run->dOs = mem + rowf;
        run->L2 = mem + 2 * rowf;
        run->D = run->L2 + run->rows;
        p->dQt = run->D + run->rows;
        p->Qs = run->Qs;   /* the kernels' read-only view */
        p->dOs = run->dOs;
        p->L2 = run->L2;
        p->D = run->D;
        for (int32_t t = 0; t < run->threads; t++) {
            float *s = mem + shared + (size_t)t * per;
            cpu_backward_scratch *sc = &run->sc[t];
            sc->Kt = s; s += tkv;
            sc->Vt = s; s += tkv;
            sc->Kr = s; s += tile;
            sc->dKa = s; s += tile;
            sc->dVa = s; s += tile;
            sc->S = s; s += stile;
            sc->dP = s;
        }
    }
    return shared + (size_t)run->threads * per;
}

size_t fs_cpu_backward_workspace(const fs_cpu_attn *a, const fs_cpu_backward_opts *o)
{
    fs_cpu_backward_opts opt = o ? *o : fs_cpu_backward_opts_default();
    opt.work = NULL;
    opt.work_bytes = 0;
    backward_run *run = malloc(sizeof *run);
    size_t bytes = 0;
    if (run && backward_plan(a, &opt, run) == FS_OK) bytes = backward_layout(run, NULL) * sizeof(float);
    free(run);
    return bytes;
}

fs_status fs_cpu_backward(const fs_cpu_attn *a, const float *dO, float *dQ, float *dK,
                          float *dV, const fs_cpu_backward_opts *o)
{
    fs_cpu_backward_opts opt = o ? *o : fs_cpu_backward_opts_default();
    backward_run *run = malloc(sizeof *run);
    if (!run) return FS_ERR_NOMEM;
    fs_status st = backward_plan(a, &opt, run);
    if (st == FS_OK && (!a->L || !dO || !dQ || !dK || !dV)) st = FS_ERR_ARG;
    float *mem = NULL;
    if (st == FS_OK)
        st = cpu_work_take(opt.work, opt.work_bytes, backward_layout(run, NULL) * sizeof(float),
                           &mem);
    if (st != FS_OK) {
        free(run);
        return st;
    }
    backward_layout(run, mem);
    cpu_backward *p = &run->p;
    run->dO = dO;
    run->dQ = dQ;
    p->dK = dK;
    p->dV = dV;
    int32_t threads = run->threads;
    memset(p->dQt, 0, (size_t)threads * run->rows * p->dp * sizeof(float));
    int64_t row_items = (run->rows + ROWS_PER_ITEM - 1) / ROWS_PER_ITEM;
    fs_cpu_parallel(threads, row_items, prep_rows, run);
    /* dK, dV rows of keys no item visits (none: every KV tile is an item) are written by their
     * item even when every Q tile is skipped, as zeros. */
    fs_cpu_parallel(threads, (int64_t)p->n_kt * a->batch * a->n_kv_heads, backward_item, run);
    fs_cpu_parallel(threads, row_items, reduce_rows, run);
    cpu_work_done(opt.work, mem);
    free(run);
    return FS_OK;
}
