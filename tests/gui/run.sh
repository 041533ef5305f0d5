#!/usr/bin/env bash
# run.sh: the window's tests under a virtual X display (make test-gui runs it inside xvfb-run).
#   tests/gui/run.sh BIN [SAN_BIN]
# 1. every lesson opens in the window, plays all its events (at 8192 events/s) and exits 0;
# 2. synthetic key and mouse input (controls, predict, splits scripts) drives every control, and
#    every 'expect' line must hold (the questions are on by default: the scripts that are not
#    about them run with --no-questions; --autoplay starts without them); P saves a frame,
#    which must be a readable PNG; a frame drawn in the window matches its reference image
#    (window-frames.script);
# 3. with SAN_BIN (an ASan+UBSan build), a third of the lessons play again there and are drawn
#    offscreen with leak checking (the lessons k with k mod 3 = PART, PART from the clock or
#    FS_GUI_PART, printed: three runs in a row cover them all; the sanitized unit tests draw
#    frames of every lesson each run): any leak or error fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(realpath "${1:-$root/build/flashstep}")
san=${2:-}
[ -n "$san" ] && san=$(realpath "$san")
font=/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
[ -n "${DISPLAY:-}" ] || { echo "test-gui: no DISPLAY (run me under xvfb-run)" >&2; exit 1; }
fail=0
t0=$(date +%s)

play_all() {   # play_all BIN LABEL [PART]: every lesson, or those k with k mod 3 = PART
  local b=$1 label=$2 part=${3:-} k=-1 n=0
  while read -r lesson; do
    k=$((k + 1))
    [ -z "$part" ] || [ $((k % 3)) = "$part" ] || continue
    n=$((n + 1))
    if ! "$b" play "$lesson" --autoplay --exit-at-end --speed 8192 --font "$font" --max-seconds 90 \
         >"$tmp/out.txt" 2>&1; then
      echo "test-gui: $label: $(basename "$lesson") failed:" >&2
      tail -n 30 "$tmp/out.txt" >&2
      fail=1
    fi
  done < <("$b" lessons --paths)
  echo "test-gui: $label: $n lessons played to the end"
}

play_all "$bin" plain
for demo in softmax query tiled tree window gqa decode decode-tree pitfall grid64 paged; do
  "$bin" play --demo $demo --autoplay --exit-at-end --speed 8192 --font "$font" --max-seconds 60 >/dev/null 2>"$tmp/err.txt" ||
    { echo "test-gui: demo $demo failed" >&2; cat "$tmp/err.txt" >&2; fail=1; }
done
echo "test-gui: demos played"
# One's own problem and a saved trace (the engine's, a CUDA kernel's, a backward one, with dropout) play to the end too.
t="$root/tests/gui/traces"
for args in "--q $t/q.txt --k $t/k.txt --v $t/v.txt --mask causal" "--q $t/q.txt --k $t/k.txt --v $t/v.txt --decode --merge tree" \
            "--q $t/q.txt --k $t/k.txt --v $t/v.txt --decode --page-size 2 --seed 5" "--trace $t/paged.jsonl" \
            "--trace $t/tiled.jsonl" "--trace $t/cuda-tiled.jsonl" "--trace $t/backward.jsonl" \
            "--q $t/q.txt --k $t/k.txt --v $t/v.txt --mask causal --dropout 0.3 --seed 5" \
            "--q $t/q.txt --k $t/k.txt --v $t/v.txt --backward --do $t/do.txt --dropout 0.3 --seed 5" \
            "--trace $t/dropout.jsonl"; do
  # shellcheck disable=SC2086
  "$bin" play $args --autoplay --exit-at-end --speed 8192 --font "$font" --max-seconds 60 >/dev/null 2>"$tmp/err.txt" ||
    { echo "test-gui: play $args failed" >&2; cat "$tmp/err.txt" >&2; fail=1; }
done
echo "test-gui: own problems and saved traces played"

"$bin" play --demo tiled --size 1280x720 --font "$font" --script "$root/tests/gui/controls.script" --no-questions --max-seconds 60 ||
  { echo "test-gui: controls.script failed" >&2; fail=1; }
"$bin" play --demo softmax --size 1280x720 --font "$font" --script "$root/tests/gui/predict.script" --max-seconds 60 ||
  { echo "test-gui: predict.script failed" >&2; fail=1; }
"$bin" play 000_04 --size 1280x720 --font "$font" --script "$root/tests/gui/predict-keys.script" --max-seconds 60 ||
  { echo "test-gui: predict-keys.script failed" >&2; fail=1; }
"$bin" play --demo tiled --size 1280x720 --font "$font" --script "$root/tests/gui/window-frames.script" --no-questions --max-seconds 60 ||
  { echo "test-gui: window-frames.script failed (a window frame differs from tests/gui/ref)" >&2; fail=1; }
"$bin" play --demo decode --size 1280x720 --font "$font" --script "$root/tests/gui/splits.script" --no-questions --max-seconds 60 ||
  { echo "test-gui: splits.script failed" >&2; fail=1; }
"$bin" play 000_04 --size 1280x720 --font "$font" --script "$root/tests/gui/try.script" --no-questions --max-seconds 60 ||
  { echo "test-gui: try.script failed" >&2; fail=1; }
for f in controls-frame.png flashstep-tiled-0000.png; do
  [ -s "$f" ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] ||
    { echo "test-gui: $f was not written as a PNG" >&2; fail=1; }
done
echo "test-gui: scripted input done"

# The header numbers a lesson by its place in the course (`lessons --course`), not in the files.
pos=$("$bin" lessons --course | awk '/ ring_01_/ { print $1; exit }')
printf 'wait 100\nexpect course %s\nquit\n' "$pos" >course.script
"$bin" play ring_01 --size 1280x720 --font "$font" --script course.script --no-questions --max-seconds 60 ||
  { echo "test-gui: the header's course number of ring_01 is not $pos" >&2; fail=1; }
# A bad script is reported with file:line:column and exit 2.
printf 'key Right\nkey Nope\n' >bad.script
set +e
"$bin" play --demo tiled --font "$font" --script bad.script 2>err.txt; rc=$?
set -e
if [ $rc -ne 2 ] || ! grep -q 'bad.script:2:5: unknown key' err.txt; then
  echo "test-gui: bad script: rc $rc, $(cat err.txt)" >&2; fail=1
fi
# A missing font is a clear message, not a crash.
set +e
"$bin" play --demo tiled --font /nonexistent.ttf --autoplay --exit-at-end 2>err.txt; rc=$?
set -e
if [ $rc -ne 2 ] || ! grep -q "cannot open font '/nonexistent.ttf'" err.txt; then
  echo "test-gui: missing font: rc $rc, $(cat err.txt)" >&2; fail=1
fi

if [ -n "$san" ]; then
  # (each lesson under the sanitizers costs about a second to start and play, 236 s for all of
  # them both ways on this project's 2-core machine alone: a third a run)
  part=${FS_GUI_PART:-$(( $(date +%s) % 3 ))}
  case $part in 0|1|2) ;; *) echo "test-gui: FS_GUI_PART wants 0, 1 or 2, got '$part'" >&2; exit 2 ;; esac
  echo "test-gui: under ASan+UBSan the lessons k with k mod 3 = $part this run (FS_GUI_PART=$part replays it)"
  # The window under ASan+UBSan: memory errors and undefined behaviour fail the run. Leak checking
  # is off here because SDL's X11 backend dlopens and unloads libraries whose few one-time
  # allocations LeakSanitizer can then no longer attribute (and so cannot suppress) ...
  ASAN_OPTIONS=detect_leaks=0:exitcode=23 play_all "$san" asan-window "$part"
  for sc in controls:tiled predict:softmax splits:decode; do
    # shellcheck disable=SC2046
    ASAN_OPTIONS=detect_leaks=0:exitcode=23 "$san" play --demo "${sc#*:}" --size 1280x720 --font "$font" \
      --script "$root/tests/gui/${sc%%:*}.script" $([ "${sc%%:*}" = predict ] || echo --no-questions) --max-seconds 120 >/dev/null 2>"$tmp/err.txt" ||
      { echo "test-gui: asan-window: ${sc%%:*}.script failed:" >&2; tail -n 30 "$tmp/err.txt" >&2; fail=1; }
  done
  ASAN_OPTIONS=detect_leaks=0:exitcode=23 "$san" play 000_04 --size 1280x720 --font "$font" \
    --script "$root/tests/gui/predict-keys.script" --max-seconds 120 >/dev/null 2>"$tmp/err.txt" ||
    { echo "test-gui: asan-window: predict-keys.script failed:" >&2; tail -n 30 "$tmp/err.txt" >&2; fail=1; }
  for tr in tiled cuda-tiled; do
    ASAN_OPTIONS=detect_leaks=0:exitcode=23 "$san" play --trace "$root/tests/gui/traces/$tr.jsonl" --autoplay --exit-at-end \
      --speed 8192 --font "$font" --max-seconds 120 >/dev/null 2>"$tmp/err.txt" ||
      { echo "test-gui: asan-window: --trace $tr.jsonl failed:" >&2; tail -n 30 "$tmp/err.txt" >&2; fail=1; }
  done
  # ... and on for the same drawing code offscreen, where no video driver is loaded: the first
  # 12 steps of the same third of the lessons, and every step of the demos.
  export ASAN_OPTIONS=detect_leaks=1:exitcode=23
  export LSAN_OPTIONS=suppressions=$root/tests/gui/lsan.supp:print_suppressions=0
  n=0 k=-1
  while read -r lesson; do
    k=$((k + 1))
    [ $((k % 3)) = "$part" ] || continue
    n=$((n + 1))
    mkdir -p frames
    if ! "$san" render "$lesson" --steps 0:11 --out-dir frames --font "$font" >/dev/null 2>"$tmp/err.txt"; then
      echo "test-gui: asan-render: $(basename "$lesson") failed:" >&2; tail -n 30 "$tmp/err.txt" >&2; fail=1
    fi
    rm -rf frames
  done < <("$san" lessons --paths)
  for demo in softmax query tiled tree window gqa decode decode-tree pitfall paged; do
    mkdir -p frames
    "$san" render --demo $demo --steps 0: --out-dir frames --font "$font" >/dev/null 2>"$tmp/err.txt" ||
      { echo "test-gui: asan-render: demo $demo failed:" >&2; tail -n 30 "$tmp/err.txt" >&2; fail=1; }
    rm -rf frames
  done
  echo "test-gui: asan-render: $n lessons and the demos drawn with leak checking"
fi
echo "test-gui: $(( $(date +%s) - t0 )) s"
[ $fail -eq 0 ] && echo "test-gui: all passed"
exit $fail
