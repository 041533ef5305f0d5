/* run.c: one entry point that allocates the result and calls the chosen algorithm. */
#include "run.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

fs_run fs_run_make(fs_algo algo)
{
    fs_run r;
    memset(&r, 0, sizeof r);
    r.algo = algo;
    r.attn = fs_attn_make(1, 1, 1, 1);
    r.tiling = fs_tiling_default();
    if (algo == FS_ALGO_QUERY) r.tiling.form = FS_FORM_UNNORMALIZED;   /* 000's walk */
    r.decoding = fs_decoding_default();
    r.chunk = 1;
    r.recipe = fs_lowp_recipe_default();
    r.ring = fs_ring_default();
    return r;
}

void fs_result_free(fs_result *res)
{
    free(res->O);
    free(res->m);
    free(res->l);
    free(res->L);
    free(res->D);
    free(res->dQ);
    free(res->dK);
    free(res->dV);
    memset(res, 0, sizeof *res);
}

/* The forward (untraced) keeps O and each row's L; the backward, traced, reads them. The ring
 * runs both around the ring. */
static fs_status run_backward(const fs_run *r, fs_result *res, fs_trace *tr)
{
    const fs_attn *a = &r->attn;
    const size_t rows = (size_t)a->n_q_heads * a->n_q, keys = (size_t)a->n_kv_heads * a->n_kv;
    fs_tiling fwd = r->tiling;
    fwd.exp2 = false;
    fs_ring ring = r->ring;
    ring.tiling = r->tiling;
    const bool on_ring = r->algo == FS_ALGO_RING;
    if (r->tiling.pitfall != FS_PITFALL_NONE || !a->Q || !a->K || a->S) return FS_ERR_ARG;
    fs_status st = on_ring ? fs_ring_forward(a, &ring, res->O, res->m, res->l, NULL)
                           : fs_tiled(a, &fwd, res->O, res->m, res->l, NULL);
    if (st != FS_OK) return st;
    fs_lse(res->m, res->l, (long)rows, res->L);
    double *ones = NULL;
    const double *dO = r->dO;
    if (!dO) {
        ones = malloc(sizeof(double) * rows * (size_t)a->d_v);
        if (!ones) return FS_ERR_NOMEM;
        for (size_t k = 0; k < rows * (size_t)a->d_v; k++) ones[k] = 1;
        dO = ones;
    }
    res->D = malloc(sizeof(double) * rows);
    res->dQ = malloc(sizeof(double) * rows * (size_t)a->d);
    res->dK = malloc(sizeof(double) * keys * (size_t)a->d);
    res->dV = malloc(sizeof(double) * keys * (size_t)a->d_v);
    if (!res->D || !res->dQ || !res->dK || !res->dV) st = FS_ERR_NOMEM;
    else if (on_ring) st = fs_ring_backward(a, &ring, res->O, res->L, dO, res->dQ, res->dK, res->dV, res->D, tr);
    else st = fs_backward(a, &r->tiling, res->O, res->L, dO, res->dQ, res->dK, res->dV, res->D, tr);
    free(ones);
    return st;
}

fs_status fs_run_exec(const fs_run *r, fs_result *res, fs_trace *tr)
{
    assert(r && res);
    memset(res, 0, sizeof *res);
    if ((unsigned)r->algo >= FS_ALGO_COUNT) return FS_ERR_ARG;
    if (r->algo == FS_ALGO_SOFTMAX) {
        if (!r->z || r->n_z < 1 || r->n_z > FS_MAX_DIM) return FS_ERR_SHAPE;
        res->n_heads = res->n_rows = 1;
        res->n_cols = r->n_z;
        res->O = malloc(sizeof(double) * (size_t)r->n_z);
        res->m = malloc(sizeof(double));
        res->l = malloc(sizeof(double));
        if (!res->O || !res->m || !res->l) {
            fs_result_free(res);
            return FS_ERR_NOMEM;
        }
        fs_status st = fs_online_softmax(r->z, r->n_z, r->chunk, res->O, res->m, res->l, tr);
        if (st != FS_OK) fs_result_free(res);
        return st;
    }
    const fs_attn *a = &r->attn;
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    size_t rows = (size_t)a->n_q_heads * a->n_q;
    res->n_heads = a->n_q_heads;
    res->n_rows = a->n_q;
    res->n_cols = a->d_v;
    res->O = malloc(sizeof(double) * rows * (size_t)a->d_v);
    res->m = malloc(sizeof(double) * rows);
    res->l = malloc(sizeof(double) * rows);
    res->L = malloc(sizeof(double) * rows);
    if (!res->O || !res->m || !res->l || !res->L) {
        fs_result_free(res);
        return FS_ERR_NOMEM;
    }
    switch (r->algo) {
    case FS_ALGO_REFERENCE:
        st = fs_reference(a, res->O, res->m, res->l);
        if (st == FS_OK && tr) {
            for (size_t i = 0; i < rows && st == FS_OK; i++)
                st = fs_trace_push_out(tr, a, i, res->O + i * (size_t)a->d_v, res->m[i], res->l[i]);
        }
        break;
    case FS_ALGO_QUERY: {
        fs_tiling t = fs_tiling_default();
        t.Bq = t.Bk = 1;
        t.form = r->tiling.form;
        t.exp2 = r->tiling.exp2;
        st = fs_tiled(a, &t, res->O, res->m, res->l, tr);
        break;
    }
    case FS_ALGO_TILED:
        st = r->lowp ? fs_lowp_tiled(a, r->tiling.Bq, r->tiling.Bk, &r->recipe, res->O, res->m, res->l, tr)
                     : fs_tiled(a, &r->tiling, res->O, res->m, res->l, tr);
        break;
    case FS_ALGO_DECODE:
        st = r->page_size > 0 ? fs_paged_decode_table(a, &r->decoding, r->page_size, r->block_table, r->n_table,
                                                       res->O, res->m, res->l, tr)
                              : fs_decode(a, &r->decoding, res->O, res->m, res->l, tr);
        break;
    case FS_ALGO_BACKWARD: st = run_backward(r, res, tr); break;
    case FS_ALGO_RING:
        if (r->ring_backward) {
            st = run_backward(r, res, tr);
        } else {
            fs_ring ring = r->ring;
            ring.tiling = r->tiling;
            st = fs_ring_forward(a, &ring, res->O, res->m, res->l, tr);
        }
        break;
    default: st = FS_ERR_ARG;
    }
    const bool lse_done = r->algo == FS_ALGO_BACKWARD || (r->algo == FS_ALGO_RING && r->ring_backward);
    if (st == FS_OK && !lse_done) fs_lse(res->m, res->l, (long)rows, res->L);
    if (st != FS_OK) fs_result_free(res);
    return st;
}

const char *fs_run_status_detail(const fs_run *r, fs_status st, char *buf, size_t n)
{
    const bool backward = r->algo == FS_ALGO_BACKWARD || (r->algo == FS_ALGO_RING && r->ring_backward);
    if (r->algo == FS_ALGO_RING && fs_attn_check(&r->attn) == FS_OK) {
        fs_ring ring = r->ring;
        ring.tiling = r->tiling;
        if (fs_ring_check(&r->attn, &ring, buf, n) != FS_OK && buf[0]) return buf;
    }
    if (backward && (st == FS_ERR_RANGE || st == FS_ERR_VALUE) &&
        fs_attn_check(&r->attn) == FS_OK && fs_backward_check_range(&r->attn, r->dO, buf, n) != FS_OK)
        return buf;
    return fs_attn_status_detail(&r->attn, st, buf, n);
}

const char *fs_algo_str(fs_algo a)
{
    static const char *s[] = {"reference", "softmax", "query", "tiled", "decode", "backward", "ring"};
    return (unsigned)a < FS_ALGO_COUNT ? s[a] : "?";
}
