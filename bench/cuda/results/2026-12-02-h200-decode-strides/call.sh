#!/usr/bin/env bash
# One device call (repository root): bench_cuda --time --only decode_strides, twice: the float16
# (15) and e4m3-cache (11) decodes through their graphs at B = 8 and 32768 keys, and at 32768 + 64,
# + 320, + 1088 and - 64 (split starts and head strides off the power of two), 32768 again last.
# bench_cuda built here, carried as build/carry/bench_cuda.gz.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=/tmp/bench_cuda; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
for r in 1 2; do
  t run$r; timeout 200 $B --time --only decode_strides > $C/run$r.log 2>&1; echo "rc=$?" >> $O/steps.txt
done
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep -h "^RESULT\|FAIL" $C/run*.log
