#!/usr/bin/env bash
# One device call (repository root), the session's last device time: e4m3-cache version 16 in its
# committed form (descales by the TMA; one KV head left to version 14's kernel, where run 2's
# descale box faulted), built and checked only: racecheck, memcheck and synccheck on the e4m3
# cache's tiny shapes, then every e4m3-cache check. Results: $OUT/cuda.tar.gz, $OUT/steps.txt.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=build/cuda/cuda/bench_cuda
export PATH=/usr/local/cuda/bin:$PATH
t build
timeout 170 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > $C/build.log 2>&1
if [ -x $B ]; then
  gzip $C/build.log
  for tool in racecheck memcheck synccheck; do
    t $tool; timeout 20 compute-sanitizer --tool $tool $B --check --tiny --only decode_fp8 > $C/san_${tool}_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
    grep "ERROR SUMMARY\|RACECHECK SUMMARY" $C/san_${tool}_fp8.log >> $O/steps.txt
  done
  t check-fp8; timeout 45 $B --check --only decode_fp8 > $C/check-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-fp8.log | head -20 >> $O/steps.txt
else
  tail -40 $C/build.log
fi
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
