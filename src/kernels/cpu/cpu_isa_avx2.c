/* cpu_isa_avx2.c: the kernels of cpu_kernels.inc compiled for AVX2 (x86 CPUs; cpu_attn.c calls it only when __builtin_cpu_supports says the CPU has it). */
#if defined(__x86_64__) || defined(__i386__)
#define FS_SIMD_AVX2
#define FS_OPS_NAME fs_cpu_ops_avx2
#define FS_OPS_ISA FS_CPU_ISA_AVX2
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_simd.h"
#include "kernels/cpu/cpu_kernels.inc"
#else
typedef int fs_cpu_isa_avx2_absent;   /* not this architecture: an empty unit */
#endif
