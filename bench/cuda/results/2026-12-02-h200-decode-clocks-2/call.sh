#!/usr/bin/env bash
# One device call (repository root), after 2026-12-02-h200-decode-balance-2: bench_cuda built with FS_DECODE_CLOCKS (hopper_decode.cu and
# bench_cuda.cu compiled with the flag; the split kernels and their merge stamp %globaltimer at
# fixed points of every block), carried as build/carry_clk3/bench_cuda_clk.gz. Runs
# bench_cuda --time --only decode_clocks twice.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=/tmp/bench_cuda; gunzip -c build/carry_clk3/bench_cuda_clk.gz > $B; chmod +x $B
for r in 1 2; do
  t run$r; timeout 200 $B --time --only decode_clocks > $C/run$r.log 2>&1; echo "rc=$?" >> $O/steps.txt
done
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep -h "^CLOCKS\|FAIL\|^RESULT copy" $C/run*.log
