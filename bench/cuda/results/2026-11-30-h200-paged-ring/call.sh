#!/usr/bin/env bash
# One device call (repository root): what is left of the paged decode's loss with pages of 16,
# after the page array went to registers: the ring alone or the step? bench_cuda built with
# FS_DECODE_NOSTEP (the compute warps wait for each stage and give it back), then the decode_fp8
# rows (pages of 16 and 256, both layouts, float16 and e4m3, beside contiguous) and the size sweep.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
N=build/nostep/cuda/bench_cuda
BASE="-std=c++17 -O3 -lineinfo -Isrc -Xcompiler -Wall,-Wextra"
t build
PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/nostep NVCC_BASE="$BASE -DFS_DECODE_NOSTEP" -j16 cuda-bench > $C/build-nostep.log 2>&1
if [ -x $N ]; then
  gzip $C/build-nostep.log
  t fp8; timeout 120 $N --time --quick --only decode_fp8 > $C/nostep-time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t size; timeout 60 $N --time --only decode_size > $C/nostep-size.log 2>&1; echo "rc=$?" >> $O/steps.txt
fi
t done
tar czf $O/cuda.tar.gz -C $C .
grep "^RESULT decode_fp8_paged" $C/nostep-time_fp8.log | sed 's/RESULT decode_fp8_paged //'
cat $O/steps.txt
