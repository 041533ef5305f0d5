#!/usr/bin/env bash
# One device call (repository root): build bench_cuda, check every decode version (float16 and
# e4m3 cache, each through a plan and, for the versions that take one, its CUDA graph) with the
# sanitizer's memcheck on the tiny e4m3 shapes, time
# the e4m3-cache decodes beside the float16 ones (plain calls, split count fixed, through plans,
# through graphs),
# and PyTorch's SDPA decode beside them.
set -u
O=${OUT:-/tmp/out}; W=/tmp/w; mkdir -p $W
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
B=build/cuda/cuda/bench_cuda
t build; PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > $W/build.log 2>&1
echo "rc=$?" >> $O/steps.txt; [ -x $B ] || { tail -40 $W/build.log; cp $W/build.log $O/; exit 1; }
t check-tiny; timeout 120 $B --check --tiny > $W/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $W/check-tiny.log >> $O/steps.txt; grep "FAIL" $W/check-tiny.log | head -20 >> $O/steps.txt
t check-fp8; timeout 120 $B --check --only decode_fp8 > $W/check_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $W/check_fp8.log >> $O/steps.txt; grep "FAIL" $W/check_fp8.log | head -20 >> $O/steps.txt
t memcheck; PATH=/usr/local/cuda/bin:$PATH timeout 120 compute-sanitizer --tool memcheck $B --check --tiny --only decode_fp8 > $W/san_memcheck_fp8.log 2>&1
echo "rc=$?" >> $O/steps.txt; tail -2 $W/san_memcheck_fp8.log >> $O/steps.txt
t time-fp8; timeout 150 $B --time --quick --only decode_fp8 > $W/time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
t sdpa; timeout 60 python3 bench/cuda/sdpa_bench.py --only decode > $W/sdpa.log 2>&1; echo "rc=$?" >> $O/steps.txt
t done
cp $W/*.log $O/
cat $O/steps.txt
grep "^RESULT" $W/time_fp8.log | sed 's/RESULT //' | grep -v "layout=" | cut -c1-400
grep "^RESULT decode_fp8_paged" $W/time_fp8.log | cut -c1-300
grep -v "^#" $W/sdpa.log | grep -i "decode" | head -6
