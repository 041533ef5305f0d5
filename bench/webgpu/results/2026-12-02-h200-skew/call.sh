# Prefill version 20 with the softmax's reads of S and writes of P skewed across the banks (SKEW):
# with one lane a row, rows 8 apart share a bank, so every read was a 4-way conflict. Three rounds
# at N = 4096 and 16384 beside version 20 itself, PyTorch's SDPA on the same shapes.
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/skew
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 ORT_F16=0 SDPA_TIMEOUT=70 BENCH_TIMEOUT=330 \
  BENCH_ARGS="--prefill-only --count 1 --check-only --new prefill-v20 --ablation --ablation-n 4096,16384 --ablation-rounds 3 --variants-only --ablation-only prefill-v20 --variants SKEW" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel\|exit\|all checks\|FAIL\|WRONG" "$OUT"/*.log | cut -c1-200
grep -h "^| prefill\|^ablation: \|^ablation shape" "$OUT/bench.log" | cut -c1-300
grep -h "flash f16" "$OUT/sdpa.log" | cut -c1-160
tar czf $R/skew.tar.gz -C $OUT .
