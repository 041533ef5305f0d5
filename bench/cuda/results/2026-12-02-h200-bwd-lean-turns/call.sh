#!/usr/bin/env bash
# one device call: backward versions 11 and 12 timed in turn, one version a run (so neither is
# favoured by coming first while the GPU is cool), four rounds with the order flipped each round,
# PyTorch's SDPA backward between them; every log comes back in one archive
set -u
O=${OUT:-/tmp/out}; W=/tmp/w; mkdir -p $W
B=/tmp/bc; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit,memory.total --format=csv; uptime;
  python3 -c "import torch; print('torch', torch.__version__)"; } > $W/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $W/steps.txt; }
t check-tiny; timeout 60 $B --check --tiny --only backward > $W/check-tiny.log 2>&1; echo "rc=$?" >> $W/steps.txt; tail -1 $W/check-tiny.log >> $W/steps.txt
for r in 1 2 3 4; do
  order="11 12"; [ $((r % 2)) = 0 ] && order="12 11"
  for v in $order; do
    t "round $r v$v"; timeout 60 $B --time --only backward --from $v --to $v > $W/time-r$r-v$v.log 2>&1; echo "rc=$?" >> $W/steps.txt
  done
  if [ $r = 2 ] || [ $r = 4 ]; then
    t "sdpa after round $r"; timeout 90 python3 bench/cuda/sdpa_bench.py --only backward > $W/sdpa-r$r.log 2>&1; echo "rc=$?" >> $W/steps.txt
  fi
done
t done
cd $W && tar czf $O/logs.tgz *.log *.txt
cat $W/steps.txt
grep -h '^RESULT' $W/time-r*.log | awk '{k=$4" "$5" "$6" "$7; for(i=2;i<=NF;i++){split($i,a,"="); f[a[1]]=a[2]}; printf "%s %s d=%s c=%s N=%s %s\n", f["v"], f["dtype"], f["d"], f["causal"], f["N"], f["tflops"]}' | sort | awk '{key=$1" "$2" "$3" "$4" "$5; v[key]=v[key]" "$6} END {for (k in v) print k ":" v[k]}' | sort -k3,3 -k2,2 -k4,4 -k5,5 -k1,1
grep -h -i "backward" $W/sdpa-r*.log | head -30
