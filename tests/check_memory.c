/* check_memory.c: the memory/traffic model (src/engine/memory.h).
 *
 * The fixed cases are the documents' own figures (000's 64 MiB per head, 16·n² bytes of traffic,
 * 28 KiB of SRAM, the 16 x 16 causal picture's 6/4/6 tiles). The random cases cross-check the
 * model's tile counts against the engine itself: the TILE and SKIP events of an fs_tiled trace
 * on the same problem, with sizes drawn fresh each run (seed printed on failure).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine/memory.h"
#include "engine/tiled.h"
#include "engine/trace.h"
#include "test_util.h"

START_TEST(test_doc000_materialized)
{
    fs_mem_problem p = fs_mem_problem_make(4096, 4096, 128, 128);
    p.mat_bytes = 4;
    fs_mem_report r;
    ck_assert_int_eq(fs_mem_model(&p, &r), FS_OK);
    ck_assert_int_eq(r.s_bytes, 64LL << 20);                 /* 64 MiB per head */
    ck_assert_int_eq(r.sp_bytes, 128LL << 20);
    ck_assert_int_eq(r.mat_traffic, 16LL * 4096 * 4096);     /* 16 · n² bytes */
    ck_assert_int_eq(r.mat_traffic, 256LL << 20);
    p.n_q_heads = p.n_kv_heads = 32;
    ck_assert_int_eq(fs_mem_model(&p, &r), FS_OK);
    ck_assert_int_eq(r.s_bytes, 2LL << 30);                  /* 2 GiB for 32 heads */
    ck_assert_double_eq(fs_mem_s_bytes(32768, 32768, 32, 4), 128.0 * (1LL << 30));
    ck_assert_double_eq(fs_mem_mat_traffic(4096, 4096, 1, 4), 16.0 * 4096 * 4096);
    ck_assert_double_eq(fs_mem_sp_bytes(4096, 4096, 1, 4), 2.0 * 64 * (1 << 20));
}
END_TEST

START_TEST(test_doc000_sram_and_flops)
{
    /* 000: Q, K, V tiles 8 KiB each in half, S tile 4 KiB in float: 28 KiB; O tile 16 KiB. */
    fs_mem_problem p = fs_mem_problem_make(4096, 4096, 128, 128);
    p.Bq = p.Bk = 32;
    fs_mem_report r;
    ck_assert_int_eq(fs_mem_model(&p, &r), FS_OK);
    ck_assert_int_eq(r.sram_bytes, 28 * 1024);
    ck_assert_int_eq(r.reg_bytes, 128 + 128 + 16 * 1024);
    ck_assert_double_eq(fs_mem_tile_sram(32, 32, 128, 2, 4), 28 * 1024);
    ck_assert_double_eq(fs_mem_tile_flops(32, 32, 128), 524288);   /* "524K", exactly 512 Ki */
    ck_assert_double_eq(fs_mem_tile_flops(1, 32, 128), 16384);
    ck_assert_double_eq(fs_mem_kv_bytes(4096, 128, 1, 2), 2 << 20); /* 2 MiB per head */
    /* no mask: every pair visited, each reads Bk·(d + d_v)·2 bytes of K and V */
    ck_assert_int_eq(r.q_tiles, 128);
    ck_assert_int_eq(r.kv_tiles, 128);
    ck_assert_int_eq(r.tiles_full, 128 * 128);
    ck_assert_int_eq(r.tiles_skipped, 0);
    ck_assert_int_eq(r.tiled_traffic, 4096LL * 128 * 2 * 2 + 128LL * 4096 * 256 * 2);
    ck_assert_int_eq(r.tiled_flops, r.mat_flops);
}
END_TEST

START_TEST(test_causal_16)
{
    /* 000's picture and 004's counts: 16 x 16, 4 x 4 tiles, causal: 6 full, 4 partial, 6 skipped */
    fs_mem_problem p = fs_mem_problem_make(16, 16, 8, 8);
    p.Bq = p.Bk = 4;
    p.mask.kind = FS_MASK_CAUSAL;
    fs_mem_report r;
    ck_assert_int_eq(fs_mem_model(&p, &r), FS_OK);
    ck_assert_int_eq(r.tiles_full, 6);
    ck_assert_int_eq(r.tiles_partial, 4);
    ck_assert_int_eq(r.tiles_skipped, 6);
    /* the skipped pairs move nothing: 10 pairs of 4 keys each read K and V */
    ck_assert_int_eq(r.tiled_traffic, 16 * 8 * 2 + 10 * 4 * 16 * 2 + 16 * 8 * 2);
}
END_TEST

START_TEST(test_errors)
{
    fs_mem_report r;
    fs_mem_problem p = fs_mem_problem_make(8, 8, 4, 4);
    p.Bq = 0;
    ck_assert_int_eq(fs_mem_model(&p, &r), FS_ERR_TILE);
    p = fs_mem_problem_make(0, 8, 4, 4);
    ck_assert_int_eq(fs_mem_model(&p, &r), FS_ERR_SHAPE);
    p = fs_mem_problem_make(8, 8, 4, 4);
    p.n_q_heads = 3;
    p.n_kv_heads = 2;
    ck_assert_int_eq(fs_mem_model(&p, &r), FS_ERR_SHAPE);
    p = fs_mem_problem_make(8, 8, 4, 4);
    p.mask.kind = FS_MASK_WINDOW;
    p.mask.window = 0;
    ck_assert_int_eq(fs_mem_model(&p, &r), FS_ERR_MASK);
    p = fs_mem_problem_make(1 << 20, 1 << 20, 4, 4);
    p.Bq = p.Bk = 1;   /* 2^40 pairs: refused, not walked */
    ck_assert_int_eq(fs_mem_model(&p, &r), FS_ERR_SHAPE);
}
END_TEST

/* The model's tile classes equal what the engine does on the same problem. */
START_TEST(test_matches_engine)
{
    uint64_t seed = fs_test_seed();
    fs_rng rng = {seed};
    for (int iter = 0; iter < 40; iter++) {
        int32_t nq = fs_rng_int(&rng, 1, 40), nkv = fs_rng_int(&rng, 1, 40), d = fs_rng_int(&rng, 1, 4);
        int kind = fs_rng_int(&rng, 0, 2);
        double *Q = malloc(sizeof(double) * (size_t)(nq * d)), *K = malloc(sizeof(double) * (size_t)(nkv * d));
        double *V = malloc(sizeof(double) * (size_t)(nkv * d)), *O = malloc(sizeof(double) * (size_t)(nq * d));
        fs_rng_fill(&rng, Q, nq * d, -1, 1);
        fs_rng_fill(&rng, K, nkv * d, -1, 1);
        fs_rng_fill(&rng, V, nkv * d, -1, 1);
        fs_attn a = fs_attn_make(nq, nkv, d, d);
        a.Q = Q;
        a.K = K;
        a.V = V;
        a.mask.kind = kind == 0 ? FS_MASK_NONE : kind == 1 ? FS_MASK_CAUSAL : FS_MASK_WINDOW;
        a.mask.window = fs_rng_int(&rng, 1, 10);
        fs_tiling t = fs_tiling_default();
        t.Bq = fs_rng_int(&rng, 1, 9);
        t.Bk = fs_rng_int(&rng, 1, 9);
        fs_trace tr;
        fs_trace_init(&tr);
        FS_ASSERT_SEED(fs_tiled(&a, &t, O, NULL, NULL, &tr) == FS_OK, seed, "tiled failed");
        int64_t full = 0, partial = 0, skipped = 0, kv_rows = 0;
        for (int64_t e = 0; e < tr.n; e++) {
            const fs_event *ev = &tr.ev[e];
            if (ev->kind == FS_EV_SKIP) skipped++;
            if (ev->kind == FS_EV_TILE) {
                full += ev->cls == FS_TILE_FULL;
                partial += ev->cls == FS_TILE_PARTIAL;
                kv_rows += ev->c1 - ev->c0;
            }
        }
        fs_mem_problem p = fs_mem_problem_make(nq, nkv, d, d);
        p.Bq = t.Bq;
        p.Bk = t.Bk;
        p.mask = a.mask;
        fs_mem_report r;
        FS_ASSERT_SEED(fs_mem_model(&p, &r) == FS_OK, seed, "model failed");
        FS_ASSERT_SEED(r.tiles_full == full && r.tiles_partial == partial && r.tiles_skipped == skipped, seed,
                       "iter %d (nq %d nkv %d Bq %d Bk %d mask %d): model %lld/%lld/%lld, engine %lld/%lld/%lld",
                       iter, nq, nkv, t.Bq, t.Bk, kind, (long long)r.tiles_full, (long long)r.tiles_partial,
                       (long long)r.tiles_skipped, (long long)full, (long long)partial, (long long)skipped);
        int64_t want = (int64_t)nq * d * 2 + kv_rows * 2 * d * 2 + (int64_t)nq * d * 2;
        FS_ASSERT_SEED(r.tiled_traffic == want, seed, "traffic %lld, want %lld", (long long)r.tiled_traffic,
                       (long long)want);
        FS_ASSERT_SEED(r.tiled_traffic <= (int64_t)nq * d * 4 + (int64_t)r.q_tiles * nkv * 2 * d * 2, seed,
                       "skips cannot add traffic");
        fs_trace_free(&tr);
        free(Q);
        free(K);
        free(V);
        free(O);
    }
}
END_TEST

Suite *memory_suite(void)
{
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, test_doc000_materialized);
    tcase_add_test(tc, test_doc000_sram_and_flops);
    tcase_add_test(tc, test_causal_16);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_matches_engine);
    suite_add_tcase(s, tc);
    return s;
}
