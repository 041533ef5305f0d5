#!/usr/bin/env bash
# One device call (repository root): bench_cuda after decode_size and decode_splits came to share
# their set-up and timing (decode_caches, time_plans): both timings again, to see them unchanged.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=/tmp/bench_cuda; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
export PATH=/usr/local/cuda/bin:$PATH
t splits; timeout 200 $B --time --only decode_splits > $C/splits.log 2>&1; echo "rc=$?" >> $O/steps.txt
t size; timeout 300 $B --time --only decode_size > $C/size.log 2>&1; echo "rc=$?" >> $O/steps.txt
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep -h "^RESULT decode_splits" $C/splits.log | grep "x1.00\|mult=1.00\|mult=2.00" | sed -E 's/RESULT decode_splits cache=([a-z0-9]+) v=([0-9]+) .* nkv=([0-9]+) mult=([0-9.]+) splits=([0-9]+) us=([0-9.]+) tbps=([0-9.]+)/\1 v\2 n\3 x\4 s\5 \6us \7/'
grep -h "^RESULT decode_size" $C/size.log | grep "paged=0" | sed -E 's/RESULT decode_size cache=([a-z0-9]+) paged=0 v=([0-9]+) .* nkv=([0-9]+) bytes=[0-9]+ us=([0-9.]+) tbps=([0-9.]+)/\1 v\2 n\3 \4us \5/'
