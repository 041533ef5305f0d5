#!/usr/bin/env bash
# run-device.sh: one call on a lent NVIDIA machine: the WGSL kernels through Dawn and Vulkan,
# checked and timed (bench.js), ONNX Runtime Web's attention on the same adapter (ort.mjs), and
# PyTorch's SDPA on the same shapes (sdpa.py). Logs and JSON go to $OUT.
#
# The machine has no Node and no Vulkan loader and reaches no network, so the call carries them:
#   .gl/        Debian's libvulkan1 and the GL/EGL loaders as .deb files (unpacked into /)
#   .wgpu/pack.tar.xz   this machine's `node` binary and the npm packages' files that run:
#               webgpu's index.js and dist/linux-x64/dawn.node, onnxruntime-web's WebGPU bundle
# bench/webgpu/pack.sh makes .wgpu/pack.tar.xz; docs/webgpu.md gives the whole recipe.
# ORT_F16=1 adds ONNX Runtime Web in float16 on the prefill rows (ort-f16.json), for the float16 table.
#
# bench.js first checks the new kernels against float64 (its "new kernel" lines: PASS, FAIL or
# SKIP), then times their rows, then every other row; ours.json is kept after every row, so a part
# that runs out keeps what it finished. On an H200 (bench/webgpu/results/2026-12-03-h200-full-2)
# the full plan took 76 s of checks and 352 s of rows (the default BENCH_TIMEOUT, 455 s, leaves a
# little over), ONNX Runtime Web in float16 about 110 s for its 12 rows and PyTorch about 10 s:
# those three fit one 10-minute call (PLAN=full ORT=0 ORT_F16=1 ORT_F16_TIMEOUT=110), and ONNX
# Runtime Web in float32 (ORT=1, up to ORT_TIMEOUT) takes a call of its own beside a shorter
# bench.js (BENCH_ARGS="--only ...").
# Prefill versions 7 and 8 measured part by part (bench.js --ablation, docs/webgpu.md "Prefill version
# 8"), version 8 checked and timed beside 7 and 5, in about 2-3 minutes:
#   PLAN=full ORT=0 BENCH_TIMEOUT=130 SDPA_TIMEOUT=40 \
#     BENCH_ARGS="--ablation --only prefill-v7,prefill-v8 --prefill-only --count 4" bash bench/webgpu/run-device.sh
# DAWN_TOGGLES: Dawn's adapter toggles (vulkan_enable_f16_on_nvidia unless set; "" for none),
# written with every flag and the device's features into machine.txt, ours.json, bench.log and
# the first lines of NOTE.txt (with the new kernels' check lines; the rest of the note is by hand).
set -u
OUT=${OUT:-/tmp/flashstep-out}
PLAN=${PLAN:-full}
SDPA=${SDPA:-1}          # 0: skip PyTorch (its shapes do not change between our runs)
ORT=${ORT:-1}            # 0: skip ONNX Runtime Web (a sweep's call)
ORT_ARGS=${ORT_ARGS:-}   # e.g. --decode-only
ORT_F16=${ORT_F16:-0}    # 1: ONNX Runtime Web's float16 attention too (prefill rows; ort-f16.json, ort-f16.log)
ORT_F16_TIMEOUT=${ORT_F16_TIMEOUT:-90}
BENCH_ARGS=${BENCH_ARGS:---count 4}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-455}
ORT_TIMEOUT=${ORT_TIMEOUT:-100}
SDPA_TIMEOUT=${SDPA_TIMEOUT:-60}
DAWN_TOGGLES=${DAWN_TOGGLES-vulkan_enable_f16_on_nvidia}
NOROBUST_ARGS=${NOROBUST_ARGS:-}   # set: bench.js once more with Dawn's robustness off (bench-norobust.log), to see
                                   # what its bounds checks cost; the kernels must be right with them on
NOROBUST_TIMEOUT=${NOROBUST_TIMEOUT:-90}
VKSTATS=${VKSTATS:-0}    # 1: bench.js through the Vulkan layer .wgpu/vkstats (bench/webgpu/vkstats/build.sh makes it): the
                         # driver's statistics of every pipeline (registers, spills...) into vkstats.log, as a table in
                         # vkstats.md; VKSTATS_SPIRV=1 keeps each module's SPIR-V too (spirv/), VKSTATS_IR=1 the
                         # driver's internal representations of the code where it gives any (ir/). Not for timing: the
                         # layer asks the driver to keep statistics, which may change how it compiles.
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] || icd=$(ls /usr/share/vulkan/icd.d/nvidia*.json /etc/vulkan/icd.d/nvidia*.json 2>/dev/null | head -1)
export VK_DRIVER_FILES=$icd
w=$(mktemp -d)
tar -xJf .wgpu/pack.tar.xz -C "$w"
rm -rf bench/webgpu/node_modules
ln -s "$w/node_modules" bench/webgpu/node_modules
export PATH=$w:$PATH
# the GPU's clocks, power and throttle reasons every 200 ms while it runs (clocks.csv)
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
toggles=()
[ -n "$DAWN_TOGGLES" ] && toggles=(--dawn-toggles "$DAWN_TOGGLES")
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv; node --version; echo "VK_DRIVER_FILES=$icd"
  echo "Dawn: enable-dawn-features=allow_unsafe_apis${DAWN_TOGGLES:+,$DAWN_TOGGLES} disable-dawn-features=timestamp_quantization (the device's features: bench.log's dawn line)"; } | tee "$OUT/machine.txt"
# allow_unsafe_apis: list every feature Dawn has; timestamps unrounded (Dawn rounds them to 2^16 ns by default)
vk=()
if [ "$VKSTATS" = 1 ]; then
  [ -f .wgpu/vkstats/libVkLayer_fs_stats.so ] || { echo "run-device.sh: VKSTATS=1 wants .wgpu/vkstats (bash bench/webgpu/vkstats/build.sh)" | tee -a "$OUT/machine.txt"; exit 2; }
  vk=(env VK_LAYER_PATH="$PWD/.wgpu/vkstats" VK_INSTANCE_LAYERS=VK_LAYER_FS_stats FS_VKSTATS="$OUT/vkstats.log")
  [ "${VKSTATS_SPIRV:-0}" = 1 ] && { mkdir -p "$OUT/spirv"; vk+=(FS_VKSTATS_SPIRV="$OUT/spirv"); }
  [ "${VKSTATS_IR:-0}" = 1 ] && { mkdir -p "$OUT/ir"; vk+=(FS_VKSTATS_IR="$OUT/ir"); }
  BENCH_ARGS="$BENCH_ARGS --vkstats $OUT/vkstats.log"
  echo "VKSTATS: bench.js through the layer VK_LAYER_FS_stats (its times are not for quoting)" | tee -a "$OUT/machine.txt"
fi
timeout "$BENCH_TIMEOUT" ${vk[@]+"${vk[@]}"} node bench/webgpu/bench.js --plan "$PLAN" --json "$OUT/ours.json" $BENCH_ARGS ${toggles[@]+"${toggles[@]}"} \
  --dawn disable-dawn-features=timestamp_quantization 2>&1 | tee "$OUT/bench.log"
echo "bench.js exit ${PIPESTATUS[0]}" | tee -a "$OUT/bench.log"   # (right after the pipeline: PIPESTATUS is its)
[ "$VKSTATS" = 1 ] && python3 bench/webgpu/vkstats/summary.py "$OUT/vkstats.log" > "$OUT/vkstats.md" 2>&1
grep -E '^(dawn:|subgroup matrices:)' "$OUT/bench.log" >> "$OUT/machine.txt"
# NOTE.txt's first lines (the rest is written by hand): Dawn's settings, and the new kernels' checks
[ -f "$OUT/NOTE.txt" ] || { echo "Dawn's settings and features (run-device.sh):"; grep -E '^(Dawn|dawn:|subgroup matrices:)' "$OUT/machine.txt"
  echo "The new kernels against float64 (bench.log):"; grep -E '^new kernel' "$OUT/bench.log"; } > "$OUT/NOTE.txt"
if [ "$ORT" = 1 ]; then
  timeout "$ORT_TIMEOUT" node bench/webgpu/ort.mjs --plan "$PLAN" --json "$OUT/ort.json" $ORT_ARGS 2>&1 | tee "$OUT/ort.log"
  echo "ort.mjs exit ${PIPESTATUS[0]}" | tee -a "$OUT/ort.log"
fi
if [ "$ORT_F16" = 1 ]; then
  timeout "$ORT_F16_TIMEOUT" node bench/webgpu/ort.mjs --plan "$PLAN" --f16 --prefill-only --json "$OUT/ort-f16.json" \
    ${DAWN_TOGGLES:+--dawn-toggles "$DAWN_TOGGLES"} 2>&1 | tee "$OUT/ort-f16.log"
  echo "ort.mjs --f16 exit ${PIPESTATUS[0]}" | tee -a "$OUT/ort-f16.log"
fi
if [ -n "$NOROBUST_ARGS" ]; then
  timeout "$NOROBUST_TIMEOUT" node bench/webgpu/bench.js --json "$OUT/ours-norobust.json" $NOROBUST_ARGS ${toggles[@]+"${toggles[@]}"} \
    --dawn enable-dawn-features=disable_robustness --dawn disable-dawn-features=timestamp_quantization 2>&1 | tee "$OUT/bench-norobust.log"
  echo "bench.js (robustness off) exit ${PIPESTATUS[0]}" | tee -a "$OUT/bench-norobust.log"
fi
[ "$SDPA" = 1 ] && [ -f "$OUT/ours.json" ] && timeout "$SDPA_TIMEOUT" python3 bench/webgpu/sdpa.py "$OUT/ours.json" --json "$OUT/sdpa.json" 2>&1 | tee "$OUT/sdpa.log"
kill $smi 2>/dev/null
exit 0
