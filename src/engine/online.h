/* online.h: online softmax of a vector, one element or one chunk at a time.
 *
 * 000 folds z in element by element:   m_new = max(m, z_i);  ℓ = ℓ · exp(m − m_new) + exp(z_i − m_new)
 * 001 folds it in chunk by chunk:       m_new = max(m, max(chunk));  ℓ = ℓ · α + Σ exp(chunk − m_new)
 * Both end with softmax_i = exp(z_i − m) / ℓ.
 *
 * Online attention for one query (000's q = [1, 0] walk) is tiled attention with one query
 * and one key per tile: see fs_online_query in tiled.h.
 */
#ifndef FS_ONLINE_H
#define FS_ONLINE_H

#include "status.h"
#include "trace.h"

/* z is (n), p is (n). chunk ≥ 1 (1: element by element). Records one FS_EV_ELEM per chunk
 * (x = the element when chunk = 1; α the correction exp(m_old − m_new); β = exp(m_blk − m_new);
 * s_row the chunk's values) and one FS_EV_OUT with the softmax vector as o. m_out, l_out may
 * be NULL. −∞ entries are allowed (masked); NaN and +∞ are not. */
fs_status fs_online_softmax(const double *z, int32_t n, int32_t chunk, double *p,
                            double *m_out, double *l_out, fs_trace *tr);

#endif
