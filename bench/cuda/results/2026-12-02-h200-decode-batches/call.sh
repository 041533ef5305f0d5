#!/usr/bin/env bash
# One device call (repository root): bench_cuda --only decode_splits, twice: the split multiples
# again and, new, the float16 (15) and e4m3-cache (11) decodes at their one-wave count for
# B = 8, 11, 16 and 33, whose blocks fill 256 or all 264 of the SM slots. bench_cuda built here,
# carried.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=/tmp/bench_cuda; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
export PATH=/usr/local/cuda/bin:$PATH
for r in 1 2; do
  t run$r; timeout 250 $B --time --only decode_splits > $C/run$r.log 2>&1; echo "rc=$?" >> $O/steps.txt
done
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep -h "^RESULT decode_batch\|FAIL" $C/run*.log | sed -E 's/RESULT decode_batch cache=([a-z0-9]+) v=([0-9]+) B=([0-9]+) .* nkv=([0-9]+) splits=([0-9]+) blocks=([0-9]+) us=([0-9.]+) tbps=([0-9.]+)/\1 v\2 B\3 n\4 s\5 blocks\6 \7us \8/'
