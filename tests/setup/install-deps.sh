#!/usr/bin/env bash
# tests/setup/install-deps.sh: does scripts/install-deps.sh decide on OpenBLAS by OpenBLAS itself?
#
# It runs the script with --dry-run (it only names what is missing) against the states a new
# machine can be in, made in a temporary directory: pkg-config sees only the .pc files we put
# there (PKG_CONFIG_LIBDIR), and header checks look under FS_SYSROOT.
set -uo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0

# state NAME EXPECT: EXPECT is "missing" or "present" for libopenblas-dev.
state() {
  local name=$1 expect=$2 root=$tmp/$1 out
  out=$(FS_SYSROOT=$root PKG_CONFIG_LIBDIR=$root/pc PKG_CONFIG_PATH= bash scripts/install-deps.sh --dry-run 2>&1)
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

exit $fail
