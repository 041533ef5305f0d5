#!/usr/bin/env bash
# one device call: mbar_wait with and without the suspend-time hint, the same binaries otherwise,
# timed in turn in the same call (prefill from 34, backward from 8), then the hint's SASS counts
set -u
O=${OUT:-/tmp/out}; W=/tmp/w; mkdir -p $W
gunzip -c build/carry/bench_cuda.gz > /tmp/b0; gunzip -c build/carry/bench_cuda_hint.gz > /tmp/b1; chmod +x /tmp/b0 /tmp/b1
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
t check-hint; timeout 60 /tmp/b1 --check --tiny > $W/check-hint.log 2>&1; echo "rc=$?" >> $O/steps.txt; tail -1 $W/check-hint.log >> $O/steps.txt
# one round each; the order flipped between the two kinds (b0 = without the hint, b1 = with it)
for kb in "prefill b0" "prefill b1" "backward b1" "backward b0"; do
  set -- $kb; k=$1; b=$2; from=34; [ $k = backward ] && from=8
  t "$k $b"; timeout 90 /tmp/$b --time --only $k --from $from > $W/time-$k-$b.log 2>&1; echo "rc=$?" >> $O/steps.txt
done
t ncu-source
timeout 60 ncu --section SourceCounters -k regex:prefill -o $W/hint -f /tmp/b1 --profile-shape 4,4096,32,64 --from 35 > $W/ncu-hint.run.log 2>&1
ncu --import $W/hint.ncu-rep --page source --csv --print-source sass > $W/hint.csv 2>&1
python3 bench/cuda/ncu_source.py $W/hint.csv --top 15 > $W/ncu-source-hint-fwd-d64.txt 2>&1
t done
cd $W && tar czf $O/logs.tgz *.log *.txt
cat $O/steps.txt
for k in prefill backward; do for b in b0 b1; do echo "$k $b: $(grep '^RESULT' $W/time-$k-$b.log | awk '{for(i=2;i<=NF;i++) if ($i ~ /^(v|d|causal|N|dtype|tflops)=/) printf "%s ", $i; printf "| "}' | head -c 1800)"; done; done
grep -E "instructions executed|SYNCS|BRA " $W/ncu-source-hint-fwd-d64.txt | head -12
