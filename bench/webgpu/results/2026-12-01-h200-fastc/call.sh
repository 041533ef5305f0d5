#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu, packed by pack.sh with ORT=0): prefill version 19
# taken apart at N = 16384 (bench.js --ablation --check-only: its ablation forms and the variant FASTC,
# the causal diagonal's full-width tiles scored with one comparison instead of score()'s tests),
# bounds checks on as in a browser. One archive ($OUT/fastc.tar.gz).
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/fastc
mkdir -p $OUT
PLAN=full ORT=0 SDPA=0 ORT_F16=0 BENCH_TIMEOUT=300 \
  BENCH_ARGS="--prefill-only --only prefill-v19 --new prefill-v19 --count 1 --check-only --ablation --ablation-n 16384 --ablation-only prefill-v19 --variants FASTC" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "exit\|all checks\|FAIL\|WRONG" "$OUT"/*.log | cut -c1-200
grep -h "^| prefill\|^ablation" "$OUT/bench.log" | cut -c1-200
tar czf $R/fastc.tar.gz -C $OUT .
