#!/usr/bin/env bash
# one device call: every Hopper prefill version from 31 and PyTorch's SDPA in the same call, then
# the e4m3 forward's newest versions
set -u
O=${OUT:-/tmp/out}
B=/tmp/bc; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,memory.total --format=csv; uptime;
  python3 -c "import torch; print('torch', torch.__version__)"; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
t time-prefill; timeout 200 $B --time --only prefill --from 31 > $O/time-prefill.log 2>&1; echo "rc=$?" >> $O/steps.txt
t sdpa; timeout 100 python3 bench/cuda/sdpa_bench.py --only prefill > $O/sdpa-prefill.log 2>&1; echo "rc=$?" >> $O/steps.txt
t time-fp8; timeout 150 $B --time --only fp8 --from 26 > $O/time-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
t done
cat $O/steps.txt; python3 bench/cuda/summary.py $O/time-prefill.log $O/sdpa-prefill.log | head -24; grep "^RESULT fp8" $O/time-fp8.log | cut -c1-150 | head -40
