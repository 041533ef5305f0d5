"""cdp.py: a small client of the Chrome DevTools protocol, over Chromium's debugging pipe.

Chromium started with --remote-debugging-pipe reads commands from its file descriptor 3 and
writes answers and events to descriptor 4, each message one JSON object ended by a NUL byte.
That needs no WebSocket library and no port: this file is the whole client (standard library
only). One Browser holds one headless Chromium and one page (a target attached in flat mode).

    with Browser(chromium, 1280, 720) as b:
        b.navigate("http://127.0.0.1:8765/#000_04/3")
        b.wait_for("Module.flashstep && Module.flashstep.state()")
        b.key("ArrowRight")
"""
import base64
import contextlib
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time

# key name -> (key, code, Windows virtual key code) as a keyboard sends them
KEYS = {
    "ArrowRight": ("ArrowRight", "ArrowRight", 39), "ArrowLeft": ("ArrowLeft", "ArrowLeft", 37),
    "ArrowUp": ("ArrowUp", "ArrowUp", 38), "ArrowDown": ("ArrowDown", "ArrowDown", 40),
    "Home": ("Home", "Home", 36), "End": ("End", "End", 35), " ": (" ", "Space", 32),
    "Escape": ("Escape", "Escape", 27), "t": ("t", "KeyT", 84), "l": ("l", "KeyL", 76),
    "?": ("?", "Slash", 191), "q": ("q", "KeyQ", 81), "i": ("i", "KeyI", 73),
}


class CDPError(RuntimeError):
    pass


class Browser:
    def __init__(self, chromium, width, height, timeout=30.0, webgpu=False, questions=False):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="flashstep-chromium-")
        cmd_r, self._cmd_w = os.pipe()    # our commands -> its fd 3
        self._ev_r, ev_w = os.pipe()      # its fd 4 -> our reader

        def child_fds():
            os.dup2(cmd_r, 3)
            os.dup2(ev_w, 4)

        # webgpu: WebGPU on SwiftShader, Chromium's CPU Vulkan (a machine without a GPU still
        # runs the WGSL kernels, slowly); otherwise no GPU at all, and the page says so.
        gpu = (["--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader", "--enable-features=Vulkan",
                "--use-vulkan=swiftshader", "--use-angle=swiftshader"] if webgpu else ["--disable-gpu"])
        args = [chromium, "--headless=new", "--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check",
                *gpu, "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--mute-audio", "--hide-scrollbars", f"--user-data-dir={self.profile}", f"--window-size={width},{height}"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")   # Chromium refuses to run as root with its sandbox
        args.append("about:blank")
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(ev_w)
        self._next = 0
        self._answers = {}
        self._cv = threading.Condition()
        self.events = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.session = None
        tid = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
        self.width, self.height = width, height
        if not questions:
            # The page asks the lessons' questions by default (docs/questions.md). The checks that
            # step through lessons for other reasons see it as a teacher projecting does, with them
            # off (the page's remembered choice, which its Questions button sets); check_quiz.py
            # asks for them (questions=True).
            self.send("Page.enable")
            self.send("Page.addScriptToEvaluateOnNewDocument", {"source": (
                "try { if (localStorage.getItem('flashstep.questions') === null) "
                "localStorage.setItem('flashstep.questions', 'off'); } catch (e) {}")})

    # ---- the wire ----
    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._ev_r, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cv:
                    self._answers[-1] = None   # the browser went away
                    self._cv.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cv:
                        self._answers[msg["id"]] = msg
                        self._cv.notify_all()
                else:
                    self.events.put(msg)

    def send(self, method, params=None, browser_level=False, timeout=None):
        with self._cv:
            self._next += 1
            mid = self._next
        msg = {"id": mid, "method": method, "params": params or {}}
        if self.session and not browser_level:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        end = time.time() + (timeout or self.timeout)
        with self._cv:
            while mid not in self._answers:
                if -1 in self._answers:
                    raise CDPError(f"{method}: the browser closed")
                left = end - time.time()
                if left <= 0:
                    raise CDPError(f"{method}: no answer in {timeout or self.timeout} s")
                self._cv.wait(left)
            ans = self._answers.pop(mid)
        if "error" in ans:
            raise CDPError(f"{method}: {ans['error'].get('message')}")
        return ans.get("result", {})

    # ---- helpers ----
    def eval(self, expr, await_promise=False, timeout=None):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": await_promise},
                      timeout=timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CDPError(f"{expr[:80]}: {d.get('exception', {}).get('description') or d.get('text')}")
        return r["result"].get("value")

    @contextlib.contextmanager
    def patience(self, seconds):
        """Within the block every call may wait up to `seconds` for its answer (the page is busy
        with work of its own, such as laying out a huge text); the usual limit after it."""
        usual, self.timeout = self.timeout, seconds
        try:
            yield self
        finally:
            self.timeout = usual

    def wait_for(self, expr, timeout=None, what=None):
        end = time.time() + (timeout or self.timeout)
        while True:
            v = self.eval(expr)
            if v:
                return v
            if time.time() > end:
                raise CDPError(f"timed out waiting for {what or expr}")
            time.sleep(0.02)

    def navigate(self, url):
        self.send("Page.navigate", {"url": url})

    def key(self, name, shift=False):
        """A key pressed and released; with shift, Shift is held down around it, as a hand does
        (a page that tracks the modifier keys themselves sees it)."""
        key, code, vk = KEYS[name]
        mods = 8 if shift else 0
        sh = {"key": "Shift", "code": "ShiftLeft", "windowsVirtualKeyCode": 16, "nativeVirtualKeyCode": 16, "modifiers": 8}
        if shift:
            self.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", **sh})
        base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk, "modifiers": mods}
        self.send("Input.dispatchKeyEvent", {"type": "rawKeyDown", **base})
        if len(key) == 1:
            self.send("Input.dispatchKeyEvent", {"type": "char", "text": key, **base})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **base})
        if shift:
            self.send("Input.dispatchKeyEvent", {"type": "keyUp", **{**sh, "modifiers": 0}})

    def click(self, x, y):
        for t in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": t, "x": x, "y": y, "button": "left", "clickCount": 1})

    def move(self, x, y):
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def tap(self, x, y):
        self.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
        self.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})

    def swipe(self, x0, y0, x1, y1, steps=6):
        self.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y0}]})
        for i in range(1, steps + 1):
            self.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [
                {"x": x0 + (x1 - x0) * i / steps, "y": y0 + (y1 - y0) * i / steps}]})
        self.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})

    def screenshot(self, clip=None):
        p = {"format": "png"}
        if clip:
            p["clip"] = {**clip, "scale": 1}
        return base64.b64decode(self.send("Page.captureScreenshot", p)["data"])

    def close(self):
        try:
            self.send("Browser.close", browser_level=True, timeout=5)
        except CDPError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._cmd_w, self._ev_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
