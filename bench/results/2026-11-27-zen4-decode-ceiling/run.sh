#!/bin/bash
# the float32 decode's one-thread ceiling on this Zen 4 (see NOTE.txt)
set -u
O=bench/results/2026-11-27-zen4-decode-ceiling
B="--no-prefill --no-baseline --no-backward"
{ date -u; uptime; grep -m1 "model name" /proc/cpuinfo; git rev-parse --short HEAD; } > $O/machine.txt
for r in 1 2 3 4; do
  echo "== round $r $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  ./build/flashstep bench $B --decode-n 32768,131072 --threads 1,2 2>&1 | grep -E "^decode|^# (read|probe)"
done > $O/run1-threads.txt
for t in 1 2; do
  echo "== threads $t $(date -u +%T)"
  ./build/flashstep bench $B --decode-n 256,512,1024,4096 --decode-heads 4/1 --threads $t 2>&1 | grep -E "^decode"
done > $O/run2-in-cache.txt
for r in 1 2 3; do
  for b in build/flashstep build/dfar0/flashstep build/dv-f16/flashstep build/dv-f64/flashstep build/dv-k/flashstep build/dv-v/flashstep build/dv-h3/flashstep; do
    echo "$r $b $(./$b bench $B --decode-n 32768 --threads 1 2>&1 | grep ^decode)"
  done
done > $O/run3-variants-1t.txt
