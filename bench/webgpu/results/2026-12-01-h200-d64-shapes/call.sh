#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu, packed by pack.sh with ORT=0 and XZ="--x86
# --lzma2=preset=9e"): prefill version 20 beside two shapes that share each copied tile of K and V
# among more rows per key at d = 64 (2026-12-01-h200-ahead: the copies cost 15 % there): tiles of 16
# keys (BK=16), and 256 rows a workgroup with tiles of 16 keys (NSG=8 BK=16), each checked against
# float64, then timed in two rounds in turned orders at N = 16384 and 4096 (bench.js --ablation
# --variants-only --ablation-rounds 2); PyTorch's float16 SDPA on the same shapes (sdpa.py now takes
# the ablation's shapes when bench.js ran no plan). Bounds checks on. One archive ($OUT/d64.tar.gz).
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/d64
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 ORT_F16=0 SDPA_TIMEOUT=70 BENCH_TIMEOUT=300 \
  BENCH_ARGS="--prefill-only --only prefill-v20 --new prefill-v20 --count 1 --check-only --ablation --ablation-n 16384,4096 --ablation-rounds 2 --variants-only --ablation-only prefill-v20 --variants BK=16;NSG=8+BK=16" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel prefill-v20\|exit\|all checks\|FAIL\|WRONG" "$OUT"/*.log | cut -c1-200
grep -h "^| prefill-v20\|^ablation: \|^ablation shape" "$OUT/bench.log" | cut -c1-300
grep -h "flash f16" "$OUT/sdpa.log" | cut -c1-200
tar czf $R/d64.tar.gz -C $OUT .
