#!/usr/bin/env bash
# One device call on a lent H200 (repository root; carry .gl .wgpu, packed by pack.sh with ORT=1
# and XZ="--x86 --lzma2=preset=9e"; bench/cuda/results and bench/webgpu/results moved out of the
# tree for the call so that the tree and the pack fit the device tool's 64 MiB, and put back
# after): bench.js's whole full plan (every WGSL kernel, checked against float64, timed with bounds
# checks on as in a browser), ONNX Runtime Web's float16 attention on the prefill rows, and
# PyTorch's SDPA on the same shapes, in one call. The limits add up to 587 s of the call's 600.
# The records are written under $OUT/full as they come (a part that runs out keeps what it wrote);
# the device tool brings back at most 8 files, so the ONNX Runtime and PyTorch logs and JSON and
# run.log go into one archive, rest.tar.gz, at the end.
set -u
export OUT=${OUT:-/tmp/out}/full
mkdir -p "$OUT"
start=$(date +%s)
PLAN=full ORT=0 ORT_F16=1 SDPA=1 BENCH_TIMEOUT=455 ORT_F16_TIMEOUT=75 SDPA_TIMEOUT=55 \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $? after $(( $(date +%s) - start )) s" >> "$OUT/run.log"
(cd "$OUT" && tar czf rest.tar.gz ort-f16.json ort-f16.log sdpa.json sdpa.log run.log 2>/dev/null && rm -f ort-f16.json ort-f16.log sdpa.json sdpa.log)
grep -h "exit\|all checks\|FAIL\|^probe:\|^checks\|^plan \|not offered" "$OUT"/*.log | cut -c1-220 | head -30
tail -2 "$OUT/run.log"
