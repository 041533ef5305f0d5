#!/usr/bin/env bash
# One device call on a lent H200 (repository root; carry .gl .wgpu, packed by pack.sh with ORT=1
# and XZ="--x86 --lzma2=preset=9e"; bench/cuda/results and bench/webgpu/results moved out of the
# tree for the call so that the tree and the pack fit the device tool's 64 MiB, and put back
# after): bench.js's whole full plan (every WGSL kernel, checked against float64, timed with bounds
# checks on as in a browser), ONNX Runtime Web's float16 attention on the prefill rows, and
# PyTorch's SDPA on the same shapes, in one call. Everything is written straight under $OUT/full,
# so a part that runs out keeps what it wrote.
set -u
export OUT=${OUT:-/tmp/out}/full
mkdir -p "$OUT"
start=$(date +%s)
PLAN=full ORT=0 ORT_F16=1 SDPA=1 BENCH_TIMEOUT=380 ORT_F16_TIMEOUT=110 SDPA_TIMEOUT=60 \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $? after $(( $(date +%s) - start )) s" >> "$OUT/run.log"
grep -h "new kernel\|exit\|all checks\|FAIL\|^probe:\|^checks" "$OUT"/*.log | cut -c1-220 | head -50
grep -h "^\[" "$OUT/bench.log" | tail -2
tail -2 "$OUT/run.log"
