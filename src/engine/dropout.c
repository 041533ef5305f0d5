/* dropout.c: Philox4x32-10, the mapping from a cell to its keep/drop decision, and the dense
 * spec with an explicit mask (dropout.h). The tiled forward (tiled.c) and the backward
 * (backward.c) ask fs_dropout_row for one row of a tile at a time; the tests build the mask
 * cell by cell from the Philox function and the documented mapping, and compare against the
 * dense spec here.
 */
#include "dropout.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The Philox4x32 multipliers and Weyl key increments (Salmon et al., SC'11; Random123). */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

/* One round: two 32 × 32 → 64-bit products, their halves crossed and xored with the key. */
static void philox_round(uint32_t c[4], const uint32_t k[2])
{
    uint64_t p0 = (uint64_t)PHILOX_M0 * c[0], p1 = (uint64_t)PHILOX_M1 * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c[1] ^ k[0], n2 = hi0 ^ c[3] ^ k[1];
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
}

void fs_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]}, k[2] = {key[0], key[1]};
    for (int r = 0; r < 10; r++) {
        if (r) {   /* the key schedule: bump before every round but the first */
            k[0] += PHILOX_W0;
            k[1] += PHILOX_W1;
        }
        philox_round(c, k);
    }
    memcpy(out, c, sizeof c);
}

uint64_t fs_dropout_threshold(double p)
{
    if (!(p > 0)) return 0;
    double t = ceil(ldexp(p, 32));   /* exact: p · 2^32 only moves the exponent */
    return t >= 4294967296.0 ? (uint64_t)1 << 32 : (uint64_t)t;
}

double fs_dropout_keep_scale(double p) { return 1.0 / (1.0 - p); }

fs_status fs_dropout_check(double p) { return p >= 0 && p < 1 ? FS_OK : FS_ERR_ARG; }

static void key_of(const fs_dropout *dr, uint32_t k[2])
{
    k[0] = (uint32_t)(dr->seed & 0xFFFFFFFFu);
    k[1] = (uint32_t)(dr->seed >> 32);
}

bool fs_dropout_dropped(const fs_dropout *dr, uint32_t batch, uint32_t head, uint32_t row, uint32_t column)
{
    uint32_t k[2], c[4] = {batch, head, row, column >> 2}, x[4];
    key_of(dr, k);
    fs_philox4x32_10(c, k, x);
    return (uint64_t)x[column & 3] < fs_dropout_threshold(dr->p);
}

void fs_dropout_row(const fs_dropout *dr, uint32_t batch, uint32_t head, uint32_t row, int32_t c0, int32_t n,
                    uint8_t *dropped)
{
    /* dropped is (n): key c0 + j → dropped[j] */
    assert(c0 >= 0 && n >= 0);
    const uint64_t T = fs_dropout_threshold(dr->p);
    if (T == 0) {
        memset(dropped, 0, (size_t)n);
        return;
    }
    uint32_t k[2], x[4];
    key_of(dr, k);
    uint32_t group = UINT32_MAX;   /* the column >> 2 whose four words x holds */
    for (int32_t j = 0; j < n; j++) {
        uint32_t col = (uint32_t)(c0 + j);
        if (col >> 2 != group) {
            group = col >> 2;
            uint32_t c[4] = {batch, head, row, group};
            fs_philox4x32_10(c, k, x);
        }
        dropped[j] = (uint64_t)x[col & 3] < T;
    }
}

fs_status fs_dropout_pair(const fs_dropout *dr, const fs_attn *a, int32_t head, fs_event *te, uint8_t *dropped,
                          double *pairs, fs_trace *tr)
{
    /* dropped (r1 − r0, c1 − c0); pairs (2 · n) */
    const int32_t r0 = te->r0, r1 = te->r1, c0 = te->c0, nc = te->c1 - te->c0;
    const fs_tile_class cls = te->cls;
    int32_t n = 0;
    for (int32_t i = r0; cls != FS_TILE_SKIPPED && i < r1; i++) {
        uint8_t *z = dropped + (size_t)(i - r0) * nc;
        fs_dropout_row(dr, 0, (uint32_t)head, (uint32_t)i, c0, nc, z);
        for (int32_t j = 0; j < nc; j++) {
            if (!z[j]) continue;
            if (cls != FS_TILE_FULL && !fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, c0 + j)) continue;
            pairs[2 * n] = i;
            pairs[2 * n + 1] = c0 + j;
            n++;
        }
    }
    te->dropout = dr->p;
    te->n_drop = n;
    if (tr && (te->drop = fs_trace_vec(tr, pairs, 2 * n)) < 0) return FS_ERR_NOMEM;
    return FS_OK;
}

void fs_dropout_keep_mask(const fs_dropout *dr, const fs_attn *a, uint8_t *Z)
{
    /* Z (n_q_heads, n_q, n_kv) */
    for (int32_t h = 0; h < a->n_q_heads; h++)
        for (int32_t i = 0; i < a->n_q; i++) {
            uint8_t *z = Z + ((size_t)h * a->n_q + i) * a->n_kv;
            fs_dropout_row(dr, 0, (uint32_t)h, (uint32_t)i, 0, a->n_kv, z);
            for (int32_t j = 0; j < a->n_kv; j++) z[j] = !z[j];
        }
}

double fs_dropout_mask_bytes(double heads, double n_q, double n_kv, double bits)
{
    return heads * n_q * n_kv * bits / 8.0;
}

/* ---- the dense spec: the mask given whole, every n × n matrix materialized ---- */

/* P (n_q, n_kv) of head h: softmax of the masked scores, two passes; a row that sees nothing
 * is all zeros. S (n_q, n_kv) keeps the capped scores (−∞ where masked). */
static void dense_softmax(const fs_attn *a, int32_t h, double *S, double *P)
{
    for (int32_t i = 0; i < a->n_q; i++) {
        double *s = S + (size_t)i * a->n_kv, *pr = P + (size_t)i * a->n_kv, mx = -INFINITY, sum = 0;
        for (int32_t j = 0; j < a->n_kv; j++) {
            s[j] = fs_mask_visible(&a->mask, a->n_q, a->n_kv, i, j) ? fs_attn_score(a, h, i, j) : -INFINITY;
            if (s[j] > mx) mx = s[j];
        }
        for (int32_t j = 0; j < a->n_kv; j++) sum += pr[j] = s[j] == -INFINITY ? 0 : exp(s[j] - mx);
        for (int32_t j = 0; j < a->n_kv; j++) pr[j] = sum > 0 ? pr[j] / sum : 0;
    }
}

fs_status fs_dropout_reference(const fs_attn *a, const uint8_t *Z, double p, double *O)
{
    /* Z (Hq, n_q, n_kv) of 0/1 (1 kept); O (Hq, n_q, d_v) out. Per head S, P are (n_q, n_kv). */
    assert(a && Z && O);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    if (fs_dropout_check(p) != FS_OK) return FS_ERR_ARG;
    const size_t nn = (size_t)a->n_q * a->n_kv;
    double *S = malloc(sizeof(double) * nn), *P = malloc(sizeof(double) * nn);
    if (!S || !P) {
        free(S);
        free(P);
        return FS_ERR_NOMEM;
    }
    for (int32_t h = 0; h < a->n_q_heads; h++) {
        const double *V = a->V + (size_t)fs_attn_kv_head(a, h) * a->n_kv * a->d_v;
        const uint8_t *Zh = Z + (size_t)h * nn;
        dense_softmax(a, h, S, P);
        for (int32_t i = 0; i < a->n_q; i++) {
            double *o = O + ((size_t)h * a->n_q + i) * a->d_v;
            for (int32_t c = 0; c < a->d_v; c++) o[c] = 0;
            for (int32_t j = 0; j < a->n_kv; j++) {
                double pd = Zh[(size_t)i * a->n_kv + j] ? P[(size_t)i * a->n_kv + j] / (1.0 - p) : 0.0;
                for (int32_t c = 0; c < a->d_v; c++) o[c] += pd * V[(size_t)j * a->d_v + c];
            }
        }
    }
    free(S);
    free(P);
    return FS_OK;
}

fs_status fs_dropout_backward_dense(const fs_attn *a, const uint8_t *Z, double p, const double *dO, double *dQ,
                                    double *dK, double *dV)
{
    /* Z (Hq, n_q, n_kv); dO (Hq, n_q, d_v); dQ (Hq, n_q, d), dK (Hkv, n_kv, d), dV (Hkv, n_kv, d_v) out.
     * Per head: S, P, dP (n_q, n_kv). */
    assert(a && Z && dO && dQ && dK && dV);
    fs_status st = fs_attn_check(a);
    if (st != FS_OK) return st;
    if (!a->Q || !a->K || a->S || fs_dropout_check(p) != FS_OK) return FS_ERR_ARG;
    const int32_t n_q = a->n_q, n_kv = a->n_kv, d = a->d, d_v = a->d_v;
    const size_t nn = (size_t)n_q * n_kv;
    double *S = malloc(sizeof(double) * nn), *P = malloc(sizeof(double) * nn), *dP = malloc(sizeof(double) * nn);
    if (!S || !P || !dP) {
        st = FS_ERR_NOMEM;
        goto done;
    }
    memset(dQ, 0, sizeof(double) * (size_t)a->n_q_heads * n_q * d);
    memset(dK, 0, sizeof(double) * (size_t)a->n_kv_heads * n_kv * d);
    memset(dV, 0, sizeof(double) * (size_t)a->n_kv_heads * n_kv * d_v);
    for (int32_t h = 0; h < a->n_q_heads; h++) {
        const int32_t kvh = fs_attn_kv_head(a, h);
        const double *Q = a->Q + (size_t)h * n_q * d, *K = a->K + (size_t)kvh * n_kv * d;
        const double *V = a->V + (size_t)kvh * n_kv * d_v, *G = dO + (size_t)h * n_q * d_v;
        const uint8_t *Zh = Z + (size_t)h * nn;
        double *gQ = dQ + (size_t)h * n_q * d, *gK = dK + (size_t)kvh * n_kv * d, *gV = dV + (size_t)kvh * n_kv * d_v;
        dense_softmax(a, h, S, P);
        for (int32_t i = 0; i < n_q; i++) {
            double Dr = 0;
            for (int32_t j = 0; j < n_kv; j++) {
                size_t ij = (size_t)i * n_kv + j;
                double dpd = 0;   /* dPd = dO Vᵀ, the gradient of the dropped weights */
                for (int32_t c = 0; c < d_v; c++) dpd += G[(size_t)i * d_v + c] * V[(size_t)j * d_v + c];
                dP[ij] = Zh[ij] ? dpd / (1.0 - p) : 0.0;
                Dr += P[ij] * dP[ij];
            }
            for (int32_t j = 0; j < n_kv; j++) {
                size_t ij = (size_t)i * n_kv + j;
                double pd = Zh[ij] ? P[ij] / (1.0 - p) : 0.0;
                double s = S[ij] == -INFINITY ? 0 : S[ij], slope = 1;
                if (a->softcap > 0) slope = 1 - (s / a->softcap) * (s / a->softcap);
                double ds = a->scale * P[ij] * (dP[ij] - Dr) * slope;
                for (int32_t c = 0; c < d_v; c++) gV[(size_t)j * d_v + c] += pd * G[(size_t)i * d_v + c];
                for (int32_t c = 0; c < d; c++) {
                    gQ[(size_t)i * d + c] += ds * K[(size_t)j * d + c];
                    gK[(size_t)j * d + c] += ds * Q[(size_t)i * d + c];
                }
            }
        }
    }
    st = FS_OK;
done:
    free(S);
    free(P);
    free(dP);
    return st;
}
