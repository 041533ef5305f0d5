#!/usr/bin/env bash
# One device call on a lent H100 (repository root; carry .gl .wgpu, packed by pack.sh with ORT=0
# and XZ="--x86 --lzma2=preset=9e"; bench/cuda/results moved out of the tree for the call so that
# the tree and the pack fit the device tool's 64 MiB, and put back after): the full plan of
# today's WGSL kernels, checked against float64 and timed with bounds checks on as in a browser,
# beside PyTorch's SDPA on the same shapes (ONNX Runtime Web left out: its WebAssembly would not
# fit beside the tree). One archive ($OUT/webgpu.tar.gz).
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/h100full
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 BENCH_TIMEOUT=400 SDPA_TIMEOUT=70 bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
tar czf $R/webgpu.tar.gz -C $OUT .
grep -h "new kernel\|exit\|all checks\|FAIL\|^probe\|copy" "$OUT/bench.log" | cut -c1-220 | head -40
grep -h "^| " "$OUT/bench.log" | cut -c1-220 | head -60
tail -15 "$OUT/sdpa.log" 2>/dev/null
