#!/usr/bin/env python3
"""check_a11y.py URL FLASHSTEP AXE_JS [--shots DIR]: the page for a student who cannot see the
canvas or use a mouse (WCAG 2.1 AA), in headless Chromium.

  - axe-core (AXE_JS, from scripts/web-axe.sh; loaded into the page by this test only, never
    shipped) with the WCAG 2.0 and 2.1 A and AA rules, over a lesson of every scene kind (tiled,
    decode, tree, backward, paged, FP8, ring, pitfall, claims) with the description open (its
    tile table unfolded) and with Claims open, each kind at one of 1280 x 720 and 390 x 844 a run
    (the other the next: FS_A11Y_PART, printed), and on one lesson with Lessons, Your problem,
    GPU and the keys (help) open and the narrow menu open at both sizes: no violation;
  - the accessibility tree (the DevTools protocol's, what a screen reader gets) at several steps
    holds the step's words and every number of its formulas as `flashstep play --terminal
    --all` (FLASHSTEP, the native program) prints them, and the live region says the step;
  - a walk by keyboard alone: Tab from the page's start reaches the skip link, every control of
    the bar and the canvas, and leaves the canvas again (Tab and Shift+Tab; Esc too); every
    panel opens with Enter, takes the focus, and closes with Esc giving the focus back; a lesson
    is opened from the Lessons panel, played to its end (Space, Up) and the next one opened;
  - prefers-reduced-motion: no transition, and a playing show stops;
  - 200 % zoom (640 x 360 CSS pixels at device scale 2) and 320 CSS pixels wide: no horizontal
    scrolling of the page, every control of the bar (and of the menu) inside the viewport, the
    description inside its panel.
--shots DIR keeps a screenshot of the description at each size, to look at.
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser, CDPError  # noqa: E402
import report  # noqa: E402
from report import check  # noqa: E402

# One lesson of each scene kind, at a step inside its work.
KINDS = [("tiled", "000_04/15"), ("decode", "000_05/3"), ("tree", "000_07/6"), ("backward", "000_11/14"),
         ("paged", "002_04/5"), ("FP8", "004_10/4"), ("ring", "ring_01/6"), ("pitfall", "001_12/4"),
         ("claims", "001_05/0")]
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
PANELS = ["p-lessons", "p-desc", "p-claims", "p-mine", "p-gpu", "p-help"]
BUTTON = {"p-lessons": "b-lessons", "p-desc": "b-desc", "p-claims": "b-claims", "p-mine": "b-mine", "p-gpu": "b-gpu",
          "p-help": "b-help"}

# key -> (key, code, Windows virtual key code, text it types)
KEYS = {"Tab": ("Tab", "Tab", 9, None), "Enter": ("Enter", "Enter", 13, "\r"), "Escape": ("Escape", "Escape", 27, None),
        "Space": (" ", "Space", 32, " "), "Up": ("ArrowUp", "ArrowUp", 38, None), "Right": ("ArrowRight", "ArrowRight", 39, None), "Left": ("ArrowLeft", "ArrowLeft", 37, None),
        "d": ("d", "KeyD", 68, "d")}


def press(b, name, shift=False):
    """A key as a keyboard sends it (keyDown with its text, keyUp), Shift held around it."""
    key, code, vk, text = KEYS[name]
    mods = 8 if shift else 0
    base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk, "modifiers": mods}
    sh = {"key": "Shift", "code": "ShiftLeft", "windowsVirtualKeyCode": 16, "nativeVirtualKeyCode": 16, "modifiers": 8}
    if shift:
        b.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", **sh})
    b.send("Input.dispatchKeyEvent", {"type": "keyDown", **base, **({"text": text} if text else {})})
    b.send("Input.dispatchKeyEvent", {"type": "keyUp", **base})
    if shift:
        b.send("Input.dispatchKeyEvent", {"type": "keyUp", **{**sh, "modifiers": 0}})


def frames(b, n=2):
    for _ in range(n):
        b.eval("new Promise((r) => requestAnimationFrame(() => r(1)))", await_promise=True)


def load(b, url, frag):
    b.navigate("about:blank")
    b.wait_for("location.href === 'about:blank'", what="about:blank")
    b.navigate(url + "#" + frag)
    b.wait_for("window.Module && Module.flashstep && Module.flashstep.state() && Module.firstFrameMs", timeout=60,
               what="the page's first frame")
    frames(b)
    return state(b)


def state(b):
    return json.loads(b.eval("JSON.stringify(Module.flashstep.state())"))


def active(b):
    return b.eval("(() => { const e = document.activeElement; return e ? (e.id || e.className || e.tagName) : ''; })()")


def axe(b, axe_js, what):
    """axe-core's WCAG 2.0/2.1 A and AA rules over the page as it is now: check no violation."""
    if not b.eval("typeof window.axe !== 'undefined'"):
        b.eval(axe_js + "\n;true")
    res = b.eval(f"axe.run(document, {{runOnly: {{type: 'tag', values: {json.dumps(TAGS)}}}, resultTypes: ['violations']}})"
                 ".then((r) => r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help, "
                 "nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' '))})))", await_promise=True)
    check(not res, f"axe: {what}: no WCAG 2.1 A/AA violation",
          "; ".join(f"{v['id']} ({v['impact']}): {v['help']} at {v['nodes']}" for v in res or []))


def open_panel(b, pid):
    b.eval(f"document.getElementById('{BUTTON[pid]}').click()")
    b.wait_for(f"!document.getElementById('{pid}').hidden", what=pid)
    frames(b)


def close_panels(b):
    b.eval("document.querySelectorAll('.panel').forEach((p) => { if (!p.hidden) p.querySelector('.close').click(); })")
    frames(b)


def ax_text(b):
    """Every name and value in the accessibility tree, joined, whitespace collapsed."""
    nodes = b.send("Accessibility.getFullAXTree")["nodes"]
    parts = []
    for n in nodes:
        if n.get("ignored"):
            continue
        for k in ("name", "value"):
            v = n.get(k, {}).get("value")
            if isinstance(v, str) and v:
                parts.append(v)
    return re.sub(r"\s+", " ", " ".join(parts))


def terminal_steps(flashstep, lesson):
    """`flashstep play LESSON --terminal --all`: {0-based step: (words, [numbers of its formulas])}."""
    out = subprocess.run([flashstep, "play", lesson, "--terminal", "--all"], capture_output=True, text=True, timeout=60).stdout
    steps = {}
    for block in re.split(r"^── step ", out, flags=re.M)[1:]:
        m = re.match(r"(\d+) of \d+", block)
        if not m:
            continue
        lines = block.split("\n")[1:]
        cut = next((i for i, x in enumerate(lines) if x.startswith("──")), len(lines))   # the claims after the last step
        lines = lines[:cut]
        words = " ".join(x.strip() for x in lines if x and not x.startswith("    ") and not x.startswith("──"))
        nums = re.findall(r"-?\d+\.\d{4}", "\n".join(x for x in lines if x.startswith("    ")))
        steps[int(m.group(1))] = (re.sub(r"\s+", " ", words).strip(), nums)   # the terminal's index is the trace's
    return steps


GRID_JS = """
(() => [...document.querySelectorAll('#desc details')].filter((d) => d.dataset.part === 'grid')
  .map((d) => [...d.querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))))()
"""


def check_grid(b, flashstep, k):
    """The score grid's table at step k against the scores of every row step up to k, as
    `flashstep play --terminal --all` prints them ("row R, tile (...), keys A..B ...: s = [...]")."""
    out = subprocess.run([flashstep, "play", "000_04", "--terminal", "--all"], capture_output=True, text=True, timeout=60).stdout
    want = {}
    for m in re.finditer(r"── step (\d+) of 0–\d+ · row .*?\n.*?row (\d+), tile \(Q \d+, KV \d+\), keys (\d+)\.\.\d+ [^:]*: s = \[([^\]]*)\]",
                         out, flags=re.S):
        if int(m.group(1)) > k:
            break
        for j, x in enumerate(m.group(4).split(", ")):
            want[(int(m.group(2)), int(m.group(3)) + j)] = x.strip()
    grids = b.eval(GRID_JS)
    got = grids[0] if grids else []
    bad = [(r, c, x, got[r][c] if r < len(got) and c < len(got[r]) else None) for (r, c), x in want.items()
           if not (r < len(got) and c < len(got[r]) and got[r][c] == x)]
    check(len(want) >= 20 and not bad, f"000_04 step {k}: the score grid's table holds the {len(want)} scores of the rows so far",
          f"differ (row, key, terminal, page): {bad[:6]}")


def check_tree(b, url, flashstep):
    print("the accessibility tree: the step's words and the numbers of its formulas")
    b.send("Accessibility.enable")
    for lesson, steps in (("000_04", [1, 2, 10, 15]), ("001_12", [4]), ("000_11", [13, 14])):
        want = terminal_steps(flashstep, lesson)
        load(b, url, f"{lesson}/{steps[0]}")
        open_panel(b, "p-desc")
        for k in steps:
            b.eval(f"Module.flashstep.open(Module.flashstep.state().name, {k})")
            b.wait_for(f"document.getElementById('desc').textContent.includes('Step {k} of')", what=f"the description of step {k}")
            text = ax_text(b)
            words, nums = want.get(k, ("", []))
            said = b.eval("Module.flashstep.describe().say")
            missing = [x for x in nums if x not in text]
            check(said and re.sub(r"\s+", " ", said) in text and (not words or words in text),
                  f"{lesson} step {k}: the tree holds the step's words", f"words {words[:120]!r}, said {said[:120]!r}")
            check(nums and not missing, f"{lesson} step {k}: and the {len(nums)} numbers of its formulas",
                  f"missing {missing[:8]}")
        if lesson == "000_04":
            check_grid(b, flashstep, steps[-1])
        # the live region says the step after a step by key
        b.eval("document.getElementById('canvas').focus()")
        s0 = state(b)
        press(b, "Right" if s0["step"] < s0["n"] - 1 else "Left")
        b.wait_for(f"Module.flashstep.state().step !== {s0['step']}", timeout=10, what="a step by key")
        s = state(b)
        b.wait_for(f"document.getElementById('live').textContent.startsWith('Step {s['step']} of')", timeout=10,
                   what="the live region")
        live = b.eval("document.getElementById('live').textContent")
        check(live.startswith(f"Step {s['step']} of") and b.eval("document.getElementById('live').getAttribute('aria-live')") == "polite",
              f"{lesson}: a polite live region says the step ({live[:60]!r}…)")


def tab_until(b, target, limit=80, shift=False):
    """Tab (or Shift+Tab) until the focus is on element id target; the ids passed on the way."""
    seen = []
    for _ in range(limit):
        press(b, "Tab", shift)
        a = active(b)
        seen.append(a)
        if a == target:
            return seen
    return seen


def check_keyboard(b, url):
    print("the keyboard alone")
    load(b, url, "000_04/0")
    first = b.eval("[...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]')]"
                   ".find((e) => e.tabIndex >= 0 && !e.closest('[hidden]')).id")
    b.eval("document.getElementById('skip').focus()")
    shown = b.eval("document.getElementById('skip').getBoundingClientRect().top >= 0")
    check(first == "skip" and shown, "the page's first stop of Tab is 'Skip to the lesson', shown when focused", first)
    want = b.eval("[...document.querySelectorAll('#bar button')].filter((e) => e.offsetParent !== null).map((e) => e.id)")
    seen = tab_until(b, "canvas")
    check(set(want) <= set(seen) and seen[-1] == "canvas", f"Tab reaches the bar's {len(want)} controls, then the scene",
          f"missing {sorted(set(want) - set(seen))}, walked {seen}")
    press(b, "Right")
    try:
        b.wait_for("Module.flashstep.state().step === 1", timeout=10, what="step 1")
    except CDPError:
        pass
    check(state(b)["step"] == 1, "the scene takes the stepping keys while focused", f"step {state(b)['step']}, focus on {active(b)}")
    press(b, "Tab")
    after = active(b)
    check(after not in ("canvas", "CANVAS"), f"Tab leaves the scene (to {after})")
    b.eval("document.getElementById('canvas').focus()")
    press(b, "Tab", shift=True)
    check(active(b) != "canvas", f"Shift+Tab leaves it too (to {active(b)})")
    b.eval("document.getElementById('canvas').focus()")
    press(b, "Escape")
    check(active(b) == "b-desc", f"so does Esc, to Describe ({active(b)})")
    # every panel by keyboard: Enter opens it with the focus in it, Esc closes it, the focus comes back
    for pid in PANELS:
        bid = BUTTON[pid]
        b.eval(f"document.getElementById('{bid}').focus()")
        press(b, "Enter")
        ok = b.eval(f"!document.getElementById('{pid}').hidden && document.getElementById('{pid}').contains(document.activeElement)")
        exp = b.eval(f"document.getElementById('{bid}').getAttribute('aria-expanded')")
        check(ok and exp == "true", f"{pid}: Enter on {bid} opens it, the focus in it, aria-expanded true")
        press(b, "Tab")
        check(b.eval(f"document.getElementById('{pid}').contains(document.activeElement)"),
              f"{pid}: Tab walks into its controls ({active(b)})")
        press(b, "Escape")
        ok = b.eval(f"document.getElementById('{pid}').hidden")
        check(ok and active(b) == bid, f"{pid}: Esc closes it and gives the focus back to {bid}", f"focus on {active(b)}")
    # D: the description, from anywhere but a text field
    b.eval("document.getElementById('canvas').focus()")
    press(b, "d")
    check(b.eval("!document.getElementById('p-desc').hidden"), "D opens the description")
    press(b, "Escape")
    check(b.eval("document.getElementById('p-desc').hidden") and active(b) == "canvas", "Esc closes it, back to the scene")
    # the skip link opens the description at its heading
    b.eval("document.getElementById('skip').focus()")
    press(b, "Enter")
    check(b.eval("!document.getElementById('p-desc').hidden && document.activeElement.closest('#p-desc') !== null"),
          "Skip to the lesson: the description, the focus on its heading")
    press(b, "Escape")
    # a lesson from the Lessons panel, by keyboard
    b.eval("document.getElementById('b-lessons').focus()")
    press(b, "Enter")
    b.wait_for("document.querySelectorAll('#course-list .pick').length > 0", what="the course's lessons")
    target = b.eval("[...document.querySelectorAll('#course-list li')].find((li) => li.dataset.name.startsWith('000_04')).firstChild.title")
    for _ in range(200):
        press(b, "Tab")
        if b.eval("document.activeElement.title") == target:
            break
    press(b, "Enter")
    s = state(b)
    check(s["name"].startswith("000_04") and s["step"] == 0 and b.eval("document.getElementById('p-lessons').hidden"),
          f"a lesson opened from the Lessons panel by Tab and Enter ({s['name']})")
    # played to its end with Space (at the fastest speed), then the next lesson by Tab and Enter
    b.eval("document.getElementById('canvas').focus()")
    for _ in range(4):
        press(b, "Up")
    press(b, "Space")
    b.wait_for("(() => { const s = Module.flashstep.state(); return s.step === s.n - 1; })()", timeout=60,
               what="the lesson's last step")
    b.wait_for("!document.getElementById('next-lesson').hidden", what="the next lesson's button")
    seen = tab_until(b, "next-lesson", limit=4)
    check(seen and seen[-1] == "next-lesson", "played to its end; Tab from the scene reaches the next lesson", f"walked {seen}")
    nxt = b.eval("document.getElementById('next-lesson').dataset.name")
    press(b, "Enter")
    b.wait_for(f"Module.flashstep.state().name === {json.dumps(nxt)}", what="the next lesson")
    check(state(b)["name"] == nxt, f"Enter opens it ({nxt})")
    # the narrow menu (☰) by keyboard
    b.send("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
    frames(b, 3)
    b.eval("document.getElementById('b-menu').focus()")
    press(b, "Enter")
    check(b.eval("document.getElementById('bar').classList.contains('open') && document.getElementById('more').contains(document.activeElement)"),
          "☰: Enter opens the menu, the focus on its first choice")
    press(b, "Escape")
    check(b.eval("!document.getElementById('bar').classList.contains('open')") and active(b) == "b-menu",
          "Esc closes the menu, the focus back on ☰")
    b.eval("document.getElementById('b-menu').focus()")
    press(b, "Enter")
    b.eval("document.getElementById('b-claims').focus()")
    press(b, "Enter")
    check(b.eval("!document.getElementById('p-claims').hidden"), "☰, then Claims: the panel opens")
    press(b, "Escape")
    check(active(b) == "b-menu", f"and closing it gives the focus to ☰ (its button is hidden again): {active(b)}")
    b.send("Emulation.clearDeviceMetricsOverride")


def check_motion(b, url):
    print("reduced motion")
    load(b, url, "000_04/0")
    normal = b.eval("getComputedStyle(document.getElementById('b-next')).transitionDuration")
    b.eval("document.getElementById('canvas').focus()")
    press(b, "Space")
    b.wait_for("Module.flashstep.state().playing", what="playing")
    b.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]})
    stopped = True
    try:
        b.wait_for("!Module.flashstep.state().playing", timeout=10, what="stopped")
    except CDPError:
        stopped = False
    reduced = b.eval("getComputedStyle(document.getElementById('b-next')).transitionDuration")
    check(normal != "0s" and reduced == "0s", f"transitions: {normal} normally, {reduced} with reduced motion")
    check(stopped, "a playing show stops when reduced motion is asked for")
    b.send("Emulation.setEmulatedMedia", {"features": []})


REFLOW_JS = """
(() => {
  const W = innerWidth, H = innerHeight, out = [];
  const doc = document.scrollingElement;
  if (doc.scrollWidth > W + 1) out.push('page scrolls sideways: ' + doc.scrollWidth + ' > ' + W);
  for (const b of document.querySelectorAll('#bar button')) {
    if (b.offsetParent === null) continue;
    const r = b.getBoundingClientRect();
    if (r.left < -0.5 || r.right > W + 0.5 || r.top < -0.5 || r.bottom > H + 0.5) out.push(b.id + ' outside');
  }
  const p = document.getElementById('p-desc');
  if (!p.hidden) {
    const r = p.getBoundingClientRect();
    if (r.left < -0.5 || r.right > W + 0.5) out.push('the description outside the viewport');
    if (p.scrollWidth > p.clientWidth + 1) out.push('the description scrolls sideways: ' + p.scrollWidth + ' > ' + p.clientWidth);
  }
  return out;
})()
"""


def check_reflow(b, url, shots):
    print("200 % zoom and 320 CSS pixels wide")
    for (W, H, dpr, tag) in ((640, 360, 2, "200 % of 1280 x 720"), (320, 640, 1, "320 px wide"), (320, 256, 1, "320 x 256")):
        b.send("Emulation.setDeviceMetricsOverride", {"width": W, "height": H, "deviceScaleFactor": dpr, "mobile": W < 700})
        load(b, url, "000_04/15")
        bad = b.eval(REFLOW_JS)
        check(not bad, f"{tag}: no sideways scrolling, every control of the bar inside", "; ".join(bad))
        if b.eval("getComputedStyle(document.getElementById('b-menu')).display !== 'none'"):
            b.eval("document.getElementById('b-menu').click()")
            bad = b.eval(REFLOW_JS)
            check(not bad, f"{tag}: and with the menu (☰) open", "; ".join(bad))
            b.eval("document.body.click()")
        open_panel(b, "p-desc")
        b.eval("document.querySelectorAll('#desc details').forEach((d) => { d.open = true; })")
        frames(b)
        bad = b.eval(REFLOW_JS)
        check(not bad, f"{tag}: the description open, tables unfolded: inside its panel", "; ".join(bad))
        if shots:
            with open(os.path.join(shots, f"a11y-desc-{W}x{H}.png"), "wb") as f:
                f.write(b.screenshot())
    b.send("Emulation.clearDeviceMetricsOverride")


def check_axe(b, url, axe_js, shots):
    # Each scene kind at one of the two sizes a run, the other size the next (about 4 s an axe
    # run beside the other tests; PART from the clock or FS_A11Y_PART, printed); every panel and
    # the page's other states at both sizes every run. With screenshots asked for, everything.
    part = os.environ.get("FS_A11Y_PART", str(int(time.time()) % 2))
    if part not in ("0", "1"):
        sys.exit(f"check_a11y: FS_A11Y_PART wants 0 or 1, got {part!r}")
    part = int(part)
    if not shots:
        print(f"axe-core: the scene kinds k at 1280 x 720 with k mod 2 = {part}, the others at 390 x 844 "
              f"(FS_A11Y_PART={part} replays it)")
    for z, (W, H) in enumerate(((1280, 720), (390, 844))):
        print(f"axe-core at {W} x {H}")
        b.send("Emulation.setDeviceMetricsOverride", {"width": W, "height": H, "deviceScaleFactor": 1, "mobile": W < 700})
        for i, (kind, frag) in enumerate(KINDS):
            if not shots and (i + z + part) % 2:
                continue
            load(b, url, frag)
            open_panel(b, "p-desc")
            b.eval("document.querySelectorAll('#desc details').forEach((d) => { d.open = true; })")
            frames(b)
            axe(b, axe_js, f"{W}x{H} {kind} ({frag}), the description open")
            if shots and kind in ("tiled", "backward"):
                with open(os.path.join(shots, f"a11y-{W}x{H}-{kind}.png"), "wb") as f:
                    f.write(b.screenshot())
            close_panels(b)
            open_panel(b, "p-claims")
            axe(b, axe_js, f"{W}x{H} {kind}, Claims open")
            close_panels(b)
        load(b, url, "000_04/15")
        axe(b, axe_js, f"{W}x{H} no panel")
        load(b, url, "000_04/21")   # the last step: the Try this and next-lesson buttons
        b.wait_for("!document.getElementById('try-lesson').hidden", what="the Try this button")
        axe(b, axe_js, f"{W}x{H} the last step, Try this shown")
        for pid in ("p-lessons", "p-mine", "p-gpu", "p-help"):
            if W < 700:
                b.eval("document.getElementById('b-menu').click()")
            open_panel(b, pid)
            if pid == "p-lessons":
                b.wait_for("document.querySelectorAll('#course-list .pick').length > 0", what="the course")
            axe(b, axe_js, f"{W}x{H} {pid} open")
            close_panels(b)
        if W < 700:
            b.eval("document.getElementById('b-menu').click()")
            axe(b, axe_js, f"{W}x{H} the menu (☰) open")
            b.eval("document.body.click()")
    b.send("Emulation.clearDeviceMetricsOverride")


def main():
    args = sys.argv[1:]
    shots = report.shots_dir(args)
    if len(args) != 3:
        sys.exit(__doc__)
    url, flashstep, axe_path = args
    with open(axe_path) as f:
        axe_js = f.read()
    t0 = time.time()
    with Browser("chromium", 1280, 720, timeout=60) as b:
        for m in ("Runtime.enable", "Page.enable"):
            b.send(m)
        errors = []
        try:
            check_keyboard(b, url)
            check_tree(b, url, flashstep)
            check_motion(b, url)
            check_reflow(b, url, shots)
            check_axe(b, url, axe_js, shots)
        except CDPError as e:
            errors.append(str(e))
        check(not errors, "the browser answered every step", "; ".join(errors))
    print(f"check_a11y: {time.time() - t0:.0f} s")
    sys.exit(report.summary("check_a11y: "))


if __name__ == "__main__":
    main()
