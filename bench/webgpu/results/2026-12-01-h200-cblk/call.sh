#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu): prefill version 16's CBLK form (K's and V's
# staged tiles as blocks of 16 keys × 16 columns, rows padded to 24 halves, so that the copies'
# stores also take a constant offset) beside version 16, bounds checks on, then off. One archive.
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/cblk
mkdir -p $OUT
PLAN=full ORT=0 SDPA=0 BENCH_TIMEOUT=200 NOROBUST_TIMEOUT=150 \
  BENCH_ARGS="--ablation --check-only --only prefill-v16 --count 1 --variants CBLK;CBLK+RB=1+NSG=16;RB=1+NSG=16" \
  NOROBUST_ARGS="--ablation --check-only --only prefill-v16 --count 1 --variants CBLK" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "^| prefill\|WRONG\|new kernel prefill-v16\|all checks\|exit" "$OUT"/bench*.log "$OUT/run.log" | cut -c1-200
tar czf $R/cblk.tar.gz -C $OUT .
