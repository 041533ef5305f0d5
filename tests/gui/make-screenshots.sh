#!/usr/bin/env bash
# make-screenshots.sh: the window screenshots in docs/img (for README and docs/gui.md), drawn by
# `flashstep render` from the current code. Run from the repository root after `make`.
set -euo pipefail
bin=${1:-build/flashstep}
font=/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf
out=docs/img
mkdir -p "$out"
# name  what (a lesson, or demo:NAME)  step  extra options
while read -r name what step extra; do
  case $what in demo:*) what="--demo ${what#demo:}" ;; esac
  # shellcheck disable=SC2086
  "$bin" render $what --step "$step" --font "$font" --out "$out/gui-$name.png" $extra
done <<'LIST'
softmax      000_01                1
query        000_02                3
tiled        000_04                18
tiled-light  000_04                18   --theme light
tree         000_07                15
window       003_08                38
gqa          demo:gqa              60
decode       000_05                3
decode-tree  demo:decode-tree      14
pitfall      001_10                3
backward     000_11                20
dropout-forward  002_03            21
dropout-backward 004_14            52
fp8          004_10                6
paged        demo:paged            30
grid64       demo:grid64           240  --size 1920x1080
ring         ring_03               40
upright      000_04                18   --size 540x1080 --zoom 150
LIST
# The animated GIF README shows: ten steps of 000's tiled example at one step a second.
"$bin" render 000_04 --steps 10:19 --size 1024x576 --fps 1 --font "$font" --out "$out/tiled-steps.gif"
