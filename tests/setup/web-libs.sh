#!/usr/bin/env bash
# tests/setup/web-libs.sh: does scripts/web-libs.sh find its four source packages when the newest
# version the index lists cannot be fetched (a mirror's security pool lagging its index: zlib's
# +deb12u1 answered 404 on 2026-12-02), and fail with apt's words when no version can be?
# Stand-ins first on PATH: emcc (a version line), apt-get (update; `source P` unpacks P-VERSION,
# except the packages named in FAKE_SOURCE_404, whose newest version fails and whose older one
# unpacks unless FAKE_SOURCE_404_ALL), apt-cache (showsrc: two versions of zlib, one of the rest).
# FS_WEB_LIBS_FETCH_ONLY stops the script once the sources are found; nothing is built.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# web-libs.sh makes its deb-src entries from the machine's own apt sources (Debian and Ubuntu)
have_apt=0
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do [ -f "$f" ] && have_apt=1; done
if [ $have_apt = 0 ]; then
  echo "web-libs: skipped (no apt sources here: web-libs.sh builds from Debian's source packages)"
  exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bin=$tmp/bin; mkdir -p "$bin"
fail=0
printf '#!/bin/sh\necho "emcc (Emscripten gcc/clang-like replacement + linker emulating GNU ld) 3.1.6 (fake)"\n' > "$bin/emcc"
cat > "$bin/apt-cache" <<'STUB'
#!/bin/sh
for a in "$@"; do last=$a; done
case "$last" in
  zlib) printf 'Package: zlib\nVersion: 1:1.2.13.dfsg-1+deb12u1\n\nPackage: zlib\nVersion: 1:1.2.13.dfsg-1\n' ;;
  *) printf 'Package: %s\nVersion: 1.0-1\n' "$last" ;;
esac
STUB
cat > "$bin/apt-get" <<'STUB'
#!/bin/sh
for a in "$@"; do last=$a; done
echo "$last" >> "$FAKE_CALLS"
case " $* " in *" update "*) exit 0 ;; esac
p=${last%%=*}; v=${last#*=}
dir() { case "$1" in libsdl2) echo libsdl2-2.26.5+dfsg ;; libsdl2-ttf) echo libsdl2-ttf-2.20.1+dfsg ;;
        freetype) echo freetype-2.12.1+dfsg ;; zlib) echo zlib-1.2.13.dfsg ;; esac; }
case " $FAKE_SOURCE_404 " in
  *" $p "*)
    if [ "$p" = "$last" ] || [ "$v" = "1:1.2.13.dfsg-1+deb12u1" ] || [ -n "${FAKE_SOURCE_404_ALL:-}" ]; then
      echo "E: Failed to fetch http://deb.example/pool/$p.dsc  404  Not Found" >&2; exit 100
    fi ;;
esac
mkdir -p "$(dir "$p")"
STUB
chmod +x "$bin"/*
run() {   # name, env assignments...: the script's output in $tmp/NAME.out, .err, status in rc
  local name=$1; shift
  env PATH="$bin:$PATH" FAKE_CALLS="$tmp/$name.calls" FLASHSTEP_WEB_CACHE="$tmp/cache" FS_WEB_LIBS_FETCH_ONLY=1 "$@" \
    bash scripts/web-libs.sh > "$tmp/$name.out" 2> "$tmp/$name.err"
  rc=$?
}
check() { if eval "$2"; then echo "web-libs: $1: ok"; else echo "web-libs: $1: FAILED ($(tail -3 "$tmp/$3.err" | tr '\n' ' '))"; fail=1; fi; }

run plain FAKE_SOURCE_404=
check "every source fetched at once" '[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/plain.out")" -eq 4 ] && ! grep -q "=" "$tmp/plain.calls"' plain
run lag FAKE_SOURCE_404=zlib
check "zlib's newest version 404: the older listed one taken" '[ $rc -eq 0 ] && grep -qx "zlib-1.2.13.dfsg" "$tmp/lag.out" &&
  grep -qx "zlib=1:1.2.13.dfsg-1" "$tmp/lag.calls" && ! grep -q "deb12u1" "$tmp/lag.calls" &&
  grep -q "could not be fetched" "$tmp/lag.err"' lag
run none FAKE_SOURCE_404=zlib FAKE_SOURCE_404_ALL=1
check "no version of zlib fetched: status 1 with apt's error" '[ $rc -eq 1 ] && grep -q "404  Not Found" "$tmp/none.err" && [ ! -s "$tmp/none.out" ]' none
exit $fail
