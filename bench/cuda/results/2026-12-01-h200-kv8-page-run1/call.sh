#!/usr/bin/env bash
# One device call (repository root): e4m3-cache version 16, a whole page of the pool a stage (every
# KV head's rows, 8 KiB boxes) with a block for every KV head of a sequence's split, beside
# version 14 (a block a KV head, 2 KiB boxes with pages of 16); and e4m3-cache versions 13 and 14
# again with the split count of their own kernels (kv8_params had taken version 4's occupancy for
# them). Build, check (tiny, the e4m3 cache's, memcheck and racecheck on its tiny shapes), time the
# decode_fp8 rows. Results: $OUT/cuda.tar.gz, $OUT/steps.txt.
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
  t check-tiny; timeout 60 $B --check --tiny > $C/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-tiny.log >> $O/steps.txt; grep "FAIL" $C/check-tiny.log | head -20 >> $O/steps.txt
  t check-fp8; timeout 90 $B --check --only decode_fp8 > $C/check-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-fp8.log | head -20 >> $O/steps.txt
  t memcheck; timeout 40 compute-sanitizer --tool memcheck $B --check --tiny --only decode_fp8 > $C/san_memcheck_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep "ERROR SUMMARY" $C/san_memcheck_fp8.log >> $O/steps.txt
  t racecheck; timeout 60 compute-sanitizer --tool racecheck $B --check --tiny --only decode_fp8 > $C/san_racecheck_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep "ERROR SUMMARY\|RACECHECK SUMMARY" $C/san_racecheck_fp8.log >> $O/steps.txt
  if ! grep -q FAIL $C/check-fp8.log; then
    t time-fp8; timeout 130 $B --time --quick --only decode_fp8 > $C/time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  fi
else
  tail -40 $C/build.log
fi
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep "FAIL" $C/check-fp8.log | head -5 | cut -c1-200
grep "^RESULT decode_fp8" $C/time_fp8.log 2>/dev/null | grep -v "kernel=e4m3 v=[1-9] \|kernel=e4m3_paged v=[2-9] \|kernel=f16.* v=9 \|v=10 \|kernel=f16.* v=1[34] " | sed -E 's/RESULT decode_fp8 //; s/ d=128 B=8 Hq=32 Hkv=8 nkv=32768//; s/ us_b2b=[0-9.]+//; s/ tok_s=[0-9]+//; s/ us_planned=[0-9.]+ tbps_planned=[0-9.]+//' | cut -c1-220
