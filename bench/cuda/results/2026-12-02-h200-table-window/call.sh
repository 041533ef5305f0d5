#!/usr/bin/env bash
# One device call (repository root): the paged decode producers' block-table window and the
# occupancy queries, each now one helper (table_window, blocks_per_sm in hopper_decode.cu) where
# four copies stood; the same kernels otherwise. Checked (tiny, the e4m3 cache's, quick) and the
# paged rows timed again beside their contiguous siblings. bench_cuda built here, carried.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=/tmp/bench_cuda; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
export PATH=/usr/local/cuda/bin:$PATH
t check-tiny; timeout 60 $B --check --tiny > $C/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $C/check-tiny.log >> $O/steps.txt; grep "FAIL" $C/check-tiny.log | head -20 >> $O/steps.txt
t check-fp8; timeout 90 $B --check --only decode_fp8 > $C/check-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $C/check-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-fp8.log | head -20 >> $O/steps.txt
t paged; timeout 150 $B --time --only decode_paged > $C/time_paged.log 2>&1; echo "rc=$?" >> $O/steps.txt
t check-quick; timeout 180 $B --check --quick > $C/check-quick.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $C/check-quick.log >> $O/steps.txt; grep "FAIL" $C/check-quick.log | head -20 >> $O/steps.txt
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep "^RESULT decode_paged" $C/time_paged.log | grep "v=18\|v=20" | grep "page=16" | sed -E 's/.* v=([0-9]+) .* page=([0-9]+) layout=([A-Z]+)( pages=ordered)? us=([0-9.]+) .* contiguous_us=([0-9.]+) .* ratio=([0-9.]+).*/v\1 P\2 \3\4 \5 \6 \7/'
