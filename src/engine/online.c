/* online.c: online softmax of a vector (000 element by element, 001 chunk by chunk). */
#include "online.h"

#include <assert.h>
#include <math.h>

fs_status fs_online_softmax(const double *z, int32_t n, int32_t chunk, double *p, double *m_out,
                            double *l_out, fs_trace *tr)
{
    assert(z && p);
    if (n < 1 || n > FS_MAX_DIM) return FS_ERR_SHAPE;
    if (chunk < 1) return FS_ERR_TILE;
    for (int32_t i = 0; i < n; i++)
        if (isnan(z[i]) || z[i] == INFINITY) return FS_ERR_VALUE;

    double m = -INFINITY, l = 0;
    for (int32_t c0 = 0; c0 < n; c0 += chunk) {
        int32_t c1 = c0 + chunk < n ? c0 + chunk : n;
        /* m_blk = max(chunk); ℓ_blk = Σ exp(z − m_blk) */
        double m_blk = -INFINITY, l_blk = 0;
        for (int32_t i = c0; i < c1; i++)
            if (z[i] > m_blk) m_blk = z[i];
        if (m_blk > -INFINITY)
            for (int32_t i = c0; i < c1; i++) l_blk += exp(z[i] - m_blk);
        double m_new = m > m_blk ? m : m_blk;
        double alpha = 1, beta = 0, l_new = l;
        if (m_new > -INFINITY) {
            alpha = exp(m - m_new);       /* the correction of the old sum */
            beta = exp(m_blk - m_new);
            l_new = alpha * l + beta * l_blk;
        }
        if (tr) {
            fs_event e = fs_event_blank(FS_EV_ELEM);
            e.c0 = c0;
            e.c1 = c1;
            e.x = c1 - c0 == 1 ? z[c0] : NAN;
            e.m_old = m;
            e.m_blk = m_blk;
            e.m_new = m_new;
            e.l_old = l;
            e.l_blk = l_blk;
            e.l_new = l_new;
            e.alpha = alpha;
            e.beta = beta;
            e.n_s = c1 - c0;
            if ((e.s_row = fs_trace_vec(tr, z + c0, c1 - c0)) < 0 || !fs_trace_push(tr, &e))
                return fs_trace_error(tr);
        }
        m = m_new;
        l = l_new;
    }
    for (int32_t i = 0; i < n; i++) p[i] = l > 0 ? exp(z[i] - m) / l : 0;
    if (tr) {
        fs_event e = fs_event_blank(FS_EV_OUT);
        e.row = 0;
        e.m_new = m;
        e.l_new = l;
        e.n_o = n;
        e.normalized = true;
        if ((e.o_new = fs_trace_vec(tr, p, n)) < 0 || !fs_trace_push(tr, &e)) return fs_trace_error(tr);
    }
    if (m_out) *m_out = m;
    if (l_out) *l_out = l;
    return FS_OK;
}
