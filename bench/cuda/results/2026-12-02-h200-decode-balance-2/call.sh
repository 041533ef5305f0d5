#!/usr/bin/env bash
# One device call (repository root), after 2026-12-02-h200-decode-balance (whose plan check failed:
# a plan re-derived version 17's chunks from its split count and got other ones): e4m3-cache decode
# version 17 (the splits handed out as the
# blocks free up) and the merge room's new layout (dec_so), built here and carried:
#   build/carry/bench_cuda.gz       the tree's bench_cuda
# Checks first (tiny, the e4m3-cache checks, the quick checks), then the timings (decode_splits
# twice: split multiples and batches, with version 17 beside 15 and 11; the
# e4m3-cache table at 32768 keys), then compute-sanitizer on the e4m3-cache tiny checks.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/bench_cuda
gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
t check-tiny; timeout 60 $B --check --tiny > $C/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $C/check-tiny.log >> $O/steps.txt; grep "FAIL" $C/check-tiny.log | head -20 >> $O/steps.txt
t check-fp8; timeout 120 $B --check --only decode_fp8 > $C/check-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $C/check-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-fp8.log | head -20 >> $O/steps.txt
grep "v17" $C/check-fp8.log | head -12 >> $O/steps.txt
if ! grep -q FAIL $C/check-tiny.log $C/check-fp8.log; then
  for r in 1 2; do t splits$r; timeout 100 $B --time --only decode_splits > $C/splits$r.log 2>&1; echo "rc=$?" >> $O/steps.txt; done
  t table; timeout 150 $B --time --quick --only decode_fp8 > $C/table.log 2>&1; echo "rc=$?" >> $O/steps.txt
fi
t check-quick; timeout 180 $B --check --quick > $C/check-quick.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $C/check-quick.log >> $O/steps.txt; grep "FAIL" $C/check-quick.log | head -20 >> $O/steps.txt
t hash; timeout 60 $B --hash > $C/hash-after.log 2>&1; echo "rc=$?" >> $O/steps.txt
t memcheck; timeout 90 compute-sanitizer --tool memcheck $B --check --tiny --only decode_fp8 > $C/san_memcheck.log 2>&1; echo "rc=$?" >> $O/steps.txt
tail -2 $C/san_memcheck.log >> $O/steps.txt
t racecheck; timeout 90 compute-sanitizer --tool racecheck $B --check --tiny --only decode_fp8 > $C/san_racecheck.log 2>&1; echo "rc=$?" >> $O/steps.txt
tail -2 $C/san_racecheck.log >> $O/steps.txt
t done
for f in $C/*.log; do [ $(stat -c %s $f) -gt 2000000 ] && gzip $f; done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep -h "^RESULT decode_splits\|^RESULT decode_batch" $C/splits*.log | sed -E 's/RESULT decode_(splits|batch) cache=([a-z0-9]+) v=([0-9]+) B=([0-9]+) .* nkv=([0-9]+) (mult=[0-9.]+ )?splits=([0-9]+).* us=([0-9.]+) tbps=([0-9.]+)/\1 \2 v\3 B\4 n\5 \6s\7 \8us \9/'
grep -h "^RESULT copy" $C/*.log | head -3
