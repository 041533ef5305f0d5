#!/usr/bin/env bash
# One device call (repository root): float16 decode version 20 (a block for every KV head, a whole
# page of them a stage) checked (tiny, then the quick checks: every decode and paged shape, the new
# page kernel's with 2, 4 and 8 KV heads, pages of 16 and of 32 at d = 64, a group of 8), under
# compute-sanitizer's memcheck and racecheck on the tiny checks, and the paged rows timed beside
# their contiguous siblings (version 20 beside 19, version 15's kernel).
# Results: $OUT/cuda.tar.gz, $OUT/steps.txt.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=build/cuda/cuda/bench_cuda
export PATH=/usr/local/cuda/bin:$PATH
t build
if [ -f build/carry/bench_cuda.gz ]; then mkdir -p build/cuda/cuda; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B; echo carried >> $O/steps.txt
else timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > $C/build.log 2>&1; gzip $C/build.log; fi
if [ -x $B ]; then
  t check-tiny; timeout 60 $B --check --tiny > $C/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-tiny.log >> $O/steps.txt; grep "FAIL" $C/check-tiny.log | head -20 >> $O/steps.txt
  grep "v20" $C/check-tiny.log | head -8 >> $O/steps.txt
  t paged; timeout 150 $B --time --only decode_paged > $C/time_paged.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t check-quick; timeout 180 $B --check --quick > $C/check-quick.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-quick.log >> $O/steps.txt; grep "FAIL" $C/check-quick.log | head -20 >> $O/steps.txt
  t memcheck; timeout 150 compute-sanitizer --tool memcheck $B --check --tiny > $C/san_memcheck.log 2>&1; echo "rc=$?" >> $O/steps.txt
  tail -3 $C/san_memcheck.log >> $O/steps.txt
  t racecheck; timeout 150 compute-sanitizer --tool racecheck $B --check --tiny > $C/san_racecheck.log 2>&1; echo "rc=$?" >> $O/steps.txt
  tail -3 $C/san_racecheck.log >> $O/steps.txt
fi
t done
for f in $C/*.log; do [ $(stat -c %s $f) -gt 2000000 ] && gzip $f; done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep "^RESULT decode_paged" $C/time_paged.log | sed -E 's/.* v=([0-9]+) .* page=([0-9]+) layout=([A-Z]+)( pages=ordered)? us=([0-9.]+) .* contiguous_us=([0-9.]+) .* ratio=([0-9.]+).*/v\1 P\2 \3\4 \5 \6 \7/' | head -60
