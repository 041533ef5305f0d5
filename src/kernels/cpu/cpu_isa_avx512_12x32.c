/* cpu_isa_avx512_12x32.c: the kernels of cpu_kernels.inc compiled for AVX512 with the prefill's
 * micro-tile 12 rows × 32 keys (cpu_attn.c picks an AVX-512 table per microarchitecture). */
#if defined(__x86_64__) || defined(__i386__)
#define FS_SIMD_AVX512
#define FS_PMR 12
#define FS_PNR 32
#define FS_OPS_NAME fs_cpu_ops_avx512_12x32
#define FS_OPS_ISA FS_CPU_ISA_AVX512
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_simd.h"
#include "kernels/cpu/cpu_kernels.inc"
#else
typedef int fs_cpu_isa_avx512_12x32_absent;   /* not this architecture: an empty unit */
#endif
