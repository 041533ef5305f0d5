#!/usr/bin/env python3
"""play_keys.py: keys of the interactive terminal player, through a pseudo-terminal.

G (End) goes to the last step, and pressed again to the last page (the lesson's ending, after
its claims); `s` (next significant step) there must stay there (it used to jump back to the first
claims page); one page back is the last claims page. Questions off: these are the navigation
keys. A player that does not quit on q within a few seconds is killed and the test fails (it
must never hang). Usage: play_keys.py path/to/flashstep; exit 1 on failure.
"""
import os, pty, re, select, signal, sys, time

exe = sys.argv[1]
try:
    pid, fd = pty.fork()
except OSError as e:   # no pseudo-terminals here (some containers): say so, do not fail
    print(f"play keys: SKIPPED, no pseudo-terminal: {e}")
    sys.exit(0)
if pid == 0:
    os.execv(exe, [exe, "play", "001_02", "--terminal", "--no-questions"])


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
    found = re.findall(r"page (\d+) of (\d+)|(the end)\s*$|(step \d+ of \d+–\d+)\s*$", text)
    if not found:
        return None
    f = found[-1]
    return "the end" if f[2] else f[3] if f[3] else (int(f[0]), int(f[1]))


screen(1.5)
step = page_after(b"G")
last = page_after(b"G")
after_s = page_after(b"s")
back = page_after(b"\x7f")
os.write(fd, b"q")
screen(0.5)
quit_ok = False
for _ in range(60):   # q must end it; never wait for ever
    if os.waitpid(pid, os.WNOHANG)[0]:
        quit_ok = True
        break
    time.sleep(0.05)
if not quit_ok:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
ok = (isinstance(step, str) and step.startswith("step ") and last == "the end" and after_s == last and
      isinstance(back, tuple) and back[0] == back[1] and quit_ok)
print(f"play keys: G -> {step}, G -> {last}, then s -> {after_s}, then Backspace -> page {back}, q quits: {quit_ok}: "
      f"{'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
