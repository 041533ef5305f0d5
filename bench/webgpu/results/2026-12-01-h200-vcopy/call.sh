#!/usr/bin/env bash
# One device call (repository root; carry .gl .wgpu): prefill version 16's VCOPY form (K's and V's
# tiles copied into workgroup memory by plain 16-byte loads from storage, which Dawn clamps, instead
# of subgroup matrix loads, which Dawn guards with a branch) beside version 16, bounds checks on,
# then off. One archive.
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/vcopy
mkdir -p $OUT
PLAN=full ORT=0 SDPA=0 BENCH_TIMEOUT=200 NOROBUST_TIMEOUT=150 \
  BENCH_ARGS="--ablation --check-only --only prefill-v16 --count 1 --variants VCOPY;VCOPY+RB=1+NSG=16;VCOPY+RB=2+NSG=4" \
  NOROBUST_ARGS="--ablation --check-only --only prefill-v16 --count 1 --variants VCOPY" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "^| prefill\|WRONG\|new kernel prefill-v16\|all checks\|exit\|^ablation: " "$OUT"/bench*.log "$OUT/run.log" | cut -c1-200
tar czf $R/vcopy.tar.gz -C $OUT .
