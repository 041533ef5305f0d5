#!/usr/bin/env bash
# One device call on a lent H100 (repository root; carry .gl .wgpu as for ../2026-12-02-h100-full,
# bench/cuda/results moved out of the tree for the call and put back after): the full plan's decode
# rows alone (every decode version, float32 and float16 storage, contiguous and paged, 4k to 128k
# keys), the rows the full call did not reach in its time, beside PyTorch's SDPA decode.
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/h100dec
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 BENCH_TIMEOUT=260 SDPA_TIMEOUT=60 \
  BENCH_ARGS="--decode-only --count 4 --new decode-v10,decode-v14-paged" bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
tar czf $R/webgpu.tar.gz -C $OUT .
grep -h "new kernel\|exit\|checks\|FAIL" "$OUT/bench.log" | cut -c1-220 | head -20
