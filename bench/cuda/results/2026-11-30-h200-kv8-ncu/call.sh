#!/usr/bin/env bash
# One device call (repository root): ncu on e4m3-cache versions 11 (contiguous) and 12 (paged) on
# one page a sequence (the same bytes, no change of descale), where 12 takes 5 % longer: the last
# launch of 11 and the first of 12 in the size sweep's first round at 32768 keys (each kernel is
# launched 23 times a round, 5 rounds a size; 32768 is the third size). Results: $OUT/cuda.tar.gz.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=build/cuda/cuda/bench_cuda
export PATH=/usr/local/cuda/bin:$PATH
t build
timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > $C/build.log 2>&1
if [ -x $B ]; then
  gzip $C/build.log
  t ncu; timeout 240 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section InstructionStats --section LaunchStats --section Occupancy \
    -k regex:decode_kv8_tma --launch-skip 482 --launch-count 2 \
    $B --time --only decode_size > $C/ncu-v11-v12.txt 2>&1; echo "rc=$?" >> $O/steps.txt
fi
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep -E "decode_kv8_tma|Duration|DRAM Throughput|Memory Throughput|Executed Ipc|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Instructions  |Registers Per|Achieved Occupancy|Active Warps Per|Eligible Warps" $C/ncu-v11-v12.txt | cut -c1-150
