#!/usr/bin/env python3
"""check_page.py URL FLASHSTEP [--shots DIR] [--bench]: the web page in headless Chromium.

Drives the page the way a person would (keys, clicks, taps, swipes, pasted text, chosen files,
the Back button) through the DevTools protocol (cdp.py), and holds it to the native program
FLASHSTEP: the downloaded trace must equal `flashstep trace`'s bytes, the claims panel must
equal `flashstep verify`'s output, an error must be the command line's own message, and the
canvas must match `flashstep render` of the same lesson, step and size (the pixel rule is at
TOLERANCE_LEVELS). This browser has no GPU: the GPU panel must say so and the page work as
before (check_gpu.py runs the panel with WebGPU). Any console error or uncaught exception fails
the run.

--shots DIR keeps the screenshots; --bench prints the page's timings (first frame, frame times
while a key is held on the 64 x 64 grid at 1920 x 1080, the bytes downloaded) without judging them.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser, CDPError  # noqa: E402
import report  # noqa: E402
from report import check  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOLBAR = 36   # the page's bar above the canvas (page.css)


# The pixel rule (see match_frame's text in docs/web.md): both images come from the same C scene
# code, the same FreeType and SDL's software renderer; only where wasm32 and x86-64 round a
# coordinate or a blend differently may a pixel differ. At most 0.1 % of the pixels may differ
# by more than 24 levels in a channel; a misplaced label or a wrong colour moves far more.
TOLERANCE_LEVELS = 24
TOLERANCE_SHARE = 1000   # one pixel in a thousand

# Compared in the page: the canvas's own pixels (what SDL wrote) against the reference PNG
# decoded by the browser. Returns [w, h, ref_w, ref_h, pixels over the tolerance].
MATCH_JS = """
(async (b64, tol, skip) => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + b64;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = img.width; c.height = img.height;
  const cx = c.getContext('2d');
  cx.drawImage(img, 0, 0);
  const cv = Module.canvas, w = cv.width, h = cv.height;
  if (w !== img.width || h !== img.height) return [w, h, img.width, img.height, -1];
  const a = cv.getContext('2d').getImageData(0, 0, w, h).data, b = cx.getImageData(0, 0, w, h).data;
  let bad = 0;
  const [sx, sy, sw, sh] = skip || [0, 0, 0, 0];
  for (let i = 0; i < a.length; i += 4) {
    const x = (i / 4) % w, y = Math.floor(i / 4 / w);
    if (x >= sx && x < sx + sw && y >= sy && y < sy + sh) continue;
    if (Math.abs(a[i] - b[i]) > tol || Math.abs(a[i + 1] - b[i + 1]) > tol || Math.abs(a[i + 2] - b[i + 2]) > tol) bad++;
  }
  return [w, h, img.width, img.height, bad];
})
"""


def match_frame(b, ref_png, skip=None):
    """The page's canvas against a PNG of flashstep render: (ok, text). skip: a rectangle [x, y, w, h]
    of canvas pixels left out (the ending box, whose foot the page keeps free for its buttons)."""
    import base64
    w, h, rw, rh, bad = b.eval(MATCH_JS + f"('{base64.b64encode(ref_png).decode()}', {TOLERANCE_LEVELS}, "
                               f"{json.dumps(skip)})", await_promise=True)
    if bad < 0:
        return False, f"sizes differ: page {w}x{h}, render {rw}x{rh}"
    allowed = w * h // TOLERANCE_SHARE
    return bad <= allowed, f"{bad} of {w * h} pixels differ by more than {TOLERANCE_LEVELS} levels (allowed {allowed})"


class Page:
    """One browser tab on the page, with its console watched."""

    def __init__(self, b, url, downloads):
        self.b, self.url, self.errors = b, url, []
        for m in ("Runtime.enable", "Page.enable", "Log.enable"):
            b.send(m)
        b.send("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads, "eventsEnabled": True},
               browser_level=True)
        self.downloads = downloads

    def drain(self):
        while not self.b.events.empty():
            ev = self.b.events.get()
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                self.errors.append("console.error: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                self.errors.append("exception: " + str(d.get("exception", {}).get("description") or d.get("text")))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                self.errors.append("log: " + p["entry"].get("text", ""))

    def size(self, w, h, dpr=1, mobile=False):
        self.b.send("Emulation.setDeviceMetricsOverride", {"width": w, "height": h, "deviceScaleFactor": dpr, "mobile": mobile})

    def load(self, frag):
        """Open the page afresh at URL#frag, as a link does (not a jump within the page)."""
        self.b.navigate("about:blank")
        self.b.wait_for("location.href === 'about:blank'", what="about:blank")
        self.b.navigate(self.url + frag)
        self.b.wait_for("window.Module && Module.flashstep && Module.flashstep.state() && Module.firstFrameMs", timeout=60,
                        what="the page's first frame")
        return self.state()

    def state(self):
        return self.b.eval("JSON.stringify(Module.flashstep.state())") and json.loads(self.b.eval("JSON.stringify(Module.flashstep.state())"))

    def wait_state(self, cond, what, timeout=20):
        end = time.time() + timeout
        while True:
            s = self.state()
            if cond(s):
                return s
            if time.time() > end:
                raise CDPError(f"timed out waiting for {what}; state {json.dumps(s)[:300]}")
            time.sleep(0.03)

    def click_id(self, elid):
        # clicked where it has stayed for two looks 60 ms apart (at most 2 s): the ending's buttons
        # are placed again on the frame after they appear or change their words, and a click
        # aimed at the place they left misses them
        where = f"(() => {{ const r = document.getElementById('{elid}').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        r, end = self.b.eval(where), time.time() + 2
        while time.time() < end:
            time.sleep(0.06)
            now = self.b.eval(where)
            if now == r:
                break
            r = now
        self.b.click(r[0], r[1])

    def text_of(self, elid):
        return self.b.eval(f"document.getElementById('{elid}').textContent")

    def download(self, elid, timeout=20):
        before = set(os.listdir(self.downloads))
        self.click_id(elid)
        # Done when no .crdownload is left and the file's size holds over two looks, so that a
        # file still being written is never read.
        end = time.time() + timeout
        last = -1
        while time.time() < end:
            names = set(os.listdir(self.downloads))
            new = [f for f in names - before if not f.endswith(".crdownload")]
            busy = any(f.endswith(".crdownload") for f in names)
            if new and not busy:
                path = os.path.join(self.downloads, new[0])
                size = os.path.getsize(path)
                if size > 0 and size == last:
                    with open(path, "rb") as f:
                        data = f.read()
                    os.remove(path)
                    return new[0], data
                last = size
            time.sleep(0.1)
        raise CDPError(f"no download from #{elid}")

    def choose_file(self, selector, path):
        """Choose path in the file input that selector finds, as a person does in the file dialog."""
        root = self.b.send("DOM.getDocument")["root"]["nodeId"]
        node = self.b.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        self.b.send("DOM.setFileInputFiles", {"nodeId": node, "files": [path]})

    def insert(self, elid, text):
        """Put text into a textarea as a paste does (focus, select all, insert)."""
        self.b.eval(f"(() => {{ const t = document.getElementById('{elid}'); t.focus(); t.select(); }})()")
        if text:
            # a large paste is typed into the textarea in one go; on 2 busy cores (both lanes of
            # make test and a second browser) it has taken over 30 s, so it gets 120
            self.b.send("Input.insertText", {"text": text}, timeout=120)
        else:
            self.b.eval(f"document.getElementById('{elid}').value = ''")


def run_cli(flashstep, args, cwd=None):
    return subprocess.run([flashstep] + args, cwd=cwd, capture_output=True)


def main():
    args = sys.argv[1:]
    shots = bench = None
    if "--shots" in args:
        i = args.index("--shots")
        shots = args[i + 1]
        del args[i:i + 2]
        os.makedirs(shots, exist_ok=True)
    if "--bench" in args:
        bench = True
        args.remove("--bench")
    if len(args) != 2:
        sys.exit(__doc__)
    url, flashstep = args[0].rstrip("/") + "/", os.path.abspath(args[1])
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        sys.exit("test-web: no chromium found")
    tmp = tempfile.mkdtemp(prefix="flashstep-web-")
    downloads = os.path.join(tmp, "downloads")
    os.makedirs(downloads)
    try:
        with Browser(chromium, 1280, 720 + TOOLBAR) as b:
            page = Page(b, url, downloads)
            page.size(1280, 720 + TOOLBAR)
            run_checks(page, flashstep, tmp, shots, bench)
            page.drain()
            check(not page.errors, "no console error or uncaught exception", "; ".join(page.errors[:5]))
    except CDPError as e:
        check(False, "the browser session", str(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(report.summary())


def run_checks(page, flashstep, tmp, shots, bench):
    b = page.b
    doc = os.path.join(ROOT, "assets", "doc000_tiled")
    cli_opts = ["--bq", "2", "--bk", "3", "--mask", "causal", "--form", "unnormalized"]

    print("a lesson, played to its end by key presses")
    s = page.load("#000_04/0")
    check(s["name"].startswith("000_04") and s["step"] == 0 and s["scene"] == "tiled", "#000_04/0 opens 000_04 at step 0", str(s))
    first = b.eval("Module.firstFrameMs")
    n = s["n"]
    for _ in range(5):
        b.key("ArrowRight")
    s = page.wait_state(lambda s: s["step"] == 5, "step 5 after five Right presses")
    check(s["step"] == 5, "five Right presses: step 5")
    for _ in range(n - 1 - 5):
        b.key("ArrowRight")
    s = page.wait_state(lambda s: s["step"] == n - 1, f"the last step {n - 1}")
    b.key("ArrowRight")
    time.sleep(0.2)
    s = page.state()
    check(s["step"] == n - 1, f"played to the end: step {n - 1} of {n}, and Right stops there", str(s["step"]))
    check(b.eval("location.hash") == f"#{s['name']}/{n - 1}", "the address names the lesson and the step", b.eval("location.hash"))
    check(page.text_of("where") == f"{s['name']} · step {n - 1} of 0–{n - 1}", "the bar's step counter", page.text_of("where"))

    print("an idle page")
    # nothing changes for 30 frames: the loop runs four times a second instead of at every
    # animation frame (web.c, web_frame); any input, or a call that may change what is shown,
    # puts it back at once (the capture listeners and call() in page.js)
    s0 = page.wait_state(lambda s: s["loop"][0] == 1, "the idle page's loop to slow down", timeout=10)
    time.sleep(2)
    s1 = page.state()
    ticks = s1["loop"][1] - s0["loop"][1]
    check(s1["loop"][0] == 1 and ticks <= 12, f"left alone, the page runs its loop about four times a second ({ticks} runs in 2 s)",
          str(s1["loop"]))
    woke = b.eval("(() => { window.dispatchEvent(new KeyboardEvent('keydown', {key: 'Shift'})); return Module.flashstep.state().loop[0]; })()")
    check(woke == 0, "a key wakes it at once (before the program sees the key)", str(woke))
    page.wait_state(lambda s: s["loop"][0] == 1, "the loop to slow down again", timeout=10)
    t0 = time.time()
    b.key("ArrowLeft")
    s2 = page.wait_state(lambda s: s["step"] == n - 2, f"step {n - 2} after Left")
    check(s2["step"] == n - 2, f"a key pressed on an idle page is answered ({(time.time() - t0) * 1000:.0f} ms)")
    page.wait_state(lambda s: s["loop"][0] == 1, "the loop to slow down again", timeout=10)
    woke = b.eval(f"(() => {{ Module.flashstep.open({json.dumps(s['name'])}, 2); return Module.flashstep.state().loop[0]; }})()")
    check(woke == 0, "a call from the page that changes what is shown wakes it too", str(woke))

    print("the trace download against flashstep trace")
    name, data = page.download("b-download")
    cli = run_cli(flashstep, ["trace", "--q", f"{doc}/Q.txt", "--k", f"{doc}/K.txt", "--v", f"{doc}/V.txt"] + cli_opts +
                  ["--format", "jsonl"])
    check(cli.returncode == 0 and data == cli.stdout, f"{name}: the bytes of flashstep trace --format jsonl ({len(data)} bytes)",
          f"page {len(data)} bytes, CLI {len(cli.stdout)}; first difference at byte "
          f"{next((i for i, (x, y) in enumerate(zip(data, cli.stdout)) if x != y), min(len(data), len(cli.stdout)))}")
    events = [json.loads(line) for line in cli.stdout.decode().splitlines()]

    def marker(e):   # what Shift+arrow stops at (fs_event_significant): a rescale, a skip, a merge, an output
        return e["event"] in ("skip", "merge", "out") or (e["event"] == "row" and e["l_old"] > 0 and e["alpha"] < 1)
    page.load("#000_04/14")
    b.key("ArrowLeft", shift=True)
    s = page.wait_state(lambda s: s["step"] != 14, "Shift+Left")
    want = max(k for k in range(14) if marker(events[k]))
    check(s["step"] == want, f"Shift+Left from step 14: the previous marker, step {want} ({events[want]['event']})", str(s["step"]))

    print("claims panel against flashstep verify")
    page.click_id("b-claims")
    b.wait_for("document.getElementById('claims-text').textContent.length > 0", what="the claims")
    cli = run_cli(flashstep, ["verify", s["name"]])
    got = page.text_of("claims-text")
    check(got == cli.stdout.decode(), "the claims panel prints what flashstep verify prints", got[:200])
    page.click_id("b-claims")

    print("the GPU panel without a GPU (this browser runs with --disable-gpu)")
    s = page.load("#000_04/3")
    page.click_id("b-gpu")
    b.wait_for("document.getElementById('gpu-adapter').textContent.length > 0", what="the GPU panel's first line")
    said = page.text_of("gpu-adapter")
    check(("no WebGPU" in said or "no adapter" in said) and b.eval("document.getElementById('gpu-trace').disabled"),
          "a page without WebGPU says so in one line and offers no GPU run", said)
    b.key("ArrowRight")
    s2 = page.wait_state(lambda x: x["step"] == s["step"] + 1, "a step with the GPU panel open")
    check(s2["step"] == s["step"] + 1, "the page steps as before")
    page.click_id("b-gpu")

    print("deep links, Back and Forward")
    s = page.load("#000_04/14")
    check(s["name"].startswith("000_04") and s["step"] == 14, "#000_04/14 opens step 14", str(s["step"]))
    b.key("ArrowRight")
    page.wait_state(lambda s: s["step"] == 15, "step 15")
    b.key("ArrowRight")
    page.wait_state(lambda s: s["step"] == 16, "step 16")
    check(b.eval("location.hash").endswith("/16"), "the address follows the steps", b.eval("location.hash"))
    b.eval("history.back()")
    s = page.wait_state(lambda s: s["step"] == 15, "Back to step 15")
    check(s["step"] == 15, "Back: step 15")
    b.eval("history.back()")
    s = page.wait_state(lambda s: s["step"] == 14, "Back to step 14")
    check(s["step"] == 14, "Back again: step 14")
    b.eval("history.forward()")
    s = page.wait_state(lambda s: s["step"] == 15, "Forward to step 15")
    check(s["step"] == 15, "Forward: step 15")
    s = page.load("#000_04/999")
    hash_ok = b.wait_for(f"location.hash === '#{s['name']}/{s['n'] - 1}'", what="the address of the last step")
    check(s["step"] == s["n"] - 1 and hash_ok, f"a step past the end opens the last one ({s['step']}), and the address says so")
    s = page.load("#%E0%A4/2")
    check(s["lesson"] == 0 and "no lesson matches" in page.text_of("notice"), "a malformed link shows the first lesson and says so")
    s = page.load("#000_0/3")
    check("'000_0' matches" in page.text_of("notice") and "give more of the name" in page.text_of("notice"),
          f"an ambiguous link says so: {page.text_of('notice')!r}")
    s = page.load("#grid64/2")
    page.click_id("b-claims")
    b.wait_for("document.getElementById('claims-text').textContent.length > 0", what="the claims")
    check("built-in demo grid64" in page.text_of("claims-text"), "a demo's claims panel says it is a demo")
    page.click_id("b-claims")
    s = page.load("#no_such_lesson/3")
    check(s["lesson"] == 0 and page.text_of("notice") == "flashstep: no lesson matches 'no_such_lesson'",
          "a link to a missing lesson says so and shows the first lesson", page.text_of("notice"))

    print("keys for theme, help, the introduction and predict")
    s = page.load("#000_04/3")
    b.key("t")
    s = page.wait_state(lambda s: s["theme"] == 1, "the light theme")
    check(s["theme"] == 1, "T: the light theme")
    b.key("t")
    b.key("t")
    s = page.wait_state(lambda s: s["theme"] == 0, "back to the dark theme")
    # a box drawn over the scene, opened by its key and closed by Esc
    for key, field, what in (("?", "help", "?: the key help"),
                             ("i", "intro", "I: the lesson's introduction, whole, over the scene")):
        b.key(key)
        s = page.wait_state(lambda s: s[field], field)
        check(s[field], what)
        b.key("Escape")
        s = page.wait_state(lambda s: not s[field], field + " closed")
        check(not s[field], "Esc closes it")
    b.key("q")
    s = page.wait_state(lambda s: s["predict"] != 0, "predict mode")
    check(s["predict"] != 0, "Q: predict mode on")
    b.key("q")
    s = page.wait_state(lambda s: s["predict"] == 0, "predict mode off")
    speed = s["speed"]
    page.click_id("b-faster")
    s = page.wait_state(lambda s: s["speed"] == speed + 1, "faster")
    check(s["speed"] == speed + 1, "the x2 button doubles the speed")
    page.click_id("b-play")
    s = page.wait_state(lambda s: s["playing"], "playing")
    shows = b.wait_for("document.getElementById('b-play').textContent === '❚❚'", what="the pause sign")
    check(s["playing"] and shows, "the play button plays, and shows pause")
    page.click_id("b-play")
    s = page.wait_state(lambda s: not s["playing"], "paused")
    check(not s["playing"], "and pauses")
    x0, y0, cell, rows, cols = s["grid"]
    if s["scene"] == "tiled":
        b.move(x0 + 0.5 * cell, TOOLBAR + y0 + 0.5 * cell)
        s = page.wait_state(lambda s: s["hover"][0] == 1, "a tooltip on hover")
        check(s["hover"] == [1, 0, 0], f"the mouse over cell (0, 0) gives its tooltip (hover {s['hover']})")

    print("touch: a tap on a tile, a swipe")
    b.send("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 1})
    s = page.load("#000_04/8")
    x0, y0, cell, rows, cols = s["grid"]
    check(cell > 0 and rows == 6 and cols >= 6, f"the tiled scene's grid: {rows} rows, {cols} columns, cells of {cell} px")
    b.tap(x0 + 2.5 * cell, TOOLBAR + y0 + 1.5 * cell)
    s = page.wait_state(lambda s: s["hover"][0] == 1, "a tooltip after the tap")
    check(s["hover"] == [1, 1, 2], f"a tap on row 1, key 2 shows that cell's tooltip (hover {s['hover']})")
    if shots:
        with open(os.path.join(shots, "web-tap-tooltip.png"), "wb") as f:
            f.write(b.screenshot())
    step = s["step"]
    b.swipe(900, TOOLBAR + 300, 500, TOOLBAR + 310)
    s = page.wait_state(lambda s: s["step"] == step + 1, "a swipe to the left steps on")
    check(s["step"] == step + 1, "a swipe to the left: one step on")
    b.swipe(500, TOOLBAR + 300, 900, TOOLBAR + 300)
    s = page.wait_state(lambda s: s["step"] == step, "a swipe to the right steps back")
    check(s["step"] == step, "a swipe to the right: one step back")
    b.send("Emulation.setTouchEmulationEnabled", {"enabled": False})

    print("your own problem, pasted")
    page.click_id("b-mine")
    mats = {}
    for k in ("q", "k", "v"):
        with open(f"{doc}/{k.upper()}.txt") as f:
            mats[k] = f.read()
        page.insert("m-" + k, mats[k])
    b.eval("document.getElementById('o-mask').value = 'causal'; document.getElementById('o-form').value = 'unnormalized';"
           "document.getElementById('o-bq').value = '2'; document.getElementById('o-bk').value = '3'")
    page.click_id("mine-show")
    s = page.wait_state(lambda s: s["lesson"] == -1, "one's own problem shown")
    check(s["lesson"] == -1 and s["scene"] == "tiled" and s["step"] == 0, f"pasted Q, K, V shown as a tiled problem ({s['n']} steps)")
    name, data = page.download("b-download")
    own = os.path.join(tmp, "own")
    os.makedirs(own)
    for k, text in mats.items():
        with open(os.path.join(own, f"{k}.txt"), "w") as f:
            f.write(text)
    cli = run_cli(flashstep, ["trace", "--q", "q.txt", "--k", "k.txt", "--v", "v.txt"] + cli_opts + ["--format", "jsonl"], cwd=own)
    check(cli.returncode == 0 and data == cli.stdout, "its trace download equals flashstep trace's on the same files and options")

    print("a damaged paste, and one too large")
    page.click_id("b-mine")
    bad_q = mats["q"].replace("\n", " x\n", 2).split("\n")
    bad_q = "\n".join(bad_q)
    page.insert("m-q", bad_q)
    page.click_id("mine-show")
    b.wait_for("document.getElementById('mine-msg').textContent.length > 0", what="a message")
    with open(os.path.join(own, "q.txt"), "w") as f:
        f.write(bad_q)
    cli = run_cli(flashstep, ["play", "--q", "q.txt", "--k", "k.txt", "--v", "v.txt"] + cli_opts + ["--bench", "1"], cwd=own)
    msg = page.text_of("mine-msg")
    cli_msg = cli.stderr.decode().strip()
    check(cli.returncode == 2 and msg == cli_msg and "q.txt:2:" in msg,
          f"the message is flashstep play's own, file:line:column: {msg!r}", f"CLI: {cli_msg!r}")
    check(page.state()["lesson"] == -1 and page.state()["n"] == s["n"], "what was shown stays shown")
    big = "\n".join(" ".join(["0.5"] * 2) for _ in range(2000)) + "\n"
    for k in ("q", "k", "v"):
        page.insert("m-" + k, big)
    b.eval("document.getElementById('o-bq').value = '1'; document.getElementById('o-bk').value = '1'")
    t0 = time.time()
    b.eval("document.getElementById('mine-msg').textContent = ''")
    page.click_id("mine-show")
    b.wait_for("document.getElementById('mine-msg').textContent.length > 0", what="a message")
    msg = page.text_of("mine-msg")
    check("would record about" in msg and time.time() - t0 < 10, f"a problem beyond the page's trace bounds is refused at once: {msg[:110]!r}")
    # Putting 16 MB of text in the box makes the browser lay it out again at each change near it
    # (12 s to set it and 6 s for the click on a 2-core EPYC, so more than the 30 s an answer may
    # take where the two vCPUs share one core): these calls may take 300 s each, and the box is
    # emptied before the panel closes. '€' is 3 bytes in UTF-8: 16 MB and 3 bytes in a third as
    # many characters (counted as characters, the paste would pass).
    with b.patience(300):
        b.eval("document.getElementById('m-q').value = '€'.repeat((16 << 20) / 3 + 1); "
               "document.getElementById('mine-msg').textContent = ''")
        page.click_id("mine-show")
        b.wait_for("document.getElementById('mine-msg').textContent.length > 0", what="a message")
        msg = page.text_of("mine-msg")
        check("16 MB" in msg, f"a paste over 16 MB (its UTF-8 bytes, not its characters) is refused before it is read: {msg[:90]!r}")
        b.eval("document.getElementById('m-q').value = ''; document.getElementById('m-q').scrollHeight")
    page.click_id("b-mine")

    print("your own problem, uploaded as .npy files")
    sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
    import cli_test   # the .npy writer the command-line tests use
    rows = {k: [[float(x) for x in line.split()] for line in mats[k].splitlines() if line.strip() and not line.startswith("#")]
            for k in ("q", "k", "v")}
    files = [cli_test.write_npy(own, f"up_{k}.npy", rows[k], "<f4") for k in ("q", "k", "v")]
    page.click_id("b-mine")
    b.eval("for (const k of ['q', 'k', 'v', 'tree']) document.getElementById('m-' + k).value = '';"
           "document.getElementById('o-bq').value = '2'; document.getElementById('o-bk').value = '3';"
           "document.getElementById('mine-msg').textContent = ''")
    for k, f in zip(("q", "k", "v"), files):
        page.choose_file(f"input[data-for='{k}']", f)
    b.wait_for("document.getElementById('m-v').placeholder.includes('up_v.npy')", what="the uploads read")
    page.click_id("mine-show")
    b.wait_for("document.getElementById('mine-msg').textContent.startsWith('shown')", what="the uploaded problem shown")
    name, data = page.download("b-download")
    cli = run_cli(flashstep, ["trace", "--q", "up_q.npy", "--k", "up_k.npy", "--v", "up_v.npy"] + cli_opts + ["--format", "jsonl"],
                  cwd=own)
    check(cli.returncode == 0 and data == cli.stdout, "uploaded .npy files: the trace equals flashstep trace's on the same files")
    page.click_id("b-mine")
    b.eval("document.getElementById('o-bq').value = ''; document.getElementById('o-bk').value = '';"
           "document.getElementById('o-form').value = ''; document.getElementById('o-mask').value = 'none';"
           "document.getElementById('o-more').value = '--decode --bk 2'; document.getElementById('mine-msg').textContent = ''")
    page.click_id("mine-show")
    b.wait_for("document.getElementById('mine-msg').textContent.length > 0", what="a message")
    s = page.state()
    check(s["scene"] == "decode", f"more options as text (--decode --bk 2) with the tile fields left empty: "
          f"{s['scene']}, {page.text_of('mine-msg')[:80]!r}")
    b.eval("document.getElementById('o-more').value = ''")

    print("a saved trace, and a damaged one")
    good = os.path.join(tmp, "run.jsonl")
    cli = run_cli(flashstep, ["trace", "--q", f"{doc}/Q.txt", "--k", f"{doc}/K.txt", "--v", f"{doc}/V.txt", "--decode", "--bk", "2",
                              "--format", "jsonl"])
    with open(good, "wb") as f:
        f.write(cli.stdout)
    page.click_id("b-mine")
    # The page already shows a decode (the problem above): wait for the file's own message, not
    # for the scene, or the download below can race the reading and fetch the previous trace.
    b.eval("document.getElementById('mine-msg').textContent = ''")
    page.choose_file("#trace-file", good)
    b.wait_for("document.getElementById('mine-msg').textContent.startsWith('replaying run.jsonl')",
               what="the saved trace read")
    s = page.wait_state(lambda s: s["scene"] == "decode", "the saved decode trace")
    check(s["n"] == cli.stdout.count(b"\n") and s["lesson"] == -1, f"a saved decode trace replays ({s['n']} steps)")
    name, data = page.download("b-download")
    check(data == cli.stdout, "and downloads again byte for byte")
    back = os.path.join(tmp, "back.jsonl")
    cli = run_cli(flashstep, ["trace", "--q", f"{doc}/Q.txt", "--k", f"{doc}/K.txt", "--v", f"{doc}/V.txt", "--backward",
                              "--do", f"{doc}/dO.txt", "--mask", "causal", "--format", "jsonl"])
    with open(back, "wb") as f:
        f.write(cli.stdout)
    page.click_id("b-mine")
    page.choose_file("#trace-file", back)
    s = page.wait_state(lambda s: s["scene"] == "backward", "the saved backward trace")
    check(s["n"] == cli.stdout.count(b"\n"), f"a saved backward trace replays in the backward scene ({s['n']} steps)")
    lines = cli.stdout.split(b"\n")
    damaged = os.path.join(tmp, "cut.jsonl")
    with open(damaged, "wb") as f:
        f.write(b"\n".join(lines[:3]) + b"\n" + lines[3][:40] + b"\n")
    page.click_id("b-mine")
    b.eval("document.getElementById('mine-msg').textContent = ''")
    page.choose_file("#trace-file", damaged)
    b.wait_for("document.getElementById('mine-msg').textContent.length > 0", what="a message")
    msg = page.text_of("mine-msg")
    cli = run_cli(flashstep, ["play", "--trace", "cut.jsonl", "--bench", "1"], cwd=tmp)
    check("cut.jsonl:4:" in msg and msg.strip() == cli.stderr.decode().strip(), f"a cut trace: the reader's message {msg.strip()!r}",
          f"CLI: {cli.stderr.decode().strip()!r}")
    page.click_id("b-mine")

    print("the lesson list")
    page.click_id("b-lessons")
    b.wait_for("document.querySelectorAll('#lesson-list li').length > 0", what="the lesson list")
    cli = run_cli(flashstep, ["lessons", "--paths"])
    n_lessons = len(cli.stdout.decode().split())
    items = b.eval("[...document.querySelectorAll('#lesson-list li')].map(li => [li.dataset.name, li.querySelector('.src').textContent])")
    check(len(items) == n_lessons and all(src for _, src in items), f"{len(items)} lessons listed, each with its document and section")
    b.eval("document.querySelectorAll('#lesson-list li')[10].click()")
    s = page.wait_state(lambda s: s["name"] == items[10][0], "the 11th lesson")
    hash_ok = b.wait_for(f"location.hash === '#{items[10][0]}/0'", what="the address of the 11th lesson")
    check(s["name"] == items[10][0] and hash_ok, f"a click opens {items[10][0]}, and the address names it")

    print("the course: its order, the next lesson at each lesson's end, progress kept across a reload")
    b.eval("localStorage.removeItem('flashstep.done')")
    out = run_cli(flashstep, ["lessons", "--course"]).stdout.decode()
    cli_order = [line.split()[1] for line in out.splitlines() if line[:5].strip().isdigit() and len(line.split()) > 1]
    page.click_id("b-lessons")
    b.wait_for("document.querySelectorAll('#course-list li').length > 0", what="the course")
    order = b.eval("[...document.querySelectorAll('#course-list li')].map(li => li.dataset.name)")
    check(order == cli_order and len(order) == n_lessons,
          f"'Start here' lists the {len(order)} lessons in flashstep lessons --course's order", f"{order[:4]} vs {cli_order[:4]}")
    heads = b.eval("[...document.querySelectorAll('#course-list h3')].map(h => h.textContent)")
    check(len(heads) >= 8 and "oftmax" in heads[0], f"in {len(heads)} sections, from '{heads[0] if heads else ''}'")
    docs = b.eval("[...document.querySelectorAll('#lesson-list h3')].map(h => h.textContent)")
    check(len(docs) >= 5 and docs[0].startswith("FlashAttention: Theory and Practice (000_a9212bbbb0f7e97c.txt)")
          and not any(".txt" in d and not d.endswith(".txt)") for d in docs),
          f"'By document': the five documents by their titles ({docs[:1]}, {len(docs)} headings)")
    b.eval("document.querySelector('#course-list li').click()")
    s = page.wait_state(lambda s: s["name"] == order[0], "the course's first lesson")
    b.key("End")
    page.wait_state(lambda s: s["step"] == s["n"] - 1, "its last step")
    # its "try this": a real button that loads the variation from step 0, and back again
    b.wait_for("!document.getElementById('try-lesson').hidden", what="the Try this button")
    t = b.eval("(() => { const e = document.getElementById('try-lesson'); return [e.tagName, e.textContent, e.getAttribute('aria-label')]; })()")
    check(t[0] == "BUTTON" and t[1].startswith("Try this: ") and "plays the lesson again with --" in (t[2] or ""),
          f"at its last step, a Try this button: {t[1]!r}")
    # the buttons sit in the foot of the canvas's ending box, clear of its words' box top and of the
    # narration and the timeline (CSS pixels of the canvas; the next frame's layout has their room)
    time.sleep(0.3)
    geo = json.loads(b.eval("""JSON.stringify((() => { const c = document.getElementById('canvas').getBoundingClientRect(),
      s = Module.flashstep.state(), k = c.width / s.w;
      return {k, boxes: s.boxes, btn: ['try-lesson', 'next-lesson'].map((id) => { const r = document.getElementById(id)
        .getBoundingClientRect(); return [r.x - c.x, r.y - c.y, r.width, r.height]; })}; })())"""))
    k, bx = geo["k"], geo["boxes"]
    end = [v * k for v in bx[6]]
    inside = all(r[0] >= end[0] - 1 and r[1] >= end[1] - 1 and r[0] + r[2] <= end[0] + end[2] + 1 and
                 r[1] + r[3] <= end[1] + end[3] + 1 for r in geo["btn"])
    clear = not any(r[1] < bx[3][1] * k + bx[3][3] * k and r[1] + r[3] > bx[3][1] * k for r in geo["btn"])
    check(end[3] > 0 and inside and clear, "the last step's buttons lie in the foot of the ending box, off the narration",
          f"ending box {end}, buttons {geo['btn']}, narration {[v * k for v in bx[3]]}")
    page.click_id("try-lesson")
    s = page.wait_state(lambda s: "(varied: " in s["title"] and s["step"] == 0, "the variation")
    check(s["name"] == order[0], f"Try this plays {order[0]} again with its options: {s['title']!r}")
    b.key("End")
    page.wait_state(lambda s: s["step"] == s["n"] - 1, "the variation's last step")
    b.wait_for("document.getElementById('try-lesson').textContent.startsWith('Back')", what="the way back")
    page.click_id("try-lesson")
    s = page.wait_state(lambda s: "(varied: " not in s["title"], "the lesson as written")
    check(s["name"] == order[0], "and Back to the lesson as written")
    b.key("End")
    page.wait_state(lambda s: s["step"] == s["n"] - 1, "its last step again")
    b.wait_for("!document.getElementById('next-lesson').hidden", what="the next lesson offered")
    check(b.eval("document.getElementById('next-lesson').dataset.name") == order[1], f"at its last step, the course offers {order[1]}")
    page.click_id("next-lesson")
    s = page.wait_state(lambda s: s["name"] == order[1], "the offered lesson")
    gone = b.wait_for("document.getElementById('next-lesson').hidden", what="the offer gone")
    check(gone, f"a click opens {order[1]}, and the offer goes")
    s = page.load(f"#{order[2]}/0")
    page.click_id("b-lessons")
    b.wait_for("document.querySelectorAll('#course-list li.done').length > 0", what="the saved progress")
    done = b.eval("[...document.querySelectorAll('#course-list li.done')].map(li => li.dataset.name)")
    check(done == [order[0]] and "1 of" in page.text_of("course-progress"),
          f"after a reload: {done} done ({page.text_of('course-progress')})")
    page.click_id("course-clear")
    check(b.eval("document.querySelectorAll('#course-list li.done').length") == 0 and
          b.eval("localStorage.getItem('flashstep.done')") is None, "Clear progress forgets it")
    page.click_id("b-lessons")
    page.click_id("b-claims")
    b.wait_for("document.getElementById('claims-doc').textContent.length > 0", what="the claims' document")
    check(page.text_of("claims-doc").startswith("From FlashAttention") and "_" not in page.text_of("claims-doc").split("§")[0],
          f"the claims panel names the document by its title: {page.text_of('claims-doc')[:60]}")
    page.click_id("b-claims")

    print("every lesson in the page against flashstep render")
    page.size(1024, 600 + TOOLBAR)
    s = page.load("#000_01/0")
    bad = []
    for name, _ in items:
        n = b.eval(f"Module.flashstep.open('{name}', 0) === 0 && Module.flashstep.state().n")
        step = max(0, (n or 1) // 2)
        b.eval(f"Module.flashstep.open('{name}', {step})")
        b.wait_for(f"Module.flashstep.state().step === {step} && location.hash === '#{name}/{step}'", what=f"{name} at {step}")
        st = page.state()
        ref = os.path.join(tmp, "lesson.png")
        r = run_cli(flashstep, ["render", name, "--step", str(step), "--size", f"{st['w']}x{st['h']}", "--zoom", str(st["zoom"]),
                                "--out", ref])
        with open(ref, "rb") as f:   # the ending box (a claims lesson's only step) holds the page's buttons
            eb = st["boxes"][6] if len(st.get("boxes", [])) > 6 and st["boxes"][6][3] > 0 else None
            # and the section's quiz line (the page's alone: render has no course) just above it,
            # where the claims list, which stops above both, stops sooner in the page
            sb = st["boxes"][7] if eb and len(st["boxes"]) > 7 and st["boxes"][7][3] > 0 else None
            if sb:
                top = min(eb[1], sb[1])
                eb = [min(eb[0], sb[0]), top, max(eb[0] + eb[2], sb[0] + sb[2]) - min(eb[0], sb[0]),
                      max(eb[1] + eb[3], sb[1] + sb[3]) - top]
            if eb and st.get("scene") == "claims":   # the list stops a line sooner above the page's taller box
                up = 2 * (st["font"][0] * 5 // 4 + 1)
                eb = [eb[0], eb[1] - up, eb[2], eb[3] + up]
            ok, text = match_frame(b, f.read(), eb)
        if r.returncode != 0 or not ok:
            bad.append(f"{name} step {step}: {text}")
    check(not bad, f"all {len(items)} lessons, each at its middle step, draw in the page as flashstep render draws them",
          "; ".join(bad[:4]))

    print("screenshots against flashstep render")
    for w, h, dpr in ((800, 400, 1), (800, 400, 2), (1280, 720, 1), (1920, 1080, 1)):
        page.size(w, h, dpr, dpr > 1)
        s = page.load("#000_04/14")
        cw, ch = s["w"], s["h"]
        check((cw, ch) == (w, h - TOOLBAR), f"{w} x {h} (device scale {dpr}): the canvas takes the page below the bar "
              f"({cw} x {ch}, text at {s['zoom']} %)")
        b.eval("Module.firstFrameMs")
        time.sleep(0.3)
        ref = os.path.join(tmp, f"render-{w}x{h}.png")
        r = run_cli(flashstep, ["render", "000_04", "--step", "14", "--size", f"{cw}x{ch}", "--zoom", str(s["zoom"]), "--out", ref])
        with open(ref, "rb") as f:
            ok, text = match_frame(b, f.read())
        check(r.returncode == 0 and ok, f"{w} x {h} (device scale {dpr}): the canvas matches flashstep render: {text}")
        if shots:
            with open(os.path.join(shots, f"web-{w}x{h}" + ("" if dpr == 1 else f"@{dpr}x") + ".png"), "wb") as f:
                f.write(b.screenshot())
            shutil.copy(ref, os.path.join(shots, f"render-{cw}x{ch}.png"))
    page.size(1280, 720 + TOOLBAR)
    s = page.wait_state(lambda s: (s["w"], s["h"]) == (1280, 720), "the canvas following the page's new size", timeout=10)
    check((s["w"], s["h"], s["zoom"]) == (1280, 720, 100), "resized without a reload, the canvas follows (SDL's resize)")

    if bench:
        print("timings (not judged)")
        page.size(1920, 1080 + TOOLBAR)
        s = page.load("#grid64/0")
        b.eval("Module.frameTimes = []; Module.onFrameOrig = Module.onFrame; "
               "Module.onFrame = () => { Module.onFrameOrig(); Module.frameTimes.push(Module.flashstep.state().frame_ms); }")
        t0 = time.time()
        for _ in range(120):   # a held key repeats about 30 times a second
            b.key("ArrowRight")
            time.sleep(1 / 30)
        s = page.wait_state(lambda s: s["step"] == 120, "120 held-key steps")
        took = time.time() - t0
        ft = b.eval("Module.frameTimes")
        size = b.eval("performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))"
                      ".map(e => [new URL(e.name).pathname.split('/').pop(), e.transferSize, e.encodedBodySize])")
        print(f"  first frame {first:.0f} ms after navigation (1280 x 720)")
        print(f"  grid64 at 1920 x 1080: 120 key repeats at 30/s took {took:.2f} s; frame (update + draw) mean "
              f"{sum(ft) / len(ft):.1f} ms, max {max(ft):.1f} ms over {len(ft)} frames")
        for nm, tr, enc in size:
            print(f"  {nm or 'index.html'}: {enc} bytes")


if __name__ == "__main__":
    main()
