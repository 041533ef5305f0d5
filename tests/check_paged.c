/* check_paged.c: the paged KV cache (paged.h) against the contiguous decode.
 *
 * Random problems are drawn fresh each run (seed printed on failure, FS_SEED=... replays one),
 * with random page sizes, a shuffled pool shared with other sequences (so a table is a random
 * scattering of pages), GQA, every mask. Decode through the table computes the same sums in the
 * same order as fs_decode on the contiguous arrays, so the comparison is bit-for-bit (memcmp),
 * events included; prefill over a cached prefix is also compared with the reference (1e-12).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/decode.h"
#include "engine/memory.h"
#include "engine/paged.h"
#include "engine/reference.h"
#include "test_problem.h"
#include "test_util.h"

static void shuffle(fs_rng *r, int32_t *x, int32_t n)
{
    for (int32_t i = 0; i < n; i++) x[i] = i;
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = fs_rng_int(r, 0, i), t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

static fs_decoding random_decoding(fs_rng *r)
{
    fs_decoding dc = fs_decoding_default();
    dc.split = fs_rng_int(r, 0, 3) == 0 ? FS_SPLIT_STRIDED : FS_SPLIT_CONTIGUOUS;
    dc.Bk = fs_rng_int(r, 1, 8);
    dc.parts = fs_rng_int(r, 1, 5);
    dc.merge = fs_rng_int(r, 0, 1) ? FS_MERGE_TREE : FS_MERGE_SEQUENTIAL;
    dc.form = fs_rng_int(r, 0, 1) ? FS_FORM_NORMALIZED : FS_FORM_UNNORMALIZED;
    return dc;
}

/* Two traces equal once the paged one's LOOKUP events are left out: same kinds, same fields,
 * same vectors bit for bit. Returns the first differing step of a (−1: equal). */
static int64_t same_events(const fs_trace *a, const fs_trace *paged, int64_t *lookups)
{
    int64_t k = 0;
    *lookups = 0;
    for (int64_t i = 0; i < paged->n; i++) {
        const fs_event *p = &paged->ev[i];
        if (p->kind == FS_EV_LOOKUP) {
            ++*lookups;
            continue;
        }
        if (k >= a->n) return k;
        const fs_event *e = &a->ev[k];
        if (e->kind != p->kind || e->head != p->head || e->row != p->row || e->kt != p->kt || e->c0 != p->c0 ||
            e->c1 != p->c1 || e->a != p->a || e->b != p->b || e->id != p->id || e->n_s != p->n_s ||
            e->n_o != p->n_o || memcmp(&e->m_new, &p->m_new, sizeof(double)) ||
            memcmp(&e->l_new, &p->l_new, sizeof(double)) || memcmp(&e->alpha, &p->alpha, sizeof(double)))
            return k;
        if ((e->n_s && memcmp(fs_trace_at(a, e->s_row), fs_trace_at(paged, p->s_row), sizeof(double) * e->n_s)) ||
            (e->n_o && memcmp(fs_trace_at(a, e->o_new), fs_trace_at(paged, p->o_new), sizeof(double) * e->n_o)))
            return k;
        k++;
    }
    return k == a->n ? -1 : k;
}

/* Every LOOKUP names the page the table holds for its block, and the lookups before a PARTIAL
 * cover exactly the keys that split reads. */
static int lookups_follow_table(const fs_trace *tr, const fs_paged_cache *c, int32_t seq, char *why, size_t n)
{
    const fs_paged_seq *s = &c->seq[seq];
    int32_t next = -1;   /* the next key the current split should look up */
    for (int64_t i = 0; i < tr->n; i++) {
        const fs_event *e = &tr->ev[i];
        if (e->kind == FS_EV_LOOKUP) {
            if (e->seq != seq || e->block < 0 || e->block >= s->n_blocks || e->page != s->table[e->block]) {
                snprintf(why, n, "step %lld: block %d -> page %d, table says %d", (long long)i, e->block, e->page,
                         e->block >= 0 && e->block < s->n_blocks ? s->table[e->block] : -1);
                return 0;
            }
            if (e->c0 / c->page_size != e->block || (e->c1 - 1) / c->page_size != e->block) {
                snprintf(why, n, "step %lld: keys %d-%d not in block %d", (long long)i, e->c0, e->c1 - 1, e->block);
                return 0;
            }
            if (next >= 0 && e->c0 != next) {
                snprintf(why, n, "step %lld: lookup starts at key %d, expected %d", (long long)i, e->c0, next);
                return 0;
            }
            int32_t last = e->c0;
            while (last + e->stride < e->c1) last += e->stride;
            next = last + e->stride;
        } else if (e->kind == FS_EV_PARTIAL) {
            bool read = e->cls != FS_TILE_SKIPPED && e->c0 < e->c1;
            if (read && next != (e->c0 + ((e->c1 - 1 - e->c0) / e->stride + 1) * e->stride)) {
                snprintf(why, n, "step %lld: split %d's lookups end before key %d", (long long)i, e->kt, e->c1 - 1);
                return 0;
            }
            if (!read && next >= 0) {
                snprintf(why, n, "step %lld: lookups for a split that reads nothing", (long long)i);
                return 0;
            }
            next = -1;
        }
    }
    return 1;
}

/* Decode through a table of shuffled pages interleaved with two other sequences equals the
 * contiguous decode bit for bit, events included. */
START_TEST(test_decode_matches_contiguous)
{
    uint64_t seed = fs_test_seed() + (uint64_t)_i;
    fs_rng r = {seed};
    const fs_test_problem_spec spec = {.max_n_q = 4, .max_n_kv = 40, .max_d = 5, .max_d_v = 4, .max_offset = 6,
                                       .max_window = 8, .bits_visible = 0.6, .softcap = true, .random_scale = true};
    for (int rep = 0; rep < 30; rep++) {
        fs_test_problem p;
        fs_test_problem_draw(&p, &r, _i % FS_TEST_MASKS, &spec);
        const fs_attn *a = &p.a;
        const int32_t ps = fs_rng_int(&r, 1, 9), H = a->n_kv_heads, n = a->n_kv;
        /* Three sequences grow together, one position each in turn: ours is seq 1. */
        int32_t len[3] = {fs_rng_int(&r, 0, 30), n, fs_rng_int(&r, 0, 30)};
        int32_t pages = 0;
        for (int s = 0; s < 3; s++) pages += (len[s] + ps - 1) / ps;
        pages += fs_rng_int(&r, 0, 4);
        int32_t *order = malloc(sizeof(int32_t) * (size_t)pages);
        shuffle(&r, order, pages);
        fs_paged_cache c;
        ck_assert_int_eq(fs_paged_init(&c, ps, pages, H, a->d, a->d_v, order), FS_OK);
        int32_t id[3];
        for (int s = 0; s < 3; s++) ck_assert_int_eq(fs_paged_add(&c, &id[s]), FS_OK);
        double *k = malloc(sizeof(double) * (size_t)H * a->d), *v = malloc(sizeof(double) * (size_t)H * a->d_v);
        for (int32_t t = 0; t < 40; t++)
            for (int s = 0; s < 3; s++) {
                if (t >= len[s]) continue;
                for (int32_t h = 0; h < H; h++)
                    if (s == 1) {
                        memcpy(k + (size_t)h * a->d, a->K + ((size_t)h * n + t) * a->d, sizeof(double) * a->d);
                        memcpy(v + (size_t)h * a->d_v, a->V + ((size_t)h * n + t) * a->d_v, sizeof(double) * a->d_v);
                    } else {
                        fs_rng_fill(&r, k + (size_t)h * a->d, a->d, -2, 2);
                        fs_rng_fill(&r, v + (size_t)h * a->d_v, a->d_v, -1, 1);
                    }
                FS_ASSERT_SEED(fs_paged_append(&c, id[s], k, v, NULL) == FS_OK, seed, "append");
            }
        const fs_decoding dc = random_decoding(&r);
        const long no = (long)a->n_q_heads * a->n_q * a->d_v, rows = (long)a->n_q_heads * a->n_q;
        double *O1 = malloc(sizeof(double) * no), *O2 = malloc(sizeof(double) * no);
        double *m1 = malloc(sizeof(double) * rows), *m2 = malloc(sizeof(double) * rows);
        double *l1 = malloc(sizeof(double) * rows), *l2 = malloc(sizeof(double) * rows);
        fs_trace t1, t2;
        fs_trace_init(&t1);
        fs_trace_init(&t2);
        ck_assert_int_eq(fs_decode(a, &dc, O1, m1, l1, &t1), FS_OK);
        fs_attn view = *a;
        view.K = view.V = NULL;
        fs_status st = fs_paged_decode(&c, id[1], &view, &dc, O2, m2, l2, &t2);
        FS_ASSERT_SEED(st == FS_OK, seed, "paged decode: %s", fs_status_str(st));
        FS_ASSERT_SEED(!memcmp(O1, O2, sizeof(double) * no) && !memcmp(m1, m2, sizeof(double) * rows) &&
                           !memcmp(l1, l2, sizeof(double) * rows),
                       seed, "page size %d, %s splits Bk %d parts %d, %s merge: O differs from the contiguous run",
                       ps, fs_split_str(dc.split), dc.Bk, dc.parts, fs_merge_str(dc.merge));
        int64_t lookups;
        int64_t diff = same_events(&t1, &t2, &lookups);
        FS_ASSERT_SEED(diff < 0, seed, "page size %d: event %lld differs from the contiguous trace", ps, (long long)diff);
        char why[160] = "";
        FS_ASSERT_SEED(lookups_follow_table(&t2, &c, id[1], why, sizeof why), seed, "page size %d: %s", ps, why);
        /* Untraced: the same numbers. */
        st = fs_paged_decode(&c, id[1], &view, &dc, O2, NULL, NULL, NULL);
        FS_ASSERT_SEED(st == FS_OK && !memcmp(O1, O2, sizeof(double) * no), seed, "untraced paged decode differs");
        fs_trace_free(&t1);
        fs_trace_free(&t2);
        free(O1); free(O2); free(m1); free(m2); free(l1); free(l2);
        free(k); free(v); free(order);
        fs_paged_free(&c);
        fs_test_problem_free(&p);
    }
}
END_TEST

/* Three sequences forked from one prompt share its pages; each then appends its own tokens.
 * The first writer into the partly filled last prompt page copies it (COW), the others keep
 * theirs; every sequence still holds exactly its own tokens and decodes as its contiguous
 * copy does; pages used = the prompt's pages + each sequence's new ones. */
START_TEST(test_shared_prefix_copy_on_write)
{
    uint64_t seed = fs_test_seed() + 7919u * (uint64_t)_i;
    fs_rng r = {seed};
    for (int rep = 0; rep < 40; rep++) {
        const int32_t ps = fs_rng_int(&r, 1, 6), H = fs_rng_int(&r, 1, 2), G = fs_rng_int(&r, 1, 3);
        const int32_t d = fs_rng_int(&r, 1, 5), d_v = fs_rng_int(&r, 1, 4), prompt = fs_rng_int(&r, 1, 20);
        int32_t extra[3];
        int32_t pages = (prompt + ps - 1) / ps;
        for (int s = 0; s < 3; s++) {
            extra[s] = fs_rng_int(&r, 0, 12);
            pages += (prompt + extra[s] + ps - 1) / ps;   /* more than enough */
        }
        int32_t *order = malloc(sizeof(int32_t) * (size_t)pages);
        shuffle(&r, order, pages);
        fs_paged_cache c;
        ck_assert_int_eq(fs_paged_init(&c, ps, pages, H, d, d_v, order), FS_OK);
        /* Contiguous copies of what each sequence should hold: K (H, 32, d), V (H, 32, d_v). */
        const int32_t cap = 32;
        double *K[3], *V[3];
        for (int s = 0; s < 3; s++) {
            K[s] = malloc(sizeof(double) * (size_t)H * cap * d);
            V[s] = malloc(sizeof(double) * (size_t)H * cap * d_v);
        }
        double *k = malloc(sizeof(double) * (size_t)H * d), *v = malloc(sizeof(double) * (size_t)H * d_v);
        int32_t id[3];
        fs_trace tr;
        fs_trace_init(&tr);
        ck_assert_int_eq(fs_paged_add(&c, &id[0]), FS_OK);
        for (int32_t t = 0; t < prompt; t++) {
            fs_rng_fill(&r, k, (long)H * d, -2, 2);
            fs_rng_fill(&r, v, (long)H * d_v, -1, 1);
            for (int s = 0; s < 3; s++)
                for (int32_t h = 0; h < H; h++) {
                    memcpy(K[s] + ((size_t)h * cap + t) * d, k + (size_t)h * d, sizeof(double) * d);
                    memcpy(V[s] + ((size_t)h * cap + t) * d_v, v + (size_t)h * d_v, sizeof(double) * d_v);
                }
            ck_assert_int_eq(fs_paged_append(&c, id[0], k, v, &tr), FS_OK);
        }
        const int32_t prompt_pages = fs_paged_pages_used(&c);
        ck_assert_int_eq(prompt_pages, (prompt + ps - 1) / ps);
        ck_assert_int_eq(fs_paged_fork(&c, id[0], &id[1], &tr), FS_OK);
        ck_assert_int_eq(fs_paged_fork(&c, id[0], &id[2], &tr), FS_OK);
        FS_ASSERT_SEED(fs_paged_pages_used(&c) == prompt_pages, seed, "forks took pages");
        /* Append in turns, each sequence its own tokens. */
        for (int32_t t = 0; t < 12; t++)
            for (int s = 0; s < 3; s++) {
                if (t >= extra[s]) continue;
                fs_rng_fill(&r, k, (long)H * d, -2, 2);
                fs_rng_fill(&r, v, (long)H * d_v, -1, 1);
                for (int32_t h = 0; h < H; h++) {
                    memcpy(K[s] + ((size_t)h * cap + prompt + t) * d, k + (size_t)h * d, sizeof(double) * d);
                    memcpy(V[s] + ((size_t)h * cap + prompt + t) * d_v, v + (size_t)h * d_v, sizeof(double) * d_v);
                }
                ck_assert_int_eq(fs_paged_append(&c, id[s], k, v, &tr), FS_OK);
            }
        /* Copies: the prompt's last page is partly filled when prompt % ps != 0; each writer into
         * it but the last one left holding it copies. */
        int writers = 0;
        for (int s = 0; s < 3; s++) writers += extra[s] > 0;
        int cows = 0, shares = 0, allocs = 0;
        for (int64_t i = 0; i < tr.n; i++) {
            cows += tr.ev[i].kind == FS_EV_COW;
            shares += tr.ev[i].kind == FS_EV_SHARE;
            allocs += tr.ev[i].kind == FS_EV_ALLOC;
        }
        int expect_cows = prompt % ps ? (writers == 3 ? 2 : writers) : 0;
        FS_ASSERT_SEED(cows == expect_cows, seed, "prompt %d page %d writers %d: %d copies, expected %d", prompt, ps,
                       writers, cows, expect_cows);
        FS_ASSERT_SEED(shares == 2 * prompt_pages, seed, "%d shares, expected %d", shares, 2 * prompt_pages);
        /* Pages used: the prompt's, each sequence's new blocks, and the copies. */
        int32_t expect_pages = prompt_pages + cows;
        for (int s = 0; s < 3; s++) expect_pages += (prompt + extra[s] + ps - 1) / ps - prompt_pages;
        FS_ASSERT_SEED(fs_paged_pages_used(&c) == expect_pages && allocs == expect_pages - cows, seed,
                       "%d pages used (%d allocations), expected %d", fs_paged_pages_used(&c), allocs, expect_pages);
        /* The memory model (memory.h) counts the same pages, copies and empty slots, and the
         * empty slots are at most one partly filled page per sequence. */
        int32_t lens[3] = {prompt + extra[0], prompt + extra[1], prompt + extra[2]};
        fs_mem_paged mp;
        ck_assert_int_eq(fs_mem_paged_model(3, lens, prompt, 40, ps, &mp), FS_OK);
        int64_t empty = 0, shared_pages = 0;
        for (int32_t q = 0; q < c.n_pages; q++)
            if (c.refs[q]) {
                empty += ps - c.fill[q];
                shared_pages += c.refs[q] > 1;
            }
        FS_ASSERT_SEED(mp.pages == fs_paged_pages_used(&c) && mp.empty == empty && mp.copied == (int64_t)cows * (prompt % ps) &&
                           mp.shared_pages == shared_pages && mp.empty <= 3 * (ps - 1),
                       seed, "model: %lld pages, %lld empty, %lld copied, %lld shared; engine: %d, %lld, %d x %d, %lld",
                       (long long)mp.pages, (long long)mp.empty, (long long)mp.copied, (long long)mp.shared_pages,
                       fs_paged_pages_used(&c), (long long)empty, cows, prompt % ps, (long long)shared_pages);
        /* Each sequence holds its own tokens, and decodes as its contiguous copy. */
        for (int s = 0; s < 3; s++) {
            const int32_t n = prompt + extra[s];
            double *gK = malloc(sizeof(double) * (size_t)H * n * d), *gV = malloc(sizeof(double) * (size_t)H * n * d_v);
            double *cK = malloc(sizeof(double) * (size_t)H * n * d), *cV = malloc(sizeof(double) * (size_t)H * n * d_v);
            for (int32_t h = 0; h < H; h++) {
                memcpy(cK + (size_t)h * n * d, K[s] + (size_t)h * cap * d, sizeof(double) * (size_t)n * d);
                memcpy(cV + (size_t)h * n * d_v, V[s] + (size_t)h * cap * d_v, sizeof(double) * (size_t)n * d_v);
            }
            fs_paged_gather(&c, id[s], gK, gV);
            FS_ASSERT_SEED(!memcmp(gK, cK, sizeof(double) * (size_t)H * n * d) &&
                               !memcmp(gV, cV, sizeof(double) * (size_t)H * n * d_v),
                           seed, "sequence %d does not hold its own K and V (prompt %d, page %d)", s, prompt, ps);
            fs_attn a = fs_attn_make(1, n, d, d_v);
            a.n_q_heads = H * G;
            a.n_kv_heads = H;
            double *Q = malloc(sizeof(double) * (size_t)H * G * d);
            fs_rng_fill(&r, Q, (long)H * G * d, -2, 2);
            a.Q = Q;
            a.K = cK;
            a.V = cV;
            fs_decoding dc = random_decoding(&r);
            double *O1 = malloc(sizeof(double) * (size_t)H * G * d_v), *O2 = malloc(sizeof(double) * (size_t)H * G * d_v);
            ck_assert_int_eq(fs_decode(&a, &dc, O1, NULL, NULL, NULL), FS_OK);
            a.K = a.V = NULL;
            ck_assert_int_eq(fs_paged_decode(&c, id[s], &a, &dc, O2, NULL, NULL, NULL), FS_OK);
            FS_ASSERT_SEED(!memcmp(O1, O2, sizeof(double) * (size_t)H * G * d_v), seed,
                           "sequence %d decodes differently through its table", s);
            free(gK); free(gV); free(cK); free(cV); free(Q); free(O1); free(O2);
        }
        /* Releasing all three frees every page. */
        for (int s = 0; s < 3; s++) fs_paged_release(&c, id[s]);
        FS_ASSERT_SEED(fs_paged_pages_used(&c) == 0, seed, "%d pages still held", fs_paged_pages_used(&c));
        fs_trace_free(&tr);
        for (int s = 0; s < 3; s++) {
            free(K[s]);
            free(V[s]);
        }
        free(k); free(v); free(order);
        fs_paged_free(&c);
    }
}
END_TEST

/* Prefill of a chunk over a cached prefix: the chunk's K and V appended through the table, its
 * queries attending causally to prefix and chunk. Bit for bit the contiguous decode with splits
 * of one page, and the reference to 1e-12. */
START_TEST(test_prefill_over_cached_prefix)
{
    uint64_t seed = fs_test_seed() + 104729u * (uint64_t)_i;
    fs_rng r = {seed};
    for (int rep = 0; rep < 40; rep++) {
        const int32_t ps = fs_rng_int(&r, 1, 7), H = fs_rng_int(&r, 1, 2), G = fs_rng_int(&r, 1, 3);
        const int32_t d = fs_rng_int(&r, 1, 5), d_v = fs_rng_int(&r, 1, 4);
        const int32_t prefix = fs_rng_int(&r, 0, 20), n_q = fs_rng_int(&r, 1, 8), n = prefix + n_q;
        double *K = malloc(sizeof(double) * (size_t)H * n * d), *V = malloc(sizeof(double) * (size_t)H * n * d_v);
        double *Q = malloc(sizeof(double) * (size_t)H * G * n_q * d);
        fs_rng_fill(&r, K, (long)H * n * d, -2, 2);
        fs_rng_fill(&r, V, (long)H * n * d_v, -1, 1);
        fs_rng_fill(&r, Q, (long)H * G * n_q * d, -2, 2);
        const int32_t pages = (n + ps - 1) / ps + 3;
        int32_t *order = malloc(sizeof(int32_t) * (size_t)pages);
        shuffle(&r, order, pages);
        fs_paged_cache c;
        ck_assert_int_eq(fs_paged_init(&c, ps, pages, H, d, d_v, order), FS_OK);
        int32_t seq;
        ck_assert_int_eq(fs_paged_add(&c, &seq), FS_OK);
        /* The prefix, from the contiguous arrays (H, n, ·): one position at a time. */
        double *k = malloc(sizeof(double) * (size_t)H * d), *v = malloc(sizeof(double) * (size_t)H * d_v);
        for (int32_t j = 0; j < prefix; j++) {
            for (int32_t h = 0; h < H; h++) {
                memcpy(k + (size_t)h * d, K + ((size_t)h * n + j) * d, sizeof(double) * d);
                memcpy(v + (size_t)h * d_v, V + ((size_t)h * n + j) * d_v, sizeof(double) * d_v);
            }
            ck_assert_int_eq(fs_paged_append(&c, seq, k, v, NULL), FS_OK);
        }
        /* The chunk's own K and V: (H, n_q, ·). */
        double *Kc = malloc(sizeof(double) * (size_t)H * n_q * d), *Vc = malloc(sizeof(double) * (size_t)H * n_q * d_v);
        for (int32_t h = 0; h < H; h++) {
            memcpy(Kc + (size_t)h * n_q * d, K + ((size_t)h * n + prefix) * d, sizeof(double) * (size_t)n_q * d);
            memcpy(Vc + (size_t)h * n_q * d_v, V + ((size_t)h * n + prefix) * d_v, sizeof(double) * (size_t)n_q * d_v);
        }
        fs_attn a = fs_attn_make(n_q, n, d, d_v);
        a.n_q_heads = H * G;
        a.n_kv_heads = H;
        a.Q = Q;
        a.K = K;
        a.V = V;
        a.mask.kind = FS_MASK_CAUSAL;
        const fs_form form = fs_rng_int(&r, 0, 1) ? FS_FORM_NORMALIZED : FS_FORM_UNNORMALIZED;
        const long no = (long)H * G * n_q * d_v;
        double *O1 = malloc(sizeof(double) * no), *O2 = malloc(sizeof(double) * no), *Or = malloc(sizeof(double) * no);
        fs_decoding dc = {FS_SPLIT_CONTIGUOUS, ps, 1, FS_MERGE_SEQUENTIAL, form};
        ck_assert_int_eq(fs_decode(&a, &dc, O1, NULL, NULL, NULL), FS_OK);
        ck_assert_int_eq(fs_reference(&a, Or, NULL, NULL), FS_OK);
        fs_attn chunk = a;
        chunk.K = Kc;
        chunk.V = Vc;
        fs_trace tr;
        fs_trace_init(&tr);
        fs_status st = fs_paged_prefill(&c, seq, &chunk, form, O2, NULL, NULL, &tr);
        FS_ASSERT_SEED(st == FS_OK, seed, "prefill: %s", fs_status_str(st));
        FS_ASSERT_SEED(!memcmp(O1, O2, sizeof(double) * no), seed,
                       "prefix %d chunk %d page %d: prefill differs from the contiguous run", prefix, n_q, ps);
        double err = fs_max_rel_err(O2, Or, no);
        FS_ASSERT_SEED(err <= 1e-12, seed, "prefill against the reference: %.3g", err);
        int writes = 0;
        for (int64_t i = 0; i < tr.n; i++) writes += tr.ev[i].kind == FS_EV_WRITE;
        FS_ASSERT_SEED(writes == n_q && c.seq[seq].n_tokens == n, seed, "%d writes for a chunk of %d", writes, n_q);
        fs_trace_free(&tr);
        free(K); free(V); free(Q); free(Kc); free(Vc); free(k); free(v); free(O1); free(O2); free(Or); free(order);
        fs_paged_free(&c);
    }
}
END_TEST

/* What the cache refuses. */
START_TEST(test_errors)
{
    fs_paged_cache c;
    const int32_t bad_order[3] = {0, 2, 2}, good_order[3] = {2, 0, 1};
    ck_assert_int_eq(fs_paged_init(&c, 0, 3, 1, 1, 1, NULL), FS_ERR_SHAPE);
    ck_assert_int_eq(fs_paged_init(&c, 2, 0, 1, 1, 1, NULL), FS_ERR_SHAPE);
    ck_assert_int_eq(fs_paged_init(&c, 2, 3, 1, 1, 1, bad_order), FS_ERR_ARG);
    ck_assert_int_eq(fs_paged_init(&c, 2, 3, 1, 1, 1, good_order), FS_OK);
    int32_t s, t;
    ck_assert_int_eq(fs_paged_add(&c, &s), FS_OK);
    const double k = 1, v = 2;
    for (int j = 0; j < 6; j++) ck_assert_int_eq(fs_paged_append(&c, s, &k, &v, NULL), FS_OK);
    /* The pages were handed out in the given order. */
    ck_assert_int_eq(c.seq[s].table[0], 2);
    ck_assert_int_eq(c.seq[s].table[1], 0);
    ck_assert_int_eq(c.seq[s].table[2], 1);
    ck_assert_int_eq(fs_paged_append(&c, s, &k, &v, NULL), FS_ERR_LIMIT);   /* no free page */
    ck_assert_int_eq(c.seq[s].n_tokens, 6);
    /* A decode whose sizes disagree with the sequence. */
    double Q = 1, O;
    fs_attn a = fs_attn_make(1, 5, 1, 1);
    a.Q = &Q;
    fs_decoding dc = fs_decoding_default();
    ck_assert_int_eq(fs_paged_decode(&c, s, &a, &dc, &O, NULL, NULL, NULL), FS_ERR_SHAPE);
    a.n_kv = 6;
    ck_assert_int_eq(fs_paged_decode(&c, s, &a, &dc, &O, NULL, NULL, NULL), FS_OK);
    ck_assert_double_eq(O, 2);
    ck_assert_int_eq(fs_paged_decode(&c, 9, &a, &dc, &O, NULL, NULL, NULL), FS_ERR_ARG);
    /* A full pool: a fork shares, and its first write into a full page takes none, so fails. */
    ck_assert_int_eq(fs_paged_fork(&c, s, &t, NULL), FS_OK);
    ck_assert_int_eq(fs_paged_append(&c, t, &k, &v, NULL), FS_ERR_LIMIT);
    fs_paged_release(&c, s);
    ck_assert_int_eq(fs_paged_pages_used(&c), 3);   /* t still holds them */
    fs_paged_release(&c, t);
    ck_assert_int_eq(fs_paged_pages_used(&c), 0);
    fs_paged_free(&c);
}
END_TEST

/* fs_paged_decode_table: any table of distinct pages (gaps allowed: the pool grows to the
 * largest) gives the contiguous results bit for bit and an ALLOC per block into the page the
 * table names; a table that does not fit is refused. */
START_TEST(test_decode_table)
{
    uint64_t seed = fs_test_seed();
    fs_rng r = {seed};
    const fs_test_problem_spec spec = {.max_n_q = 3, .max_n_kv = 30, .max_d = 4, .max_d_v = 4, .max_offset = 4,
                                       .max_window = 6, .bits_visible = 0.6};
    for (int rep = 0; rep < 40; rep++) {
        fs_test_problem p;
        fs_test_problem_draw(&p, &r, rep % FS_TEST_MASKS, &spec);
        const int32_t ps = fs_rng_int(&r, 1, 8), blocks = (p.a.n_kv + ps - 1) / ps, pool = blocks + fs_rng_int(&r, 0, 5);
        int32_t *all = malloc(sizeof(int32_t) * (size_t)pool);
        shuffle(&r, all, pool);   /* the table: the first `blocks` of a shuffled pool */
        const fs_decoding dc = random_decoding(&r);
        const long no = (long)p.a.n_q_heads * p.a.n_q * p.a.d_v;
        double *O1 = malloc(sizeof(double) * no), *O2 = malloc(sizeof(double) * no);
        fs_trace tr;
        fs_trace_init(&tr);
        ck_assert_int_eq(fs_decode(&p.a, &dc, O1, NULL, NULL, NULL), FS_OK);
        fs_status st = fs_paged_decode_table(&p.a, &dc, ps, all, blocks, O2, NULL, NULL, &tr);
        FS_ASSERT_SEED(st == FS_OK && !memcmp(O1, O2, sizeof(double) * no), seed, "page size %d: %s or O differs", ps,
                       fs_status_str(st));
        int32_t b = 0;
        for (int64_t k = 0; k < tr.n; k++)
            if (tr.ev[k].kind == FS_EV_ALLOC) {
                FS_ASSERT_SEED(tr.ev[k].block == b && tr.ev[k].page == all[b], seed, "block %d in page %d, table says %d",
                               tr.ev[k].block, tr.ev[k].page, all[b]);
                b++;
            }
        FS_ASSERT_SEED(b == blocks, seed, "%d allocations for %d blocks", b, blocks);
        /* Refused: one entry short, a repeated page, a negative one. */
        if (blocks > 1) {
            ck_assert_int_eq(fs_paged_decode_table(&p.a, &dc, ps, all, blocks - 1, O2, NULL, NULL, NULL), FS_ERR_ARG);
            int32_t keep = all[1];
            all[1] = all[0];
            ck_assert_int_eq(fs_paged_decode_table(&p.a, &dc, ps, all, blocks, O2, NULL, NULL, NULL), FS_ERR_ARG);
            all[1] = -1;
            ck_assert_int_eq(fs_paged_decode_table(&p.a, &dc, ps, all, blocks, O2, NULL, NULL, NULL), FS_ERR_ARG);
            all[1] = keep;
        }
        fs_trace_free(&tr);
        free(all); free(O1); free(O2);
        fs_test_problem_free(&p);
    }
}
END_TEST

/* The keys of a lookup in words, as the viewers print them. */
START_TEST(test_event_keys)
{
    static const struct { int32_t c0, c1, stride; const char *want; } cases[] = {
        {5, 6, 1, "key 5"}, {4, 8, 1, "keys 4-7"}, {29, 30, 3, "key 29"}, {24, 28, 3, "keys 24, 27"},
        {24, 31, 3, "keys 24, 27, 30"}, {24, 46, 3, "keys 24, 27, ..., 45"}, {3, 3, 1, "no key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fs_event e = fs_event_blank(FS_EV_LOOKUP);
        e.c0 = cases[i].c0;
        e.c1 = cases[i].c1;
        e.stride = cases[i].stride;
        char b[64];
        ck_assert_str_eq(fs_event_keys(&e, b, sizeof b), cases[i].want);
    }
}
END_TEST

Suite *paged_suite(void)
{
    Suite *s = suite_create("paged");
    TCase *tc = tcase_create("paged");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_decode_matches_contiguous, 0, FS_TEST_MASKS);
    tcase_add_loop_test(tc, test_shared_prefix_copy_on_write, 0, 2);
    tcase_add_loop_test(tc, test_prefill_over_cached_prefix, 0, 2);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_decode_table);
    tcase_add_test(tc, test_event_keys);
    suite_add_tcase(s, tc);
    return s;
}
