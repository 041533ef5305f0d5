#!/usr/bin/env bash
# One device call (repository root): e4m3-cache decode version 17 (version 11 with tiles of 128
# keys read as 64 rows of two keys, two boxes of half rows a tensor: the float16 ring's pattern),
# built here and carried:
#   build/carry/bench_cuda.gz          the tree's bench_cuda
#   build/carry/bench_cuda_nostep.gz   the same with hopper_decode.cu and bench_cuda.cu built
#                                      with -DFS_DECODE_NOSTEP (the rings alone)
# Checks first (tiny, the e4m3-cache checks), then the timings (decode_size with and without the
# step, version 17 beside 11 and float16 15; the e4m3-cache table at 32768 keys), then
# compute-sanitizer on the e4m3-cache tiny checks.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/bench_cuda; N=/tmp/bench_cuda_nostep
gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
gunzip -c build/carry/bench_cuda_nostep.gz > $N; chmod +x $N
t regs; cuobjdump --dump-resource-usage $B 2>/dev/null | grep -A1 decode_kv8_tma | grep -o 'Function [^:]*\|REG:[0-9]*' | paste - - | cu++filt 2>/dev/null | head -60 > $C/regs.txt
[ -s $C/regs.txt ] || cuobjdump --dump-resource-usage $B 2>/dev/null | grep -A1 decode_kv8_tma | head -80 > $C/regs.txt
t check-tiny; timeout 60 $B --check --tiny > $C/check-tiny.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $C/check-tiny.log >> $O/steps.txt; grep "FAIL" $C/check-tiny.log | head -20 >> $O/steps.txt
t check-fp8; timeout 120 $B --check --only decode_fp8 > $C/check-fp8.log 2>&1; echo "rc=$?" >> $O/steps.txt
grep -c "^ok" $C/check-fp8.log >> $O/steps.txt; grep "FAIL" $C/check-fp8.log | head -20 >> $O/steps.txt
grep "v17" $C/check-fp8.log | head -12 >> $O/steps.txt
if ! grep -q FAIL $C/check-tiny.log $C/check-fp8.log; then
  t size1; timeout 120 $B --time --only decode_size > $C/size1.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t size-nostep; timeout 120 $N --time --only decode_size > $C/size-nostep.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t size2; timeout 120 $B --time --only decode_size > $C/size2.log 2>&1; echo "rc=$?" >> $O/steps.txt
  t table; timeout 150 $B --time --quick --only decode_fp8 > $C/table.log 2>&1; echo "rc=$?" >> $O/steps.txt
fi
t memcheck; timeout 90 compute-sanitizer --tool memcheck $B --check --tiny --only decode_fp8 > $C/san_memcheck.log 2>&1; echo "rc=$?" >> $O/steps.txt
tail -2 $C/san_memcheck.log >> $O/steps.txt
t racecheck; timeout 90 compute-sanitizer --tool racecheck $B --check --tiny --only decode_fp8 > $C/san_racecheck.log 2>&1; echo "rc=$?" >> $O/steps.txt
tail -2 $C/san_racecheck.log >> $O/steps.txt
t done
for f in $C/*.log; do [ $(stat -c %s $f) -gt 2000000 ] && gzip $f; done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
grep -h "^RESULT decode_size" $C/size*.log | sed -E 's/RESULT decode_size cache=([a-z0-9]+) paged=([01]) v=([0-9]+) .* nkv=([0-9]+) bytes=[0-9]+ us=([0-9.]+) tbps=([0-9.]+)/\1 p\2 v\3 n\4 \5us \6/' | paste - - - - - 
grep -h "^RESULT copy\|^RESULT read" $C/size1.log | head -12
