# The driver's account again, now with each workgroup's size read from the SPIR-V and summary.py's
# warps and workgroups an SM: the new kernels checked, every kernel on a random problem, prefill
# version 20's variants and the float32 version 11's TY = 8 at N = 4096, decode version 9's forms
# at 32768 keys.
set -u
R=${OUT:-/tmp/out}
export OUT=/tmp/vks2
mkdir -p $OUT
VKSTATS=1 PLAN=full ORT=0 SDPA=0 ORT_F16=0 BENCH_TIMEOUT=480 \
  BENCH_ARGS="--count 1 --check-only --new prefill-v11,prefill-v19,prefill-v20,decode-v10-f16 --ablation --ablation-n 4096 --variants-only --ablation-only prefill-v20,prefill-v11 --variants QWG;REREAD;RB=1;BK=32;NSG=8+BK=16;TY=8 --decode-ablation --decode-ablation-n 32768" \
  bash bench/webgpu/run-device.sh > "$OUT/run.log" 2>&1
echo "run-device.sh exit $?" >> "$OUT/run.log"
grep -h "new kernel\|exit\|all checks\|FAIL" "$OUT"/*.log | cut -c1-200
grep "sgmat8\|fwd_v4\|decode_v9.wgsl split subgroups \[B=8 D=128 F16 LOGB" "$OUT/vkstats.md" | sed 's/ SGS=32 SK=16 SM=16 SN=16//' | cut -c1-260
tar czf $R/vks2.tar.gz -C $OUT .
