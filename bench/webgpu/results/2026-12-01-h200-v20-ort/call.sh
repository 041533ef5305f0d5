#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu, packed by pack.sh with XZ="--x86 --lzma2=preset=9e",
# ONNX Runtime Web included; bench/cuda/results moved out of the tree for the call, so that the tree
# and the pack fit the device tool's 64 MiB): prefill version 20 against float64 (bench.js --new),
# then the full plan's prefill rows of versions 5 and 20 beside ONNX Runtime Web's float16 attention
# and PyTorch's float16 SDPA on the same shapes, bounds checks on as in a browser: the README's
# float16 table in one call. One archive ($OUT/v20ort.tar.gz).
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/v20ort
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 ORT_F16=1 SDPA_TIMEOUT=70 ORT_F16_TIMEOUT=130 BENCH_TIMEOUT=300 \
  BENCH_ARGS="--prefill-only --only prefill-v5,prefill-v20 --new prefill-v20 --count 2" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel prefill-v20\|exit\|all checks\|FAIL" "$OUT"/*.log | cut -c1-200
grep -h "^| prefill-v20 \|^| prefill-v5 " "$OUT/bench.log" | head -40 | cut -c1-160
tar czf $R/v20ort.tar.gz -C $OUT .
