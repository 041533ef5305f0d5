#!/usr/bin/env bash
# tests/setup/install-deps.sh: does scripts/install-deps.sh decide on OpenBLAS by OpenBLAS itself,
# and does it install quietly: one line before, one after, the package manager's output in a log,
# the log's tail and a distinct exit status when a step fails?
#
# Part one runs the script with --dry-run (it only names what is missing) against the states a
# new machine can be in, made in a temporary directory: pkg-config sees only the .pc files we put
# there (PKG_CONFIG_LIBDIR), and header checks look under FS_SYSROOT.
# Part two puts stand-ins first on PATH (apt-get, sudo, id, pkg-config, brew, uname, and every
# program the script looks for) and a complete machine under FS_SYSROOT, so that exactly the
# packages a test names are missing, and checks what the script prints, what it logs, what it
# asks apt-get or Homebrew to do and how it exits. Nothing is installed.
# shellcheck disable=SC2016,SC2034  # the checks are strings that expect() evaluates
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0

# ---- part one: OpenBLAS, judged by OpenBLAS itself ----------------------------------------

# state NAME EXPECT: EXPECT is "missing" or "present" for libopenblas-dev.
state() {
  local name=$1 expect=$2 root=$tmp/$1 out
  out=$(FS_SYSROOT=$root PKG_CONFIG_LIBDIR=$root/pc PKG_CONFIG_PATH='' bash scripts/install-deps.sh --dry-run 2>&1)
  if grep -qw libopenblas-dev <<<"$out"; then got=missing; else got=present; fi
  if [ "$got" = "$expect" ]; then echo "install-deps: $name: OpenBLAS $got: ok"
  else echo "install-deps: $name: OpenBLAS judged $got, expected $expect ($out)"; fail=1; fi
}

# Only Debian's reference BLAS: a cblas.h exists, but it is not OpenBLAS.
mkdir -p "$tmp/refonly/usr/include/x86_64-linux-gnu" "$tmp/refonly/pc"
: > "$tmp/refonly/usr/include/x86_64-linux-gnu/cblas.h"
printf 'Name: blas\nDescription: reference\nVersion: 3.11\nLibs: -lblas\n' > "$tmp/refonly/pc/blas.pc"
state refonly missing

# Nothing at all.
mkdir -p "$tmp/none/pc"
state none missing

# OpenBLAS with its pkg-config file (Debian, Ubuntu, Homebrew).
mkdir -p "$tmp/pcfile/pc"
printf 'Name: openblas\nDescription: OpenBLAS\nVersion: 0.3\nLibs: -lopenblas\nCflags:\n' > "$tmp/pcfile/pc/openblas.pc"
state pcfile present

# OpenBLAS's own header without a pkg-config file.
mkdir -p "$tmp/header/usr/include/x86_64-linux-gnu/openblas-pthread" "$tmp/header/pc"
: > "$tmp/header/usr/include/x86_64-linux-gnu/openblas-pthread/openblas_config.h"
state header present

# ---- part two: the output of an install ------------------------------------------------------

bin=$tmp/bin mac=$tmp/mac full=$tmp/full calls=$tmp/calls
mkdir -p "$bin" "$mac"
# Every program a check looks for, present.
for p in cc make fc-match Xvfb xauth python3 tmux clang emcc cmake dpkg-source xz bzip2 chromium; do
  printf '#!/bin/sh\nexit 0\n' > "$bin/$p"
done
# pkg-config: every module present except those named in FAKE_PC_MISSING.
cat > "$bin/pkg-config" <<'EOF'
#!/bin/sh
for m in $FAKE_PC_MISSING; do [ "$m" = "$2" ] && exit 1; done
exit 0
EOF
# id -u: FAKE_UID (0: root, otherwise a user who needs sudo).
cat > "$bin/id" <<'EOF'
#!/bin/sh
echo "$FAKE_UID"
EOF
# sudo: says it was used, then runs the command.
cat > "$bin/sudo" <<'EOF'
#!/bin/sh
printf 'sudo ' >> "$FAKE_CALLS"
exec "$@"
EOF
# apt-get: chatty like the real one; FAKE_APT says how it ends (ok, fail-update, fail-install,
# noisy: 500 lines with escape sequences and carriage returns, then the install fails; offline:
# update only warns that it fetched nothing, as the real one does without a network, and exits 0,
# then the install finds no package).
cat > "$bin/apt-get" <<'EOF'
#!/bin/sh
echo "apt-get $*" >> "$FAKE_CALLS"
case $1 in
  update)
    echo "Hit:1 fake-apt update output"; echo "Reading package lists..."
    [ "$FAKE_APT" = fail-update ] && { echo "E: fake update failure" >&2; exit 100; }
    [ "$FAKE_APT" = offline ] && {
      echo "W: Failed to fetch http://deb.example/dists/x/InRelease  Temporary failure resolving 'deb.example'" >&2
      echo "W: Failed to fetch http://sec.example/dists/x/InRelease  Temporary failure resolving 'sec.example'" >&2
      echo "W: Some index files failed to download. They have been ignored, or old ones used instead." >&2; }
    exit 0 ;;
  install)
    echo "fake-apt install output: Setting up $*"
    if [ "$FAKE_APT" = noisy ]; then
      i=1; while [ $i -le 500 ]; do printf 'fake line %d \033[31mred\033[0m\r\n' $i; i=$((i + 1)); done
      echo "E: noisy failure" >&2; exit 100
    fi
    [ "$FAKE_APT" = fail-install ] && { echo "E: fake install failure" >&2; exit 100; }
    [ "$FAKE_APT" = offline ] && { echo "E: Unable to locate package libsdl2-dev" >&2; exit 100; }
    exit 0 ;;
esac
exit 0
EOF
# macOS: uname says Darwin; brew lists every formula except FAKE_BREW_MISSING.
cat > "$mac/uname" <<'EOF'
#!/bin/sh
echo Darwin
EOF
cat > "$mac/brew" <<'EOF'
#!/bin/sh
echo "brew $*" >> "$FAKE_CALLS"
case $1 in
  list) for f in $FAKE_BREW_MISSING; do [ "$f" = "$3" ] && exit 1; done; exit 0 ;;
  install) echo "==> fake brew output: Pouring $*"
    [ "$FAKE_APT" = fail-install ] && { echo "Error: fake brew failure" >&2; exit 1; }
    exit 0 ;;
esac
EOF
chmod +x "$bin"/* "$mac"/*
# A machine with every file a check looks at.
mkdir -p "$full/usr/share/fonts/truetype/dejavu" "$full/usr/include/vulkan" \
  "$full/usr/lib/python3/dist-packages/numpy" "$full/usr/lib/llvm-16/lib/clang/16/lib/linux"
: > "$full/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
: > "$full/usr/include/gif_lib.h"
: > "$full/usr/include/vulkan/vk_layer.h"
: > "$full/usr/lib/llvm-16/lib/clang/16/lib/linux/libclang_rt.fuzzer-x86_64.a"

# run NAME [VAR=VALUE...] -- ARGS: the script with the stand-ins; sets rc, out (stdout), err
# (stderr) and leaves what apt-get and sudo were asked in $calls.
run() {
  local name=$1; shift
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done; shift
  rm -f "$calls"; : > "$calls"
  env PATH="$bin:$PATH" FS_SYSROOT="$full" XDG_CACHE_HOME="$tmp/cache-$name" TMPDIR="$tmp" \
    FAKE_CALLS="$calls" FAKE_UID=0 FAKE_APT=ok FAKE_PC_MISSING="sdl2 check" "${vars[@]}" \
    bash scripts/install-deps.sh "$@" > "$tmp/out" 2> "$tmp/err"
  rc=$?; out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
}
# expect NAME CONDITION MESSAGE: one check, reported.
expect() {
  if eval "$2"; then return 0; fi
  echo "install-deps: $1: $3"
  echo "  exit status $rc; stdout:"; sed 's/^/    /' "$tmp/out" | cat -v
  echo "  stderr:"; sed 's/^/    /' "$tmp/err" | cat -v
  echo "  apt-get/brew calls:"; sed 's/^/    /' "$calls"
  fail=1; return 1
}
ok() { echo "install-deps: $1: ok"; }
log=$tmp/cache-ok/flashstep/install-deps.log

# Nothing missing: nothing printed, nothing run.
run quiet FAKE_PC_MISSING= -- 
expect quiet '[ $rc -eq 0 ] && [ -z "$out$err" ] && [ ! -s "$calls" ]' \
  "expected silence and no apt-get when nothing is missing" && ok "nothing missing: silent"

# Two packages missing, root: one line, apt-get quiet in the log, one line when done.
run ok --
line1="install-deps: installing 2 packages: SDL2, Check (log: $log)"
expect ok '[ $rc -eq 0 ]' "exit status $rc, expected 0" &&
expect ok '[ "$(sed -n 1p "$tmp/out")" = "$line1" ]' "first line is not: $line1" &&
expect ok '[ "$(wc -l < "$tmp/out")" -eq 2 ] && grep -qE "^install-deps: done in [0-9]+ s$" <<<"$(sed -n 2p "$tmp/out")"' \
  "expected exactly two lines, the second 'install-deps: done in N s'" &&
expect ok '[ -z "$err" ] && ! grep -q fake-apt "$tmp/out"' "apt-get's output reached the terminal" &&
expect ok 'grep -q "fake-apt update output" "$log" && grep -q "fake-apt install output" "$log"' \
  "the log lacks apt-get's output" &&
expect ok '[ "$(cat "$calls")" = "$(printf "apt-get update\napt-get install -y --no-install-recommends libsdl2-dev check")" ]' \
  "apt-get was not asked to update, then install libsdl2-dev and check" &&
ok "install: two lines, apt-get's output in the log"

# Not root: through sudo, same output.
run sudo FAKE_UID=1000 --
expect sudo '[ $rc -eq 0 ] && [ "$(head -c 5 "$calls")" = "sudo " ] && grep -q "^sudo apt-get install" "$calls"' \
  "apt-get was not run through sudo" &&
expect sudo '[ "$(wc -l < "$tmp/out")" -eq 2 ] && [ -z "$err" ]' "expected two lines, no stderr" && ok "not root: through sudo"

# --dry-run: names the packages, installs nothing.
run dry -- --dry-run
expect dry '[ $rc -eq 0 ] && [ ! -s "$calls" ] && [ "$out" = "install-deps: missing 2 packages: SDL2, Check (apt-get install libsdl2-dev check)" ]' \
  "unexpected dry-run output or calls" && ok "--dry-run: names them, installs nothing"

# apt-get update fails: status 3, said so, the log's tail shown, nothing installed.
run upd FAKE_APT=fail-update --
expect update '[ $rc -eq 3 ]' "exit status $rc, expected 3" &&
expect update 'grep -q "apt-get update failed" <<<"$err" && ! grep -q "install failed" <<<"$err"' \
  "stderr does not say that apt-get update failed" &&
expect update 'grep -q "E: fake update failure" <<<"$err" && grep -q "full log: $tmp/cache-upd/flashstep/install-deps.log" <<<"$err"' \
  "stderr lacks the log's tail or its path" &&
expect update '! grep -q install "$calls"' "apt-get install ran after a failed update" && ok "apt-get update fails: status 3"

# apt-get install fails: status 4.
run inst FAKE_APT=fail-install --
expect install '[ $rc -eq 4 ] && grep -q "apt-get install failed" <<<"$err" && grep -q "E: fake install failure" <<<"$err"' \
  "expected status 4 and 'apt-get install failed' with the log's tail" && ok "apt-get install fails: status 4"

# No network: update exits 0 with warnings, the install fails; the failure names the likely cause.
run offline FAKE_APT=offline --
expect offline '[ $rc -eq 4 ] && grep -q "apt-get install failed" <<<"$err" && grep -q "apt-get update could not fetch 2 package lists" <<<"$err"' \
  "expected status 4 with the note that apt-get update fetched nothing" &&
run inst2 FAKE_APT=fail-install -- && expect offline '! grep -q "could not fetch" <<<"$err"' \
  "the note on apt-get update appeared where update fetched everything" &&
ok "no network: install fails, update's failed fetches named"

# 500 lines with escape sequences, then failure: 20 lines shown, harmless; the log keeps all.
run noisy FAKE_APT=noisy --
nlog=$tmp/cache-noisy/flashstep/install-deps.log
expect noisy '[ $rc -eq 4 ]' "exit status $rc, expected 4" &&
expect noisy '! LC_ALL=C grep -q "[[:cntrl:]]" <<<"$(tr -d "\n" < "$tmp/err")$(tr -d "\n" < "$tmp/out")"' \
  "a control character reached the terminal" &&
expect noisy 'grep -q "fake line 500 " <<<"$err" && grep -q "fake line 482 " <<<"$err" && ! grep -q "fake line 481 " <<<"$err"' \
  "expected the log's last 20 lines (lines 482-500 and the error), no more" &&
expect noisy '[ "$(wc -l < "$tmp/err")" -le 24 ] && [ "$(wc -l < "$nlog")" -ge 500 ] && LC_ALL=C grep -q $'"'"'\033'"'"' "$nlog"' \
  "expected a short stderr and the whole raw output in the log" && ok "500 noisy lines: 20 shown, escapes harmless"

# The cache directory cannot be made (a file stands in the way): a new log in $TMPDIR.
: > "$tmp/afile"
run tmpdir XDG_CACHE_HOME="$tmp/afile/cache" --
expect tmpdir '[ $rc -eq 0 ] && grep -q "(log: $tmp/flashstep-install-deps.log\.[A-Za-z0-9]*)$" <<<"$out"' \
  "expected the log in \$TMPDIR" && ok "cache not writable: log in \$TMPDIR"

# Root with a home it does not own (sudo make run keeping HOME): no root-owned file there.
if [ "$(id -u)" -eq 0 ] && mkdir -p "$tmp/userhome" && chown 65534 "$tmp/userhome" 2>/dev/null; then
  run roothome HOME="$tmp/userhome" XDG_CACHE_HOME= --
  expect roothome '[ $rc -eq 0 ] && [ ! -e "$tmp/userhome/.cache" ] && grep -q "(log: $tmp/flashstep-" <<<"$out"' \
    "root wrote into a home it does not own" && ok "root, someone else's home: log in \$TMPDIR"
fi

# --web: its own list (here only the fonts and the Vulkan headers are missing) and its own log.
run web FAKE_PC_MISSING= -- --web
expect web '[ $rc -eq 0 ] && [ -z "$out" ]' "expected silence with every web tool present" &&
run web FAKE_PC_MISSING= FS_SYSROOT="$tmp/none" -- --web
expect web '[ $rc -eq 0 ] && [ "$(sed -n 1p "$tmp/out")" = "install-deps: installing 2 packages: DejaVu fonts, the Vulkan headers (log: $tmp/cache-web/flashstep/install-deps-web.log)" ]' \
  "unexpected --web output" && ok "--web: the fonts and the Vulkan headers, its own log"

# macOS: Homebrew, the same two lines; its failure is status 4 with the tail.
run mac PATH="$mac:$bin:$PATH" FAKE_BREW_MISSING="sdl2 openblas" --
expect mac '[ $rc -eq 0 ] && [ "$(sed -n 1p "$tmp/out")" = "install-deps: installing 2 formulas with Homebrew: SDL2, OpenBLAS (log: $tmp/cache-mac/flashstep/install-deps.log)" ]' \
  "unexpected Homebrew line" &&
expect mac 'grep -q "^brew install sdl2 openblas$" "$calls" && grep -q "fake brew output" "$tmp/cache-mac/flashstep/install-deps.log" && ! grep -q "fake brew" "$tmp/out"' \
  "brew install not run, or its output not in the log" && ok "macOS: Homebrew, two lines"
run macfail PATH="$mac:$bin:$PATH" FAKE_BREW_MISSING="sdl2" FAKE_APT=fail-install --
expect macfail '[ $rc -eq 4 ] && grep -q "brew install failed" <<<"$err" && grep -q "Error: fake brew failure" <<<"$err"' \
  "expected status 4 and brew's error" && ok "macOS: brew fails, status 4"

# --help tells the options the script takes; a wrong one is status 2.
run help -- --help
expect help '[ $rc -eq 0 ] && grep -q -- "--dry-run" <<<"$out" && grep -q -- "--web" <<<"$out" && grep -q "Exit status" <<<"$out"' \
  "--help does not list the options and exit statuses" &&
run bad -- --nonsense && expect bad '[ $rc -eq 2 ] && grep -q "unknown option" <<<"$err"' "a bad option did not exit 2" &&
ok "--help, and a bad option"

exit $fail
