#!/usr/bin/env bash
# One device call (repository root): the paged e4m3-cache kernel with what the per-instruction
# profile (`2026-11-30-h200-kv8-sass`) found in its tile: the compute warps' page index (an integer
# division a tile) taken once, the V descale's division only when it changes, the producer's box
# coordinates (a modulo by the page size) computed before its wait for a free stage. Build, check
# (tiny, the e4m3 cache's, memcheck on its tiny shapes), time the decodes and the size sweep,
# then ncu on versions 11 and 12 as `2026-11-30-h200-kv8-ncu` did.
# Results: $OUT/cuda.tar.gz, $OUT/steps.txt.
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
  t check-tiny; timeout 100 $B --check --tiny > $C/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-tiny.log >> $O/steps.txt; grep "FAIL" $C/check-tiny.log | head -20 >> $O/steps.txt
  t check-fp8; timeout 120 $B --check --only decode_fp8 > $C/check-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-fp8.log | head -20 >> $O/steps.txt
  t memcheck; timeout 90 compute-sanitizer --tool memcheck $B --check --tiny --only decode_fp8 > $C/san_memcheck_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep "ERROR SUMMARY" $C/san_memcheck_fp8.log >> $O/steps.txt
  t time-fp8; timeout 130 $B --time --quick --only decode_fp8 > $C/time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t size; timeout 60 $B --time --only decode_size > $C/size.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t ncu; timeout 120 ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats \
    -k regex:decode_kv8_tma --launch-skip 482 --launch-count 2 $B --time --only decode_size > $C/ncu-v11-v12.txt 2>&1; echo "rc=$?" >> $O/steps.txt
else
  tail -40 $C/build.log
fi
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
for f in time_fp8; do echo "# $f"; grep "^RESULT decode_fp8" $C/$f.log | grep -v "kernel=e4m3 v=[1-7] \|kernel=e4m3_paged v=[2-8] \|kernel=f16.* v=9 " | sed -E 's/RESULT decode_fp8 //; s/ d=128 B=8 Hq=32 Hkv=8 nkv=32768//; s/ us_b2b=[0-9.]+//; s/ tok_s=[0-9]+//; s/ us_planned=[0-9.]+ tbps_planned=[0-9.]+//' | cut -c1-200; done
grep "^RESULT decode_size\|^RESULT decode_fp8_paged" $C/size.log $C/time_fp8.log | cut -c1-220
grep -E "decode_kv8_tma|Duration|Executed Instructions  |Warp Cycles Per Issued" $C/ncu-v11-v12.txt | cut -c1-120
