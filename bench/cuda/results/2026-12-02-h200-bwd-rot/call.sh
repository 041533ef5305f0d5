#!/usr/bin/env bash
# one device call: backward version 13 (each block's walk begun at its own share of the Q tiles,
# no mask) checked (tiny and quick sets), then versions 12 and 13 timed in turn, one version a run,
# three rounds with the order flipped each round, PyTorch's SDPA backward after them
set -u
O=${OUT:-/tmp/out}; W=/tmp/w; mkdir -p $W
B=/tmp/bc; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,memory.total --format=csv; uptime;
  python3 -c "import torch; print('torch', torch.__version__)"; } > $W/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $W/steps.txt; }
t check-tiny; timeout 60 $B --check --tiny > $W/check-tiny.log 2>&1; echo "rc=$?" >> $W/steps.txt; tail -1 $W/check-tiny.log >> $W/steps.txt
t check-quick; timeout 150 $B --check --quick > $W/check-quick.log 2>&1; echo "rc=$?" >> $W/steps.txt; tail -1 $W/check-quick.log >> $W/steps.txt
for r in 1 2 3; do
  order="12 13"; [ $((r % 2)) = 0 ] && order="13 12"
  for v in $order; do
    t "round $r v$v"; timeout 60 $B --time --only backward --from $v --to $v > $W/time-r$r-v$v.log 2>&1; echo "rc=$?" >> $W/steps.txt
  done
done
t sdpa; timeout 90 python3 bench/cuda/sdpa_bench.py --only backward > $W/sdpa-r3.log 2>&1; echo "rc=$?" >> $W/steps.txt
t done
cd $W && tar czf $O/logs.tgz *.log *.txt
cat $W/steps.txt
grep -c '^ok' $W/check-quick.log; grep '^FAIL' $W/check-*.log | head; grep '^ok *backward v13' $W/check-quick.log | cut -c1-110
grep -h '^RESULT backward' $W/time-r*.log | awk '{for(i=2;i<=NF;i++){split($i,a,"="); f[a[1]]=a[2]}; printf "%s %s d=%s c=%s N=%s %s\n", f["v"], f["dtype"], f["d"], f["causal"], f["N"], f["tflops"]}' | sort -k2,2 -k3,3 -k4,4 -k5,5 -k1,1
grep -h 'cudnn' $W/sdpa-r3.log | cut -c1-120
