#!/usr/bin/env bash
# One device call (repository root): the committed forms of float16 decode versions 17 and 18
# (17 is version 15's kernel; 18 takes whole-row boxes only with pages of 16 and 32, version 16's
# kernel otherwise) and e4m3-cache versions 13 and 14, checked (tiny, the e4m3 cache's, the quick
# checks to the end: every decode and paged shape) and the paged rows timed beside their
# contiguous siblings (version 18 now beside version 15's kernel).
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
  t check-tiny; timeout 60 $B --check --tiny > $C/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-tiny.log >> $O/steps.txt; grep "FAIL" $C/check-tiny.log | head -20 >> $O/steps.txt
  t check-fp8; timeout 90 $B --check --only decode_fp8 > $C/check-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-fp8.log | head -20 >> $O/steps.txt
  t paged; timeout 130 $B --time --only decode_paged > $C/time_paged.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t check-quick; timeout 180 $B --check --quick > $C/check-quick.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-quick.log >> $O/steps.txt; grep "FAIL" $C/check-quick.log | head -20 >> $O/steps.txt
else
  tail -40 $C/build.log
fi
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep "^RESULT decode_paged" $C/time_paged.log | sed -E 's/.* v=([0-9]+) .* page=([0-9]+) layout=([A-Z]+)( pages=ordered)? us=([0-9.]+) .* contiguous_us=([0-9.]+) .* ratio=([0-9.]+).*/v\1 P\2 \3\4 \5 \6 \7/' | head -60
