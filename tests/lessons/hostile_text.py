#!/usr/bin/env python3
"""hostile_text.py: text from a lesson file never drives the terminal.

A lesson whose title, intro, narration, claim and reason hold terminal escape sequences (ESC [31m
to recolour, ESC ] 0;... BEL to set the window title), a UTF-8 C1 control (CSI as C2 9B), a lone
0x9B byte, DEL and a carriage return is shown by `lessons --dir`, `verify` (table, Markdown and
JSONL), `play --terminal` and in error messages: every one of those bytes must come out as \\xHH,
and the ordinary UTF-8 (ℓ, →) untouched.
Usage: hostile_text.py BUILD/flashstep
"""
import os, shutil, subprocess, sys, tempfile

exe = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="fs-hostile-")
ESC, BEL = b"\x1b", b"\x07"
evil = ESC + b"[31mRED" + ESC + b"]0;owned" + BEL + b" \xc2\x9b2J \x9b \x7f \r"
lesson = (b"title: Hostile " + evil + b" \xe2\x84\x93 title\n"
          b"source: 004_80094ccf861f664e.txt, \xc2\xa7Standard softmax " + evil + b"\n"
          b"algo: tiled\n"
          b"intro: An intro " + evil + b"\n"
          b"form: normalized\nbq: 1\nbk: 3\nS:\n  1.0  2.0  0.5\n"
          b"step 0: Narration " + evil + b" \xe2\x86\x92 on.\n"
          b"expect step 1 m_blk = 2.0\n"
          b"  claim: a claim " + evil + b"\n"
          b"expect out[0][1] = 0.628\n"
          b"  claim: softmax of 2.0 " + evil + b"\n"
          b"  verdict: erratum\n"
          b"  why: the reason " + evil + b"\n")
path = os.path.join(tmp, "hostile.lesson")
open(path, "wb").write(lesson)
bad = os.path.join(tmp, "bad.lesson")
open(bad, "wb").write(b"title: t\nsource: s\nalgo: tiled\nwho" + evil + b": x\n")
bad2 = os.path.join(tmp, "bad2.lesson")
open(bad2, "wb").write(b"title: t\nsource: s\nalgo: tiled\nbq: 1" + evil + b"\n")
# A lesson file whose very name holds an escape sequence, in a directory of its own.
odd_dir = os.path.join(tmp, "odd")
os.mkdir(odd_dir)
open(os.path.join(odd_dir.encode(), b"x" + ESC + b"[31m.lesson"), "wb").write(lesson)

passed = failed = 0
RAW = [ESC, BEL, b"\x9b", b"\x7f", b"\r"]


def check(args, must_show=True, rc_ok=(0, 1, 2)):
    global passed, failed
    p = subprocess.run([exe, *args], capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
                       env={**os.environ, "COLUMNS": "200"})
    out = p.stdout + p.stderr
    if os.environ.get("FS_SHOW"):
        print(out.decode(errors="replace"))
    raw = [b for b in RAW if b in out]
    shown = b"\\x1b[31m" in out
    if p.returncode in rc_ok and not raw and (shown or not must_show):
        passed += 1
    else:
        failed += 1
        print(f"FAIL {' '.join(args)}: exit {p.returncode}, raw bytes {raw}, escapes shown {shown}:"
              f" {out[:400]!r}")


check(["lessons", "--dir", tmp])
check(["lessons", "--dir", odd_dir])
check(["verify", "--dir", tmp])
check(["verify", path])
check(["verify", path, "--markdown"])
check(["verify", path, "--format", "jsonl"])
check(["play", path, "--terminal", "--all"])
check(["verify", bad], must_show=False, rc_ok=(2,))
check(["verify", "--dir", odd_dir])
check(["verify", bad2], rc_ok=(2,))    # the message quotes the bad value
# A saved trace is a file too: an unknown value quoted in the reader's message is escaped.
# (render reads saved traces; a build without the window has no render, and skips this.)
trace = os.path.join(tmp, "bad.jsonl")
open(trace, "wb").write(b'{"event":"t\x9b \xc2\x9b \x7fx","step":0}\n')
p = subprocess.run([exe, "render", "--trace", trace, "--step", "0", "--out", os.path.join(tmp, "x.png")],
                   capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
out = p.stdout + p.stderr
if b"this build has no window" in out:
    print("hostile text: render --trace skipped (this build has no window)")
elif p.returncode == 2 and not [b for b in RAW if b in out] and b"\\x9b" in out:
    passed += 1
else:
    failed += 1
    print(f"FAIL render --trace with C1 bytes in a value: exit {p.returncode}: {out[:300]!r}")
# The UTF-8 the lessons use is kept as it is.
p = subprocess.run([exe, "play", path, "--terminal", "--all"], capture_output=True, timeout=60,
                   stdin=subprocess.DEVNULL)
if "ℓ".encode() in p.stdout and "→".encode() in p.stdout:
    passed += 1
else:
    failed += 1
    print(f"FAIL play --terminal: UTF-8 (ℓ, →) not shown as it is: {p.stdout[:300]!r}")
# A lesson file whose name holds a tab and a newline: one line per lesson, the two shown as \xHH.
nl_dir = os.path.join(tmp, "nl")
os.mkdir(nl_dir)
open(os.path.join(nl_dir.encode(), b"a\tb\nc.lesson"), "wb").write(lesson)
for args in (["lessons", "--dir", nl_dir, "--paths"], ["lessons", "--dir", nl_dir], ["verify", "--dir", nl_dir]):
    p = subprocess.run([exe, *args], capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
                       env={**os.environ, "COLUMNS": "200"})
    lines = [ln for ln in p.stdout.split(b"\n") if b"a\\x09b" in ln]
    if p.returncode in (0, 1) and len(lines) >= 1 and all(b"b\\x0ac" in ln for ln in lines) and b"\tb" not in p.stdout:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {' '.join(args)}: a name with a tab and a newline: exit {p.returncode}: {p.stdout[:400]!r}")
shutil.rmtree(tmp, ignore_errors=True)
print(f"hostile text: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
