#!/usr/bin/env bash
# one device call: the SASS of our d = 64 forward and d = 128 backward beside cuDNN's, opcode by
# opcode (ncu's source page summed by bench/cuda/ncu_source.py)
set -u
O=${OUT:-/tmp/out}; W=/tmp/w; mkdir -p $W
B=/tmp/bc; gunzip -c build/carry/bench_cuda.gz > $B; chmod +x $B
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; uptime; ncu --version | tail -1; } > $O/machine.txt 2>&1
t() { echo "== $* ($(date -u +%T))" >> $O/steps.txt; }
prof() {  # name, kernel regex, command...
  local n=$1 k=$2; shift 2
  t $n
  timeout 120 ncu --section SourceCounters -k "$k" -o $W/$n -f "$@" > $W/$n.run.log 2>&1; echo "ncu rc=$?" >> $O/steps.txt
  ncu --import $W/$n.ncu-rep --page source --csv --print-source sass > $W/$n.csv 2>&1
  python3 bench/cuda/ncu_source.py $W/$n.csv --top 25 > $W/$n.txt 2>&1; echo "summary rc=$?" >> $O/steps.txt
}
prof ours-fwd-d64 regex:prefill $B --profile-shape 4,4096,32,64 --from 34
prof cudnn-fwd-d64 'regex:(?i)fprop' python3 bench/cuda/sdpa_profile.py 4,4096,32,64 --backends cudnn
prof ours-bwd-d128 regex:bwd_wgmma $B --profile-shape 1,16384,16,128 --only backward --from 11
prof cudnn-bwd-d128 'regex:(?i)bprop' python3 bench/cuda/sdpa_profile.py 1,16384,16,128 --backends cudnn --backward
t done
cd $W && tar czf $O/source.tgz *.txt *.run.log
cat $O/steps.txt; for f in $W/*.txt; do echo "## $f"; grep -E "^void|^cudnn|instructions executed" $f | cut -c1-160 | head -12; done
