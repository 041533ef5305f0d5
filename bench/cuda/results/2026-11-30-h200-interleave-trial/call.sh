#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu):
#  1. WebGPU: the copy and read probes at 16-512 MiB beside the float16 decode's passes at 32768
#     keys (bench.js --probe-sizes, --sweep): its split pass against a plain read of the same bytes.
#  2. CUDA: bench_cuda built as is and with the trial flag FS_DECODE_INTERLEAVE (a contiguous
#     cache's split takes tiles split, split + splits, ...); the trial build checked; the size sweep
#     with both, twice; ncu on the last float16 launch of version 15 and the first of paged 16
#     (one page a sequence: the same bytes), the sweep's first size.
# Results: $OUT/webgpu.tar.gz, $OUT/cuda.tar.gz, $OUT/steps.txt.
set -u
O=${OUT:-/tmp/out}; W=/tmp/w; C=/tmp/c; mkdir -p $W $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
t webgpu
PLAN=full ORT=0 SDPA=0 BENCH_TIMEOUT=150 BENCH_ARGS="--decode-only --sweep --check-only --sweep-n 32768 --only decode-v9-f16 --new decode-v9-f16 --count 1 --probe-sizes 16,32,64,128,256,512" OUT=$W bash bench/webgpu/run-device.sh > $W/run.log 2>&1
echo "rc=$?" >> $O/steps.txt
tar czf $O/webgpu.tar.gz -C $W . 2>/dev/null
grep "^probe" $W/bench.log | cut -c1-300 >> $O/steps.txt
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=build/cuda/cuda/bench_cuda; I=build/il/cuda/bench_cuda
BASE="-std=c++17 -O3 -lineinfo -Isrc -Xcompiler -Wall,-Wextra"
t build
( PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > $C/build.log 2>&1 ) &
( PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/il NVCC_BASE="$BASE -DFS_DECODE_INTERLEAVE" -j16 cuda-bench > $C/build-il.log 2>&1 ) &
wait
if [ -x $B ] && [ -x $I ]; then
  gzip $C/build.log $C/build-il.log
  t check-il-tiny; timeout 100 $I --check --tiny > $C/check-il-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-il-tiny.log >> $O/steps.txt; grep "FAIL" $C/check-il-tiny.log | head -20 >> $O/steps.txt
  t check-il-fp8; timeout 100 $I --check --only decode_fp8 > $C/check-il-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-il-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-il-fp8.log | head -20 >> $O/steps.txt
  for r in 1 2; do
    t size-$r; timeout 60 $B --time --only decode_size > $C/size$r.log 2>&1; echo "rc=$?" >> $O/steps.txt
    t size-il-$r; timeout 60 $I --time --only decode_size > $C/size$r-il.log 2>&1; echo "rc=$?" >> $O/steps.txt
  done
  t ncu; PATH=/usr/local/cuda/bin:$PATH timeout 150 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section LaunchStats --section Occupancy -k regex:decode_tma --launch-skip 22 --launch-count 2 \
    $B --time --only decode_size > $C/ncu-v15-v16.txt 2>&1; echo "rc=$?" >> $O/steps.txt
fi
t done
tar czf $O/cuda.tar.gz -C $C .
for f in size1 size1-il size2 size2-il; do echo "# $f"; grep "^RESULT decode_size" $C/$f.log | sed 's/RESULT decode_size //; s/ B=8 Hq=32 Hkv=8 d=128//; s/bytes=[0-9]* //'; done
cat $O/steps.txt
