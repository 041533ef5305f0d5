#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu, packed by pack.sh with ORT=0 and XZ="--x86
# --lzma2=preset=9e"): prefill version 20 as committed (version 19 with FASTC under the causal mask)
# against float64 (bench.js --new); version 19 and its FASTC form again in three rounds in turned
# orders at N = 16384 and 4096 (the A/B of 2026-12-01-h200-v20 repeated); then the full plan's prefill
# rows of versions 5, 19 and 20 beside PyTorch's float16 SDPA on the same shapes, bounds checks on as
# in a browser. One archive ($OUT/v20f.tar.gz).
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/v20f
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 ORT_F16=0 SDPA_TIMEOUT=70 BENCH_TIMEOUT=430 \
  BENCH_ARGS="--prefill-only --only prefill-v5,prefill-v19,prefill-v20 --new prefill-v20 --count 2 --ablation --ablation-n 16384,4096 --ablation-rounds 3 --variants-only --ablation-only prefill-v19 --variants FASTC" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel prefill-v20\|exit\|all checks\|FAIL\|WRONG" "$OUT"/*.log | cut -c1-200
grep -h "^| prefill-v19" "$OUT/bench.log" | head -4 | cut -c1-260
grep -h "^| prefill-v20 \|^| prefill-v19 " "$OUT/bench.log" | tail -24 | cut -c1-160
tar czf $R/v20f.tar.gz -C $OUT .
