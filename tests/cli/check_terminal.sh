#!/usr/bin/env bash
# check_terminal.sh FLASHSTEP: `flashstep check` in a real terminal (tmux): the progress line shows
# while it works, Ctrl-C stops it at once with exit 130 and says so, and the line is cleared.
# A problem drawn fresh (its output random, so the check diagnoses at length on one thread).
# Then the terminal player at 80 x 24 (check_play_terminal.py beside this file).
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
command -v tmux >/dev/null || { echo "check terminal: skipped (no tmux)"; exit 0; }
tmp=$(mktemp -d)
sock=flashstep-check-$$
trap 'tmux -L $sock kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import random, struct, sys
d, rng = sys.argv[1], random.Random()
def npy(path, shape, n):
    hdr = "{'descr': '<f2', 'fortran_order': False, 'shape': (%s), }" % ", ".join(map(str, shape))
    hdr += " " * (63 - (len(hdr) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack(f"<{n}e", *(rng.uniform(-1, 1) for _ in range(n))))
shape = (1, 16, 1024, 64)
for name in "qkvo":
    npy(f"{d}/{name}.npy", shape, 16 * 1024 * 64)
PY
fail=0 passed=0
say() { if [ "$1" = ok ]; then passed=$((passed + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
tmux -L $sock new-session -d -s t -x 160 -y 12 -c "$tmp"
# the shell's prompt first: keys typed before the shell reads its terminal may be dropped
for _ in $(seq 100); do [ -n "$(tmux -L $sock capture-pane -t t -p | tr -d '[:space:]')" ] && break; sleep 0.05; done
tmux -L $sock send-keys -t t "'$bin' check --q q.npy --k k.npy --v v.npy --o o.npy --threads 1; echo status \$?" Enter
seen=
for _ in $(seq 100); do
  screen=$(tmux -L $sock capture-pane -t t -p)
  if grep -q "flashstep check: \(judging\|diagnosing\|fitting\)" <<<"$screen"; then seen=1; break; fi
  grep -q "^status [0-9]" <<<"$screen" && break
  sleep 0.1
done
if [ -n "$seen" ]; then say ok; else say fail "no progress line in the terminal: $(tmux -L $sock capture-pane -t t -p | tail -3)"; fi
tmux -L $sock send-keys -t t C-c
for _ in $(seq 50); do tmux -L $sock capture-pane -t t -p | grep -q "^status [0-9]" && break; sleep 0.1; done
screen=$(tmux -L $sock capture-pane -t t -p)
if grep -q "^flashstep check: interrupted" <<<"$screen" && grep -q "^status 130" <<<"$screen"; then say ok
else say fail "Ctrl-C: $(tail -3 <<<"$screen")"; fi
if grep -q "judging\|diagnosing: run" <<<"$screen"; then say fail "the progress line was left on screen"; else say ok; fi
if python3 "$(dirname "$0")/check_play_terminal.py" "$bin"; then say ok; else say fail "the terminal player (above)"; fi
echo "check terminal: $passed passed, $fail failed"
[ $fail -eq 0 ]
