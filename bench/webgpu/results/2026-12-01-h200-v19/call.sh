#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu): prefill version 19 as it stands (version 17
# with, under a causal mask or a window, its tile loop over the keys the mask can show, RANGE, and
# the causal rows' blocks dispatched longest first, LPT) against float64 (bench.js --new), then taken
# apart at N = 16384 (bench.js --ablation: its ablation forms, NOSTORE among them, and the shapes RB=2
# NSG=8 and RB=1 NSG=8), then the full plan's prefill rows of versions 5, 17 and 19 beside PyTorch's
# float16 SDPA on the same shapes, bounds checks on as in a browser. One archive ($OUT/v19.tar.gz).
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/v19
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 ORT_F16=0 SDPA_TIMEOUT=70 BENCH_TIMEOUT=430 \
  BENCH_ARGS="--prefill-only --only prefill-v5,prefill-v17,prefill-v19 --new prefill-v19 --count 2 --ablation --ablation-n 16384 --ablation-only prefill-v19 --variants RB=2+NSG=8;RB=1+NSG=8" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel prefill-v19\|exit\|all checks\|FAIL\|WRONG" "$OUT"/*.log | cut -c1-200
grep -h "^| prefill\|^ablation" "$OUT/bench.log" | cut -c1-200
tar czf $R/v19.tar.gz -C $OUT .
