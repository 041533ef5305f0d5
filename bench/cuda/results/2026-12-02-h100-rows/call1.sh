#!/usr/bin/env bash
# Call 1 of 2 on a lent H100 (repository root): the forward, e4m3 forward and float16 decode rows
# of today's kernels beside PyTorch's SDPA in the same call. bench_cuda built on the development
# machine from this folder's commit, carried as build/carry/bench_cuda.gz.
set -u
O=${OUT:-/tmp/out}
B=/tmp/bc; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,memory.total --format=csv; uptime; nproc;
  python3 -c "import torch; print('torch', torch.__version__)"; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
t check-tiny; timeout 60 $B --check --tiny > $O/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $O/check-tiny.log >> $O/steps.txt; grep "FAIL" $O/check-tiny.log | head -5 >> $O/steps.txt
t time-prefill; timeout 120 $B --time --only prefill --from 31 > $O/time-prefill.log 2>&1; echo "rc=$?" >> $O/steps.txt
t sdpa-prefill; timeout 60 python3 bench/cuda/sdpa_bench.py --only prefill > $O/sdpa-prefill.log 2>&1; echo "rc=$?" >> $O/steps.txt
t time-fp8; timeout 150 $B --time --only fp8 --from 26 > $O/time-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
t sdpa-decode; timeout 40 python3 bench/cuda/sdpa_bench.py --only decode > $O/sdpa-decode.log 2>&1; echo "rc=$?" >> $O/steps.txt
t time-decode; timeout 120 $B --time --only decode --from 13 > $O/time-decode.log 2>&1; echo "rc=$?" >> $O/steps.txt
t done
cat $O/steps.txt
python3 bench/cuda/summary.py $O/time-prefill.log $O/sdpa-prefill.log 2>&1 | head -24
grep "^RESULT decode " $O/time-decode.log | cut -c1-200 | head -30; grep -v "^#" $O/sdpa-decode.log | head -8
grep "^RESULT fp8" $O/time-fp8.log | cut -c1-160 | head -30
