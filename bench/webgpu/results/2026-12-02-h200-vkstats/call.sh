# The driver's own account of every kernel: bench.js through the Vulkan layer fs_vkstats.c
# (run-device.sh VKSTATS=1): the new kernels checked, every kernel on a random problem, prefill
# version 20's variants (the shapes measured slower at d = 64) and version 11 at N = 4096, decode
# version 9's forms at 32768 keys; each pipeline's statistics in vkstats.log / vkstats.md.
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/vks
mkdir -p $OUT
VKSTATS=1 VKSTATS_SPIRV=1 PLAN=full ORT=0 SDPA=0 ORT_F16=0 BENCH_TIMEOUT=480 \
  BENCH_ARGS="--count 1 --check-only --new prefill-v11,prefill-v19,prefill-v20,decode-v10-f16 --ablation --ablation-n 4096 --variants-only --ablation-only prefill-v20,prefill-v11 --variants BK=32;NSG=8+BK=16;RB=1;REREAD;UNROLL --decode-ablation --decode-ablation-n 32768" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel\|exit\|all checks\|FAIL\|device:" "$OUT"/*.log | cut -c1-200
head -c 6000 "$OUT/vkstats.md"
ls "$OUT/spirv" | wc -l
tar czf $R/vks.tar.gz -C $OUT .
