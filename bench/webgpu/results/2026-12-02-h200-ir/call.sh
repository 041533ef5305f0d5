# Does NVIDIA's Vulkan driver give the machine code of a pipeline? The layer with FS_VKSTATS_IR
# (run-device.sh VKSTATS_IR=1) asks for every pipeline's internal representations while bench.js
# checks prefill version 20 and every kernel on one random problem.
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/ir
mkdir -p $OUT
VKSTATS=1 VKSTATS_IR=1 PLAN=full ORT=0 SDPA=0 ORT_F16=0 BENCH_TIMEOUT=200 \
  BENCH_ARGS="--prefill-only --count 1 --check-only --new prefill-v20,prefill-v11" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel\|exit\|all checks\|FAIL" "$OUT"/*.log | cut -c1-200
grep -o " ir [0-9]*;" "$OUT/vkstats.log" | sort | uniq -c
ls -la "$OUT/ir" | head -20; du -sh "$OUT/ir"
f=$(ls "$OUT"/ir/*.txt 2>/dev/null | head -1); [ -n "$f" ] && head -c 3000 "$f"
tar czf $R/ir.tar.gz -C $OUT .
