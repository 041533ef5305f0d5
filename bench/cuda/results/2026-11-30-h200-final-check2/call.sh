#!/usr/bin/env bash
# One device call (repository root): the session's last tree built and checked on the GPU
# (every prefill, decode, e4m3 and backward version on small shapes, the plans and graphs among
# them), with memcheck on the e4m3-cache decode's tiny shapes (its plans and graphs among them).
set -u
O=${OUT:-/tmp/out}; W=/tmp/w; mkdir -p $W
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
B=build/cuda/cuda/bench_cuda
t build; PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > $W/build.log 2>&1
echo "rc=$?" >> $O/steps.txt; [ -x $B ] || { tail -40 $W/build.log; cp $W/build.log $O/; exit 1; }
t check-tiny; timeout 120 $B --check --tiny > $W/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $W/check-tiny.log >> $O/steps.txt; grep "FAIL" $W/check-tiny.log | head -20 >> $O/steps.txt
t memcheck; PATH=/usr/local/cuda/bin:$PATH timeout 150 compute-sanitizer --tool memcheck $B --check --tiny --only decode_fp8 > $W/san_memcheck_decode.log 2>&1
echo "rc=$?" >> $O/steps.txt; tail -1 $W/san_memcheck_decode.log >> $O/steps.txt; grep -c "its graph" $W/san_memcheck_decode.log >> $O/steps.txt
t done
cp $W/*.log $O/
gzip -9 $O/build.log
cat $O/steps.txt
