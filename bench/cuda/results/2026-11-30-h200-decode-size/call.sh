#!/usr/bin/env bash
# One device call (repository root): how the decode's time grows with the cache it reads. Build
# bench_cuda twice (as is, and with FS_DECODE_NOSTEP: the ring alone), then
# `bench_cuda --time --only decode_size` with each: the copy and a read probe at several sizes, the
# float16 decode (15) and the e4m3-cache decode (11) at 8192 to 131072 keys through graphs, beside
# paged 16 and 12 on one page a sequence.
set -u
O=${OUT:-/tmp/out}; mkdir -p /tmp/w
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
t size; timeout 150 $B --time --only decode_size > $O/size.log 2>&1; echo "rc=$?" >> $O/steps.txt
t size-nostep; [ -x $N ] && timeout 150 $N --time --only decode_size > $O/size-nostep.log 2>&1; echo "rc=$?" >> $O/steps.txt
t size-again; timeout 150 $B --time --only decode_size > $O/size2.log 2>&1; echo "rc=$?" >> $O/steps.txt
t done
cat $O/steps.txt
for f in size size-nostep size2; do echo "# $f"; grep "^RESULT" $O/$f.log | sed 's/RESULT //; s/ B=8 Hq=32 Hkv=8 d=128//'; done
