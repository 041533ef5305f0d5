#!/usr/bin/env python3
"""check_render_cli.py: `flashstep render` (and `play`) with one's own problem, a saved trace, and
animations, checked from the outside (no display needed).

The problem options are trace's: every bad input gets exactly trace's message (with the command's
name) and exit 2; good inputs render a PNG; a saved JSONL trace (forward or backward) renders, a
damaged or cut one is located (file:line:column, exit 2); --steps A:B --out FILE.gif writes a
GIF89a, FILE.mp4 an MP4 (or, in a build without video, says so and exits 2).
"""
import os
import subprocess
import sys

import cli_test
from cli_test import check

flashstep = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/flashstep")
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
traces = os.path.join(root, "tests", "gui", "traces")
font = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
tmp = cli_test.scratch("fs-render-")


def run(cmd, args, env=None):
    return cli_test.run(flashstep, cmd, args, timeout=120, cwd=tmp, env=env)


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


q = write("q.txt", "1 0.5\n0.8 -0.1\n0.2 0.9\n-0.3 0.4\n0.7 0.6\n0.1 -0.5\n")
k = write("k.txt", "0.3 0.7\n0.6 0.2\n-0.1 0.8\n0.4 -0.3\n0.9 0.1\n0.2 0.5\n")
v = write("v.txt", "1 0\n0 1\n0.5 0.5\n0.8 0.2\n0.3 0.7\n0.6 0.4\n")
z = write("z.txt", "2 5 1 4\n")
tree = write("tree.txt", "-1\n0\n1\n1\n2\n2\n")
qkv = ["--q", q, "--k", k, "--v", v]
out = os.path.join(tmp, "f.png")
png = ["--step", "3", "--out", out, "--font", font]

# Bad problem options: the same message as trace's, exit 2, nothing drawn.
bad = [
    ["--q", write("ragged.txt", "1 2\n3\n"), "--k", k, "--v", v],
    ["--q", write("word.txt", "1 2\n3 abc\n"), "--k", k, "--v", v],
    ["--q", q, "--k", write("k3.txt", "1 2 3\n4 5 6\n"), "--v", v],
    qkv + ["--bq", "0"], qkv + ["--window", "0"], qkv + ["--heads", "3:2"], qkv + ["--form", "half"],
    qkv + ["--decode", "--bq", "2"], qkv + ["--merge", "tree"], qkv + ["--query", "--order", "kv-outer"],
    ["--z", z, "--mask", "causal"], qkv + ["--tree", write("cycle.txt", "1 0 0 0 0 0\n")],
    qkv + ["--reference", "--query"], ["--q", q, "--k", k], qkv + ["--scale", "abc"], qkv + ["--bk"],
]
for args in bad:
    rt, _, et = run("trace", args)
    for cmd in ("render", "play"):
        extra = png if cmd == "render" else ["--max-seconds", "5"]
        env = dict(os.environ)
        env.pop("DISPLAY", None)
        env.pop("WAYLAND_DISPLAY", None)
        rr, _, er = run(cmd, extra + args, env=env)
        check(rt == 2 and rr == 2, f"{cmd} {args}: exit {rr} (trace {rt})")
        check(er == et.replace("flashstep trace", "flashstep " + cmd), f"{cmd} {args}: message\n  {er!r}\n  trace said {et!r}")

# Good problems render; the title names the files.
for args in (qkv, qkv + ["--mask", "causal", "--bq", "2", "--bk", "3"], qkv + ["--decode", "--bk", "2", "--merge", "tree"],
             qkv + ["--tree", tree], qkv + ["--window", "2"], qkv + ["--query"], qkv + ["--pitfall", "no-rescale"],
             qkv + ["--scale", "0.5", "--softcap", "2"], ["--z", z], ["--scores", write("s.txt", "1 -inf\n2 3\n")],
             qkv + ["--reference"]):
        if os.path.exists(out):
            os.unlink(out)
        step = ["--step", "1", "--out", out, "--font", font]
        rc, so, se = run("render", args + step)
        check(rc == 0 and os.path.getsize(out) > 1000 and open(out, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
              f"render {args}: rc={rc} {se!r}")
rc, _, se = run("render", ["000_04"] + qkv + png)
check(rc == 2 and "not both" in se, f"a lesson and a problem: {rc} {se!r}")
# a lesson with the options that vary it: its variation (000_04 with tiles of 3: steps 0-18)
rc, _, se = run("render", ["000_04", "--bq", "3", "--bk", "3", "--step", "18", "--out", os.path.join(tmp, "var.png"), "--font", font])
check(rc == 0 and open(os.path.join(tmp, "var.png"), "rb").read(8) == b"\x89PNG\r\n\x1a\n", f"render 000_04 --bq 3 --bk 3: {rc} {se!r}")
rc, _, se = run("render", ["000_04", "--bq", "3", "--bk", "3", "--step", "19", "--out", os.path.join(tmp, "var.png")])
check(rc == 2 and "0..18" in se, f"the variation has its own steps: {rc} {se!r}")
rc, _, se = run("render", ["000_04", "--chunk", "2", "--step", "0", "--out", os.path.join(tmp, "var.png")])
check(rc == 2 and "--chunk changes nothing" in se, f"an option the lesson ignores is refused: {rc} {se!r}")
env = dict(os.environ)
env.pop("DISPLAY", None)
env.pop("WAYLAND_DISPLAY", None)
rc, _, se = run("play", qkv, env=env)
check(rc == 2 and "terminal player shows lessons only" in se, f"play without a display: {rc} {se!r}")

# Saved traces: the engine's and the CUDA kernel's render; damaged ones are located.
for name in ("tiled.jsonl", "cuda-tiled.jsonl"):
    rc, _, se = run("render", ["--trace", os.path.join(traces, name)] + png)
    check(rc == 0, f"render --trace {name}: {rc} {se!r}")
for name, where in (("truncated.jsonl", ":15:250: "), ("no-output.jsonl", ":11:1: "), ("bad-number.jsonl", ":8:73: ")):
    path = os.path.join(traces, name)
    rc, _, se = run("render", ["--trace", path] + png)
    check(rc == 2 and (path + where) in se and se.count("\n") == 1, f"render --trace {name}: {rc} {se!r}")
# A backward trace written here replays: render writes a PNG; cut short, it is located (exit 2).
tq, tk, tv, tdo = (os.path.join(traces, n) for n in ("q.txt", "k.txt", "v.txt", "do.txt"))
for extra in ([], ["--heads", "2:1", "--mask", "causal", "--offset", "0", "--order", "kv-outer", "--do", tdo]):
    p = subprocess.run([flashstep, "trace", "--backward", "--q", tq, "--k", tk, "--v", tv, "--bq", "2", "--bk", "3",
                        "--format", "jsonl"] + extra, capture_output=True, text=True, cwd=tmp, timeout=120)
    check(p.returncode == 0, f"trace --backward {extra}: {p.returncode} {p.stderr!r}")
    bw = write("backward.jsonl", p.stdout)
    if os.path.exists(out):
        os.unlink(out)
    rc, _, se = run("render", ["--trace", bw, "--size", "1280x720"] + png)
    check(rc == 0 and open(out, "rb").read(8) == b"\x89PNG\r\n\x1a\n", f"render --trace (backward {extra}): {rc} {se!r}")
    lines = p.stdout.splitlines(keepends=True)
    cut = write("backward-cut.jsonl", "".join(lines[:-3]) + lines[-3][:40])
    rc, _, se = run("render", ["--trace", cut] + png)
    where = f"{cut}:{len(lines) - 2}:41: "
    check(rc == 2 and where in se and se.count("\n") == 1, f"render --trace (backward, cut short): {rc} {se!r}, wanted {where!r}")
rc, _, se = run("render", ["--trace", os.path.join(tmp, "absent.jsonl")] + png)
check(rc == 2 and "absent.jsonl:1:1:" in se, f"a missing trace file: {rc} {se!r}")
# A file name holding an escape sequence, a tab and a newline is shown escaped, on one line.
odd = write("t\x1b[31m\t\nx.jsonl", open(os.path.join(traces, "no-output.jsonl")).read())
rc, _, se = run("render", ["--trace", odd] + png)
check(rc == 2 and "t\\x1b[31m\\x09\\x0ax.jsonl:11:1: " in se and "\x1b" not in se and se.count("\n") == 1,
      f"a damaged trace with an odd name: {rc} {se!r}")

# The window's options, shared by play and render, name the command they were given to, in one
# line; an unknown option points at that command's --help instead of printing all of it.
for cmd in ("play", "render"):
    for args, what in ((["--size", "abc"], "--size wants WxH"), (["--zoom", "7"], "--zoom wants 50..300"),
                       (["--theme", "blue"], "--theme wants dark"), (["--font"], "--font needs a value"),
                       (["--bogus"], f"unknown option '--bogus' (or it needs a value); see flashstep {cmd} --help")):
        rc, _, se = run(cmd, ["000_04"] + args, env=dict(os.environ, DISPLAY="", WAYLAND_DISPLAY=""))
        check(rc == 2 and se == f"flashstep {cmd}: {what}" + se.split(what, 1)[-1] and se.count("\n") == 1,
              f"{cmd} {args}: one line naming the command: {rc} {se!r}")

# Animations.
gif = os.path.join(tmp, "a.gif")
rc, so, se = run("render", ["000_04", "--steps", "8:12", "--out", gif, "--fps", "4", "--font", font])
check((rc == 0 and open(gif, "rb").read(6) == b"GIF89a") or (rc == 2 and "no GIF support" in se and not os.path.exists(gif)),
      f"GIF: {rc} {se!r}")
mp4 = os.path.join(tmp, "a.mp4")
rc, so, se = run("render", ["000_04", "--steps", "8:12", "--out", mp4, "--font", font])
check((rc == 0 and open(mp4, "rb").read(12)[4:8] == b"ftyp") or (rc == 2 and "no video support" in se and not os.path.exists(mp4)),
      f"MP4: {rc} {se!r}")
for args, what in ((["--step", "3", "--out", os.path.join(tmp, "a.webp")], "wants FILE.png"),
                   (["--steps", "0:3", "--out", os.path.join(tmp, "a.png")], "needs --out-dir"),
                   (["--steps", "0:3", "--out", gif, "--fps", "0"], "--fps wants"),
                   (["--steps", "0:3", "--out", gif, "--out-dir", tmp], "not both")):
    rc, _, se = run("render", ["000_04"] + args)
    check(rc == 2 and what in se, f"render {args}: {rc} {se!r}")

cli_test.finish("render cli: {passed} passed, {failed} failed")
