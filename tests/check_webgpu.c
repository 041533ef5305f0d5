/* check_webgpu.c: the C half of the WebGPU path (src/kernels/webgpu/webgpu.h), without a GPU.
 *
 * The WGSL kernels themselves run in the browser test (tests/web/check_gpu.py). Here, an ideal
 * GPU: the records a traced kernel would write are made from the engine's own trace (the inverse
 * of fs_gpu_job_events, rounded to float32 as the kernel stores them), then turned back into
 * events and compared with the engine's. On random problems drawn fresh (every mask, GQA, given
 * scores, soft-cap, both forms and loop orders, exp2, the one-query walk, contiguous and strided
 * decode splits, both merge orders) that must match; one record changed must be found at exactly
 * its event; and the runs no WGSL kernel traces must be refused with a reason.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/run.h"
#include "kernels/webgpu/webgpu.h"
#include "test_problem.h"
#include "test_util.h"

static float f32(double x) { return x == -INFINITY ? FS_GPU_NEG : (float)x; }

/* What an exact tiled kernel writes: rec and ml from the engine's trace; O from its result. */
static void tiled_records(const fs_gpu_job *j, const fs_trace *tr, float *rec, float *O, float *ml)
{
    const uint32_t *P = j->params;
    const int32_t n_q = (int32_t)P[FS_GPU_N_Q], n_kt = (int32_t)P[FS_GPU_N_KT], len = (int32_t)P[FS_GPU_REC_LEN];
    const int32_t slots = (int32_t)P[FS_GPU_BK], d_v = (int32_t)P[FS_GPU_D_V];
    for (int64_t k = 0; k < tr->n; k++) {
        const fs_event *e = &tr->ev[k];
        if (e->kind == FS_EV_TILE || e->kind == FS_EV_SKIP) {
            for (int32_t i = e->r0; i < e->r1; i++) {
                float *r = rec + (((int64_t)e->head * n_q + i) * n_kt + e->kt) * len;
                r[FS_REC_CLS] = (float)e->cls;
                r[FS_REC_WHY] = (float)e->reason;
            }
        } else if (e->kind == FS_EV_ROW) {
            float *r = rec + (((int64_t)e->head * n_q + e->row) * n_kt + e->kt) * len;
            r[FS_REC_VISIBLE] = (float)e->visible;
            r[FS_REC_M_OLD] = f32(e->m_old);
            r[FS_REC_M_BLK] = f32(e->m_blk);
            r[FS_REC_M_NEW] = f32(e->m_new);
            r[FS_REC_L_OLD] = (float)e->l_old;
            r[FS_REC_L_BLK] = (float)e->l_blk;
            r[FS_REC_L_NEW] = (float)e->l_new;
            r[FS_REC_ALPHA] = (float)e->alpha;
            r[FS_REC_BETA] = (float)e->beta;
            const double *s = fs_trace_at(tr, e->s_row), *p = fs_trace_at(tr, e->p_row), *o = fs_trace_at(tr, e->o_new);
            for (int32_t c = 0; c < e->n_s; c++) {
                r[FS_REC_STATS + c] = f32(s[c]);
                r[FS_REC_STATS + slots + c] = (float)p[c];
            }
            for (int32_t c = 0; c < d_v; c++) r[FS_REC_STATS + 2 * slots + c] = (float)o[c];
        } else if (e->kind == FS_EV_OUT) {
            int64_t x = (int64_t)e->head * n_q + e->row;
            ml[2 * x] = f32(e->m_new);
            ml[2 * x + 1] = (float)e->l_new;
            const double *o = fs_trace_at(tr, e->o_new);
            for (int32_t c = 0; c < d_v; c++) O[x * d_v + c] = (float)o[c];
        }
    }
}

/* What an exact decode kernel writes: the partials' records and every node of each row's merges. */
static void decode_records(const fs_gpu_job *j, const fs_trace *tr, float *rec, float *node, float *O)
{
    const uint32_t *P = j->params;
    const int32_t n_q = (int32_t)P[FS_GPU_N_Q], nsp = (int32_t)P[FS_GPU_N_SPLIT], len = (int32_t)P[FS_GPU_SPLIT_LEN];
    const int32_t d_v = (int32_t)P[FS_GPU_D_V], width = 4 + d_v;
    for (int64_t k = 0; k < tr->n; k++) {
        const fs_event *e = &tr->ev[k];
        const int64_t g = (int64_t)e->head * n_q + e->row;
        if (e->kind == FS_EV_PARTIAL || e->kind == FS_EV_MERGE) {
            float *nd = node + (g * 2 * nsp + e->id) * width;
            nd[0] = f32(e->m_new);
            nd[1] = (float)e->l_new;
            nd[2] = e->kind == FS_EV_MERGE ? (float)e->alpha : 0;
            nd[3] = e->kind == FS_EV_MERGE ? (float)e->beta : 0;
            const double *o = fs_trace_at(tr, e->o_new);
            for (int32_t c = 0; c < d_v; c++) nd[4 + c] = (float)o[c];
        }
        if (e->kind == FS_EV_PARTIAL) {
            float *r = rec + (g * nsp + e->kt) * (4 + len);
            r[0] = (float)e->cls;
            r[1] = (float)e->reason;
            r[2] = (float)e->visible;
            r[3] = (float)e->n_s;
            const double *s = fs_trace_at(tr, e->s_row);
            for (int32_t c = 0; c < e->n_s; c++) r[4 + c] = f32(s[c]);
        } else if (e->kind == FS_EV_OUT) {
            const double *o = fs_trace_at(tr, e->o_new);
            for (int32_t c = 0; c < d_v; c++) O[g * d_v + c] = (float)o[c];
        }
    }
}

/* A random run the traced kernels take: tiled (any tiling), the query walk, or a decode. */
static void draw_run(fs_rng *r, int mask, fs_test_problem *tp, fs_run *run)
{
    static const fs_test_problem_spec spec = {.max_n_q = 9, .max_n_kv = 12, .max_d = 5, .max_d_v = 4, .max_offset = 4,
                                              .max_window = 5, .bits_visible = 0.6, .softcap = true, .random_scale = true};
    fs_test_problem_spec sp = spec;
    int algo = fs_rng_int(r, 0, 5);   /* 0-2 tiled, 3 query, 4-5 decode */
    sp.given_scores = algo <= 2 && fs_rng_int(r, 0, 4) == 0;
    fs_test_problem_draw(tp, r, mask, &sp);
    if (algo <= 2) {
        *run = fs_run_make(FS_ALGO_TILED);
        run->tiling.Bq = fs_rng_int(r, 1, 5);
        run->tiling.Bk = fs_rng_int(r, 1, 6);
        run->tiling.form = fs_rng_int(r, 0, 1) ? FS_FORM_NORMALIZED : FS_FORM_UNNORMALIZED;
        run->tiling.order = fs_rng_int(r, 0, 1) ? FS_ORDER_Q_OUTER : FS_ORDER_KV_OUTER;
        run->tiling.exp2 = fs_rng_int(r, 0, 3) == 0;
    } else if (algo == 3) {
        *run = fs_run_make(FS_ALGO_QUERY);
        run->tiling.form = fs_rng_int(r, 0, 1) ? FS_FORM_NORMALIZED : FS_FORM_UNNORMALIZED;
    } else {
        *run = fs_run_make(FS_ALGO_DECODE);
        run->decoding.split = fs_rng_int(r, 0, 2) == 0 ? FS_SPLIT_STRIDED : FS_SPLIT_CONTIGUOUS;
        run->decoding.Bk = fs_rng_int(r, 1, 5);
        run->decoding.parts = fs_rng_int(r, 1, 4);
        run->decoding.merge = fs_rng_int(r, 0, 1) ? FS_MERGE_TREE : FS_MERGE_SEQUENTIAL;
        run->decoding.form = fs_rng_int(r, 0, 1) ? FS_FORM_NORMALIZED : FS_FORM_UNNORMALIZED;
    }
    run->attn = tp->a;
}

typedef struct {
    fs_gpu_job job;
    fs_trace eng, gpu;
    float *rec, *node, *O, *ml;
} round_trip;

/* Job, engine trace, ideal records; 0 when the job is refused (given scores for a decode). */
static int round_trip_make(round_trip *t, const fs_run *run, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    char why[256];
    fs_status st = fs_gpu_job_make(run, &t->job, why, sizeof why);
    if (st != FS_OK) {
        FS_ASSERT_SEED(run->algo == FS_ALGO_DECODE && run->attn.S && strstr(why, "given scores"), seed,
                       "job refused: %s (%s)", fs_status_str(st), why);
        return 0;
    }
    fs_trace_init(&t->eng);
    fs_trace_init(&t->gpu);
    fs_result res;
    FS_ASSERT_SEED(fs_run_exec(run, &res, &t->eng) == FS_OK, seed, "engine run");
    fs_result_free(&res);
    t->rec = calloc((size_t)t->job.rec_floats + 1, sizeof(float));
    t->node = calloc((size_t)t->job.node_floats + 1, sizeof(float));
    t->O = calloc((size_t)t->job.o_floats + 1, sizeof(float));
    t->ml = calloc((size_t)t->job.ml_floats + 1, sizeof(float));
    ck_assert(t->rec && t->node && t->O && t->ml);
    if (t->job.kind == FS_GPU_TILED) tiled_records(&t->job, &t->eng, t->rec, t->O, t->ml);
    else decode_records(&t->job, &t->eng, t->rec, t->node, t->O);
    return 1;
}

static void round_trip_free(round_trip *t)
{
    fs_gpu_job_free(&t->job);
    fs_trace_free(&t->eng);
    fs_trace_free(&t->gpu);
    free(t->rec);
    free(t->node);
    free(t->O);
    free(t->ml);
}

static int64_t events_and_compare(round_trip *t, char *msg, size_t n, fs_result *res)
{
    fs_trace_clear(&t->gpu);
    ck_assert_int_eq(fs_gpu_job_events(&t->job, t->rec, t->job.kind == FS_GPU_DECODE ? t->node : NULL, t->O,
                                       t->job.kind == FS_GPU_TILED ? t->ml : NULL, res, &t->gpu), FS_OK);
    return fs_gpu_trace_compare(&t->gpu, &t->eng, FS_GPU_TRACE_TOL, msg, n);
}

START_TEST(test_ideal_gpu_matches)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    for (int k = 0; k < 40; k++) {
        fs_test_problem tp;
        fs_run run;
        draw_run(&r, _i % FS_TEST_MASKS, &tp, &run);
        round_trip t;
        if (round_trip_make(&t, &run, seed)) {
            char msg[300];
            fs_result res;
            int64_t at = events_and_compare(&t, msg, sizeof msg, &res);
            FS_ASSERT_SEED(at == -1, seed, "case %d (%s): %s", k, fs_algo_str(run.algo), msg);
            /* the result: O as the kernel wrote it, m in natural units, L = m + ln ℓ */
            fs_result ref;
            ck_assert_int_eq(fs_run_exec(&run, &ref, NULL), FS_OK);
            for (int64_t x = 0; x < (int64_t)run.attn.n_q_heads * run.attn.n_q; x++) {
                FS_ASSERT_SEED(ref.l[x] == 0 ? res.l[x] == 0 : fabs(res.m[x] - ref.m[x]) <= 1e-5 * fmax(1, fabs(ref.m[x])),
                               seed, "case %d row %lld: m %g against %g", k, (long long)x, res.m[x], ref.m[x]);
                FS_ASSERT_SEED(fs_max_rel_err(res.O + x * run.attn.d_v, ref.O + x * run.attn.d_v, run.attn.d_v) <= 1e-6,
                               seed, "case %d row %lld: O", k, (long long)x);
            }
            fs_result_free(&res);
            fs_result_free(&ref);
            round_trip_free(&t);
        }
        fs_test_problem_free(&tp);
    }
}
END_TEST

/* One number of one record changed: the comparison must stop at the event that carries it. */
START_TEST(test_changed_record_found)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    int tried = 0;
    for (int k = 0; k < 60 && tried < 20; k++) {
        fs_test_problem tp;
        fs_run run;
        draw_run(&r, k % FS_TEST_MASKS, &tp, &run);
        round_trip t;
        if (round_trip_make(&t, &run, seed)) {
            /* the events that carry a record number: a ROW (its α) or a PARTIAL (its ℓ) */
            int64_t cand[4096], n = 0;
            for (int64_t e = 0; e < t.eng.n && n < 4096; e++)
                if ((t.eng.ev[e].kind == FS_EV_ROW && t.eng.ev[e].visible > 0) || (t.eng.ev[e].kind == FS_EV_PARTIAL && t.eng.ev[e].visible > 0))
                    cand[n++] = e;
            if (n > 0) {
                tried++;
                const fs_event *e = &t.eng.ev[cand[fs_rng_int(&r, 0, (int)n - 1)]];
                const uint32_t *P = t.job.params;
                if (e->kind == FS_EV_ROW) {
                    float *x = t.rec + (((int64_t)e->head * run.attn.n_q + e->row) * (int64_t)P[FS_GPU_N_KT] + e->kt) *
                                           (int64_t)P[FS_GPU_REC_LEN];
                    x[FS_REC_ALPHA] = (float)(e->alpha + 0.01);   /* a rescale gone wrong */
                } else {
                    float *nd = t.node + (((int64_t)e->head * run.attn.n_q + e->row) * 2 * (int64_t)P[FS_GPU_N_SPLIT] + e->id) *
                                             (4 + run.attn.d_v);
                    nd[1] *= 1.01f;
                }
                char msg[300];
                int64_t at = events_and_compare(&t, msg, sizeof msg, NULL);
                FS_ASSERT_SEED(at == e->step, seed, "case %d: changed event %d (%s), comparison stopped at %lld: %s", k, (int)e->step,
                               fs_event_kind_str(e->kind), (long long)at, msg);
                FS_ASSERT_SEED(strstr(msg, e->kind == FS_EV_ROW ? "alpha" : "l_new") != NULL, seed, "the message names the field: %s", msg);
            }
            round_trip_free(&t);
        }
        fs_test_problem_free(&tp);
    }
    FS_ASSERT_SEED(tried >= 10, seed, "only %d cases had a record to change", tried);
}
END_TEST

/* A kernel that wrote nothing (records left NaN) must not compare equal. */
START_TEST(test_unwritten_records_fail)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    fs_test_problem tp;
    fs_run run;
    do {
        draw_run(&r, FS_TEST_MASK_NONE, &tp, &run);
        if (run.algo == FS_ALGO_DECODE && run.attn.S) fs_test_problem_free(&tp);
        else break;
    } while (1);
    round_trip t;
    ck_assert(round_trip_make(&t, &run, seed));
    for (int64_t x = 0; x < t.job.rec_floats; x++) t.rec[x] = NAN;
    char msg[512];
    FS_ASSERT_SEED(events_and_compare(&t, msg, sizeof msg, NULL) >= 0, seed, "NaN records compared equal");
    round_trip_free(&t);
    fs_test_problem_free(&tp);
}
END_TEST

/* The job: its parameter block, the mask's words, the merge schedule in the engine's order. */
START_TEST(test_job_layout)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    fs_test_problem tp;
    static const fs_test_problem_spec spec = {.max_n_q = 70, .max_n_kv = 70, .max_d = 3, .max_d_v = 3, .bits_visible = 0.5};
    fs_test_problem_draw(&tp, &r, FS_TEST_MASK_BITS, &spec);
    fs_run run = fs_run_make(FS_ALGO_TILED);
    run.attn = tp.a;
    fs_gpu_job j;
    char why[256];
    ck_assert_int_eq(fs_gpu_job_make(&run, &j, why, sizeof why), FS_OK);
    ck_assert_uint_eq(j.params[FS_GPU_N_Q], (uint32_t)tp.a.n_q);
    ck_assert_uint_eq(j.params[FS_GPU_MASK_KIND], FS_MASK_BITS);
    ck_assert_uint_eq(j.params[FS_GPU_WORDS], 2u * (uint32_t)tp.a.mask.words_per_row);
    for (int32_t i = 0; i < tp.a.n_q; i++)
        for (int32_t c = 0; c < tp.a.n_kv; c++) {
            bool bit = (j.bits[i * j.params[FS_GPU_WORDS] + c / 32] >> (c % 32)) & 1u;
            FS_ASSERT_SEED(bit == fs_mask_visible(&tp.a.mask, tp.a.n_q, tp.a.n_kv, i, c), seed, "bit (%d, %d)", i, c);
        }
    float scale;
    memcpy(&scale, &j.params[FS_GPU_SCALE], sizeof scale);
    ck_assert(scale == (float)tp.a.scale);
    fs_gpu_job_free(&j);
    fs_test_problem_free(&tp);

    /* a tree merge of 7 splits: the engine's MERGE events name the same nodes in the same order */
    static const fs_test_problem_spec s2 = {.max_n_q = 1, .max_n_kv = 1, .max_d = 2, .max_d_v = 2};
    fs_test_problem_draw(&tp, &r, FS_TEST_MASK_NONE, &s2);
    double K[14], V[14];
    fs_rng_fill(&r, K, 14, -1, 1);
    fs_rng_fill(&r, V, 14, -1, 1);
    run = fs_run_make(FS_ALGO_DECODE);
    run.attn = fs_attn_make(1, 7, 2, 2);
    run.attn.Q = K;
    run.attn.K = K;
    run.attn.V = V;
    run.decoding.Bk = 1;
    run.decoding.merge = FS_MERGE_TREE;
    ck_assert_int_eq(fs_gpu_job_make(&run, &j, why, sizeof why), FS_OK);
    fs_trace tr;
    fs_trace_init(&tr);
    fs_result res;
    ck_assert_int_eq(fs_run_exec(&run, &res, &tr), FS_OK);
    int t = 0;
    for (int64_t k = 0; k < tr.n; k++) {
        if (tr.ev[k].kind != FS_EV_MERGE) continue;
        ck_assert_int_lt(t, j.n_sched);
        ck_assert_int_eq((int)j.sched[3 * t], tr.ev[k].a);
        ck_assert_int_eq((int)j.sched[3 * t + 1], tr.ev[k].b);
        ck_assert_int_eq((int)j.sched[3 * t + 2], tr.ev[k].id);
        t++;
    }
    ck_assert_int_eq(t, 6);
    ck_assert_int_eq(j.n_sched, 6);
    fs_result_free(&res);
    fs_trace_free(&tr);
    fs_gpu_job_free(&j);
    fs_test_problem_free(&tp);
}
END_TEST

/* What no WGSL kernel traces is refused with a sentence that says why. */
START_TEST(test_refusals)
{
    double Q[4] = {1, 0, 0, 1}, K[4] = {1, 0, 0, 1}, V[4] = {1, 2, 3, 4}, z[3] = {1, 2, 3};
    fs_attn a = fs_attn_make(2, 2, 2, 2);
    a.Q = Q;
    a.K = K;
    a.V = V;
    struct { fs_run run; const char *word; } cases[8];
    int n = 0;
    cases[n].run = fs_run_make(FS_ALGO_SOFTMAX), cases[n].run.z = z, cases[n].run.n_z = 3, cases[n++].word = "softmax";
    cases[n].run = fs_run_make(FS_ALGO_BACKWARD), cases[n].run.attn = a, cases[n++].word = "backward";
    cases[n].run = fs_run_make(FS_ALGO_REFERENCE), cases[n].run.attn = a, cases[n++].word = "reference";
    cases[n].run = fs_run_make(FS_ALGO_TILED), cases[n].run.attn = a, cases[n].run.tiling.pitfall = FS_PITFALL_NO_RESCALE,
    cases[n++].word = "pitfall";
    cases[n].run = fs_run_make(FS_ALGO_TILED), cases[n].run.attn = a, cases[n].run.lowp = true, cases[n++].word = "FP8";
    cases[n].run = fs_run_make(FS_ALGO_TILED), cases[n].run.attn = a, cases[n].run.tiling.dropout.on = true, cases[n++].word = "dropout";
    cases[n].run = fs_run_make(FS_ALGO_DECODE), cases[n].run.attn = a, cases[n].run.page_size = 2, cases[n++].word = "paged";
    for (int k = 0; k < n; k++) {
        fs_gpu_job j;
        char why[256] = "";
        ck_assert_int_eq(fs_gpu_job_make(&cases[k].run, &j, why, sizeof why), FS_ERR_ARG);
        ck_assert_msg(strstr(why, cases[k].word) != NULL, "case %d: '%s' does not say '%s'", k, why, cases[k].word);
        ck_assert(j.qs == NULL && j.sched == NULL);
    }
}
END_TEST

Suite *webgpu_suite(void)
{
    Suite *s = suite_create("webgpu");
    TCase *tc = tcase_create("records");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_ideal_gpu_matches, 0, FS_TEST_MASKS);
    tcase_add_test(tc, test_changed_record_found);
    tcase_add_test(tc, test_unwritten_records_fail);
    tcase_add_test(tc, test_job_layout);
    tcase_add_test(tc, test_refusals);
    suite_add_tcase(s, tc);
    return s;
}
