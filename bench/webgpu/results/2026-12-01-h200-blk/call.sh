#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu, packed with ORT=0 XZ=-9e): prefill version 14's
# BLK form (its workgroup arrays as arrays of 16-row blocks, so that every subgroup matrix load and
# store has a constant offset into a fixed-size block) beside its usual form and shapes, with Dawn's
# bounds checks on (as in a browser), then the same forms with them off.
set -u
export OUT=${OUT:-/tmp/out}
PLAN=full ORT=0 SDPA=0 BENCH_TIMEOUT=240 NOROBUST_TIMEOUT=200 \
  BENCH_ARGS="--ablation --check-only --only prefill-v14 --count 1 --variants BLK;RB=2+NSG=8;BLK+RB=2+NSG=8;BLK+RB=2+NSG=4;BLK+NSG=8;BLK+NSG=8+BK=32;BLK+NSG=16" \
  NOROBUST_ARGS="--ablation --check-only --only prefill-v14 --count 1 --variants BLK;RB=2+NSG=8;BLK+RB=2+NSG=8;BLK+NSG=8" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "^| prefill\|^ablation (\|WRONG\|new kernel\|all checks\|exit" "$OUT"/bench*.log "$OUT/run.log" | cut -c1-200
