#!/usr/bin/env bash
# One device call (repository root): build bench_cuda, check every decode version (17 and 18 new:
# one TMA box of whole rows), memcheck the tiny decode shapes, and time the float16 decodes
# (contiguous and paged, both pool layouts, plain calls, plans and graphs) beside the e4m3 cache.
set -u
O=${OUT:-/tmp/out}; W=$O; mkdir -p /tmp/w
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
B=build/cuda/cuda/bench_cuda
t build; PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > /tmp/w/build.log 2>&1
echo "rc=$?" >> $O/steps.txt; [ -x $B ] || { tail -40 /tmp/w/build.log; cp /tmp/w/build.log $O/; exit 1; }
gzip -c /tmp/w/build.log > $O/build.log.gz
t check-tiny; timeout 120 $B --check --tiny > $W/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $W/check-tiny.log >> $O/steps.txt; grep "FAIL" $W/check-tiny.log | head -20 >> $O/steps.txt
t check-quick; timeout 200 $B --check --quick > $W/check_quick.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $W/check_quick.log >> $O/steps.txt; grep "FAIL" $W/check_quick.log | head -20 >> $O/steps.txt
t time-fp8; timeout 200 $B --time --quick --only decode_fp8 > $W/time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
t memcheck; PATH=/usr/local/cuda/bin:$PATH timeout 100 compute-sanitizer --tool memcheck $B --check --tiny --only decode > $W/san_memcheck_decode.log 2>&1
echo "rc=$?" >> $O/steps.txt; tail -2 $W/san_memcheck_decode.log >> $O/steps.txt
t done
cat $O/steps.txt
grep "^RESULT" $W/time_fp8.log | sed 's/RESULT //' | grep -v "e4m3" | cut -c1-330
