#!/usr/bin/env bash
# One device call (repository root): bench_cuda built with FS_DECODE_NOSTEP (the compute warps
# wait for each stage and give it back without their step: the ring of copies alone, its output
# wrong and not checked), carried as build/carry/bench_cuda_nostep.gz (the tree's commit, only
# hopper_decode.cu compiled with the flag), timing the paged decodes beside their contiguous
# siblings twice: where float16 version 20's page kernel and version 18 stand when only their
# loads are left.
# Results: $OUT/cuda.tar.gz, $OUT/steps.txt.
set -u
O=${OUT:-/tmp/out}; C=/tmp/c; mkdir -p $C
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; nproc; } > $C/machine.txt 2>&1
B=/tmp/bench_cuda_nostep
gunzip -c build/carry/bench_cuda_nostep.gz > $B; chmod +x $B
for r in 1 2; do
  t paged-ring-$r; timeout 150 $B --time --only decode_paged > $C/time_paged_ring$r.log 2>&1; echo "rc=$?" >> $O/steps.txt
done
t done
tar czf $O/cuda.tar.gz -C $C .
cat $O/steps.txt
for r in 1 2; do echo "run $r"; grep "^RESULT decode_paged" $C/time_paged_ring$r.log | grep -v "pages=ordered" | sed -E 's/.* v=([0-9]+) .* page=([0-9]+) layout=([A-Z]+)( pages=ordered)? us=([0-9.]+) .* contiguous_us=([0-9.]+) .* ratio=([0-9.]+).*/v\1 P\2 \3\4 \5 \6 \7/'; done
