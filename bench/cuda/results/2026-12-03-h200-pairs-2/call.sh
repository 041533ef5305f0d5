#!/usr/bin/env bash
# Second call: the e4m3-cache decode's rate from process to process. decode_size (versions 15, 16,
# 11, 12, 17 through graphs, B = 8, 8192-131072 keys) run 12 times: 6 with one fixed seed (the same
# cache contents each time), 6 with a seed of their own; then the rings alone (NOSTEP) 4 times
# with the fixed seed. The GPU's clocks, temperature and power before each.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c2; mkdir -p $C
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/bench_cuda; N=/tmp/bench_cuda_nostep
gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
gunzip -c build/carry/bench_cuda_nostep.gz > $N; chmod +x $N
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv; uptime; } > $C/machine.txt 2>&1
S=1796296300714538   # size2.log's seed in the call before (its fast run)
q() { nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> $C/clocks.txt; }
for i in 1 2 3 4 5 6; do
  echo "fixed$i $(date -u +%T)" >> $C/clocks.txt; q
  timeout 60 $B --time --only decode_size --seed $S > $C/fixed$i.log 2>&1
  echo "own$i $(date -u +%T)" >> $C/clocks.txt; q
  timeout 60 $B --time --only decode_size > $C/own$i.log 2>&1
done
for i in 1 2 3 4; do
  echo "nostep$i $(date -u +%T)" >> $C/clocks.txt; q
  timeout 60 $N --time --only decode_size --seed $S > $C/nostep$i.log 2>&1
done
tar czf $O/cuda2.tar.gz -C $C .
cat $C/clocks.txt
for f in $C/fixed*.log $C/own*.log $C/nostep*.log; do
  echo "$(basename $f .log) $(head -1 $f | grep -o 'seed [0-9]*') $(grep -h '^RESULT decode_size' $f | grep 'nkv=32768' | sed -E 's/.*cache=([a-z0-9]+) paged=([01]) v=([0-9]+) .* us=([0-9.]+) .*/\1.\3=\4/' | paste -s -d' ')"
done
for f in $C/fixed*.log $C/own*.log; do echo "$(basename $f .log) 131072: $(grep -h '^RESULT decode_size' $f | grep 'nkv=131072' | sed -E 's/.*cache=([a-z0-9]+) paged=([01]) v=([0-9]+) .* us=([0-9.]+) .*/\1.\3=\4/' | paste -s -d' ')"; done
