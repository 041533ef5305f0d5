#!/usr/bin/env bash
# one device call: the H200's forward and backward rows beside PyTorch's SDPA, then ncu on the
# d = 64 forward and the d = 128 backward, ours and cuDNN's
set -u
O=${OUT:-/tmp/out}
B=/tmp/bc; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,memory.total --format=csv; uptime;
  nvcc --version 2>/dev/null | tail -1; python3 -c "import torch; print('torch', torch.__version__)"; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
t check-tiny; timeout 60 $B --check --tiny > $O/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
t time-prefill; timeout 150 $B --time --only prefill --from 34 > $O/time-prefill.log 2>&1; echo "rc=$?" >> $O/steps.txt
t time-backward; timeout 90 $B --time --only backward --from 8 > $O/time-backward.log 2>&1; echo "rc=$?" >> $O/steps.txt
t sdpa; timeout 100 python3 bench/cuda/sdpa_bench.py --only prefill > $O/sdpa-prefill.log 2>&1; echo "rc=$?" >> $O/steps.txt
timeout 60 python3 bench/cuda/sdpa_bench.py --only backward > $O/sdpa-backward.log 2>&1; echo "rc=$?" >> $O/steps.txt
python3 bench/cuda/summary.py $O/time-prefill.log $O/sdpa-prefill.log > $O/summary-prefill.md 2>&1
python3 bench/cuda/summary.py $O/time-backward.log $O/sdpa-backward.log > $O/summary-backward.md 2>&1
S="--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis"
t ncu-fwd; timeout 60 ncu $S -k regex:prefill $B --profile-shape 4,4096,32,64 --from 34 > $O/ncu-ours-fwd-d64.txt 2>&1; echo "rc=$?" >> $O/steps.txt
timeout 60 ncu $S -k 'regex:(?i)(fprop|flash|fmha)' python3 bench/cuda/sdpa_profile.py 4,4096,32,64 --backends cudnn > $O/ncu-cudnn-fwd-d64.txt 2>&1; echo "rc=$?" >> $O/steps.txt
t ncu-bwd; timeout 80 ncu $S -k regex:bwd $B --profile-shape 1,16384,16,128 --only backward --from 8 > $O/ncu-ours-bwd-d128.txt 2>&1; echo "rc=$?" >> $O/steps.txt
timeout 80 ncu $S -k 'regex:(?i)(dgrad|bprop|bwd|backward)' python3 bench/cuda/sdpa_profile.py 1,16384,16,128 --backends cudnn --backward > $O/ncu-cudnn-bwd-d128.txt 2>&1; echo "rc=$?" >> $O/steps.txt
t done
tail -3 $O/check-tiny.log; cat $O/steps.txt; cat $O/summary-prefill.md $O/summary-backward.md | head -60
