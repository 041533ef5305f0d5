/* reference.c: attention the plain way, in float64: the spec every other path is tested against.
 *
 * For each head and query row: the row of scores (scale, soft-cap, mask), its max over the
 * visible keys, Σ exp(s − max), and O = Σ_j p_j V_j. One row of S at a time, so it runs at any
 * size; it is the definition, not a fast path.
 */
#include "reference.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

double fs_reference_score(const fs_attn *a, int32_t h, int32_t i, int32_t j)
{
    if (!fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j)) return -INFINITY;
    return fs_attn_score(a, h, i, j);
}

fs_status fs_reference(const fs_attn *a, double *O, double *m_out, double *l_out)
{
    assert(a && O);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    double *s = malloc(sizeof(double) * (size_t)a->n_kv);
    if (!s) return FS_ERR_NOMEM;
    for (int32_t h = 0; h < a->n_q_heads; h++) {
        const double *V = a->V + (size_t)fs_attn_kv_head(a, h) * a->n_kv * a->d_v;
        for (int32_t i = 0; i < a->n_q; i++) {
            double *o = O + ((size_t)h * a->n_q + i) * a->d_v;
            double m = -INFINITY, l = 0;
            for (int32_t j = 0; j < a->n_kv; j++) {
                s[j] = fs_reference_score(a, h, i, j);
                if (s[j] > m) m = s[j];
            }
            for (int32_t c = 0; c < a->d_v; c++) o[c] = 0;
            if (m > -INFINITY) {
                for (int32_t j = 0; j < a->n_kv; j++) {
                    if (s[j] == -INFINITY) continue;
                    double p = exp(s[j] - m);
                    l += p;
                    for (int32_t c = 0; c < a->d_v; c++) o[c] += p * V[(size_t)j * a->d_v + c];
                }
                for (int32_t c = 0; c < a->d_v; c++) o[c] /= l;
            }
            if (m_out) m_out[(size_t)h * a->n_q + i] = m;
            if (l_out) l_out[(size_t)h * a->n_q + i] = l;
        }
    }
    free(s);
    return FS_OK;
}

void fs_reference_softmax(const double *z, int32_t n, double *p)
{
    double m = -INFINITY, l = 0;
    for (int32_t i = 0; i < n; i++)
        if (z[i] > m) m = z[i];
    for (int32_t i = 0; i < n; i++) {
        p[i] = m == -INFINITY ? 0 : exp(z[i] - m);
        l += p[i];
    }
    for (int32_t i = 0; i < n; i++) p[i] = l > 0 ? p[i] / l : 0;
}
