#!/usr/bin/env bash
# make-refs.sh: regenerate the reference frames that tests/check_gui.c compares against.
# Run from the repository root after a deliberate change to the look of the window, LOOK at
# every image it writes, and commit them with the change.
set -euo pipefail
bin=${1:-build/flashstep}
font=/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf
out=tests/gui/ref
mkdir -p "$out"
# demo step theme (the same table as frames_match_references in tests/check_gui.c)
while read -r demo step theme; do
  "$bin" render --demo "$demo" --step "$step" --theme "$theme" --font "$font" --out "$out/$demo-$step.png"
done <<'LIST'
tiled 11 dark
softmax 1 light
decode-tree 14 dark
tree 15 contrast
pitfall 11 dark
grid64 240 light
paged 30 dark
paged 14 light
LIST
