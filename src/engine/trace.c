/* trace.c: the growable event array and its pool of vectors. */
#include "trace.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FS_TRACE_DEFAULT_MAX ((int64_t)1 << 24)

void fs_trace_init(fs_trace *t)
{
    memset(t, 0, sizeof *t);
}

void fs_trace_free(fs_trace *t)
{
    free(t->ev);
    free(t->pool);
    int64_t max = t->max_events;
    fs_trace_init(t);
    t->max_events = max;
}

void fs_trace_clear(fs_trace *t)
{
    t->n = 0;
    t->n_pool = 0;
}

fs_event *fs_trace_push(fs_trace *t, const fs_event *e)
{
    int64_t max = t->max_events > 0 ? t->max_events : FS_TRACE_DEFAULT_MAX;
    if (t->n >= max) return NULL;
    if (t->n == t->cap) {
        int64_t cap = t->cap ? t->cap * 2 : 256;
        fs_event *ev = realloc(t->ev, (size_t)cap * sizeof *ev);
        if (!ev) return NULL;
        t->ev = ev;
        t->cap = cap;
    }
    fs_event *out = &t->ev[t->n];
    *out = *e;
    out->step = (int32_t)t->n++;
    return out;
}

int64_t fs_trace_vec(fs_trace *t, const double *v, int32_t n)
{
    assert(n >= 0);
    if (t->n_pool + n > t->cap_pool) {
        int64_t cap = t->cap_pool ? t->cap_pool : 1024;
        while (cap < t->n_pool + n) cap *= 2;
        double *p = realloc(t->pool, (size_t)cap * sizeof *p);
        if (!p) return -1;
        t->pool = p;
        t->cap_pool = cap;
    }
    int64_t off = t->n_pool;
    if (n) memcpy(t->pool + off, v, (size_t)n * sizeof *v);
    t->n_pool += n;
    return off;
}

fs_status fs_trace_error(const fs_trace *t)
{
    int64_t max = t->max_events > 0 ? t->max_events : FS_TRACE_DEFAULT_MAX;
    return t->n >= max ? FS_ERR_LIMIT : FS_ERR_NOMEM;
}

fs_status fs_trace_push_out(fs_trace *t, const fs_attn *a, size_t r, const double *o, double m, double l)
{
    fs_event e = fs_event_blank(FS_EV_OUT);
    e.head = (int32_t)(r / (size_t)a->n_q);
    e.kv_head = fs_attn_kv_head(a, e.head);
    e.row = (int32_t)(r % (size_t)a->n_q);
    e.m_new = m;
    e.l_new = l;
    e.n_o = a->d_v;
    e.normalized = true;
    if ((e.o_new = fs_trace_vec(t, o, a->d_v)) < 0 || !fs_trace_push(t, &e)) return fs_trace_error(t);
    return FS_OK;
}

const double *fs_trace_at(const fs_trace *t, int64_t off) { return off < 0 ? NULL : t->pool + off; }

fs_event fs_event_blank(fs_event_kind kind)
{
    fs_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.qt = e.kt = e.row = -1;
    e.r0 = e.r1 = e.c0 = e.c1 = -1;
    e.a = e.b = e.id = -1;
    e.level = -1;
    e.stride = 1;
    e.visible = -1;
    e.s_row = e.p_row = e.o_old = e.o_blk = e.o_new = -1;
    e.dp_row = e.ds_row = e.g_old = e.g_blk = e.g_new = -1;
    e.tensor = -1;
    e.drop = -1;
    e.x_row = e.x8_row = e.p8_row = -1;
    e.k_tile = e.k8_tile = e.v_tile = e.v8_tile = -1;
    e.seq = e.block = e.page = e.src = e.slot = e.refs = e.n_free = -1;
    e.device = e.ring_step = e.shard = e.pos = -1;
    e.bytes = -1;
    return e;
}

fs_event fs_event_pair(fs_event_kind kind, int32_t head, int32_t kv_head, int32_t qt, int32_t kt, int32_t r0,
                       int32_t r1, int32_t c0, int32_t c1, fs_tile_class cls)
{
    fs_event e = fs_event_blank(kind);
    e.head = head; e.kv_head = kv_head;
    e.qt = qt; e.kt = kt;
    e.r0 = r0; e.r1 = r1;
    e.c0 = c0; e.c1 = c1;
    e.cls = cls;
    return e;
}

fs_event fs_event_in_pair(fs_event_kind kind, const fs_event *pair)
{
    return fs_event_pair(kind, pair->head, pair->kv_head, pair->qt, pair->kt, pair->r0, pair->r1, pair->c0, pair->c1,
                         pair->cls);
}

const char *fs_event_kind_str(fs_event_kind k)
{
    static const char *s[] = {"elem",  "tile",  "skip",  "row",   "partial", "merge", "out",
                              "lse",   "delta", "btile", "bskip", "brow",    "bkey",  "grad",
                              "lookup", "alloc", "share", "cow", "write", "hold", "send", "recv", "rmerge"};
    return (unsigned)k < FS_EV_COUNT ? s[k] : "?";
}

const char *fs_event_keys(const fs_event *e, char *buf, size_t n)
{
    const int32_t st = e->stride > 0 ? e->stride : 1;
    const int32_t count = e->c1 > e->c0 ? (e->c1 - 1 - e->c0) / st + 1 : 0, last = e->c0 + (count - 1) * st;
    if (count <= 0) snprintf(buf, n, "no key");
    else if (count == 1) snprintf(buf, n, "key %d", e->c0);
    else if (st == 1) snprintf(buf, n, "keys %d-%d", e->c0, last);
    else if (count == 2) snprintf(buf, n, "keys %d, %d", e->c0, last);
    else if (count == 3) snprintf(buf, n, "keys %d, %d, %d", e->c0, e->c0 + st, last);
    else snprintf(buf, n, "keys %d, %d, ..., %d", e->c0, e->c0 + st, last);
    return buf;
}

bool fs_event_significant(const fs_event *e)
{
    switch (e->kind) {
    case FS_EV_SKIP:
    case FS_EV_BSKIP:
    case FS_EV_GRAD:
    case FS_EV_MERGE:
    case FS_EV_RMERGE:
    case FS_EV_SEND:
    case FS_EV_ALLOC:
    case FS_EV_SHARE:
    case FS_EV_COW:
    case FS_EV_OUT: return true;
    case FS_EV_ROW:
    case FS_EV_ELEM:   /* a new maximum rescales, or the row's state first turns NaN (a pitfall's point) */
        return (e->l_old > 0 && e->alpha < 1.0) || (isnan(e->l_new) && !isnan(e->l_old)) || (isnan(e->m_new) && !isnan(e->m_old));
    default: return false;
    }
}
