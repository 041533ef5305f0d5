/* test_problem.c: random attention problems for the Check suites (see test_problem.h). */
#include "test_problem.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

fs_mask fs_test_mask_tree(fs_rng *r, int32_t n, uint64_t **bits, int32_t **parent)
{
    int32_t *par = malloc(sizeof(int32_t) * n);
    *bits = calloc((size_t)n * fs_mask_words(n), sizeof(uint64_t));
    ck_assert(par && *bits);
    par[0] = -1;
    for (int32_t i = 1; i < n; i++) par[i] = fs_rng_int(r, 0, i - 1);
    ck_assert_int_eq(fs_mask_tree_build(par, n, *bits, NULL), FS_OK);
    if (parent) *parent = par;
    else free(par);
    return fs_mask_tree(*bits, n);
}

fs_mask fs_test_mask_bits(fs_rng *r, int32_t n_q, int32_t n_kv, double visible, uint64_t **bits)
{
    int32_t w = fs_mask_words(n_kv);
    *bits = calloc((size_t)n_q * w, sizeof(uint64_t));
    ck_assert_ptr_nonnull(*bits);
    for (int32_t i = 0; i < n_q; i++)
        for (int32_t j = 0; j < n_kv; j++)
            if (fs_rng_uniform(r, 0, 1) < visible) (*bits)[(size_t)i * w + j / 64] |= 1ull << (j % 64);
    fs_mask m = {0};
    m.kind = FS_MASK_BITS;
    m.bits = *bits;
    m.words_per_row = w;
    return m;
}

/* A buffer of n values drawn uniformly in [lo, hi). */
static double *drawn(fs_rng *r, long n, double lo, double hi)
{
    double *x = malloc(sizeof(double) * n);
    ck_assert_ptr_nonnull(x);
    fs_rng_fill(r, x, n, lo, hi);
    return x;
}

void fs_test_problem_draw(fs_test_problem *p, fs_rng *r, int mask_kind, const fs_test_problem_spec *spec)
{
    memset(p, 0, sizeof *p);
    int hk = fs_rng_int(r, 1, 2), g = fs_rng_int(r, 1, 3);
    int n_q = fs_rng_int(r, 1, spec->max_n_q), n_kv = fs_rng_int(r, 1, spec->max_n_kv);
    int d = fs_rng_int(r, 1, spec->max_d), dv = fs_rng_int(r, 1, spec->max_d_v);
    if (mask_kind == FS_TEST_MASK_TREE) n_kv = n_q;   /* a tree is square */
    p->a = fs_attn_make(n_q, n_kv, d, dv);
    p->a.n_kv_heads = hk;
    p->a.n_q_heads = hk * g;
    long nq = (long)p->a.n_q_heads * n_q, nk = (long)hk * n_kv;
    if (spec->given_scores) {
        p->S = drawn(r, nq * n_kv, -4, 4);
        p->a.scale = 1;
    } else {
        p->Q = drawn(r, nq * d, -2, 2);
        p->K = drawn(r, nk * d, -2, 2);
    }
    p->V = drawn(r, nk * dv, -1, 1);
    if (spec->dO) p->dO = drawn(r, nq * dv, -1, 1);
    p->a.Q = p->Q;
    p->a.K = p->K;
    p->a.V = p->V;
    p->a.S = p->S;
    if (spec->softcap && fs_rng_int(r, 0, 3) == 0) p->a.softcap = fs_rng_uniform(r, 0.5, 3);
    if (spec->random_scale && fs_rng_int(r, 0, 3) == 0) p->a.scale = fs_rng_uniform(r, 0.2, 1.5);
    fs_mask *m = &p->a.mask;
    switch (mask_kind) {
    case FS_TEST_MASK_CAUSAL: m->kind = FS_MASK_CAUSAL; break;
    case FS_TEST_MASK_CAUSAL_OFFSET:
        m->kind = FS_MASK_CAUSAL;
        m->has_offset = true;
        m->offset = fs_rng_int(r, -3, spec->max_offset);
        break;
    case FS_TEST_MASK_WINDOW:
        m->kind = FS_MASK_WINDOW;
        m->window = fs_rng_int(r, 1, spec->max_window);
        break;
    case FS_TEST_MASK_TREE: *m = fs_test_mask_tree(r, n_q, &p->bits, &p->parent); break;
    case FS_TEST_MASK_BITS: *m = fs_test_mask_bits(r, n_q, n_kv, spec->bits_visible, &p->bits); break;
    default: break;
    }
}

void fs_test_problem_free(fs_test_problem *p)
{
    free(p->Q);
    free(p->K);
    free(p->V);
    free(p->S);
    free(p->dO);
    free(p->bits);
    free(p->parent);
    memset(p, 0, sizeof *p);
}
