#!/usr/bin/env python3
"""check_layout.py URL [--shots DIR]: the page at phone, tablet and laptop sizes in headless Chromium.

At 360 x 640, 390 x 844, 768 x 1024 and 1024 x 768 CSS pixels (device scale 1, and 3 for a
phone), on a tiled lesson, a backward lesson and a claims lesson, it holds the page to its
layout rules and fails the wrong layouts:
  - every control of the bar is inside the viewport and not covered, and with the menu (☰) open
    so is every control the menu holds;
  - upright, the C layout is the portrait one, its body text is the page's 14 CSS pixels and the
    scene's text at least 90 % of the layout's size; at every size no text under MIN_TEXT, and
    no number in a grid's cell under MIN_CELL_TEXT;
  - the C layout's own boxes (header, scene, side panel, narration, timeline, read through the
    page's state call) lie inside the canvas and no two of them overlap;
  - the step buttons work from where they are (a tap on ▶| moves one step).
--shots DIR keeps one screenshot per size and lesson, to look at.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser, CDPError  # noqa: E402
import report  # noqa: E402
from report import check  # noqa: E402

MIN_TEXT = 9        # CSS pixels: the smallest text outside the grids' cells
MIN_CELL_TEXT = 7   # CSS pixels: the smallest number shrunk into a grid's cell (pinch to zoom it)
BODY_TEXT = 14      # CSS pixels: the page's body text, the C layout's body size when upright
MAX_FIT = 2         # the scene's text at least 90 % of the layout's (two 5 % fitting steps)
# The layouts are in CSS pixels; device scale 3 (a phone's) once, to see that it changes nothing.
SIZES = [(360, 640, 1), (390, 844, 1), (390, 844, 3), (768, 1024, 1), (1024, 768, 1)]
LESSONS = ["000_04_tiled_causal_n6/14", "000_11_backward_n6/30", "001_05_hardware/0"]
NAMES = ["header", "scene", "side panel", "narration", "timeline"]


# Every visible control of the bar: its box, whether the element at its centre is itself (not
# covered by another), and its label.
CONTROLS_JS = """
(() => [...document.querySelectorAll('#bar button')].filter((b) => b.offsetParent !== null &&
   getComputedStyle(b).visibility !== 'hidden').map((b) => {
  const r = b.getBoundingClientRect();
  const top = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  return {id: b.id, x: r.x, y: r.y, w: r.width, h: r.height, top: !!top && (top === b || b.contains(top))};
}))()
"""


def inside(b, W, H):
    return b["x"] >= 0 and b["y"] >= 0 and b["x"] + b["w"] <= W + 0.5 and b["y"] + b["h"] <= H + 0.5 and b["w"] > 0


def overlap(a, b):
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def state(b):
    return json.loads(b.eval("JSON.stringify(Module.flashstep.state())"))


def settle(b):
    """Wait until the page has painted at its canvas's final size (a portrait canvas grows once)."""
    last = None
    for _ in range(100):
        s = state(b)
        cur = (s["w"], s["h"], b.eval("document.getElementById('canvas').clientHeight"), s["step"], s["name"])
        if cur == last and s["h"] == cur[2]:
            return s
        last = cur
        b.eval("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))", await_promise=True)
    raise CDPError(f"the canvas did not settle: {json.dumps(s)[:300]}")


def main():
    url = sys.argv[1]
    shots = sys.argv[sys.argv.index("--shots") + 1] if "--shots" in sys.argv else None
    if shots:
        os.makedirs(shots, exist_ok=True)
    with Browser("chromium", 1024, 768) as b:
        for m in ("Runtime.enable", "Page.enable"):
            b.send(m)
        for (W, H, dpr) in SIZES:
            b.send("Emulation.setDeviceMetricsOverride", {"width": W, "height": H, "deviceScaleFactor": dpr, "mobile": W < 1000})
            for frag in LESSONS:
                name = frag.split("/")[0][:6]
                tag = f"{W}x{H}@{dpr} {name}"
                print(f"{tag}")
                b.navigate("about:blank")
                b.wait_for("location.href === 'about:blank'", what="about:blank")
                b.navigate(url + "#" + frag)
                b.wait_for("window.Module && Module.flashstep && Module.flashstep.state() && Module.firstFrameMs",
                           timeout=60, what="the page's first frame")
                s = settle(b)
                ctl = b.eval(CONTROLS_JS)
                out = [c["id"] for c in ctl if not inside(c, W, H) or not c["top"]]
                check(not out, f"{tag}: the bar's {len(ctl)} controls inside the viewport, none covered", f"not: {out}")
                if W < 700:
                    b.eval("document.getElementById('b-menu').click()")
                    ctl = b.eval(CONTROLS_JS)
                    ids = {c["id"] for c in ctl}
                    out = [c["id"] for c in ctl if not inside(c, W, H) or not c["top"]]
                    want = {"b-claims", "b-mine", "b-gpu", "b-download", "b-png", "b-theme", "b-help"}
                    check(want <= ids and not out, f"{tag}: the menu shows its {len(want)} controls inside the viewport",
                          f"missing {sorted(want - ids)}, outside or covered {out}")
                    b.eval("document.body.click()")
                portrait = H > W
                check(s["portrait"] == portrait, f"{tag}: the C layout is {'upright' if portrait else 'on its side'}")
                if portrait:
                    check(s["font"][1] >= BODY_TEXT * (1 if W < 700 else 0.85), f"{tag}: body text {s['font'][1]} px (>= {BODY_TEXT})")
                    check(s["fit_level"] <= MAX_FIT, f"{tag}: the scene's text at >= 90 % of the layout's (fitting step {s['fit_level']})")
                check(s["min_text"][0] >= MIN_TEXT, f"{tag}: no text under {MIN_TEXT} px (smallest {s['min_text'][0]})")
                check(s["min_text"][1] == 0 or s["min_text"][1] >= MIN_CELL_TEXT,
                      f"{tag}: no number in a cell under {MIN_CELL_TEXT} px (smallest {s['min_text'][1]})")
                boxes = s["boxes"][:5]
                bad = [NAMES[i] for i, r in enumerate(boxes) if r[2] <= 0 or r[3] <= 0 or r[0] < 0 or r[1] < 0 or
                       r[0] + r[2] > s["w"] or r[1] + r[3] > s["h"]]
                pairs = [f"{NAMES[i]}/{NAMES[j]}" for i in range(5) for j in range(i + 1, 5) if overlap(boxes[i], boxes[j])]
                check(not bad and not pairs, f"{tag}: the layout's five boxes inside the canvas, none overlapping",
                      f"outside: {bad}, overlapping: {pairs}")
                if shots:
                    with open(os.path.join(shots, f"layout-{W}x{H}-{dpr}-{name}.png"), "wb") as f:
                        f.write(b.screenshot())
                if frag.startswith("000_04"):
                    step = s["step"]
                    b.eval("document.getElementById('b-next').click()")
                    s2 = settle(b)
                    check(s2["step"] == step + 1, f"{tag}: ▶| steps (step {step} -> {s2['step']})")
    sys.exit(report.summary("check_layout: "))


if __name__ == "__main__":
    main()
