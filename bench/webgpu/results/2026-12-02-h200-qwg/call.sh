# Fewer registers at d = 64: prefill version 20 with Q staged in workgroup memory (QWG), with no
# scores held (REREAD, now reading a fast tile's scores again the fast way), both; the float32
# versions 5 and 11 with fewer row groups a workgroup (TY=8, TY=4). First through the layer
# (vkstats/: each form's registers, N = 4096), then timed without it at N = 4096 and 16384 in two
# rounds, with PyTorch's SDPA on the same shapes.
set -u
R=${OUT:-/tmp/out}
V="QWG;REREAD;QWG+REREAD;TY=8;TY=4"
export OUT=/tmp/qwg-stats
mkdir -p $OUT
VKSTATS=1 PLAN=full ORT=0 SDPA=0 ORT_F16=0 BENCH_TIMEOUT=200 \
  BENCH_ARGS="--prefill-only --count 1 --check-only --new prefill-v20 --ablation --ablation-n 4096 --variants-only --ablation-only prefill-v20,prefill-v11,prefill-v5 --variants $V" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel\|exit\|all checks\|FAIL" "$OUT"/*.log | cut -c1-200
grep "sgmat8\|fwd_v4" "$OUT/vkstats.md" | sed 's/ SGS=32 SK=16 SM=16 SN=16//' | cut -c1-220
tar czf $R/qwg-stats.tar.gz -C $OUT .
export OUT=/tmp/qwg
mkdir -p $OUT
PLAN=full ORT=0 SDPA=1 ORT_F16=0 SDPA_TIMEOUT=70 BENCH_TIMEOUT=330 \
  BENCH_ARGS="--prefill-only --count 1 --check-only --new prefill-v20 --ablation --ablation-n 4096,16384 --ablation-rounds 2 --variants-only --ablation-only prefill-v20,prefill-v11,prefill-v5 --variants $V" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel\|exit\|all checks\|FAIL" "$OUT"/*.log | cut -c1-200
grep -h "^| prefill\|^ablation: \|^ablation shape" "$OUT/bench.log" | cut -c1-300
grep -h "flash f16" "$OUT/sdpa.log" | cut -c1-200
tar czf $R/qwg.tar.gz -C $OUT .
