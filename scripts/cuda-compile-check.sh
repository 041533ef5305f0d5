#!/usr/bin/env bash
# cuda-compile-check.sh FILE...: compile each CUDA source (no GPU needed), JOBS at a time, each
# bounded by TIMEOUT seconds; print the compiler's messages and one line saying what passed.
# Called by `make cuda-compile-check` (src/kernels/cuda/module.mk), which sets, in the environment:
#   NVCC            the compiler
#   FLAGS           the flags of a source; FLAGS_HOPPER those of hopper_*.cu (sm_90a alone)
#   OUT             a scratch folder for the objects and logs (emptied first)
#   JOBS, TIMEOUT   how many at once, and the seconds one may take
#
# A source that compiled before, with the same text, the same headers (those it includes), flags
# and compiler, is not compiled again: its key (a SHA-256 of all of these) is kept in a cache
# outside the tree,
#   ${FLASHSTEP_CUDA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flashstep/cuda-check}
# Compiling them all takes minutes of CPU (2026-11-30: 440 s beside the other tests on a 2-core
# machine), and most runs of `make test` change no CUDA source. FLASHSTEP_CUDA_CACHE=off
# compiles every source.
set -uo pipefail
: "${NVCC:?}" "${FLAGS:?}" "${FLAGS_HOPPER:?}" "${OUT:?}" "${JOBS:=2}" "${TIMEOUT:=150}"
cache=${FLASHSTEP_CUDA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flashstep/cuda-check}
[ "$cache" = off ] || mkdir -p "$cache" 2>/dev/null || cache=off
rm -rf "$OUT" && mkdir -p "$OUT"

flags_of() { case $1 in */hopper_*) echo "$FLAGS_HOPPER";; *) echo "$FLAGS";; esac; }
# The files a source is made of: itself and the project's headers it includes, directly or not
# (the C preprocessor lists them; CUDA's own headers are covered by nvcc's version). Without a
# preprocessor, every header of the tree, so that no change goes unseen.
deps_of() {
  if command -v cpp >/dev/null 2>&1; then
    { echo "$1"; cpp -MM -MG -x c++ -Isrc "$1" 2>/dev/null | tr -s ' \\\n' '\n' | grep -v ':$'; } |
      while read -r p; do [ -f "$p" ] && echo "$p"; done | LC_ALL=C sort -u
  else
    { echo "$1"; find src bench/cuda \( -name '*.h' -o -name '*.cuh' \) -type f; } | LC_ALL=C sort -u
  fi
}
version=$("$NVCC" --version 2>&1)
key_of() { { echo "$version"; flags_of "$1"; deps_of "$1" | while read -r p; do echo "$p"; cat "$p"; done; } | sha256sum | cut -c1-64; }

todo=() cached=0
for f in "$@"; do
  if [ "$cache" != off ] && [ -e "$cache/$(key_of "$f")" ]; then cached=$((cached + 1)); else todo+=("$f"); fi
done

export NVCC FLAGS FLAGS_HOPPER OUT TIMEOUT
compile() {   # compile FILE: its log and exit status in OUT
  local f=$1 n
  n=$(echo "$f" | tr / _)
  # shellcheck disable=SC2046  # the flags are words
  timeout "$TIMEOUT" "$NVCC" $(case $f in */hopper_*) echo "$FLAGS_HOPPER";; *) echo "$FLAGS";; esac) -c "$f" -o "$OUT/$n.o" \
    > "$OUT/$n.log" 2>&1
  echo $? > "$OUT/$n.rc"
}
export -f compile
[ ${#todo[@]} = 0 ] || printf '%s\n' "${todo[@]}" | xargs -P "$JOBS" -I{} bash -c 'compile "$1"' _ {}

fail=0 slow=()
for f in "${todo[@]}"; do
  n=$(echo "$f" | tr / _)
  grep -v '^ptxas info' "$OUT/$n.log"
  rc=$(cat "$OUT/$n.rc" 2>/dev/null || echo 1)
  if [ "$rc" = 124 ]; then slow+=("$f")
  elif [ "$rc" != 0 ]; then echo "cuda-compile-check: ✗ $f does not compile"; fail=1
  elif [ "$cache" != off ]; then : > "$cache/$(key_of "$f")"
  fi
done
rm -f "$OUT"/*.o
for f in ${slow[@]+"${slow[@]}"}; do echo "cuda-compile-check: $f took over $TIMEOUT s: not checked this run"; done
[ $fail = 0 ] || exit 1
checked=$(( ${#todo[@]} - ${#slow[@]} ))
msg="$checked compiled now"
[ "$cached" = 0 ] || msg="$msg, $cached unchanged since a compile that passed (cache: $cache)"
[ ${#slow[@]} = 0 ] || msg="$msg, ${#slow[@]} not checked (over $TIMEOUT s)"
if [ ${#slow[@]} = 0 ]; then
  echo "cuda-compile-check: ✓ CUDA sources compile for sm_80 and sm_90 (hopper_*.cu: sm_90a) ($NVCC): $msg"
else
  echo "cuda-compile-check: CUDA sources for sm_80 and sm_90 (hopper_*.cu: sm_90a) ($NVCC): $msg"
fi
