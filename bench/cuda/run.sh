#!/usr/bin/env bash
# run.sh: build, check and time the CUDA path in one call, on a GPU machine.
#
#   bash bench/cuda/run.sh [--quick] [--no-build] [--no-tests] [--no-sanitizer] [--no-sdpa] [--profile] [--no-time]
#   (--no-time: build, tests, sanitizer and the correctness checks only; --no-tests: skip step 3,
#   so that a lent machine's 10-minute call can hold the full timing run)
#
# Steps, each logged under $FS_CUDA_LOG (default build/cuda/out):
#   1. the machine: GPU, driver, nvcc, date
#   2. build: make CUDA=1 BUILD=build/cuda cuda-bench cuda-tests (skipped with --no-build when
#      the binaries were built elsewhere and carried: they link cudart statically; then step 3's
#      CLI check takes $FS_CUDA_BUILD/flashstep as it is, built with make CUDA=1 NO_GUI=1)
#   3. tests/cuda (skipped with --no-tests): the GPU trace against the engine's, event by event (test_cuda), on random
#      problems and on every tiled lesson; then, if the whole program builds here (it needs SDL2),
#      `flashstep trace --backend cuda` against the engine's JSONL (bench/cuda/cmp_jsonl.py)
#   4. compute-sanitizer (memcheck, racecheck, synccheck) on small checks, when present
#   5. bench_cuda: every version checked against the float64 reference, then timed
#   6. PyTorch SDPA (flash, cuDNN) on the same shapes, same GPU, same call
#   7. the side-by-side table (bench/cuda/summary.py)
#   With --profile, before step 5: ncu on one launch of each fast kernel (ncu.txt), and the Hopper
#   prefill kernels' SASS source page summed per opcode (ncu_source.txt, bench/cuda/ncu_source.py)
# Exit status: non-zero when any check or test failed.
set -u
cd "$(dirname "$0")/../.."
LOG=${FS_CUDA_LOG:-build/cuda/out}   # logs (not $OUT: that name belongs to the GPU lending tool)
mkdir -p "$LOG"
QUICK= BUILD_IT=1 SAN=1 SDPA=1 PROF=0 TIME=1 TESTS=1
for a in "$@"; do
  case $a in
    --quick) QUICK=--quick ;;
    --no-build) BUILD_IT=0 ;;
    --no-tests) TESTS=0 ;;
    --no-sanitizer) SAN=0 ;;
    --no-sdpa) SDPA=0 ;;
    --profile) PROF=1 ;;
    --no-time) TIME=0; SDPA=0 ;;
    *) echo "usage: $0 [--quick] [--no-build] [--no-tests] [--no-sanitizer] [--no-sdpa] [--profile] [--no-time]" >&2; exit 2 ;;
  esac
done
B=${FS_CUDA_BUILD:-build/cuda}   # where the binaries are (FS_CUDA_BUILD for carried ones)
fail=0
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }

step "machine"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv;
  nvcc --version | tail -1; } 2>&1 | tee "$LOG/machine.txt"

if [ $BUILD_IT = 1 ]; then
  step "build"
  make CUDA=1 BUILD="$B" -j"$(nproc)" cuda-bench cuda-tests > "$LOG/build.log" 2>&1 \
    || { tail -30 "$LOG/build.log"; echo "build failed"; exit 1; }
fi

if [ $TESTS = 1 ]; then
  step "tests/cuda: GPU trace vs engine trace"
  $B/cuda/test_cuda --count 400 --lessons lessons 2>&1 | tee "$LOG/test_cuda.log" | tail -8
  [ "${PIPESTATUS[0]}" = 0 ] || fail=1

  step "flashstep trace --backend cuda against the engine (JSONL)"
  FS_CLI_PREBUILT=$([ $BUILD_IT = 0 ] && echo 1 || echo 0) bash bench/cuda/cli_check.sh "$B" "$LOG/cli" 2>&1 | tee "$LOG/cli_check.log" | grep -v '^ *$'
  [ "${PIPESTATUS[0]}" = 0 ] || fail=1
fi

if [ $SAN = 1 ] && command -v compute-sanitizer > /dev/null; then
  step "compute-sanitizer"
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool $tool --error-exitcode 3 $B/cuda/bench_cuda --check --tiny > "$LOG/san_$tool.log" 2>&1
    rc=$?; echo "$tool bench_cuda --check --tiny: rc=$rc $(grep -m1 'ERROR SUMMARY' "$LOG/san_$tool.log")"
    [ $rc = 0 ] || fail=1
  done
  compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda/test_cuda --count 20 > "$LOG/san_trace.log" 2>&1
  rc=$?; echo "memcheck test_cuda --count 20: rc=$rc $(grep -m1 'ERROR SUMMARY' "$LOG/san_trace.log")"
  [ $rc = 0 ] || fail=1
fi

if [ $PROF = 1 ] && command -v ncu > /dev/null; then
  step "ncu: one launch of each fast kernel (log: ncu.txt)"
  ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis --section LaunchStats -k regex:'prefill_mma|prefill_tma|prefill_overlap|prefill_persist|bwd_main|bwd_wgmma|decode_split_async|decode_mma|decode_tma' \
      $B/cuda/bench_cuda --profile > "$LOG/ncu.txt" 2>&1
  grep -E "prefill_mma|decode_split|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall|L1/TEX Hit|Issue Slots Busy" "$LOG/ncu.txt" | head -80
  step "ncu: the Hopper prefill's instructions and stalls, opcode by opcode (log: ncu_source.txt)"
  ncu --section SourceCounters -k regex:'prefill_overlap|prefill_persist' -o "$LOG/ncu_source" -f \
      $B/cuda/bench_cuda --profile > "$LOG/ncu_source_run.log" 2>&1
  ncu --import "$LOG/ncu_source.ncu-rep" --page source --csv --print-source sass > "$LOG/ncu_source.csv" 2>&1
  python3 bench/cuda/ncu_source.py "$LOG/ncu_source.csv" > "$LOG/ncu_source.txt" \
    && grep -E "^void|instructions executed" "$LOG/ncu_source.txt" | cut -c1-140 | head -40
  rm -f "$LOG/ncu_source.csv"   # tens of MB; the report itself stays
fi

step "bench_cuda: check, then time"
$B/cuda/bench_cuda $QUICK $([ $TIME = 0 ] && echo --check) 2>&1 | tee "$LOG/bench.log" | grep -v "^ok " 
[ "${PIPESTATUS[0]}" = 0 ] || fail=1
echo "checks passed: $(grep -c '^ok ' "$LOG/bench.log"), failed: $(grep -c '^FAIL' "$LOG/bench.log")"

if [ $SDPA = 1 ]; then
  step "PyTorch SDPA"
  PYTHONUNBUFFERED=1 python3 bench/cuda/sdpa_bench.py $QUICK 2>&1 | tee "$LOG/sdpa.log" | grep -v "^RESULT"
fi

step "summary"
python3 bench/cuda/summary.py "$LOG/bench.log" "$LOG/sdpa.log" | tee "$LOG/summary.md"
# The records name files relative to the repository: tools print absolute paths (a Python warning
# names its script, a profiler its binary), which say nothing about the project.
for f in "$LOG"/*; do [ -f "$f" ] && sed -i "s|$PWD/||g" "$f"; done
echo "run.sh: $([ $fail = 0 ] && echo 'all checks and tests passed' || echo 'SOME CHECKS OR TESTS FAILED')"
exit $fail
