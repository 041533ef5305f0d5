/* webgpu_trace.c: a WebGPU job from an engine run, the kernel's records back into events, and
 * the comparison of two traces (webgpu.h). Plain C: it runs natively in the tests and, compiled
 * to WebAssembly, in the page, where the host (fsgpu.js) runs the kernels. */
#include "kernels/webgpu/webgpu.h"

#include "kernels/records/records.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fs_status say(fs_status st, char *why, size_t n, const char *msg)
{
    if (why && n) snprintf(why, n, "%s", msg);
    return st;
}

static float *to_f32(const double *x, int64_t count)
{
    float *f = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
    if (!f) return NULL;
    for (int64_t i = 0; i < count; i++) f[i] = x[i] == -INFINITY ? FS_GPU_NEG : (float)x[i];
    return f;
}

static double from_f32(float x) { return x <= FS_GPU_NEG ? -INFINITY : (double)x; }

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* The merges of one row in the engine's order (decode.c): left to right, or pairwise by levels
 * with an odd node waiting a level. Triples (x, y, id) into sched, levels into level (may be
 * NULL). Returns the number of merges, nsp − 1. */
static int32_t merge_schedule(int32_t nsp, bool tree, uint32_t *sched, int32_t *level)
{
    int32_t next = nsp, t = 0;
    if (!tree) {
        int32_t root = 0;
        for (int32_t p = 1; p < nsp; p++, t++) {
            sched[3 * t] = (uint32_t)root;
            sched[3 * t + 1] = (uint32_t)p;
            sched[3 * t + 2] = (uint32_t)next;
            if (level) level[t] = p - 1;
            root = next++;
        }
        return t;
    }
    int32_t *live = malloc(sizeof(int32_t) * (size_t)nsp);
    if (!live) return -1;
    for (int32_t p = 0; p < nsp; p++) live[p] = p;
    int32_t n = nsp, lv = 0;
    while (n > 1) {
        int32_t k = 0;
        for (int32_t p = 0; p + 1 < n; p += 2, t++) {
            sched[3 * t] = (uint32_t)live[p];
            sched[3 * t + 1] = (uint32_t)live[p + 1];
            sched[3 * t + 2] = (uint32_t)next;
            if (level) level[t] = lv;
            live[k++] = next++;
        }
        if (n % 2) live[k++] = live[n - 1];
        n = k;
        lv++;
    }
    free(live);
    return t;
}

void fs_gpu_job_free(fs_gpu_job *job)
{
    if (!job) return;
    free(job->qs);
    free(job->k);
    free(job->v);
    free(job->bits);
    free(job->sched);
    memset(job, 0, sizeof *job);
}

fs_status fs_gpu_job_make(const fs_run *r, fs_gpu_job *job, char *why, size_t n)
{
    memset(job, 0, sizeof *job);
    if (why && n) why[0] = 0;
    if (!r) return say(FS_ERR_ARG, why, n, "no run");
    const fs_attn *at = &r->attn;
    uint32_t *P = job->params;
    if (r->algo == FS_ALGO_TILED || r->algo == FS_ALGO_QUERY) {
        if (r->algo == FS_ALGO_TILED && r->tiling.pitfall != FS_PITFALL_NONE)
            return say(FS_ERR_ARG, why, n, "this run makes a deliberate mistake (a pitfall), which only the engine runs; "
                       "the WGSL kernels run the correct algorithm");
        if (r->lowp) return say(FS_ERR_ARG, why, n, "the low-precision (FP8) forward runs on the engine only");
        if (r->tiling.dropout.on) return say(FS_ERR_ARG, why, n, "the traced WGSL forward has no dropout");
        job->kind = FS_GPU_TILED;
    } else if (r->algo == FS_ALGO_DECODE) {
        if (r->page_size > 0) return say(FS_ERR_ARG, why, n, "the paged decode is traced on the engine only");
        if (at->S) return say(FS_ERR_ARG, why, n, "the traced WGSL decode scores Q against K, not given scores");
        job->kind = FS_GPU_DECODE;
    } else {
        char b[160];
        snprintf(b, sizeof b, "no WGSL kernel traces the %s algorithm (the tiled forward, the one-query walk "
                 "and FlashDecoding do)", fs_algo_str(r->algo));
        return say(FS_ERR_ARG, why, n, b);
    }
    fs_status st = fs_attn_check(at);
    if (st != FS_OK) return say(st, why, n, fs_status_str(st));
    job->run = *r;

    const int64_t rows = (int64_t)at->n_q_heads * at->n_q;
    fs_tiling t = r->tiling;
    if (r->algo == FS_ALGO_QUERY) {   /* 000's walk: one query and one key per tile */
        fs_tiling q = fs_tiling_default();
        q.Bq = q.Bk = 1;
        q.form = r->tiling.form;
        q.exp2 = r->tiling.exp2;
        t = q;
    }
    uint32_t flags = 0;
    if (at->mask.is_tree) flags |= FS_GPU_F_TREE;
    if (job->kind == FS_GPU_TILED) {
        if (t.Bq < 1 || t.Bk < 1) return say(FS_ERR_TILE, why, n, fs_status_str(FS_ERR_TILE));
        const int32_t Bk = fs_records_slots(at, &t), n_kt = fs_records_n_kt(at, &t);
        const int64_t rec_len = fs_records_len(at, &t);
        job->rec_floats = rows * n_kt * rec_len;
        P[FS_GPU_BQ] = (uint32_t)t.Bq;
        P[FS_GPU_BK] = (uint32_t)Bk;
        P[FS_GPU_N_KT] = (uint32_t)n_kt;
        P[FS_GPU_REC_LEN] = (uint32_t)rec_len;
        if (t.exp2) flags |= FS_GPU_F_EXP2;
        if (t.form == FS_FORM_NORMALIZED) flags |= FS_GPU_F_NORMALIZED;
        job->ml_floats = 2 * rows;
        job->run.tiling = t;
    } else {
        const fs_decoding *dc = &r->decoding;
        if (dc->split == FS_SPLIT_CONTIGUOUS && dc->Bk < 1) return say(FS_ERR_TILE, why, n, fs_status_str(FS_ERR_TILE));
        if (dc->split == FS_SPLIT_STRIDED && dc->parts < 1) return say(FS_ERR_TILE, why, n, fs_status_str(FS_ERR_TILE));
        const int32_t nsp = dc->split == FS_SPLIT_CONTIGUOUS ? (at->n_kv + dc->Bk - 1) / dc->Bk : dc->parts;
        const int32_t len = dc->split == FS_SPLIT_CONTIGUOUS ? (dc->Bk < at->n_kv ? dc->Bk : at->n_kv)
                                                             : (at->n_kv + dc->parts - 1) / dc->parts;
        P[FS_GPU_N_SPLIT] = (uint32_t)nsp;
        P[FS_GPU_SPLIT_LEN] = (uint32_t)len;
        P[FS_GPU_STRIDE] = dc->split == FS_SPLIT_CONTIGUOUS ? 1u : (uint32_t)dc->parts;
        if (dc->form == FS_FORM_NORMALIZED) flags |= FS_GPU_F_NORMALIZED;
        if (dc->merge == FS_MERGE_TREE) flags |= FS_GPU_F_MERGE_TREE;
        if (dc->split == FS_SPLIT_STRIDED) flags |= FS_GPU_F_STRIDED;
        job->rec_floats = rows * nsp * (4 + (int64_t)len);
        job->node_floats = rows * 2 * nsp * (4 + (int64_t)at->d_v);
        job->n_sched = nsp - 1;
        job->sched = malloc(sizeof(uint32_t) * 3 * (size_t)(nsp > 1 ? nsp : 1));
        if (!job->sched) return say(FS_ERR_NOMEM, why, n, fs_status_str(FS_ERR_NOMEM));
        if (merge_schedule(nsp, dc->merge == FS_MERGE_TREE, job->sched, NULL) < 0) {
            fs_gpu_job_free(job);
            return say(FS_ERR_NOMEM, why, n, fs_status_str(FS_ERR_NOMEM));
        }
    }
    if (job->rec_floats + job->node_floats > FS_GPU_MAX_RECORD_FLOATS) {
        fs_gpu_job_free(job);
        return say(FS_ERR_SHAPE, why, n, "the problem is too large for a traced GPU run (lesson sizes only)");
    }
    job->o_floats = rows * at->d_v;
    if (at->S) flags |= FS_GPU_F_GIVEN_S;

    P[FS_GPU_N_Q_HEADS] = (uint32_t)at->n_q_heads;
    P[FS_GPU_N_KV_HEADS] = (uint32_t)at->n_kv_heads;
    P[FS_GPU_N_Q] = (uint32_t)at->n_q;
    P[FS_GPU_N_KV] = (uint32_t)at->n_kv;
    P[FS_GPU_D] = (uint32_t)at->d;
    P[FS_GPU_D_V] = (uint32_t)at->d_v;
    P[FS_GPU_MASK_KIND] = (uint32_t)at->mask.kind;
    P[FS_GPU_WORDS] = at->mask.kind == FS_MASK_BITS ? 2u * (uint32_t)at->mask.words_per_row : 0u;
    P[FS_GPU_OFFSET] = (uint32_t)(int32_t)fs_mask_query_pos(&at->mask, at->n_q, at->n_kv, 0);
    P[FS_GPU_WINDOW] = (uint32_t)at->mask.window;
    P[FS_GPU_FLAGS] = flags;
    P[FS_GPU_SCALE] = f32_bits((float)at->scale);
    P[FS_GPU_SOFTCAP] = f32_bits((float)at->softcap);

    job->n_qs = at->S ? rows * at->n_kv : rows * at->d;
    job->n_k = at->S ? 0 : (int64_t)at->n_kv_heads * at->n_kv * at->d;
    job->n_v = (int64_t)at->n_kv_heads * at->n_kv * at->d_v;
    job->qs = to_f32(at->S ? at->S : at->Q, job->n_qs);
    job->k = to_f32(at->K, job->n_k);
    job->v = to_f32(at->V, job->n_v);
    if (at->mask.kind == FS_MASK_BITS) {
        /* 64-bit words as two u32 each, low half first: bit j of a row is bit j % 32 of u32 j / 32 */
        job->n_bits = (int64_t)at->n_q * at->mask.words_per_row * 2;
        job->bits = malloc(sizeof(uint32_t) * (size_t)job->n_bits);
        if (job->bits)
            for (int64_t w = 0; w < job->n_bits / 2; w++) {
                job->bits[2 * w] = (uint32_t)(at->mask.bits[w] & 0xffffffffu);
                job->bits[2 * w + 1] = (uint32_t)(at->mask.bits[w] >> 32);
            }
    }
    if (!job->qs || !job->k || !job->v || (at->mask.kind == FS_MASK_BITS && !job->bits)) {
        fs_gpu_job_free(job);
        return say(FS_ERR_NOMEM, why, n, fs_status_str(FS_ERR_NOMEM));
    }
    return FS_OK;
}

/* ---- records -> events --------------------------------------------------------------------- */

static fs_status push_vecs(fs_trace *tr, fs_event *e, const double *s, const double *p, int32_t ns,
                           const double *o_old, const double *o_blk, const double *o_new, int32_t no)
{
    e->n_s = s ? ns : 0;
    e->n_o = no;
    if ((s && (e->s_row = fs_trace_vec(tr, s, ns)) < 0) || (p && (e->p_row = fs_trace_vec(tr, p, ns)) < 0) ||
        (o_old && (e->o_old = fs_trace_vec(tr, o_old, no)) < 0) ||
        (o_blk && (e->o_blk = fs_trace_vec(tr, o_blk, no)) < 0) ||
        (o_new && (e->o_new = fs_trace_vec(tr, o_new, no)) < 0) || !fs_trace_push(tr, e))
        return fs_trace_error(tr);
    return FS_OK;
}

static fs_status decode_events(const fs_gpu_job *job, const float *recs, const float *node, const float *O,
                               fs_trace *tr)
{
    const fs_attn *at = &job->run.attn;
    const fs_decoding *dc = &job->run.decoding;
    const int32_t nsp = (int32_t)job->params[FS_GPU_N_SPLIT], len = (int32_t)job->params[FS_GPU_SPLIT_LEN];
    const int32_t stride = (int32_t)job->params[FS_GPU_STRIDE], d_v = at->d_v, width = 4 + d_v;
    const bool strided = dc->split == FS_SPLIT_STRIDED;
    const bool normalized = dc->form == FS_FORM_NORMALIZED;
    int32_t *level = malloc(sizeof(int32_t) * (size_t)(nsp > 1 ? nsp : 1));
    double *buf = malloc(sizeof(double) * (size_t)(len + 3 * d_v + 1));
    fs_status st = level && buf ? FS_OK : FS_ERR_NOMEM;
    uint32_t *sched = job->sched;
    if (st == FS_OK) merge_schedule(nsp, dc->merge == FS_MERGE_TREE, sched, level);
    for (int64_t g = 0; g < (int64_t)at->n_q_heads * at->n_q && st == FS_OK; g++) {
        const int32_t h = (int32_t)(g / at->n_q), i = (int32_t)(g % at->n_q), kvh = fs_attn_kv_head(at, h);
        const float *nodes = node + g * 2 * nsp * width;
        double *s = buf, *o1 = s + len, *o2 = o1 + d_v, *o3 = o2 + d_v;
        for (int32_t p = 0; p < nsp && st == FS_OK; p++) {
            const float *rec = recs + (g * nsp + p) * (4 + len), *nd = nodes + (int64_t)p * width;
            fs_event e = fs_event_blank(FS_EV_PARTIAL);
            e.head = h;
            e.kv_head = kvh;
            e.row = i;
            e.kt = e.id = p;
            e.c0 = strided ? p : p * len;
            e.c1 = strided ? at->n_kv : (e.c0 + len < at->n_kv ? e.c0 + len : at->n_kv);
            e.stride = stride;
            e.cls = (fs_tile_class)(int)rec[0];
            e.reason = (fs_skip_reason)(int)rec[1];
            e.visible = (int32_t)rec[2];
            int32_t ns = (int32_t)rec[3];
            if (ns < 0 || ns > len) ns = 0;   /* nonsense shows in the comparison */
            e.m_new = from_f32(nd[0]);
            e.l_new = nd[1];
            e.normalized = normalized;
            for (int32_t j = 0; j < ns; j++) s[j] = from_f32(rec[4 + j]);
            for (int32_t c = 0; c < d_v; c++) o1[c] = nd[4 + c];
            st = push_vecs(tr, &e, s, NULL, ns, NULL, NULL, o1, d_v);
        }
        int32_t root = 0;
        for (int32_t t = 0; t < nsp - 1 && st == FS_OK; t++) {
            const int32_t x = (int32_t)sched[3 * t], y = (int32_t)sched[3 * t + 1], id = (int32_t)sched[3 * t + 2];
            const float *na = nodes + (int64_t)x * width, *nb = nodes + (int64_t)y * width, *nr = nodes + (int64_t)id * width;
            fs_event e = fs_event_blank(FS_EV_MERGE);
            e.head = h;
            e.kv_head = kvh;
            e.row = i;
            e.a = x;
            e.b = y;
            e.id = root = id;
            e.level = level[t];
            e.m_old = from_f32(na[0]);
            e.l_old = na[1];
            e.m_blk = from_f32(nb[0]);
            e.l_blk = nb[1];
            e.m_new = from_f32(nr[0]);
            e.l_new = nr[1];
            e.alpha = nr[2];
            e.beta = nr[3];
            e.normalized = normalized;
            for (int32_t c = 0; c < d_v; c++) {
                o1[c] = na[4 + c];
                o2[c] = nb[4 + c];
                o3[c] = nr[4 + c];
            }
            st = push_vecs(tr, &e, NULL, NULL, 0, o1, o2, o3, d_v);
        }
        if (st != FS_OK) break;
        const float *nr = nodes + (int64_t)root * width;
        fs_event e = fs_event_blank(FS_EV_OUT);
        e.head = h;
        e.kv_head = kvh;
        e.row = i;
        e.id = root;
        e.m_new = from_f32(nr[0]);
        e.l_new = nr[1];
        e.normalized = true;
        for (int32_t c = 0; c < d_v; c++) o1[c] = O[g * d_v + c];
        st = push_vecs(tr, &e, NULL, NULL, 0, NULL, NULL, o1, d_v);
    }
    free(level);
    free(buf);
    return st;
}

fs_status fs_gpu_job_events(const fs_gpu_job *job, const float *rec, const float *node, const float *O,
                            const float *ml, fs_result *res, fs_trace *tr)
{
    const fs_attn *at = &job->run.attn;
    const int64_t rows = (int64_t)at->n_q_heads * at->n_q;
    const int32_t nsp = (int32_t)job->params[FS_GPU_N_SPLIT], width = 4 + at->d_v;
    if (!rec || !O || (job->kind == FS_GPU_TILED ? !ml : !node)) return FS_ERR_ARG;
    if (res) {
        memset(res, 0, sizeof *res);
        res->n_heads = at->n_q_heads;
        res->n_rows = at->n_q;
        res->n_cols = at->d_v;
        res->O = malloc(sizeof(double) * (size_t)(rows * at->d_v));
        res->m = malloc(sizeof(double) * (size_t)rows);
        res->l = malloc(sizeof(double) * (size_t)rows);
        res->L = malloc(sizeof(double) * (size_t)rows);
        if (!res->O || !res->m || !res->l || !res->L) {
            fs_result_free(res);
            return FS_ERR_NOMEM;
        }
        for (int64_t x = 0; x < rows * at->d_v; x++) res->O[x] = O[x];
        for (int64_t x = 0; x < rows; x++) {
            double m, l;
            if (job->kind == FS_GPU_TILED) {
                m = from_f32(ml[2 * x]);
                l = ml[2 * x + 1];
                if (job->run.tiling.exp2) m /= 1.4426950408889634;   /* natural units, as the engine's */
            } else {
                int32_t root = nsp > 1 ? (int32_t)job->sched[3 * (nsp - 2) + 2] : 0;
                const float *nr = node + (x * 2 * nsp + root) * width;
                m = from_f32(nr[0]);
                l = nr[1];
            }
            res->m[x] = m;
            res->l[x] = l;
            res->L[x] = l > 0 ? m + log(l) : -INFINITY;
        }
    }
    if (!tr) return FS_OK;
    fs_status st;
    if (job->kind == FS_GPU_TILED) {
        /* fwd_trace.wgsl writes the CUDA trace's records (records.h); m and ℓ interleaved in ml */
        const fs_records r = {rec, (int32_t)job->params[FS_GPU_N_KT], (int32_t)job->params[FS_GPU_REC_LEN],
                              (int32_t)job->params[FS_GPU_BK], O, ml, ml + 1, 2};
        st = fs_records_events(at, &job->run.tiling, &r, tr);
    } else {
        st = decode_events(job, rec, node, O, tr);
    }
    if (st != FS_OK && res) fs_result_free(res);
    return st;
}

/* ---- comparison ---------------------------------------------------------------------------- */

static bool near(double g, double e, double tol)
{
    if (isnan(g) || isnan(e)) return false;
    if (isinf(e) || isinf(g)) return g == e;
    return fabs(g - e) <= tol * fmax(1.0, fabs(e));
}

/* NULL when the vectors match, else the name given, with the index in *at. */
static const char *vec_diff(const fs_trace *gt, int64_t go, const fs_trace *et, int64_t eo, int32_t n, double tol,
                            const char *name, int32_t *at, double *gv, double *ev)
{
    if ((go < 0) != (eo < 0)) {
        *at = -1;
        return name;
    }
    const double *g = fs_trace_at(gt, go), *e = fs_trace_at(et, eo);
    for (int32_t k = 0; g && e && k < n; k++)
        if (!near(g[k], e[k], tol)) {
            *at = k;
            *gv = g[k];
            *ev = e[k];
            return name;
        }
    return NULL;
}

int64_t fs_gpu_trace_compare(const fs_trace *gpu, const fs_trace *engine, double tol, char *msg, size_t n)
{
    if (msg && n) msg[0] = 0;
    int64_t count = gpu->n < engine->n ? gpu->n : engine->n;
    for (int64_t k = 0; k < count; k++) {
        const fs_event *g = &gpu->ev[k], *e = &engine->ev[k];
        const char *what = NULL;
        double gv = 0, ev = 0;
        int32_t at = -1;
#define INT_FIELD(f) if (!what && g->f != e->f) { what = #f; gv = g->f; ev = e->f; }
        INT_FIELD(kind) INT_FIELD(head) INT_FIELD(kv_head) INT_FIELD(qt) INT_FIELD(kt) INT_FIELD(row)
        INT_FIELD(r0) INT_FIELD(r1) INT_FIELD(c0) INT_FIELD(c1) INT_FIELD(stride) INT_FIELD(cls)
        INT_FIELD(reason) INT_FIELD(visible) INT_FIELD(a) INT_FIELD(b) INT_FIELD(id) INT_FIELD(level)
        INT_FIELD(n_s) INT_FIELD(n_o) INT_FIELD(normalized)
#undef INT_FIELD
#define NUM_FIELD(f) if (!what && !near(g->f, e->f, tol)) { what = #f; gv = g->f; ev = e->f; }
        NUM_FIELD(x) NUM_FIELD(m_old) NUM_FIELD(m_blk) NUM_FIELD(m_new) NUM_FIELD(l_old) NUM_FIELD(l_blk)
        NUM_FIELD(l_new) NUM_FIELD(alpha) NUM_FIELD(beta)
#undef NUM_FIELD
        if (!what) what = vec_diff(gpu, g->s_row, engine, e->s_row, e->n_s, tol, "s_row", &at, &gv, &ev);
        if (!what) what = vec_diff(gpu, g->p_row, engine, e->p_row, e->n_s, tol, "p_row", &at, &gv, &ev);
        if (!what) what = vec_diff(gpu, g->o_old, engine, e->o_old, e->n_o, tol, "o_old", &at, &gv, &ev);
        if (!what) what = vec_diff(gpu, g->o_blk, engine, e->o_blk, e->n_o, tol, "o_blk", &at, &gv, &ev);
        if (!what) what = vec_diff(gpu, g->o_new, engine, e->o_new, e->n_o, tol, "o_new", &at, &gv, &ev);
        if (!what) continue;
        if (msg && n) {
            char where[48] = "";
            if (at >= 0) snprintf(where, sizeof where, "[%d]", (int)at);
            snprintf(msg, n, "event %lld (%s, head %d, row %d, tile %d/%d): %s%s is %.9g on the GPU, %.9g on the engine",
                     (long long)k, fs_event_kind_str(e->kind), (int)e->head, (int)e->row, (int)e->qt, (int)e->kt, what,
                     where, gv, ev);
        }
        return k;
    }
    if (gpu->n != engine->n) {
        if (msg && n)
            snprintf(msg, n, "the GPU recorded %lld events, the engine %lld", (long long)gpu->n, (long long)engine->n);
        return count;
    }
    if (msg && n) snprintf(msg, n, "all %lld events match (tolerance %g)", (long long)engine->n, tol);
    return -1;
}
