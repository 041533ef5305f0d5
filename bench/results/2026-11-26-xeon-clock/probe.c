#include <stdio.h>
#include "kernels/cpu/cpu_attn.h"
#include <time.h>
static double cpu_s(void){struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t); return t.tv_sec+1e-9*t.tv_nsec;}
static double add_chain_ghz(void){ double best=0; for(int r=0;r<5;r++){ unsigned long v=0,n=40000000; double t0=cpu_s();
  __asm__ volatile("1:\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tsub $8, %1\n\tjnz 1b":"+r"(v),"+r"(n));
  double t=cpu_s()-t0; if(t>0&&4e7/t>best)best=4e7/t;} return best*1e-9; }
int main(void){
  printf("old add chain: %.3f GHz\n", add_chain_ghz());
  fs_cpu_isa isa = fs_cpu_isa_best();
  int lanes = isa == FS_CPU_ISA_AVX512 ? 16 : isa == FS_CPU_ISA_AVX2 ? 8 : 1;
  for (int r = 0; r < 5; r++) {
    double g=fs_cpu_measure_clock_ghz(); double f=fs_cpu_measure_fma_gflops(1,0.5);
    printf("isa %s: clock %.3f GHz (multiply chain), fma1 %.1f GFLOP/s, %.2f FLOP/cycle, plausible %d\n", fs_cpu_isa_str(isa), g, f, f/g, fs_cpu_clock_plausible(f,g,lanes));
  }
  printf("fma 2 threads %.1f GFLOP/s\n", fs_cpu_measure_fma_gflops(2,0.5));
  return 0;}
