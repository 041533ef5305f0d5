#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu, packed by pack.sh with ORT=0 and XZ="--x86
# --lzma2=preset=9e"): prefill version 20 taken apart at N = 16384 and 4096 in two rounds in turned
# orders (bench.js --ablation --ablation-rounds 2): its ablation forms with the new NOCOPY (no copy of
# K or V into workgroup memory at all: what the copies cost) and the variant AHEAD (the copies' plain
# loads issued a whole tile before their stores, not during the softmax), the variant checked against
# float64 first; PyTorch's float16 SDPA on the plan's shapes in the same call. Bounds checks on as in a
# browser. One archive ($OUT/ahead.tar.gz).
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/ahead
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 ORT_F16=0 SDPA_TIMEOUT=70 BENCH_TIMEOUT=430 \
  BENCH_ARGS="--prefill-only --only prefill-v20 --new prefill-v20 --count 1 --check-only --ablation --ablation-n 16384,4096 --ablation-rounds 2 --ablation-only prefill-v20 --variants AHEAD" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel prefill-v20\|exit\|all checks\|FAIL\|WRONG" "$OUT"/*.log | cut -c1-200
grep -h "^| prefill-v20\|^| prefill-v5\|^ablation: " "$OUT/bench.log" | cut -c1-300
tar czf $R/ahead.tar.gz -C $OUT .
