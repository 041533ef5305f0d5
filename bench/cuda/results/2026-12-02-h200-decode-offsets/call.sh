#!/usr/bin/env bash
# One device call (repository root): bench_cuda --time --only decode_offsets, twice: the float16
# (15) and e4m3-cache (11) decodes through their graphs with V moved 0, 2, 4, 66 and 1028 KiB into
# its allocation against K. bench_cuda built here, carried as build/carry/bench_cuda.gz.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=/tmp/bench_cuda; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
for r in 1 2; do
  t run$r; timeout 200 $B --time --only decode_offsets > $C/run$r.log 2>&1; echo "rc=$?" >> $O/steps.txt
done
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep -h "^RESULT\|FAIL" $C/run*.log
