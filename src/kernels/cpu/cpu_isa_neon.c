/* cpu_isa_neon.c: the kernels of cpu_kernels.inc compiled for NEON (AArch64, where NEON is always present). */
#if defined(__aarch64__)
#define FS_SIMD_NEON
#define FS_OPS_NAME fs_cpu_ops_neon
#define FS_OPS_ISA FS_CPU_ISA_NEON
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_simd.h"
#include "kernels/cpu/cpu_kernels.inc"
#else
typedef int fs_cpu_isa_neon_absent;   /* not this architecture: an empty unit */
#endif
