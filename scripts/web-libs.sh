#!/usr/bin/env bash
# web-libs.sh: SDL2, FreeType, SDL2_ttf and zlib compiled to WebAssembly for `make web`.
#
# Debian's emscripten (3.1.6) freezes its cache and ships no port sources, so `-sUSE_SDL=2`
# cannot download or build SDL2 there. We build the libraries ourselves, with emcmake,
# from the Debian source packages of the versions Debian ships: `apt-get source` is pointed at
# a deb-src entry made from this machine's own deb entries, through its own options (a private
# source list, lists directory and cache), so the machine's apt configuration is never changed.
#
# The result is installed into a cache outside the tree, keyed by the emcc and library
# versions, so CI and later builds reuse it:
#     ${FLASHSTEP_WEB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flashstep/web}/<key>/{include,lib}
# Prints that prefix on stdout (the only line it prints there); progress goes to stderr.
#
#     scripts/web-libs.sh            build if missing, print the prefix
#     scripts/web-libs.sh --prefix   print the prefix it would use, build nothing
set -euo pipefail

SDL_SRC=libsdl2 SDL_VER=2.26.5
TTF_SRC=libsdl2-ttf TTF_VER=2.20.1
FT_SRC=freetype FT_VER=2.12.1
Z_SRC=zlib Z_VER=1.2.13        # for the window's PNG files (P saves a frame), as natively

export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}   # emcc's node finds Debian's acorn there
command -v emcc >/dev/null || { echo "web-libs: emcc not found (apt-get install emscripten)" >&2; exit 1; }
emver=$(emcc --version 2>/dev/null | sed -n '1s/.* \([0-9][0-9.]*\) .*/\1/p')
RECIPE=2   # raise when the build below changes, so that caches are rebuilt
key="emcc-${emver:-unknown}_sdl2-${SDL_VER}_ttf-${TTF_VER}_ft-${FT_VER}_z-${Z_VER}_r${RECIPE}"
root=${FLASHSTEP_WEB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flashstep/web}
prefix=$root/$key
if [ "${1:-}" = "--prefix" ]; then echo "$prefix"; exit 0; fi
if [ -f "$prefix/.complete" ]; then echo "$prefix"; exit 0; fi

log() { echo "web-libs: $*" >&2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/flashstep-web-libs.XXXXXX")
trap 'rm -rf "$work"' EXIT
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
t0=$(date +%s)

# --- sources: deb-src entries made from the machine's deb entries, apt pointed at them only ---
apt_dir=$work/apt
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
n_src=0
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >> "$apt_dir/sources.list.d/flashstep.list"
done
[ -s "$apt_dir/sources.list.d/flashstep.list" ] && n_src=1
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  # deb822: the same stanzas, typed deb-src
  sed 's/^Types:.*/Types: deb-src/' "$f" > "$apt_dir/sources.list.d/$(basename "$f")"
  n_src=1
done
[ $n_src -eq 1 ] || { log "no apt sources found in /etc/apt to derive deb-src entries from"; exit 1; }
apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
          -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Sandbox::User=root"
          -o "Debug::NoLocking=1" -qq)
log "reading the Debian source index (private lists under a temporary directory)"
apt-get "${apt_opts[@]}" update >&2
mkdir -p "$work/src"
# apt-get source $1, the newest version the index lists; where its files cannot be fetched (a
# mirror's security pool can lag its index: zlib's +deb12u1 gave 404s on 2026-12-02), each older
# version listed whose upstream version is $2, newest first
fetch() {
  log "apt-get source $1"
  apt-get "${apt_opts[@]}" source "$1" >/dev/null 2>"$work/source-$1.log" && return 0
  local v
  for v in $(apt-cache "${apt_opts[@]}" showsrc "$1" | sed -n 's/^Version: //p' | sort -rVu | tail -n +2); do
    case "${v#*:}" in "$2"*) ;; *) continue ;; esac
    log "apt-get source $1=$v (the newest version's files could not be fetched)"
    apt-get "${apt_opts[@]}" source "$1=$v" >/dev/null 2>>"$work/source-$1.log" && return 0
  done
  cat "$work/source-$1.log" >&2
  return 1
}
(
  cd "$work/src"
  fetch "$SDL_SRC" "$SDL_VER" && fetch "$TTF_SRC" "$TTF_VER" && fetch "$FT_SRC" "$FT_VER" && fetch "$Z_SRC" "$Z_VER" || exit 1
)
srcdir() {   # the unpacked directory of a source package whose upstream version is $2
  local d
  d=$(find "$work/src" -maxdepth 1 -type d -name "$1-$2[+.-]*" -o -maxdepth 1 -type d -name "$1-$2" | head -n 1)
  [ -n "$d" ] || { log "no unpacked $1 $2 in $(ls "$work/src" | tr '\n' ' ') (the archive holds another version: update the versions at the top of this script)"; exit 1; }
  echo "$d"
}
sdl=$(srcdir "$SDL_SRC" "$SDL_VER")
ttf=$(srcdir "$TTF_SRC" "$TTF_VER")
ft=$(srcdir "$FT_SRC" "$FT_VER")
zl=$(srcdir "$Z_SRC" "$Z_VER")
# FS_WEB_LIBS_FETCH_ONLY=1 (tests/setup/web-libs.sh): stop once the sources are fetched and found
if [ "${FS_WEB_LIBS_FETCH_ONLY:-}" = 1 ]; then printf '%s\n' "$sdl" "$ttf" "$ft" "$zl" | xargs -n1 basename; exit 0; fi

# --- build: static, release, nothing optional ---
stage=$work/prefix
common=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$stage" -DCMAKE_PREFIX_PATH="$stage"
        -DCMAKE_FIND_ROOT_PATH="$stage" -DBUILD_SHARED_LIBS=OFF -Wno-dev)
build() {   # name, source dir, cmake options...
  local name=$1 src=$2; shift 2
  log "building $name"
  emcmake cmake -S "$src" -B "$work/build-$name" "${common[@]}" "$@" >"$work/$name.log" 2>&1 \
    && cmake --build "$work/build-$name" -j "$jobs" >>"$work/$name.log" 2>&1 \
    && cmake --install "$work/build-$name" >>"$work/$name.log" 2>&1 \
    || { tail -n 40 "$work/$name.log" >&2; log "$name failed (whole log above, last 40 lines)"; exit 1; }
}
# zlib: Debian's source drops the Windows files its CMakeLists names, so the library's sources
# are compiled directly (they need no configuration).
log "building zlib"
mkdir -p "$work/build-zlib" "$stage/include" "$stage/lib"
for c in adler32 compress crc32 deflate gzclose gzlib gzread gzwrite infback inffast inflate inftrees trees uncompr zutil; do
  emcc -O2 -DHAVE_UNISTD_H -c "$zl/$c.c" -o "$work/build-zlib/$c.o" 2>>"$work/zlib.log" \
    || { cat "$work/zlib.log" >&2; log "zlib failed"; exit 1; }
done
emar rcs "$stage/lib/libz.a" "$work"/build-zlib/*.o
cp "$zl/zlib.h" "$zl/zconf.h" "$stage/include/"
build sdl2 "$sdl" -DSDL_SHARED=OFF -DSDL_STATIC=ON -DSDL_TEST=OFF -DSDL_THREADS=OFF
# FreeType reads gzip-compressed fonts through our zlib (its own copy would clash with it)
build freetype "$ft" -DFT_REQUIRE_ZLIB=ON -DZLIB_INCLUDE_DIR="$stage/include" -DZLIB_LIBRARY="$stage/lib/libz.a" \
  -DFT_DISABLE_BZIP2=ON -DFT_DISABLE_PNG=ON -DFT_DISABLE_HARFBUZZ=ON -DFT_DISABLE_BROTLI=ON
build sdl2_ttf "$ttf" -DSDL2TTF_SAMPLES=OFF -DSDL2TTF_VENDORED=OFF -DSDL2TTF_HARFBUZZ=OFF \
  -DSDL2TTF_INSTALL=ON -DFREETYPE_INCLUDE_DIRS="$stage/include/freetype2" \
  -DFREETYPE_LIBRARY="$stage/lib/libfreetype.a" -DSDL2_DIR="$stage/lib/cmake/SDL2"

for lib in libSDL2.a libfreetype.a libSDL2_ttf.a libz.a; do
  [ -f "$stage/lib/$lib" ] || { log "the build made no $lib"; exit 1; }
done
mkdir -p "$root"
rm -rf "$prefix"
cp -r "$stage" "$prefix"
touch "$prefix/.complete"
log "done in $(( $(date +%s) - t0 )) s: $prefix"
echo "$prefix"
