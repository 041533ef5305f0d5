/* show.c: what the window shows: built-in demo problems, run through the engine into a trace,
 * and the words that describe each event when a lesson gives none.
 *
 * The demos need no lesson files; they exist for the timing mode (a 64×64 problem), for the
 * tests of the window, and as a fallback. Lessons (catalog.c) fill the same gui_show.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gui/gui.h"
#include "io/num.h"
#include "lesson/lesson.h"

const char *gui_fmt(double x, char *buf, size_t n)
{
    if (isnan(x)) snprintf(buf, n, "nan");
    else if (isinf(x)) snprintf(buf, n, x < 0 ? "-inf" : "inf");
    else if (x != 0 && (fabs(x) < 1e-4 || fabs(x) >= 1e5)) snprintf(buf, n, "%.3e", x);
    else snprintf(buf, n, "%.*f", fs_num_decimals(x, 4), x == 0 ? 0.0 : x);   /* 3 digits under 0.01: 0.000159 */
    return buf;
}

const char *gui_fmt_factor(double f, double other, char *buf, size_t n)
{
    const int d = fs_num_factor_decimals(4, f, other);   /* the terminal's rule (io/num.h) */
    if (d == 4) return gui_fmt(f, buf, n);
    snprintf(buf, n, "%.*f", d, f);
    return buf;
}

const char *gui_fmt_operand(double x, double f, double other, char *buf, size_t n)
{
    const int d = fs_num_factor_decimals(4, f, other);
    if (d == 4 || !isfinite(x) || fabs(x) >= 1e5 || (x != 0 && fabs(x) < 1e-4)) return gui_fmt(x, buf, n);
    snprintf(buf, n, "%.*f", d, x);
    return buf;
}

void gui_traffic_add(gui_traffic *t, bool *q_read, int nqt, const gui_show *show, const fs_event *e, int elem_bytes)
{
    const fs_attn *a = &show->run.attn;
    if ((e->kind == FS_EV_TILE || e->kind == FS_EV_SKIP) && q_read && e->qt >= 0 && e->qt < nqt && !q_read[e->qt]) {
        q_read[e->qt] = true;   /* memory.h reads every Q tile once, even one whose pairs all skip */
        t->q += (double)(e->r1 - e->r0) * a->d * elem_bytes;
    }
    if (e->kind == FS_EV_TILE) {
        t->visited++;
        t->partial += e->cls == FS_TILE_PARTIAL;
        t->kv += (double)(e->c1 - e->c0) * (a->d + a->d_v) * elem_bytes;
    } else if (e->kind == FS_EV_SKIP) {
        t->skipped++;
    } else if (e->kind == FS_EV_OUT) {
        t->o += (double)a->d_v * elem_bytes;
    }
}

gui_traffic gui_trace_traffic(const gui_show *show, int64_t k, int head, int elem_bytes)
{
    gui_traffic t;
    memset(&t, 0, sizeof t);
    const fs_attn *a = &show->run.attn;
    const fs_trace *tr = &show->trace;
    int Bq = show->run.tiling.Bq > 0 ? show->run.tiling.Bq : 1;
    int nqt = (a->n_q + Bq - 1) / Bq;
    bool *q_read = nqt > 0 ? calloc((size_t)nqt, 1) : NULL;
    for (int64_t s = 0; s <= k && s < tr->n; s++)
        if (tr->ev[s].head == head) gui_traffic_add(&t, q_read, nqt, show, &tr->ev[s], elem_bytes);
    free(q_read);
    return t;
}

bool gui_show_questions(gui_show *show, const fs_lesson *l)
{
    free(show->questions);
    show->questions = NULL;
    show->n_questions = 0;
    int n = l ? fs_lesson_questions(l, 4, NULL, 0)
              : show->correct.n > 0 ? 0 : fs_run_questions(&show->run, &show->trace, 4, NULL, 0);
    if (n <= 0) return true;
    show->questions = calloc((size_t)n, sizeof *show->questions);
    if (!show->questions) return false;
    show->n_questions = l ? fs_lesson_questions(l, 4, show->questions, n)
                          : fs_run_questions(&show->run, &show->trace, 4, show->questions, n);
    if (show->n_questions > n) show->n_questions = n;
    return true;
}

void gui_show_free(gui_show *show)
{
    free(show->questions);
    free(show->quiz);
    fs_trace_free(&show->trace);
    fs_trace_free(&show->correct);
    free(show->parent);
    if (show->narrate_free) show->narrate_free(show->narrate_ctx);
    for (int i = 0; i < 8; i++) free(show->owned[i]);
    memset(show, 0, sizeof *show);
}

/* A small deterministic generator for the demos' inputs (the same picture every run, so the
 * reference screenshots stay valid): values in [-1, 1) with 2 decimals. */
static void demo_fill(double *x, int64_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (double)((int)((s >> 8) % 200) - 100) / 100.0;
    }
}

static double *own(gui_show *show, size_t n_doubles)
{
    for (int i = 0; i < 8; i++)
        if (!show->owned[i]) return show->owned[i] = calloc(n_doubles ? n_doubles : 1, sizeof(double));
    return NULL;
}

/* First step where two traces of the same problem disagree (a number differs by more than 1e-9
 * relative, or the kinds differ); −1 when they agree throughout. */
int64_t gui_first_divergence(const fs_trace *a, const fs_trace *b)
{
    int64_t n = a->n < b->n ? a->n : b->n;
    for (int64_t k = 0; k < n; k++) {
        const fs_event *x = &a->ev[k], *y = &b->ev[k];
        if (x->kind != y->kind) return k;
        double u[3] = {x->m_new, x->l_new, 0}, v[3] = {y->m_new, y->l_new, 0};
        const double *ox = fs_trace_at(a, x->o_new), *oy = fs_trace_at(b, y->o_new);
        for (int i = 0; ox && oy && i < x->n_o && i < y->n_o; i++) {
            if (isnan(ox[i]) != isnan(oy[i])) return k;
            if (fabs(ox[i] - oy[i]) > 1e-9 * fmax(1, fabs(oy[i]))) return k;
        }
        for (int i = 0; i < 2; i++) {
            if (isnan(u[i]) != isnan(v[i])) return k;
            if (isfinite(u[i]) && isfinite(v[i]) && fabs(u[i] - v[i]) > 1e-9 * fmax(1, fabs(v[i]))) return k;
        }
    }
    return a->n == b->n ? -1 : n;
}

static const char *const demo_names[] = {
    "softmax", "query", "tiled", "tree", "window", "gqa", "decode", "decode-tree", "pitfall", "grid64", "paged",
};
#define N_DEMOS ((int)(sizeof demo_names / sizeof demo_names[0]))

int gui_demo_count(void) { return N_DEMOS; }
const char *gui_demo_name(int i) { return i >= 0 && i < N_DEMOS ? demo_names[i] : NULL; }

/* 000, "A Complete Numerical Example with Tiling" (also in assets/doc000_tiled). */
static const double doc000_Q[12] = {1.0, 0.5, 0.8, -0.1, 0.2, 0.9, -0.3, 0.4, 0.7, 0.6, 0.1, -0.5};
static const double doc000_K[12] = {0.3, 0.7, 0.6, 0.2, -0.1, 0.8, 0.4, -0.3, 0.9, 0.1, 0.2, 0.5};
static const double doc000_V[12] = {1.0, 0.0, 0.0, 1.0, 0.5, 0.5, 0.8, 0.2, 0.3, 0.7, 0.6, 0.4};

static fs_attn demo_attn(gui_show *show, int hq, int hkv, int n_q, int n_kv, int d, int dv, uint32_t seed)
{
    fs_attn a = fs_attn_make(n_q, n_kv, d, dv);
    a.n_q_heads = hq;
    a.n_kv_heads = hkv;
    double *Q = own(show, (size_t)hq * n_q * d), *K = own(show, (size_t)hkv * n_kv * d);
    double *V = own(show, (size_t)hkv * n_kv * dv);
    if (Q && K && V) {
        demo_fill(Q, (int64_t)hq * n_q * d, seed);
        demo_fill(K, (int64_t)hkv * n_kv * d, seed + 1);
        demo_fill(V, (int64_t)hkv * n_kv * dv, seed + 2);
    }
    a.Q = Q; a.K = K; a.V = V;
    return a;
}

/* What the window says about a demo: its scene, its title, and the document it comes from. */
static void demo_label(gui_show *show, gui_scene scene, const char *title, const char *source)
{
    show->scene = scene;
    snprintf(show->title, sizeof show->title, "%s", title);
    snprintf(show->source, sizeof show->source, "%s", source);
}

/* The paged KV cache demo (paged.h): three sequences in one pool of 16 pages of 4 slots,
 * handed out in a shuffled order. Sequence 0 writes a prompt of 6 positions (a full page and
 * half of another); sequences 1 and 2 are forked from it (sharing both pages); then each appends
 * its own tokens in turns, 1 and 2 copying the half-filled page on write, 0 writing into it in
 * place, until they reach 9, 11 and 8 positions. Then each sequence decodes one query through
 * its table, one split per page. The trace is the engine's, recorded as it goes. */
static fs_status demo_paged(gui_show *show, fs_run *r)
{
    static const int32_t order[16] = {9, 3, 12, 6, 0, 14, 5, 10, 2, 15, 7, 11, 1, 13, 4, 8};
    enum { PS = 4, PROMPT = 6, D = 2 };
    static const int32_t extra[3] = {3, 5, 2};   /* positions each sequence adds after the prompt */
    fs_paged_cache c;
    fs_status st = fs_paged_init(&c, PS, 16, 1, D, D, order);
    if (st != FS_OK) return st;
    double *kv = own(show, 2 * 16 * D), *q = own(show, 3 * D), *o = own(show, D);
    int32_t seq[3] = {0, 0, 0};
    if (!kv || !q || !o) st = FS_ERR_NOMEM;
    if (st == FS_OK) {
        demo_fill(kv, 2 * 16 * D, 23);
        demo_fill(q, 3 * D, 29);
        st = fs_paged_add(&c, &seq[0]);
    }
    int32_t pos = 0;   /* each append takes the next K, V row of kv, so every token differs */
    for (int32_t j = 0; j < PROMPT && st == FS_OK; j++, pos++)
        st = fs_paged_append(&c, seq[0], kv + 2 * D * pos, kv + 2 * D * pos + D, &show->trace);
    for (int i = 1; i < 3 && st == FS_OK; i++) st = fs_paged_fork(&c, seq[0], &seq[i], &show->trace);
    static const int turn[3] = {1, 2, 0};   /* 1 and 2 write first, so they copy; 0 keeps the page */
    for (int32_t t = 0; t < 5 && st == FS_OK; t++)
        for (int i = 0; i < 3 && st == FS_OK; i++) {
            int s = turn[i];
            if (t >= extra[s]) continue;
            st = fs_paged_append(&c, seq[s], kv + 2 * D * pos, kv + 2 * D * pos + D, &show->trace);
            pos++;
        }
    fs_decoding dc = fs_decoding_default();
    dc.Bk = PS;
    for (int i = 0; i < 3 && st == FS_OK; i++) {
        fs_attn a = fs_attn_make(1, c.seq[seq[i]].n_tokens, D, D);
        a.Q = q + D * i;
        st = fs_paged_decode(&c, seq[i], &a, &dc, o, NULL, NULL, &show->trace);
    }
    *r = fs_run_make(FS_ALGO_DECODE);
    r->attn = fs_attn_make(1, PROMPT + extra[1], D, D);   /* the longest sequence's shape */
    r->decoding = dc;
    r->page_size = PS;
    fs_paged_free(&c);
    return st;
}

int gui_demo_load(const char *name, gui_show *show, FILE *err)
{
    memset(show, 0, sizeof *show);
    fs_trace_init(&show->trace);
    fs_trace_init(&show->correct);
    show->diverge = -1;
    snprintf(show->name, sizeof show->name, "%s", name);
    fs_run r;
    fs_status st = FS_OK;
    fs_pitfall wrong = FS_PITFALL_NONE;
    if (!strcmp(name, "softmax")) {
        r = fs_run_make(FS_ALGO_SOFTMAX);
        double *z = own(show, 4);
        z[0] = 2; z[1] = 5; z[2] = 1; z[3] = 4;
        r.z = z; r.n_z = 4; r.chunk = 1;
        demo_label(show, GUI_SCENE_SOFTMAX, "Online softmax of z = [2, 5, 1, 4]", "000, online softmax example");
    } else if (!strcmp(name, "query")) {
        r = fs_run_make(FS_ALGO_QUERY);
        r.attn = fs_attn_make(1, 3, 2, 2);
        double *Q = own(show, 2), *K = own(show, 6), *V = own(show, 6);
        static const double k[6] = {0.5, 0.3, 0.8, -0.2, 0.1, 0.7}, v[6] = {1, 0, 0, 1, 0.5, 0.5};
        Q[0] = 1; Q[1] = 0;
        memcpy(K, k, sizeof k); memcpy(V, v, sizeof v);
        r.attn.Q = Q; r.attn.K = K; r.attn.V = V;
        r.attn.scale = 1.0;
        demo_label(show, GUI_SCENE_QUERY, "Online attention for one query q = [1, 0]",
                   "000, online attention example (no 1/sqrt(d))");
    } else if (!strcmp(name, "tiled") || !strcmp(name, "pitfall")) {
        r = fs_run_make(FS_ALGO_TILED);
        r.attn = fs_attn_make(6, 6, 2, 2);
        double *Q = own(show, 12), *K = own(show, 12), *V = own(show, 12);
        memcpy(Q, doc000_Q, sizeof doc000_Q); memcpy(K, doc000_K, sizeof doc000_K);
        memcpy(V, doc000_V, sizeof doc000_V);
        r.attn.Q = Q; r.attn.K = K; r.attn.V = V;
        r.attn.mask.kind = FS_MASK_CAUSAL;
        r.tiling.Bq = 2; r.tiling.Bk = 3;
        if (!strcmp(name, "tiled")) {
            r.tiling.form = FS_FORM_UNNORMALIZED;
            demo_label(show, GUI_SCENE_TILED, "Tiled causal attention, n = 6, d = 2, Bq = 2, Bk = 3",
                       "000, A Complete Numerical Example with Tiling");
        } else {
            wrong = FS_PITFALL_NO_RESCALE;
            demo_label(show, GUI_SCENE_PITFALL, "Pitfall: forgetting to rescale the old output",
                       "001, pitfall 1, on 000's tiled example");
            snprintf(show->wrong_label, sizeof show->wrong_label, "no rescale of o_old");
        }
    } else if (!strcmp(name, "tree")) {
        static const int32_t par[9] = {-1, 0, 1, 1, 2, 2, 3, 3, 4};
        r = fs_run_make(FS_ALGO_TILED);
        r.attn = demo_attn(show, 1, 1, 9, 9, 2, 2, 7);
        uint64_t *bits = (uint64_t *)own(show, 9 * (size_t)fs_mask_words(9));
        show->parent = malloc(sizeof par);
        if (!bits || !show->parent) { fprintf(err, "flashstep: out of memory\n"); gui_show_free(show); return 2; }
        memcpy(show->parent, par, sizeof par);
        show->n_parent = 9;
        st = fs_mask_tree_build(par, 9, bits, NULL);
        r.attn.mask = fs_mask_tree(bits, 9);
        r.tiling.Bq = 3; r.tiling.Bk = 3;
        demo_label(show, GUI_SCENE_TREE, "Tree mask for speculative decoding (9 tokens)",
                   "000, Tree Masking for Speculative Decoding");
    } else if (!strcmp(name, "window")) {
        r = fs_run_make(FS_ALGO_TILED);
        r.attn = demo_attn(show, 1, 1, 16, 16, 2, 2, 11);
        r.attn.mask.kind = FS_MASK_WINDOW;
        r.attn.mask.window = 5;
        r.tiling.Bq = 4; r.tiling.Bk = 4;
        demo_label(show, GUI_SCENE_WINDOW, "Sliding window W = 5, n = 16, Bq = Bk = 4",
                   "003, sliding window attention");
    } else if (!strcmp(name, "gqa")) {
        r = fs_run_make(FS_ALGO_TILED);
        r.attn = demo_attn(show, 4, 2, 8, 8, 2, 2, 13);
        r.attn.mask.kind = FS_MASK_CAUSAL;
        r.tiling.Bq = 4; r.tiling.Bk = 4;
        demo_label(show, GUI_SCENE_GQA, "Grouped-query attention: 4 query heads over 2 KV heads",
                   "000 and 003, GQA by integer division");
    } else if (!strcmp(name, "decode") || !strcmp(name, "decode-tree")) {
        bool tree = !strcmp(name, "decode-tree");
        r = fs_run_make(FS_ALGO_DECODE);
        r.attn = demo_attn(show, 1, 1, 1, 16, 2, 2, 17);
        r.decoding.Bk = tree ? 2 : 4;
        r.decoding.merge = tree ? FS_MERGE_TREE : FS_MERGE_SEQUENTIAL;
        char title[80];
        snprintf(title, sizeof title, "FlashDecoding: %d splits of %d keys, %s merge", 16 / r.decoding.Bk,
                 r.decoding.Bk, tree ? "tree" : "sequential");
        demo_label(show, GUI_SCENE_DECODE, title, "000, FlashDecoding phase 1 and 2");
    } else if (!strcmp(name, "paged")) {
        st = demo_paged(show, &r);
        demo_label(show, GUI_SCENE_PAGED, "Paged KV cache: 3 sequences, a shared prompt, pages of 4",
                   "001 and 002 name PagedAttention (vLLM); our example");
        if (st == FS_OK) {
            show->run = r;
            gui_show_questions(show, NULL);
            return 0;
        }
        fprintf(err, "flashstep: demo '%s': %s\n", name, fs_status_str(st));
        gui_show_free(show);
        return 2;
    } else if (!strcmp(name, "grid64")) {
        r = fs_run_make(FS_ALGO_TILED);
        r.attn = demo_attn(show, 1, 1, 64, 64, 16, 16, 19);
        r.attn.mask.kind = FS_MASK_CAUSAL;
        r.tiling.Bq = 8; r.tiling.Bk = 8;
        demo_label(show, GUI_SCENE_TILED, "A 64 x 64 causal problem, d = 16, Bq = Bk = 8",
                   "synthetic (timing demo)");
    } else {
        fprintf(err, "flashstep: unknown demo '%s' (demos:", name);
        for (int i = 0; i < N_DEMOS; i++) fprintf(err, " %s", demo_names[i]);
        fprintf(err, ")\n");
        return 2;
    }
    if (st == FS_OK && r.algo != FS_ALGO_SOFTMAX && r.attn.Q == NULL) st = FS_ERR_NOMEM;
    fs_result res;
    if (st == FS_OK) {
        /* A pitfall's timeline walks the wrong variant; the correct run is drawn beside it. */
        fs_run rt = r;
        rt.tiling.pitfall = wrong;
        st = fs_run_exec(&rt, &res, &show->trace);
        fs_result_free(&res);
    }
    if (st == FS_OK && wrong != FS_PITFALL_NONE) {
        st = fs_run_exec(&r, &res, &show->correct);
        fs_result_free(&res);
        show->diverge = gui_first_divergence(&show->trace, &show->correct);
    }
    show->run = r;
    show->run.tiling.pitfall = wrong;   /* the run the timeline walks */
    if (st != FS_OK) {
        fprintf(err, "flashstep: demo '%s': %s\n", name, fs_status_str(st));
        gui_show_free(show);
        return 2;
    }
    gui_show_questions(show, NULL);
    return 0;
}

/* A copy of n doubles into the show (NULL stays NULL). */
static const double *own_copy(gui_show *show, const double *x, size_t n, bool *ok)
{
    if (!x) return NULL;
    double *c = own(show, n);
    if (!c) { *ok = false; return NULL; }
    memcpy(c, x, n * sizeof *c);
    return c;
}

int gui_problem_load(const fs_run *run, const int32_t *parent, int n_parent, const char *title, const char *source,
                     gui_show *show, FILE *err)
{
    memset(show, 0, sizeof *show);
    fs_trace_init(&show->trace);
    fs_trace_init(&show->correct);
    show->diverge = -1;
    snprintf(show->name, sizeof show->name, "problem");
    snprintf(show->title, sizeof show->title, "%s", title ? title : "Your problem");
    snprintf(show->source, sizeof show->source, "%s", source ? source : "your own inputs");
    fs_run r = *run;
    fs_attn *a = &r.attn;
    bool ok = true;
    if (r.algo == FS_ALGO_SOFTMAX) {
        r.z = own_copy(show, run->z, (size_t)run->n_z, &ok);
        show->scene = GUI_SCENE_SOFTMAX;
    } else {
        size_t hq = (size_t)a->n_q_heads, hkv = (size_t)a->n_kv_heads;
        a->Q = own_copy(show, a->Q, hq * a->n_q * a->d, &ok);
        a->K = own_copy(show, a->K, hkv * a->n_kv * a->d, &ok);
        a->V = own_copy(show, a->V, hkv * a->n_kv * a->d_v, &ok);
        a->S = own_copy(show, a->S, hq * a->n_q * a->n_kv, &ok);
        if (a->mask.kind == FS_MASK_BITS && a->mask.bits) {
            size_t words = (size_t)a->n_q * a->mask.words_per_row;
            uint64_t *bits = (uint64_t *)own(show, words);
            if (bits) memcpy(bits, a->mask.bits, words * sizeof *bits);
            else ok = false;
            a->mask.bits = bits;
        }
        if (r.algo == FS_ALGO_DECODE && r.page_size > 0 && run->block_table) {   /* the table, kept as int32 */
            int32_t *table = (int32_t *)own(show, (size_t)r.n_table);
            if (table) memcpy(table, run->block_table, sizeof(int32_t) * (size_t)r.n_table);
            else ok = false;
            r.block_table = table;
        }
        if (r.algo == FS_ALGO_BACKWARD || (r.algo == FS_ALGO_RING && r.ring_backward)) {
            size_t rows = hq * (size_t)a->n_q * (size_t)a->d_v;
            r.dO = run->dO ? own_copy(show, run->dO, rows, &ok) : NULL;
        }
        switch (r.algo) {
        case FS_ALGO_QUERY: show->scene = GUI_SCENE_QUERY; break;
        case FS_ALGO_DECODE: show->scene = r.page_size > 0 ? GUI_SCENE_PAGED : GUI_SCENE_DECODE; break;
        case FS_ALGO_BACKWARD: show->scene = GUI_SCENE_BACKWARD; break;
        case FS_ALGO_RING: show->scene = GUI_SCENE_RING; break;
        default:
            show->scene = r.tiling.pitfall ? GUI_SCENE_PITFALL
                          : a->mask.kind == FS_MASK_BITS && a->mask.is_tree && parent ? GUI_SCENE_TREE
                          : a->mask.kind == FS_MASK_WINDOW ? GUI_SCENE_WINDOW
                          : a->n_q_heads > 1 ? GUI_SCENE_GQA
                                             : GUI_SCENE_TILED;
        }
        if (show->scene == GUI_SCENE_TREE) {
            show->parent = malloc(sizeof(int32_t) * (size_t)n_parent);
            if (show->parent) memcpy(show->parent, parent, sizeof(int32_t) * (size_t)n_parent);
            else ok = false;
            show->n_parent = n_parent;
        }
        if (r.tiling.pitfall)
            snprintf(show->wrong_label, sizeof show->wrong_label, "%s", fs_pitfall_str(r.tiling.pitfall));
    }
    if (!ok) {
        fprintf(err, "flashstep: out of memory\n");
        gui_show_free(show);
        return 2;
    }
    fs_result res;
    fs_status st = fs_run_exec(&r, &res, &show->trace);
    fs_result_free(&res);
    if (st == FS_OK && r.tiling.pitfall && r.algo == FS_ALGO_TILED) {
        /* The timeline walks the wrong variant; the correct run is drawn beside it. */
        fs_run rc = r;
        rc.tiling.pitfall = FS_PITFALL_NONE;
        st = fs_run_exec(&rc, &res, &show->correct);
        fs_result_free(&res);
        show->diverge = gui_first_divergence(&show->trace, &show->correct);
    }
    show->run = r;
    if (st != FS_OK) {
        char why[320];
        fprintf(err, "flashstep: %s\n", fs_run_status_detail(&r, st, why, sizeof why));
        gui_show_free(show);
        return 2;
    }
    gui_show_questions(show, NULL);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Narration from the event alone. */

const char *gui_narration(const gui_show *show, int64_t k, char *buf, size_t n)
{
    buf[0] = 0;
    if (show->narrate) {
        const char *s = show->narrate(show->narrate_ctx, k);
        if (s && *s) {
            snprintf(buf, n, "%s", s);
            return buf;
        }
    }
    if (show->scene == GUI_SCENE_CLAIMS && show->trace.n == 0) {
        snprintf(buf, n, "Nothing to step through: each figure above is recomputed exactly and judged (erratum in red).");
        return buf;
    }
    if (k < 0 || k >= show->trace.n) {
        snprintf(buf, n, "%s", show->intro);
        return buf;
    }
    /* the words generated from the event, as for a lesson step without narration */
    fs_lesson_generate(NULL, &show->trace, k, buf, n);
    return buf;
}
