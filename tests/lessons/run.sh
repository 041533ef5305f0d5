#!/usr/bin/env bash
# run.sh: malformed and mismatching lessons through `flashstep verify`.
# Each fixture's first line says what must happen:
#   # expect-error: LINE:COL: TEXT   exit 2, one line on stderr "FILE:LINE:COL: ...TEXT..."
#   # expect-exit: N                 exit status N
# usage: tests/lessons/run.sh path/to/flashstep
set -u
bin=${1:?usage: run.sh FLASHSTEP}
dir=$(dirname "$0")
fail=0 n=0
for f in "$dir"/*.lesson; do
  n=$((n + 1))
  head=$(head -1 "$f")
  err=$("$bin" verify "$f" 2>&1 >/dev/null); rc=$?
  case "$head" in
    "# expect-error: "*)
      want=${head#"# expect-error: "}
      loc=${want%%: *}; text=${want#*: }
      lines=$(printf '%s\n' "$err" | grep -c .)
      if [ $rc -ne 2 ] || [ "$lines" -ne 1 ] || [[ "$err" != "$f:$loc: "* ]] || [[ "$err" != *"$text"* ]]; then
        echo "FAIL $f: want exit 2 and '$f:$loc: ...$text...', got exit $rc: $err"; fail=$((fail + 1))
      fi ;;
    "# expect-exit: "*)
      want=${head#"# expect-exit: "}
      if [ $rc -ne "$want" ]; then echo "FAIL $f: want exit $want, got $rc: $err"; fail=$((fail + 1)); fi ;;
    *) echo "FAIL $f: no '# expect-error:' or '# expect-exit:' line"; fail=$((fail + 1)) ;;
  esac
done
# An option that needs a value, given last with none: one line naming it, exit 2 (it used to be
# called an unknown option).
for args in "verify --format" "verify --dir" "lessons --dir" "play 000_01 --terminal --digits"; do
  n=$((n + 1))
  opt=${args##* }
  err=$("$bin" $args 2>&1 >/dev/null </dev/null); rc=$?
  if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$err" | grep -c .)" -ne 1 ] || [[ "$err" != *"$opt needs a value"* ]]; then
    echo "FAIL '$args': want exit 2 and one line '... $opt needs a value', got exit $rc: $err"; fail=$((fail + 1))
  fi
done
# Without a display, play falls back to the terminal, but a --script (whose 'expect' lines need
# the window) is refused instead of passing unchecked; a build without the window (make NO_GUI=1)
# refuses the option itself.
n=$((n + 1))
err=$(env -u DISPLAY -u WAYLAND_DISPLAY -u SDL_VIDEODRIVER "$bin" play 000_01 --script "$dir/../gui/controls.script" 2>&1 </dev/null >/dev/null); rc=$?
want="no display for --script"
"$bin" render --help 2>&1 | grep -q "this build has no window" && want="unknown option '--script'"
if [ $rc -ne 2 ] || [[ "$err" != *"$want"* ]]; then
  echo "FAIL play --script without a display: want exit 2 and '$want', got exit $rc: $err"; fail=$((fail + 1))
fi
# The terminal player wraps to the terminal's width ($COLUMNS when stdout is not a terminal), not
# always to 96 columns, which an 80-column terminal broke in the middle of words.
n=$((n + 1))
long=$(COLUMNS=60 "$bin" play 000_04 --terminal --all </dev/null |
       python3 -c 'import sys; print(sum(len(l) > 60 for l in sys.stdin.read().split("\n")))')
if [ "$long" != 0 ]; then echo "FAIL play --terminal with COLUMNS=60: $long lines are longer"; fail=$((fail + 1)); fi
# verify's table keeps its columns when a claim holds non-ASCII characters (000_08's "→").
n=$((n + 1))
cols=$("$bin" verify 000_08 | python3 -c 'import sys; print(len({l.index(" holds") for l in sys.stdin if l.startswith("  ok ")}))')
if [ "$cols" != 1 ]; then echo "FAIL verify 000_08: the verdict column is at $cols positions"; fail=$((fail + 1)); fi
# Text from a lesson file never drives the terminal: escape sequences in a title, narration,
# claim, reason or file name come out as \xHH through lessons, verify and play --terminal.
n=$((n + 1))
python3 "$dir/hostile_text.py" "$bin" || { echo "FAIL $dir/hostile_text.py"; fail=$((fail + 1)); }
n=$((n + 1))
python3 "$dir/play_keys.py" "$bin" || { echo "FAIL $dir/play_keys.py (s on the last claims page)"; fail=$((fail + 1)); }
echo "tests/lessons: $((n - fail)) of $n fixtures and usage checks behave"
[ $fail -eq 0 ]
