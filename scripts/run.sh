#!/usr/bin/env bash
# run.sh: the main job of `make run`.
# With a display and the window built: play the first lesson in the window. Without one: play it
# in the terminal. Before lessons exist: trace 000's n=6 tiled causal example as a table.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/flashstep
if $bin lessons --paths >/dev/null 2>&1; then
  exec $bin play
fi
exec $bin trace --q assets/doc000_tiled/Q.txt --k assets/doc000_tiled/K.txt \
  --v assets/doc000_tiled/V.txt --bq 2 --bk 3 --mask causal --form unnormalized
