#!/usr/bin/env bash
# one device call: backward version 12 (descriptors by addition; at d = 128 dV, dK as m64n128)
# checked (tiny, the backward's quick set, memcheck and racecheck on the tiny set), timed beside
# versions 8-11 and PyTorch's SDPA in two interleaved rounds, then ncu's instruction counts of
# versions 11 and 12 at B = 1, N = 16384, H = 16, d = 128
set -u
O=${OUT:-/tmp/out}; W=/tmp/w; mkdir -p $W
B=/tmp/bc; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,memory.total --format=csv; uptime;
  nvcc --version 2>/dev/null | tail -1; python3 -c "import torch; print('torch', torch.__version__)"; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
t check-tiny; timeout 60 $B --check --tiny > $O/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt; tail -1 $O/check-tiny.log >> $O/steps.txt
t check-quick-backward; timeout 120 $B --check --quick --only backward > $O/check-quick-backward.log 2>&1; echo "rc=$?" >> $O/steps.txt; tail -1 $O/check-quick-backward.log >> $O/steps.txt
t memcheck; timeout 90 compute-sanitizer --tool memcheck $B --check --tiny --only backward > $O/san-memcheck.log 2>&1; echo "rc=$?" >> $O/steps.txt
t racecheck; timeout 120 compute-sanitizer --tool racecheck $B --check --tiny --only backward > $O/san-racecheck.log 2>&1; echo "rc=$?" >> $O/steps.txt
for r in 1 2; do
  t "time round $r"; timeout 120 $B --time --only backward --from 8 > $O/time-backward-$r.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t "sdpa round $r"; timeout 90 python3 bench/cuda/sdpa_bench.py --only backward > $O/sdpa-backward-$r.log 2>&1; echo "rc=$?" >> $O/steps.txt
  python3 bench/cuda/summary.py $O/time-backward-$r.log $O/sdpa-backward-$r.log > $O/summary-$r.md 2>&1
done
t ncu-source
timeout 120 ncu --section SourceCounters -k regex:bwd_wgmma -o $W/src -f $B --profile-shape 1,16384,16,128 --only backward --from 11 > $W/ncu.run.log 2>&1; echo "rc=$?" >> $O/steps.txt
ncu --import $W/src.ncu-rep --page source --csv --print-source sass > $W/src.csv 2>&1
python3 bench/cuda/ncu_source.py $W/src.csv --top 12 > $O/ncu-source-v11-v12-bwd-d128.txt 2>&1
tail -5 $W/ncu.run.log >> $O/steps.txt
t done
cat $O/steps.txt; tail -3 $O/san-memcheck.log $O/san-racecheck.log
cat $O/summary-1.md $O/summary-2.md | grep -v "^$" | head -60
grep -E "^(==|kernel|instructions)|HGMMA|ULOP3|SYNCS" $O/ncu-source-v11-v12-bwd-d128.txt | head -30
