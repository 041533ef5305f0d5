#!/usr/bin/env bash
# install-deps.sh: install what flashstep needs to build, run and test, if it is missing.
#
# Debian/Ubuntu: apt-get (as root, or through sudo). macOS: Homebrew. Elsewhere: prints the
# packages to install and fails. Quiet when everything is already there. With --dry-run it only
# names what is missing. With --web: what the web build and its browser test need instead
# (`make web`, and .ci/run so that CI always runs the browser test); `make run` never installs
# them, and `make test` only completes them where Emscripten and Chromium are already there.
set -euo pipefail

# Debian package, and the check that says it is present.
debs=(
  "build-essential:command -v cc"
  "make:command -v make"
  "pkg-config:command -v pkg-config"
  "libsdl2-dev:pkg-config --exists sdl2"
  "libsdl2-ttf-dev:pkg-config --exists SDL2_ttf"
  "check:pkg-config --exists check"
  "fontconfig:command -v fc-match"
  "libfontconfig-dev:pkg-config --exists fontconfig"
  "fonts-dejavu-core:test -f /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
  "libopenblas-dev:have_openblas"
  "libgif-dev:test -f /usr/include/gif_lib.h"
  "libavcodec-dev:pkg-config --exists libavcodec"
  "libavformat-dev:pkg-config --exists libavformat"
  "libswscale-dev:pkg-config --exists libswscale"
  "libavutil-dev:pkg-config --exists libavutil"
  "xvfb:command -v Xvfb"
  "xauth:command -v xauth"
  "python3:command -v python3"
  "python3-numpy:test -d /usr/lib/python3/dist-packages/numpy"
  "tmux:command -v tmux"
  "clang:command -v clang"
  "libclang-rt-dev:ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a"
)
brews=(sdl2 sdl2_ttf check pkg-config fontconfig openblas giflib ffmpeg numpy tmux)

# --web: Emscripten (Debian's), what scripts/web-libs.sh needs to fetch and build SDL2, SDL2_ttf,
# FreeType and zlib from their Debian sources (apt-get source unpacks with dpkg-source), the
# fonts the page packs, and Chromium for the browser test.
web_debs=(
  "emscripten:command -v emcc"
  "cmake:command -v cmake"
  "make:command -v make"
  "dpkg-dev:command -v dpkg-source"
  "xz-utils:command -v xz"
  "bzip2:command -v bzip2"
  "fonts-dejavu-core:test -f /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
  "python3:command -v python3"
  "chromium:command -v chromium"
)
web_brews=(emscripten cmake)

# OpenBLAS itself, never "some cblas.h": Debian's reference BLAS (libblas-dev) also installs a
# cblas.h, without OpenBLAS's openblas_set_num_threads. OpenBLAS ships openblas.pc and its own
# openblas_config.h; the build takes its header and library from the same place (see
# src/kernels/cpu/module.mk), whichever BLAS the alternatives system prefers.
# FS_SYSROOT (empty normally) lets tests/setup/install-deps.sh try the states a new machine can be in.
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
    *) echo "install-deps: unknown option '$arg' (--dry-run, --web)" >&2; exit 2 ;;
  esac
done
if [ $web -eq 1 ]; then debs=("${web_debs[@]}"); brews=("${web_brews[@]}"); fi

# macOS: Homebrew's own list says what is there (the checks above name Debian's paths).
if [ "$(uname -s)" = Darwin ]; then
  if ! command -v brew >/dev/null; then
    echo "install-deps: install Homebrew, then: brew install ${brews[*]}" >&2; exit 1
  fi
  missing=()
  for b in "${brews[@]}"; do brew list --versions "$b" >/dev/null 2>&1 || missing+=("$b"); done
  [ ${#missing[@]} -eq 0 ] && exit 0
  echo "install-deps: missing: ${missing[*]}"
  [ $dry_run -eq 1 ] && exit 0
  brew install "${missing[@]}"; exit 0
fi

missing=()
for entry in "${debs[@]}"; do
  pkg=${entry%%:*}; test_cmd=${entry#*:}
  if ! eval "$test_cmd" >/dev/null 2>&1; then missing+=("$pkg"); fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: missing: ${missing[*]}"
[ $dry_run -eq 1 ] && exit 0
if command -v apt-get >/dev/null; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      echo "install-deps: run as root: apt-get install -y ${missing[*]}" >&2; exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  exit 0
fi
echo "install-deps: no apt-get or Homebrew here; install the equivalents of: ${missing[*]}" >&2
exit 1
