#!/usr/bin/env bash
# One device call (repository root): two paged-decode versions, each aimed at a paged target.
#   float16 versions 17 and 18: 15 and 16 with one TMA box of whole rows where they took one a
#     64-column block (the 2026-11-30 whole-rows trial, timed again now that the paged producer's
#     page array is in registers: with pages of 16 what was left is in the copies);
#   e4m3-cache versions 13 and 14: 11 and 12 with o kept in units of the largest V descale so far
#     (with pages of 16, version 12 rescales o every step).
# Build, check (tiny, the e4m3 cache's, memcheck on both kinds' tiny shapes), time the decode_fp8
# rows and the decode_paged rows, last the quick checks (every paged float16 shape).
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
  cuobjdump -res-usage $B 2>/dev/null | grep -A1 "decode_tma\|decode_kv8_tma" | grep -o "STACK:[0-9]*" | sort | uniq -c > $C/stack.txt
  gzip $C/build.log
  t check-tiny; timeout 60 $B --check --tiny > $C/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-tiny.log >> $O/steps.txt; grep "FAIL" $C/check-tiny.log | head -20 >> $O/steps.txt
  t check-fp8; timeout 90 $B --check --only decode_fp8 > $C/check-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-fp8.log | head -20 >> $O/steps.txt
  t memcheck; timeout 40 compute-sanitizer --tool memcheck $B --check --tiny --only decode_fp8 > $C/san_memcheck_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep "ERROR SUMMARY" $C/san_memcheck_fp8.log >> $O/steps.txt
  timeout 40 compute-sanitizer --tool memcheck $B --check --tiny --only decode > $C/san_memcheck_decode.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep "ERROR SUMMARY" $C/san_memcheck_decode.log >> $O/steps.txt
  t time-fp8; timeout 130 $B --time --quick --only decode_fp8 > $C/time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t paged; timeout 130 $B --time --only decode_paged > $C/time_paged.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t check-quick; timeout 100 $B --check --quick > $C/check-quick.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-quick.log >> $O/steps.txt; grep "FAIL" $C/check-quick.log | head -20 >> $O/steps.txt
else
  tail -40 $C/build.log
fi
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt; cat $C/stack.txt
grep "^RESULT decode_fp8" $C/time_fp8.log | grep -v "kernel=e4m3 v=[1-9] \|kernel=e4m3_paged v=[2-9] \|kernel=f16.* v=9 " | sed -E 's/RESULT decode_fp8 //; s/ d=128 B=8 Hq=32 Hkv=8 nkv=32768//; s/ us_b2b=[0-9.]+//; s/ tok_s=[0-9]+//; s/ us_planned=[0-9.]+ tbps_planned=[0-9.]+//' | cut -c1-220
grep "^RESULT decode_paged" $C/time_paged.log | sed -E 's/.* v=([0-9]+) .* page=([0-9]+) layout=([A-Z]+)( pages=ordered)? .* ratio=([0-9.]+).*/v\1 P\2 \3\4 \5/' | head -60
