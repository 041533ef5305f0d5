#!/usr/bin/env bash
# One device call (repository root): the paged decodes' pools as rank-3 tensor maps (the trial
# flag FS_DECODE_R3) against the rank-4 maps. Build bench_cuda twice (as is, and with
# -DFS_DECODE_R3), check the R3 build, then time both: the size sweep (paged on one page a
# sequence beside contiguous) and the decode_fp8 rows (float16 and e4m3 caches, pages of 16 and
# 256, both layouts, beside contiguous).
set -u
O=${OUT:-/tmp/out}; mkdir -p /tmp/w
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
B=build/cuda/cuda/bench_cuda; R=build/r3/cuda/bench_cuda
BASE="-std=c++17 -O3 -lineinfo -Isrc -Xcompiler -Wall,-Wextra"
t build
( PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > /tmp/w/build.log 2>&1 ) &
( PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/r3 NVCC_BASE="$BASE -DFS_DECODE_R3" -j16 cuda-bench > /tmp/w/build-r3.log 2>&1 ) &
wait
[ -x $B ] && [ -x $R ] || { tail -40 /tmp/w/build.log /tmp/w/build-r3.log; cp /tmp/w/build*.log $O/; exit 1; }
gzip -c /tmp/w/build-r3.log > $O/build-r3.log.gz
t check-r3-tiny; timeout 100 $R --check --tiny > $O/check-r3-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $O/check-r3-tiny.log >> $O/steps.txt; grep "FAIL" $O/check-r3-tiny.log | head -20 >> $O/steps.txt
t check-r3-fp8; timeout 100 $R --check --only decode_fp8 > $O/check-r3-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $O/check-r3-fp8.log >> $O/steps.txt; grep "FAIL" $O/check-r3-fp8.log | head -20 >> $O/steps.txt
t size; timeout 60 $B --time --only decode_size > $O/size.log 2>&1; echo "rc=$?" >> $O/steps.txt
t size-r3; timeout 60 $R --time --only decode_size > $O/size-r3.log 2>&1; echo "rc=$?" >> $O/steps.txt
t fp8; timeout 110 $B --time --quick --only decode_fp8 > $O/time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
t fp8-r3; timeout 110 $R --time --quick --only decode_fp8 > $O/time_fp8-r3.log 2>&1; echo "rc=$?" >> $O/steps.txt
t size2; timeout 60 $B --time --only decode_size > $O/size2.log 2>&1; echo "rc=$?" >> $O/steps.txt
t size2-r3; timeout 60 $R --time --only decode_size > $O/size2-r3.log 2>&1; echo "rc=$?" >> $O/steps.txt
t done
cat $O/steps.txt
for f in size size-r3 size2 size2-r3; do echo "# $f"; grep "^RESULT decode_size" $O/$f.log | sed 's/RESULT decode_size //; s/ B=8 Hq=32 Hkv=8 d=128//; s/bytes=[0-9]* //'; done
for f in time_fp8 time_fp8-r3; do echo "# $f"; grep "^RESULT decode_fp8_paged" $O/$f.log | sed 's/RESULT decode_fp8_paged //'; done
