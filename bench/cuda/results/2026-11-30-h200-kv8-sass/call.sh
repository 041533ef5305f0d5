#!/usr/bin/env bash
# One device call (repository root): where the paged e4m3-cache decode's extra instructions are.
# ncu (SourceCounters, InstructionStats) on e4m3-cache versions 11 and 12 on one page a sequence, as
# `2026-11-30-h200-kv8-ncu`, saved as a report; then the report's source page per SASS instruction
# (executed instructions, stall samples) as CSV for each kernel. Results: $OUT/cuda.tar.gz.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; ncu --version | tail -1; } > $C/machine.txt 2>&1
B=build/cuda/cuda/bench_cuda
export PATH=/usr/local/cuda/bin:$PATH
t build
timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > $C/build.log 2>&1
if [ -x $B ]; then
  gzip $C/build.log
  t ncu; timeout 150 ncu --section SourceCounters --section InstructionStats --section WarpStateStats \
    -k regex:decode_kv8_tma --launch-skip 482 --launch-count 2 -o $C/kv8 $B --time --only decode_size > $C/ncu.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t export
  timeout 60 ncu -i $C/kv8.ncu-rep --page source --csv --print-source sass > $C/sass.csv 2> $C/sass.err; echo "rc=$?" >> $O/steps.txt
  timeout 60 ncu -i $C/kv8.ncu-rep --page details --print-details all > $C/details.txt 2>&1; echo "rc=$?" >> $O/steps.txt
  gzip $C/sass.csv
fi
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt; head -c 600 $C/sass.err; ls -la $C
