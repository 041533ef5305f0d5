#!/usr/bin/env bash
# web-axe.sh: axe-core, the accessibility rules engine the page's test loads into the page
# (tests/web/check_a11y.py), installed once with npm into a cache outside the tree, beside the
# web build's libraries (scripts/web-libs.sh). Never part of the page: build/web does not get it.
#
#     scripts/web-axe.sh     install if missing, print the path of axe.min.js (the only line on stdout)
#
# The version is pinned, so that a new rule of a later axe-core cannot fail the test unseen.
set -euo pipefail
AXE_VER=4.14.1
root=${FLASHSTEP_WEB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flashstep/web}
prefix=$root/axe-core-$AXE_VER
js=$prefix/node_modules/axe-core/axe.min.js
if [ -f "$js" ]; then echo "$js"; exit 0; fi
command -v npm >/dev/null || { echo "web-axe: npm not found (bash scripts/install-deps.sh --web)" >&2; exit 1; }
mkdir -p "$prefix"
echo "web-axe: npm install axe-core@$AXE_VER into $prefix" >&2
npm install --prefix "$prefix" --no-audit --no-fund --no-save --loglevel=error "axe-core@$AXE_VER" >&2
[ -f "$js" ] || { echo "web-axe: npm installed no $js" >&2; exit 1; }
echo "$js"
