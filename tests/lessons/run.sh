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
echo "tests/lessons: $((n - fail)) of $n fixtures and usage checks behave"
[ $fail -eq 0 ]
