/* cpu_isa_scalar.c: the kernels of cpu_kernels.inc compiled for SCALAR (any CPU: plain C, one lane; the fallback when no SIMD set is available). */
#define FS_SIMD_SCALAR
#define FS_OPS_NAME fs_cpu_ops_scalar
#define FS_OPS_ISA FS_CPU_ISA_SCALAR
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_simd.h"
#include "kernels/cpu/cpu_kernels.inc"
