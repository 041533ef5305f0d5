#!/usr/bin/env bash
# One device call (repository root): build bench_cuda, check the tiny shapes, then time the
# decodes (float16 and e4m3 cache; plain calls, split count fixed, through plans, through graphs)
# at both shapes, B = 8 × 32768 and B = 4 × 65536 keys (no --quick), and PyTorch's SDPA decode.
set -u
O=${OUT:-/tmp/out}; W=/tmp/w; mkdir -p $W
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
B=build/cuda/cuda/bench_cuda
t build; PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > $W/build.log 2>&1
echo "rc=$?" >> $O/steps.txt; [ -x $B ] || { tail -40 $W/build.log; cp $W/build.log $O/; exit 1; }
t check-tiny; timeout 120 $B --check --tiny > $W/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $W/check-tiny.log >> $O/steps.txt; grep "FAIL" $W/check-tiny.log | head -20 >> $O/steps.txt
t sdpa; timeout 60 python3 bench/cuda/sdpa_bench.py --only decode > $W/sdpa.log 2>&1; echo "rc=$?" >> $O/steps.txt
t time-fp8; timeout 300 $B --time --only decode_fp8 > $W/time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
t sdpa2; timeout 60 python3 bench/cuda/sdpa_bench.py --only decode > $W/sdpa2.log 2>&1; echo "rc=$?" >> $O/steps.txt
t done
cp $W/*.log $O/
gzip -9 $O/build.log
cat $O/steps.txt
grep "^RESULT" $W/time_fp8.log | grep "kernel=f16 \|kernel=e4m3 " | grep "v=15\|v=13\|v=11" | sed 's/RESULT //' | cut -c1-400
grep "^RESULT decode_fp8_paged" $W/time_fp8.log | cut -c1-300
grep -v "^#" $W/sdpa.log $W/sdpa2.log | grep -i "cudnn" | head -6
