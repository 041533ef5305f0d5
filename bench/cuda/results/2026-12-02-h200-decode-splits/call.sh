#!/usr/bin/env bash
# One device call (repository root): the split count of the float16 decode (version 15) and the
# e4m3-cache decode (version 11), each through its plan's CUDA graph, at 1/2 to 4 times the
# one-wave count each picks (bench_cuda --only decode_splits), twice; bench_cuda built here, carried.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=/tmp/bench_cuda; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
export PATH=/usr/local/cuda/bin:$PATH
t check-fp8; timeout 120 $B --check --only decode_fp8 --tiny > $C/check-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $C/check-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-fp8.log | head -20 >> $O/steps.txt
for r in 1 2; do
  t splits-run$r; timeout 200 $B --time --only decode_splits > $C/splits-run$r.log 2>&1; echo "rc=$?" >> $O/steps.txt
done
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep -h "^RESULT decode_splits\|^RESULT copy" $C/splits-run*.log | sed -E 's/RESULT decode_splits cache=([a-z0-9]+) v=([0-9]+) .* nkv=([0-9]+) mult=([0-9.]+) splits=([0-9]+) us=([0-9.]+) tbps=([0-9.]+)/\1 v\2 n\3 x\4 s\5 \6us \7/'
