#!/usr/bin/env bash
# One device call (repository root): e4m3-cache versions 13 and 14 (11 and 12 with 128-key tiles,
# each tile two 8 KiB boxes a tensor contiguous): build bench_cuda twice (as is, and with
# FS_DECODE_NOSTEP: the ring alone), check the e4m3 cache's versions, time the decodes with both.
set -u
O=${OUT:-/tmp/out}; W=$O; mkdir -p /tmp/w
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
B=build/cuda/cuda/bench_cuda; N=build/nostep/cuda/bench_cuda
BASE="-std=c++17 -O3 -lineinfo -Isrc -Xcompiler -Wall,-Wextra"
t build
( PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > /tmp/w/build.log 2>&1 ) &
( PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/nostep NVCC_BASE="$BASE -DFS_DECODE_NOSTEP" -j16 cuda-bench > /tmp/w/build-nostep.log 2>&1 ) &
wait
[ -x $B ] || { tail -40 /tmp/w/build.log; cp /tmp/w/build.log $O/; exit 1; }
gzip -c /tmp/w/build.log > $O/build.log.gz
t check-tiny; timeout 120 $B --check --tiny > $W/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $W/check-tiny.log >> $O/steps.txt; grep "FAIL" $W/check-tiny.log | head -20 >> $O/steps.txt
t check-fp8; timeout 150 $B --check --only decode_fp8 > $W/check_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $W/check_fp8.log >> $O/steps.txt; grep "FAIL" $W/check_fp8.log | head -20 >> $O/steps.txt
t time-fp8; timeout 150 $B --time --quick --only decode_fp8 > $W/time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
t nostep; [ -x $N ] && timeout 130 $N --time --quick --only decode_fp8 > $W/nostep-time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
t done
cat $O/steps.txt
for f in time_fp8 nostep-time_fp8; do echo "# $f"; grep "^RESULT decode_fp8 " $W/$f.log | grep -v "layout=HND" | sed 's/RESULT decode_fp8 //; s/ d=128 B=8 Hq=32 Hkv=8 nkv=32768//' | cut -c1-230; done
