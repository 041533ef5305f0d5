/* mk.c: version 6's Q Kᵀ micro-kernel (6 rows × 64 keys, AVX-512) alone, against a 12-chain FMA
 * probe, one thread: A with its operands in L1 (one Q block, one Kᵀ strip, again and again); B as
 * prefill version 6 walks a 192 × 256 tile at d = 128 (each row block over the 4 strips: Kᵀ 128 KiB
 * from L2, S 192 KiB written); C the same blocks strip by strip; D as the prefill walks the key
 * tiles of 8 heads (K 2 MiB a head, 16 MiB in all: each new tile from L3 or memory); E the same
 * with the next tile prefetched into L2 (_MM_HINT_T1), 4 KiB of it per row block. D and E run
 * twice: on K^T in 4 KiB pages, and in memory advised for huge pages (MADV_HUGEPAGE, as the
 * prefill's packed K and V are: fs_cpu_alloc_big). */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/mman.h>
#define T __attribute__((target("avx512f,avx512dq,fma"), noinline))
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
enum { D = 128, PMR = 6, PNR = 64, BQ = 192, BK = 256 };
T static void qk(const float *Q, const float *Kt, float *S)
{
    __m512 acc[PMR][4];
    for (int r = 0; r < PMR; r++) for (int v = 0; v < 4; v++) acc[r][v] = _mm512_setzero_ps();
    for (int k = 0; k < D; k++) {
        __m512 kv[4];
        for (int v = 0; v < 4; v++) kv[v] = _mm512_loadu_ps(Kt + k * PNR + v * 16);
        for (int r = 0; r < PMR; r++) {
            __m512 q = _mm512_set1_ps(Q[r * D + k]);
            for (int v = 0; v < 4; v++) acc[r][v] = _mm512_fmadd_ps(q, kv[v], acc[r][v]);
        }
    }
    for (int r = 0; r < PMR; r++) for (int v = 0; v < 4; v++) _mm512_storeu_ps(S + r * BK + v * 16, acc[r][v]);
}
T static double probe(long it)
{
    __m512 a[12], b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(1e-3f);
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    double t0 = now();
    for (long n = 0; n < it; n++)
        for (int i = 0; i < 12; i++) a[i] = _mm512_fmadd_ps(a[i], b, c);
    double t = now() - t0;
    __m512 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm512_add_ps(s, a[i]);
    volatile float sink = _mm512_reduce_add_ps(s); (void)sink;
    return 12.0 * 32 * it / t * 1e-9;
}
int main(void)
{
    enum { NT = 16, NH = 8 };   /* key tiles a head (N = 4096), heads */
    const long TS = (long)BK * D;  /* floats a key tile */
    float *Q = aligned_alloc(64, BQ * D * 4), *K4 = aligned_alloc(64, NH * NT * TS * 4), *S = aligned_alloc(64, BQ * BK * 4);
    float *KH = NULL;
    if (posix_memalign((void **)&KH, 2 << 20, NH * NT * TS * 4)) return 1;
    madvise(KH, NH * NT * TS * 4, MADV_HUGEPAGE);
    for (int i = 0; i < BQ * D; i++) Q[i] = (float)(i % 7) * 0.01f;
    for (long i = 0; i < NH * NT * TS; i++) K4[i] = KH[i] = (float)(i % 5) * 0.01f;
    float *K = K4;
    const double fl = 2.0 * PMR * PNR * D;   /* FLOPs of one qk call */
    for (int round = 0; round < 3; round++) {
        double p0 = probe(20000000);
        long n = 200000; double t0 = now();
        for (long i = 0; i < n; i++) qk(Q, K, S);
        double a = fl * n / (now() - t0) * 1e-9;
        long tiles = 400; t0 = now();
        for (long t = 0; t < tiles; t++)
            for (int rb = 0; rb < BQ; rb += PMR)
                for (int cb = 0; cb < BK; cb += PNR) qk(Q + rb * D, K + cb * D, S + rb * BK + cb);
        double b = fl * tiles * (BQ / PMR) * (BK / PNR) / (now() - t0) * 1e-9;
        t0 = now();
        for (long t = 0; t < tiles; t++)
            for (int cb = 0; cb < BK; cb += PNR)
                for (int rb = 0; rb < BQ; rb += PMR) qk(Q + rb * D, K + cb * D, S + rb * BK + cb);
        double c = fl * tiles * (BQ / PMR) * (BK / PNR) / (now() - t0) * 1e-9;
        double dd[4];
        for (int pf = 0; pf < 4; pf++) {
            K = pf < 2 ? K4 : KH;
            int items = 2; t0 = now();
            for (int it = 0; it < items; it++)
                for (int h = 0; h < NH; h++)
                    for (int kt = 0; kt < NT; kt++) {
                        const float *Kt = K + ((long)h * NT + kt) * TS;
                        const char *next = (const char *)(kt + 1 < NT ? Kt + TS : K + (((long)h + 1) % NH) * NT * TS);
                        for (int rb = 0; rb < BQ; rb += PMR) {
                            if (pf & 1)
                                for (int l = 0; l < 4096; l += 64) _mm_prefetch(next + (rb / PMR) * 4096 + l, _MM_HINT_T1);
                            for (int cb = 0; cb < BK; cb += PNR) qk(Q + rb * D, Kt + cb * D, S + rb * BK + cb);
                        }
                    }
            dd[pf] = fl * items * NH * NT * (BQ / PMR) * (BK / PNR) / (now() - t0) * 1e-9;
        }
        double p1 = probe(20000000), pm = (p0 + p1) / 2;
        printf("round %d: probe %.1f / %.1f GFLOP/s; A (L1) %.0f %%; B (row blocks) %.0f %%; C (strips) %.0f %%; "
               "D (new tiles) %.0f %%; E (prefetched) %.0f %%; huge pages: D %.0f %%, E %.0f %%\n", round, p0, p1,
               100 * a / pm, 100 * b / pm, 100 * c / pm, 100 * dd[0] / pm, 100 * dd[1] / pm, 100 * dd[2] / pm,
               100 * dd[3] / pm);
    }
    return 0;
}
