#!/usr/bin/env bash
# install-deps.sh: install what flashstep needs to build, run and test, if it is missing.
#
# Debian/Ubuntu: apt-get (as root, or through sudo). macOS: Homebrew. Elsewhere: prints the
# packages to install and fails. Quiet when everything is already there. When it installs, it
# prints one line saying what (with a log file's path), the package manager's own output goes to
# that log, and one more line says how long it took, or, on failure, which step failed with the
# log's last lines. With --dry-run it only names what is missing. With --web: what the web build
# and its browser test need instead (`make web`, and .ci/run so that CI always runs the browser
# test); `make run` never installs them, and `make test` only completes them where Emscripten
# and Chromium are already there. `--help` says the same, with the exit statuses.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/install-deps.sh [--dry-run] [--web] [--help]

Installs what flashstep needs to build, run and test (make run and make test call it),
if it is missing: apt-get on Debian/Ubuntu (as root, or through sudo), Homebrew on macOS.
Prints nothing when nothing is missing. Otherwise one line naming what it installs and its
log file, the package manager's output going to that log, then one line with the time taken.
The log is $XDG_CACHE_HOME/flashstep/install-deps.log (~/.cache when XDG_CACHE_HOME is unset;
install-deps-web.log with --web), or a new file in $TMPDIR (/tmp) where that directory cannot
be written or, as root, lies in a home that root does not own (sudo make run).

  --dry-run   name what is missing, install nothing
  --web       what `make web` and its browser test need instead: Emscripten, CMake,
              dpkg-source, xz, bzip2, fonts, Python 3, Chromium, npm, the Vulkan headers
  --help      this text

Exit status: 0 installed or nothing missing; 1 cannot install here (no apt-get or Homebrew,
not root and no sudo, no log file); 2 bad option; 3 apt-get update failed; 4 the install
itself (apt-get install or brew install) failed. On 3 and 4 it prints the log's last 20
lines, control characters shown as '?'.
EOF
}

# Debian package, what it is (for the one line it prints), and the check that says it is present.
debs=(
  "build-essential:C compiler:command -v cc"
  "make:make:command -v make"
  "pkg-config:pkg-config:command -v pkg-config"
  "libsdl2-dev:SDL2:pkg-config --exists sdl2"
  "libsdl2-ttf-dev:SDL2_ttf:pkg-config --exists SDL2_ttf"
  "check:Check:pkg-config --exists check"
  "fontconfig:Fontconfig:command -v fc-match"
  "libfontconfig-dev:Fontconfig:pkg-config --exists fontconfig"
  "fonts-dejavu-core:DejaVu fonts:test -f ${FS_SYSROOT:-}/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
  "libopenblas-dev:OpenBLAS:have_openblas"
  "libgif-dev:giflib:test -f ${FS_SYSROOT:-}/usr/include/gif_lib.h"
  "libavcodec-dev:FFmpeg:pkg-config --exists libavcodec"
  "libavformat-dev:FFmpeg:pkg-config --exists libavformat"
  "libswscale-dev:FFmpeg:pkg-config --exists libswscale"
  "libavutil-dev:FFmpeg:pkg-config --exists libavutil"
  "xvfb:Xvfb:command -v Xvfb"
  "xauth:xauth:command -v xauth"
  "python3:Python 3:command -v python3"
  "python3-numpy:NumPy:test -d ${FS_SYSROOT:-}/usr/lib/python3/dist-packages/numpy"
  "tmux:tmux:command -v tmux"
  "clang:Clang:command -v clang"
  "libclang-rt-dev:Clang's fuzzer runtime:ls ${FS_SYSROOT:-}/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a"
)
brews=(sdl2 sdl2_ttf check pkg-config fontconfig openblas giflib ffmpeg numpy tmux)

# --web: Emscripten (Debian's), what scripts/web-libs.sh needs to fetch and build SDL2, SDL2_ttf,
# FreeType and zlib from their Debian sources (apt-get source unpacks with dpkg-source), the
# fonts the page packs, Chromium for the browser test, and the Vulkan headers for the layer that
# reads a GPU driver's statistics of our kernels (bench/webgpu/vkstats; the browser test builds it
# and runs it on Chromium's SwiftShader).
web_debs=(
  "emscripten:Emscripten:command -v emcc"
  "cmake:CMake:command -v cmake"
  "make:make:command -v make"
  "dpkg-dev:dpkg-source:command -v dpkg-source"
  "xz-utils:xz:command -v xz"
  "bzip2:bzip2:command -v bzip2"
  "fonts-dejavu-core:DejaVu fonts:test -f ${FS_SYSROOT:-}/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
  "python3:Python 3:command -v python3"
  "chromium:Chromium:command -v chromium"
  "npm:npm:command -v npm"   # axe-core for the page's accessibility test (scripts/web-axe.sh)
  "libvulkan-dev:the Vulkan headers:test -f ${FS_SYSROOT:-}/usr/include/vulkan/vk_layer.h"
)
web_brews=(emscripten cmake)

# Homebrew's formula names, as the line prints them.
brew_name() {
  case $1 in
    sdl2) echo SDL2 ;; sdl2_ttf) echo SDL2_ttf ;; check) echo Check ;; fontconfig) echo Fontconfig ;;
    openblas) echo OpenBLAS ;; ffmpeg) echo FFmpeg ;; numpy) echo NumPy ;; emscripten) echo Emscripten ;;
    cmake) echo CMake ;; *) echo "$1" ;;
  esac
}

# OpenBLAS itself, never "some cblas.h": Debian's reference BLAS (libblas-dev) also installs a
# cblas.h, without OpenBLAS's openblas_set_num_threads. OpenBLAS ships openblas.pc and its own
# openblas_config.h; the build takes its header and library from the same place (see
# src/kernels/cpu/module.mk), whichever BLAS the alternatives system prefers.
# FS_SYSROOT (empty normally) lets tests/setup/install-deps.sh try the states a new machine can
# be in: the checks that look at files look under it.
# shellcheck disable=SC2317  # called through eval, from the table above
have_openblas() {
  pkg-config --exists openblas && return 0
  compgen -G "${FS_SYSROOT:-}/usr/include/*/openblas*/openblas_config.h" >/dev/null && return 0
  compgen -G "${FS_SYSROOT:-}/usr/include/openblas/openblas_config.h" >/dev/null && return 0
  return 1
}

dry_run=0 web=0
for arg in "$@"; do
  case $arg in
    --dry-run) dry_run=1 ;;
    --web) web=1 ;;
    --help|-h) usage; exit 0 ;;
    *) echo "install-deps: unknown option '$arg' (--dry-run, --web, --help)" >&2; exit 2 ;;
  esac
done
log_name=install-deps.log
if [ $web -eq 1 ]; then debs=("${web_debs[@]}"); brews=("${web_brews[@]}"); log_name=install-deps-web.log; fi

# The log: under the user's cache directory, or a new file in $TMPDIR where that cannot be
# written, or where root would leave a root-owned file in someone else's home (sudo make run
# with HOME kept). Prints the path; fails only where neither place can be written.
pick_log() {
  local dir=${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/flashstep
  if [ "$(id -u)" -ne 0 ] || [ -O "${HOME:-/nonexistent}" ]; then
    if mkdir -p "$dir" 2>/dev/null && : > "$dir/$log_name" 2>/dev/null; then
      echo "$dir/$log_name"; return 0
    fi
  fi
  mktemp "${TMPDIR:-/tmp}/flashstep-$log_name.XXXXXX" 2>/dev/null
}

# "1 package", "2 packages".
count() { if [ "$1" -eq 1 ]; then echo "1 $2"; else echo "$1 $2s"; fi; }

# Names for the line: "SDL2, SDL2_ttf, Check, ...", each once, in the list's order.
# (No associative array: macOS runs this with its bash 3.2.)
join_names() {
  local out="" n
  for n in "$@"; do
    case ", $out, " in *", $n, "*) continue ;; esac
    out+="${out:+, }$n"
  done
  echo "$out"
}

# What went wrong, from the log: its last 20 lines, with control characters (an escape
# sequence, a carriage return) shown as '?' so that the log cannot drive the terminal.
show_tail() {
  echo "install-deps: the last 20 lines of $log:" >&2
  tail -n 20 "$log" | LC_ALL=C tr '\000-\010\013-\037\177' '?' | sed 's/^/  | /' >&2
  echo "install-deps: full log: $log" >&2
}

# step STATUS WHAT COMMAND...: run COMMAND with its output appended to the log; on failure say
# WHAT failed (and why_note, if an earlier step left one), show the log's tail, exit with STATUS.
why_note=""
step() {
  local status=$1 what=$2 rc=0; shift 2
  { echo "### $(date -u '+%Y-%m-%d %H:%M:%S UTC'): $*"; } >> "$log"
  "$@" >> "$log" 2>&1 < /dev/null || rc=$?
  if [ $rc -ne 0 ]; then
    echo "install-deps: $what failed (exit status $rc) after ${SECONDS} s" >&2
    [ -n "$why_note" ] && echo "install-deps: $why_note" >&2
    show_tail; exit "$status"
  fi
}

# macOS: Homebrew's own list says what is there (the checks above name Debian's paths).
if [ "$(uname -s)" = Darwin ]; then
  if ! command -v brew >/dev/null; then
    echo "install-deps: install Homebrew, then: brew install ${brews[*]}" >&2; exit 1
  fi
  missing=() names=()
  for b in "${brews[@]}"; do
    brew list --versions "$b" >/dev/null 2>&1 || { missing+=("$b"); names+=("$(brew_name "$b")"); }
  done
  [ ${#missing[@]} -eq 0 ] && exit 0
  if [ $dry_run -eq 1 ]; then
    echo "install-deps: missing $(count ${#missing[@]} formula): $(join_names "${names[@]}") (brew install ${missing[*]})"; exit 0
  fi
  log=$(pick_log) || { echo "install-deps: cannot write a log file (cache directory, ${TMPDIR:-/tmp})" >&2; exit 1; }
  echo "install-deps: installing $(count ${#missing[@]} formula) with Homebrew: $(join_names "${names[@]}") (log: $log)"
  SECONDS=0
  step 4 "brew install" brew install "${missing[@]}"
  echo "install-deps: done in ${SECONDS} s"
  exit 0
fi

missing=() names=()
for entry in "${debs[@]}"; do
  pkg=${entry%%:*}; rest=${entry#*:}; name=${rest%%:*}; test_cmd=${rest#*:}
  if ! eval "$test_cmd" >/dev/null 2>&1; then missing+=("$pkg"); names+=("$name"); fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ $dry_run -eq 1 ]; then
  echo "install-deps: missing $(count ${#missing[@]} package): $(join_names "${names[@]}") (apt-get install ${missing[*]})"
  exit 0
fi
if command -v apt-get >/dev/null; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo=(sudo); else
      echo "install-deps: run as root: apt-get install -y ${missing[*]}" >&2; exit 1
    fi
  fi
  log=$(pick_log) || { echo "install-deps: cannot write a log file (cache directory, ${TMPDIR:-/tmp})" >&2; exit 1; }
  echo "install-deps: installing $(count ${#missing[@]} package): $(join_names "${names[@]}") (log: $log)"
  export DEBIAN_FRONTEND=noninteractive
  SECONDS=0
  step 3 "${sudo[*]:+${sudo[*]} }apt-get update" "${sudo[@]}" apt-get update
  # apt-get update succeeds even when it could fetch no package list at all (no network: it
  # only warns); if the install then fails, say that this is the likely cause.
  fetch_failed=$(sed -n '/^### .*apt-get update$/,$p' "$log" | grep -c '^W: Failed to fetch' || true)
  [ "$fetch_failed" -gt 0 ] && why_note="apt-get update could not fetch $fetch_failed package lists (no network or a broken source?): see the log"
  step 4 "${sudo[*]:+${sudo[*]} }apt-get install" "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
  echo "install-deps: done in ${SECONDS} s"
  exit 0
fi
echo "install-deps: no apt-get or Homebrew here; install the equivalents of: ${missing[*]}" >&2
exit 1
