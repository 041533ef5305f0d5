#!/usr/bin/env bash
# ggml-side-by-side.sh: time ggml's CPU flash attention (test-backend-ops, FLASH_ATTN_EXT perf
# cases) at flashstep's bench shapes, beside `flashstep bench`, in one run on this machine.
#
#   GGML_DIR=/path/to/ggml bench/ggml-side-by-side.sh [NAME]
#   GGML_DIR=/path/to/ggml GGML_MARCH=icelake-server GGML_BUILD_ONLY=1 bench/ggml-side-by-side.sh
#   GGML_BIN=/path/to/test-backend-ops bench/ggml-side-by-side.sh [NAME]
#
# The second form only builds, statically and for the -march given instead of this machine's
# (for a machine that has no compiler or cmake), and prints the binary's path; the third runs
# such a binary (built by this script, so its perf list is ours) with no source tree or cmake.
# GGML_DIR is a ggml source tree outside this repository (a clone of github.com/ggml-org/ggml,
# or an archive of it) at the pinned commit below; nothing of it is copied into this tree. The
# script copies it to a scratch directory, makes test-backend-ops' perf list hold only our shapes,
# builds the CPU backend (Release, native), runs flashstep bench and then ggml, and writes both
# with the date, machine, load and revisions to NAME.txt (default ggml-side-by-side) in a new run
# folder, bench/results/DATE-NAME/ (bench/new-run-dir.sh, with a NOTE.txt stub).
# Shapes (all threads; ggml uses every hardware thread):
#   prefill  8 heads, d = 128 and 64, N = 4096, no mask, K/V float32 and float16
#            (ggml has no causal skip, so causal rows are flashstep's alone)
#   decode   GQA 32/8, d = 128, one query row, 32768 positions (flashstep also 131072), K/V f32
#            and f16 (ggml's K/V are views of a buffer twice their size, as in its KV cache)
# ggml counts FLOPs as we do (2·(d_k + d_v)·N_kv per query row and head = 4·N²·d per head).
set -euo pipefail
cd "$(dirname "$0")/.."
PIN=d99724f2b141fed9e1a9f402213506c081433465
name=${1:-ggml-side-by-side}

if [ -z "${GGML_BIN:-}" ]; then
  if [ -z "${GGML_DIR:-}" ]; then
    echo "ggml-side-by-side.sh: set GGML_DIR to a ggml source tree at commit $PIN" >&2
    echo "  (e.g. git clone https://github.com/ggml-org/ggml && git -C ggml checkout $PIN)" >&2
    exit 2
  fi
  [ -f "$GGML_DIR/tests/test-backend-ops.cpp" ] && [ -f "$GGML_DIR/CMakeLists.txt" ] || {
    echo "ggml-side-by-side.sh: $GGML_DIR does not look like a ggml source tree" >&2; exit 2; }
  command -v cmake >/dev/null || { echo "ggml-side-by-side.sh: cmake is needed to build ggml" >&2; exit 2; }
  command -v git >/dev/null || { echo "ggml-side-by-side.sh: git is needed (to check the files' hashes)" >&2; exit 2; }

  # the pinned commit: HEAD when GGML_DIR is a git checkout, and in every case the hashes of the
  # two files that matter
  if git -C "$GGML_DIR" rev-parse HEAD >/dev/null 2>&1 && [ -e "$GGML_DIR/.git" ]; then
    head=$(git -C "$GGML_DIR" rev-parse HEAD)
    [ "$head" = "$PIN" ] || { echo "ggml-side-by-side.sh: $GGML_DIR is at $head, not the pinned $PIN" >&2; exit 2; }
  fi
  # git hash-object of the two files at $PIN: the test driver we patch, the CPU kernels we time
  want_test=8e3b273a1e46b7c27871332e2649b4e0459a018e
  want_ops=2b5f68444b9ad6bb0f05a9c3e987dc0ea2b85487
  got_test=$(git hash-object "$GGML_DIR/tests/test-backend-ops.cpp")
  got_ops=$(git hash-object "$GGML_DIR/src/ggml-cpu/ops.cpp")
  if [ "$got_test" != "$want_test" ] || [ "$got_ops" != "$want_ops" ]; then
    echo "ggml-side-by-side.sh: $GGML_DIR is not ggml at $PIN (tests/test-backend-ops.cpp $got_test," >&2
    echo "  src/ggml-cpu/ops.cpp $got_ops; expected $want_test and $want_ops)" >&2
    exit 2
  fi
fi

bin=${FLASHSTEP:-build/flashstep}
[ -x "$bin" ] || { echo "ggml-side-by-side.sh: build flashstep first (make)" >&2; exit 2; }
march=${GGML_MARCH:-}
work=${GGML_WORK:-${TMPDIR:-/tmp}/flashstep-ggml-$PIN${march:+-$march}}
mkdir -p "$work"
if [ -z "${GGML_BIN:-}" ] && [ ! -x "$work/build/bin/test-backend-ops" ]; then
  rm -rf "$work/src"
  cp -r "$GGML_DIR" "$work/src"
  # test-backend-ops' perf list, cut down to our shapes: insert them first and return
  python3 - "$work/src/tests/test-backend-ops.cpp" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
head = "static std::vector<std::unique_ptr<test_case>> make_test_cases_perf() {\n    std::vector<std::unique_ptr<test_case>> test_cases;\n"
assert head in s, "make_test_cases_perf not where expected"
cases = []
for d in (128, 64):
    for t in ("GGML_TYPE_F32", "GGML_TYPE_F16"):
        cases.append(f"test_flash_attn_ext({d}, {d}, 8, {{1, 1}}, 4096, 4096, false, false, 0, 0, GGML_PREC_F32, {t}, {t})")
for n in (32768,):
    for t in ("GGML_TYPE_F32", "GGML_TYPE_F16"):
        cases.append(f"test_flash_attn_ext(128, 128, 8, {{4, 1}}, {n}, 1, false, false, 0, 0, GGML_PREC_F32, {t}, {t})")
ins = "".join(f"    test_cases.emplace_back(new {c});\n" for c in cases)
ins += "    if (test_cases.size() > 0) return test_cases;   // flashstep's shapes only\n"
s = s.replace(head, head + ins, 1)
open(p, "w").write(s)
EOF
  # this machine's instruction set, or GGML_MARCH's in a static binary (for another machine;
  # ggml's own thread pool then, as Debian's OpenMP runtime cannot be linked statically)
  if [ -n "$march" ]; then
    target=(-DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF "-DCMAKE_C_FLAGS=-march=$march" "-DCMAKE_CXX_FLAGS=-march=$march"
            -DCMAKE_EXE_LINKER_FLAGS=-static -DGGML_OPENMP=OFF)
  else
    target=(-DGGML_NATIVE=ON -DGGML_OPENMP=ON)
  fi
  cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release "${target[@]}" \
        -DGGML_BUILD_TESTS=ON -DGGML_BUILD_EXAMPLES=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF \
        -DGGML_VULKAN=OFF > "$work/cmake.log" 2>&1 \
    || { echo "ggml-side-by-side.sh: cmake failed, see $work/cmake.log" >&2; exit 1; }
  cmake --build "$work/build" -j 2 --target test-backend-ops > "$work/build.log" 2>&1 \
    || { echo "ggml-side-by-side.sh: the build failed, see $work/build.log" >&2; exit 1; }
fi
if [ -n "${GGML_BUILD_ONLY:-}" ]; then echo "$work/build/bin/test-backend-ops"; exit 0; fi
tbo=${GGML_BIN:-$work/build/bin/test-backend-ops}
[ -x "$tbo" ] || { echo "ggml-side-by-side.sh: $tbo is not a program" >&2; exit 2; }

out=$(bench/new-run-dir.sh "$name" "GGML_DIR=... bench/ggml-side-by-side.sh $name")
txt="$out/$name.txt"
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
hz=$(getconf CLK_TCK)
{
  echo "# date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "# machine:  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
  echo "# flashstep: $(git rev-parse --short HEAD 2>/dev/null || echo unknown); ggml: $PIN${GGML_BIN:+ (prebuilt: $GGML_BIN)}"
  echo "# load before: $(uptime | sed 's/.*load average: //')"
} > "$txt"
b0=$(busy); w0=$(date +%s.%N)
echo "## flashstep bench" >> "$txt"
"$bin" bench --n 4096 --d 128,64 --causal 0,1 --no-baseline --no-backward --threads "$(nproc)" \
  --decode-n 32768,131072 --decode-dtype f32,f16 --reps 3 >> "$txt" 2>&1
echo "## ggml test-backend-ops perf -o FLASH_ATTN_EXT -b CPU" >> "$txt"
# one line per case: the shape, ms per run, GFLOP/s, and for decode (nb = 1) the K/V bytes read
# per second (2 · KV heads · kv · d · element size, over the same time)
"$tbo" perf -o FLASH_ATTN_EXT -b CPU 2>&1 | sed 's/\x1b\[[0-9;]*m//g' \
  | awk '/FLASH_ATTN_EXT\(/ {
      match($0, /hsk=[0-9]+/); d = substr($0, RSTART + 4, RLENGTH - 4)
      match($0, /nh=[0-9]+/); nh = substr($0, RSTART + 3, RLENGTH - 3)
      match($0, /kv=[0-9]+/); kv = substr($0, RSTART + 3, RLENGTH - 3)
      match($0, /nb=[0-9]+/); nb = substr($0, RSTART + 3, RLENGTH - 3)
      match($0, /type_K=[a-z0-9]+/); t = substr($0, RSTART + 7, RLENGTH - 7)
      match($0, /[0-9.]+ us\/run/); us = substr($0, RSTART, RLENGTH - 7) + 0
      match($0, /[0-9.]+ GFLOPS/); gf = substr($0, RSTART, RLENGTH - 7) + 0
      es = (t == "f32") ? 4 : 2
      if (nb == 1)
        printf "ggml decode  KV heads %s kv %6d d %s K/V %-4s %10.3f ms %7.1f GFLOP/s %7.2f GB/s of K/V\n", nh, kv, d, t, us / 1000, gf, 2 * nh * kv * d * es / (us * 1e-6) * 1e-9
      else
        printf "ggml prefill heads %s N %6d d %s K/V %-4s %10.3f ms %7.1f GFLOP/s\n", nh, kv, d, t, us / 1000, gf
    }' >> "$txt"
b1=$(busy); w1=$(date +%s.%N)
echo "# load after:  $(uptime | sed 's/.*load average: //')" >> "$txt"
awk -v b0="$b0" -v b1="$b1" -v hz="$hz" -v w0="$w0" -v w1="$w1" -v n="$(nproc)" 'BEGIN {
  printf "# CPU time of the whole machine during the run: %.1f of %.1f CPU-seconds (both programs included)\n",
         (b1 - b0) / hz, (w1 - w0) * n }' >> "$txt"
cat "$txt"
