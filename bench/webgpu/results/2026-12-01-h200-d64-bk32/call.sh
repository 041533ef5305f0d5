#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu, packed by pack.sh with ORT=0 and XZ="--x86
# --lzma2=preset=9e"): prefill version 20 beside 32-key tiles at d = 64, where its tiles are 16 keys
# (fsgpu.js's bks, from version 10) and 32 fit the 48 KiB (38 KiB with 128 rows): BK=32 (two row
# blocks of four subgroups, a lane a row, 32 scores a lane) and BK=32 RB=1 NSG=8 (two lanes a row,
# 16 scores a lane), each checked against float64, then timed in two rounds in turned orders at
# N = 16384 and 4096 (bench.js --ablation --variants-only --ablation-rounds 2); PyTorch's float16 SDPA
# on the same shapes. At d = 128 the variants do not fit (the table's error). Bounds checks on.
# One archive ($OUT/bk32.tar.gz).
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/bk32
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 ORT_F16=0 SDPA_TIMEOUT=70 BENCH_TIMEOUT=300 \
  BENCH_ARGS="--prefill-only --only prefill-v20 --new prefill-v20 --count 1 --check-only --ablation --ablation-n 16384,4096 --ablation-rounds 2 --variants-only --ablation-only prefill-v20 --variants BK=32;BK=32+RB=1+NSG=8" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel prefill-v20\|exit\|all checks\|FAIL\|WRONG" "$OUT"/*.log | cut -c1-200
grep -h "^| prefill-v20\|^ablation: " "$OUT/bench.log" | cut -c1-300
tar czf $R/bk32.tar.gz -C $OUT .
