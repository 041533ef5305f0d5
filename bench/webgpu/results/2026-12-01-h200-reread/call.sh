#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu, packed by pack.sh with ORT=0 and XZ="--x86
# --lzma2=preset=9e"): prefill version 20 beside its REREAD form (no scores kept in registers: the
# softmax reads each score from workgroup memory twice, full tiles as FASTS reads them), a test of the
# reading that registers a lane hold limit d = 64 (2026-12-01-h200-ahead, -d64-shapes, -d64-bk32: every
# form that held more was slower); checked against float64, then timed in three rounds in turned
# orders at N = 16384 and 4096 (bench.js --ablation --variants-only --ablation-rounds 3); PyTorch's
# float16 SDPA on the same shapes. Bounds checks on. One archive ($OUT/reread.tar.gz).
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/reread
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 ORT_F16=0 SDPA_TIMEOUT=70 BENCH_TIMEOUT=300 \
  BENCH_ARGS="--prefill-only --only prefill-v20 --new prefill-v20 --count 1 --check-only --ablation --ablation-n 16384,4096 --ablation-rounds 3 --variants-only --ablation-only prefill-v20 --variants REREAD" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel prefill-v20\|exit\|all checks\|FAIL\|WRONG" "$OUT"/*.log | cut -c1-200
grep -h "^| prefill-v20\|^ablation: " "$OUT/bench.log" | cut -c1-300
tar czf $R/reread.tar.gz -C $OUT .
