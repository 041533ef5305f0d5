#!/usr/bin/env bash
# one device call: is version 13's gain at d = 64 (causal too, where its rotation is 0) its
# rotation or its code? Versions 12, 13 and trial 14 (13's code, the rotation a zero the compiler
# cannot see: trial.diff) timed in turn, one version a run, two rounds in opposite orders
set -u
O=${OUT:-/tmp/out}; W=/tmp/w; mkdir -p $W
B=/tmp/bc; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,memory.total --format=csv; uptime; } > $W/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $W/steps.txt; }
t check-tiny; timeout 60 $B --check --tiny > $W/check-tiny.log 2>&1; echo "rc=$?" >> $W/steps.txt; tail -1 $W/check-tiny.log >> $W/steps.txt
for r in 1 2; do
  order="12 13 14"; [ $r = 2 ] && order="14 13 12"
  for v in $order; do
    t "round $r v$v"; timeout 60 $B --time --only backward --from $v --to $v > $W/time-r$r-v$v.log 2>&1; echo "rc=$?" >> $W/steps.txt
  done
done
t done
cd $W && tar czf $O/logs.tgz *.log *.txt
cat $W/steps.txt; grep -c '^ok *backward v14' $W/check-tiny.log
grep -h '^RESULT backward' $W/time-r*.log | awk '{for(i=2;i<=NF;i++){split($i,a,"="); f[a[1]]=a[2]}; printf "%s %s d=%s c=%s N=%s %s\n", f["v"], f["dtype"], f["d"], f["causal"], f["N"], f["tflops"]}' | sort -k2,2 -k3,3 -k4,4 -k5,5 -k1,1
