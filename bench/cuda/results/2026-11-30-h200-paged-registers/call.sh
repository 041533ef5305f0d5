#!/usr/bin/env bash
# One device call (repository root): the paged float16 decode with its producer's page array in
# registers (the box loop unrolled; before, ptxas kept the array in a 16-byte stack frame). Build,
# check (tiny and the e4m3 cache's), then time: the
# size sweep twice, the decode_fp8 rows (pages of 16 and 256, both layouts, beside contiguous) and
# the decode_paged rows (each paged version beside its contiguous sibling, pages shuffled and in
# order); last the quick checks (every paged shape among them) in the time left. Results: $OUT/cuda.tar.gz, $OUT/steps.txt.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=build/cuda/cuda/bench_cuda
t build
PATH=/usr/local/cuda/bin:$PATH timeout 300 make CUDA=1 NO_GUI=1 BUILD=build/cuda -j16 cuda-bench > $C/build.log 2>&1
if [ -x $B ]; then
  PATH=/usr/local/cuda/bin:$PATH cuobjdump -res-usage $B 2>/dev/null | grep -A1 "decode_tma" | grep -o "STACK:[0-9]*" | sort | uniq -c > $C/stack.txt
  gzip $C/build.log
  t check-tiny; timeout 100 $B --check --tiny > $C/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-tiny.log >> $O/steps.txt; grep "FAIL" $C/check-tiny.log | head -20 >> $O/steps.txt
  t check-fp8; timeout 100 $B --check --only decode_fp8 > $C/check-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-fp8.log | head -20 >> $O/steps.txt
  t size-1; timeout 60 $B --time --only decode_size > $C/size1.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t fp8; timeout 120 $B --time --quick --only decode_fp8 > $C/time_fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t paged; timeout 150 $B --time --only decode_paged > $C/time_paged.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t size-2; timeout 60 $B --time --only decode_size > $C/size2.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t check-quick; timeout 140 $B --check --quick > $C/check-quick.log 2>&1; echo "rc=$?" >> $O/steps.txt
  grep -c "^ok" $C/check-quick.log >> $O/steps.txt; grep "FAIL" $C/check-quick.log | head -20 >> $O/steps.txt
fi
t done
tar czf $O/cuda.tar.gz -C $C .
cat $C/stack.txt
for f in size1 size2; do echo "# $f"; grep "^RESULT decode_size" $C/$f.log | sed 's/RESULT decode_size //; s/ B=8 Hq=32 Hkv=8 d=128//; s/bytes=[0-9]* //'; done
grep "^RESULT decode_fp8_paged" $C/time_fp8.log | sed 's/RESULT decode_fp8_paged //'
grep "^RESULT decode_paged" $C/time_paged.log | sed -E 's/.* v=([0-9]+) .* page=([0-9]+) layout=([A-Z]+)( pages=ordered)? .* ratio=([0-9.]+).*/v\1 P\2 \3\4 \5/' | head -40
cat $O/steps.txt
