#!/usr/bin/env bash
# Call 2 of 2 on a lent H100 (repository root): the backward rows beside PyTorch's SDPA, and the
# decode over an e4m3 cache (contiguous and paged) beside the float16 decode, at 32768 keys.
set -u
O=${OUT:-/tmp/out}
B=/tmp/bc; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,memory.total --format=csv; uptime; nproc;
  python3 -c "import torch; print('torch', torch.__version__)"; } > $O/machine-call2.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps-call2.txt; }
t time-backward; timeout 150 $B --time --only backward --from 12 --to 13 > $O/time-backward.log 2>&1; echo "rc=$?" >> $O/steps-call2.txt
t sdpa-backward; timeout 90 python3 bench/cuda/sdpa_bench.py --only backward > $O/sdpa-backward.log 2>&1; echo "rc=$?" >> $O/steps-call2.txt
t time-fp8-decode; timeout 170 $B --time --quick --only decode_fp8 > $O/time-decode-fp8.log 2>&1; echo "rc=$?" >> $O/steps-call2.txt
t time-paged; timeout 100 $B --time --only decode_paged > $O/time-decode-paged.log 2>&1; echo "rc=$?" >> $O/steps-call2.txt
t done
cat $O/steps-call2.txt
python3 bench/cuda/summary.py $O/time-backward.log $O/sdpa-backward.log 2>&1 | head -24
grep "^RESULT" $O/time-decode-fp8.log | grep "v=15\|v=11\|v=13\|v=16\|v=18\|v=14" | cut -c1-260 | head -30
