#!/usr/bin/env python3
"""play_keys.py: keys of the interactive terminal player, through a pseudo-terminal.

`s` (next significant step) on the last page (the lesson's ending, after its claims) must stay
there; it used to jump back to the first claims page. One page back is the last claims page. Usage: play_keys.py path/to/flashstep; exit 1 on failure.
"""
import os, pty, re, select, sys, time

exe = sys.argv[1]
try:
    pid, fd = pty.fork()
except OSError as e:   # no pseudo-terminals here (some containers): say so, do not fail
    print(f"play keys: SKIPPED, no pseudo-terminal: {e}")
    sys.exit(0)
if pid == 0:
    os.execv(exe, [exe, "play", "001_02", "--terminal"])


def screen(seconds):
    """Everything the player writes within the given time."""
    out, end = b"", time.time() + seconds
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out.decode("utf-8", "replace")


def page_after(key):
    os.write(fd, key)
    text = screen(0.7)
    found = re.findall(r"page (\d+) of (\d+)|(the end)\s*$", text)
    if not found:
        return None
    return "the end" if found[-1][2] else (int(found[-1][0]), int(found[-1][1]))


screen(1.5)
last = page_after(b"G")
after_s = page_after(b"s")
back = page_after(b"\x7f")
os.write(fd, b"q")
screen(0.5)
os.waitpid(pid, 0)
ok = last == "the end" and after_s == last and isinstance(back, tuple) and back[0] == back[1]
print(f"play keys: G -> {last}, then s -> {after_s}, then Backspace -> page {back}: {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
