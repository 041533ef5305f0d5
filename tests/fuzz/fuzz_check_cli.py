#!/usr/bin/env python3
"""fuzz_check_cli.py: `flashstep check` run whole on damaged and hostile files.

A small valid problem is written (.npy float16 / float32 / float64, 2-D to 4-D, or text), then
one thing is broken per run: a file cut short, random bytes changed, a .npy header that claims a
huge shape, NaN or inf in Q, K or V (refused) or in O (judged), shapes that do not fit, control
characters and ANSI escapes in a text file or in a file's name, an empty file, a directory given
as a file, a damaged --tree or --lse file. Every run must end within the time limit with exit 0, 1
or 2 and no sanitizer report; input known to be bad must exit 2 with nothing on stdout and a
message that names the file (with line:column for text); nothing printed may hold a raw control
byte; finite inputs and a finite O must not print nan or inf.

Meant for the sanitized build (make SAN=1 BUILD=build/san build/san/flashstep). Random, seed
printed; FS_SEED replays, FS_RUNS sets how many runs (default 300).
Usage: fuzz_check_cli.py BUILD/flashstep [RUNS]
"""
import math, os, random, re, shutil, struct, subprocess, sys, tempfile

exe = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else int(os.environ.get("FS_RUNS", "300"))
seed = int(os.environ.get("FS_SEED") or random.SystemRandom().randrange(1 << 32))
rng = random.Random(seed)
tmp = tempfile.mkdtemp(prefix="fs-fuzz-check-")
env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
failures = []
CODES = {"<f2": "e", "<f4": "f", "<f8": "d", ">f4": "f", ">f8": "d"}


def npy_bytes(shape, vals, descr="<f4", header=None):
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    head = header or "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    order = ">" if descr[0] == ">" else "<"
    body = struct.pack(order + "%d%s" % (len(vals), CODES[descr]), *vals)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + body


def text_bytes(rows):
    lines = ["# written by fuzz_check_cli.py"]
    for r in rows:
        lines.append(rng.choice([" ", ", ", "\t"]).join(repr(x) for x in r))
    return ("\n".join(lines) + "\n").encode()


def write(name, data):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def attention(q, k, v, scale):
    out = []
    for qi in q:
        s = [scale * sum(a * b for a, b in zip(qi, kj)) for kj in k]
        m = max(s)
        p = [math.exp(x - m) for x in s]
        l = sum(p)
        out.append([sum(p[j] * v[j][c] for j in range(len(k))) / l for c in range(len(v[0]))])
    return out


class Problem:
    """Q (H, N, d), K and V (HKV, NKV, d / dv), O the exact output; saved in one layout."""

    def __init__(self):
        self.H = rng.choice([1, 2, 4])
        self.HKV = rng.choice([h for h in (1, 2, 4) if self.H % h == 0])
        self.N, self.NKV = rng.randint(1, 6), rng.randint(1, 6)
        self.d, self.dv = rng.randint(1, 5), rng.randint(1, 5)
        r = lambda n, m: [[round(rng.uniform(-2, 2), 3) for _ in range(m)] for _ in range(n)]
        self.Q = [r(self.N, self.d) for _ in range(self.H)]
        self.K = [r(self.NKV, self.d) for _ in range(self.HKV)]
        self.V = [r(self.NKV, self.dv) for _ in range(self.HKV)]
        g = self.H // self.HKV
        self.O = [attention(self.Q[h], self.K[h // g], self.V[h // g], 1 / math.sqrt(self.d)) for h in range(self.H)]
        self.kind = rng.choice(["text", "npy2", "npy3", "npy4"])
        self.descr = rng.choice(["<f2", "<f4", "<f8", ">f4", ">f8"])

    def heads_args(self):
        return ["--heads", f"{self.H}:{self.HKV}"] if self.kind in ("text", "npy2") else []

    def encode(self, x, rows_only=False):
        """x (heads, rows, cols) in this problem's layout: (bytes, suffix)."""
        flat_rows = [r for h in x for r in h]
        if self.kind == "text":
            return text_bytes(flat_rows), ".txt"
        vals = [v for r in flat_rows for v in r]
        shape = {"npy2": (len(flat_rows), len(x[0][0])), "npy3": (len(x), len(x[0]), len(x[0][0])),
                 "npy4": (1, len(x), len(x[0]), len(x[0][0]))}[self.kind]
        return npy_bytes(shape, vals, self.descr), ".npy"

    def files(self, prefix):
        out = {}
        for n, x in (("q", self.Q), ("k", self.K), ("v", self.V), ("o", self.O)):
            data, suf = self.encode(x)
            out[n] = (prefix + n + suf, data)
        return out


def has_raw_control(s):
    return any((ord(c) < 0x20 and c not in "\n") or 0x7f <= ord(c) <= 0x9f for c in s)


def shown(name):
    """A file name as the messages show it: control bytes as \\xHH."""
    return "".join(c if 0x20 <= ord(c) < 0x7f else "\\x%02x" % ord(c) for c in name)


def judge(case, args, expect_bad=None, bad_file=None, text_place=False, finite=True):
    try:
        p = subprocess.run([exe, "check", *args], capture_output=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        failures.append(f"{case}: timed out: {args}")
        return None
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    problems = []
    if p.returncode not in (0, 1, 2):
        problems.append(f"exit {p.returncode}")
    if "Sanitizer" in err or "runtime error" in err:
        problems.append("sanitizer report")
    if has_raw_control(out) or has_raw_control(err):
        problems.append("raw control byte printed")
    # finite input: no nan, and inf only as the plain error of rows the plain run cannot
    # compute (the inputs exceed the precision's range), which the note on stderr announces
    overflow_note = re.search(r"note: the plain \w+ run overflows", err)
    if p.returncode in (0, 1) and finite and re.search(r"\bnan\b" if overflow_note else r"\b(nan|inf)\b", out, re.I):
        problems.append("nan or inf printed for finite input")
    if expect_bad:
        if p.returncode != 2:
            problems.append(f"bad input not refused (exit {p.returncode})")
        elif out:
            problems.append("stdout not empty on bad input")
        if bad_file is not None and p.returncode == 2:
            want = shown(os.path.basename(bad_file))
            if want not in err:
                problems.append(f"message does not name {want!r}")
            elif text_place and not re.search(re.escape(want) + r":\d+:\d+: ", err):
                problems.append("message has no line:column")
    if problems:
        failures.append(f"{case}: {'; '.join(problems)}\n    args: {args}\n    exit {p.returncode}\n"
                        f"    stderr: {err[-600:]!r}\n    stdout: {out[-300:]!r}")
    return p


def mutate_bytes(data):
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(4)
        pos = rng.randrange(len(b) + 1) if b else 0
        if op == 0 and b:
            b[min(pos, len(b) - 1)] = rng.randrange(256)
        elif op == 1:
            b[pos:pos] = bytes([rng.choice([0, 9, 10, 13, 27, 0x7f, 0x9b, ord("-"), ord("e"), ord("9"), ord(",")])])
        elif op == 2 and b:
            del b[pos:pos + rng.randint(1, 8)]
        else:
            b[pos:pos] = rng.choice([b"nan", b"inf", b"-inf", b"1e999", b"\x1b[31m", b"\xc2\x9b", b"(", b")", b"'",
                                     b"99999999999", b"True"])
    return bytes(b)


def one(i):
    P = Problem()
    prefix = f"r{i}-"
    files = P.files(prefix)
    names = {n: write(fn, data) for n, (fn, data) in files.items()}
    extra = P.heads_args() + rng.choice([[], ["--mask", "causal"], ["--format", "jsonl"], ["--dtype", "f32"],
                                          ["--dtype", "f16"], ["--window", "2"]])
    base = lambda: ["--q", names["q"], "--k", names["k"], "--v", names["v"], "--o", names["o"]] + extra
    what = rng.randrange(13)
    target = rng.choice(["q", "k", "v", "o"])
    fn, data = files[target]
    if what == 0:      # the valid problem itself: it must be judged (0 or 1), never refused
        p = judge("valid", base())
        if p is not None and p.returncode == 2:
            failures.append(f"valid problem refused: {base()}\n    {p.stderr.decode(errors='replace')[-400:]}")
    elif what == 1:    # cut short: a .npy must be refused; text cut short may still be a matrix
        names[target] = write(fn, data[:rng.randrange(len(data))])
        npy = fn.endswith(".npy")
        judge("truncated", base(), expect_bad=npy, bad_file=names[target] if npy else None)
    elif what == 2:    # random damage: anything but a crash, a hang or raw control bytes
        names[target] = write(fn, mutate_bytes(data))
        judge("mutated", base(), finite=False)
    elif what == 3 and fn.endswith(".npy"):   # a header claiming a huge or empty shape
        shape = rng.choice(["(4294967296, 4294967296)", "(99999999999999999999999,)", "(0, 3)",
                            "(67108864, 2)", "(1, 1, 1, 1, 1)", "(8192, 8192)", "(2, 3"])
        hdr = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (P.descr, shape)
        names[target] = write(fn, npy_bytes((1,), [0.0], P.descr, header=hdr))
        judge("huge shape", base(), expect_bad=True, bad_file=names[target])
    elif what == 4 and target != "o":   # NaN / inf in an input
        x = {"q": P.Q, "k": P.K, "v": P.V}[target]
        x = [[list(r) for r in h] for h in x]
        h, r = rng.randrange(len(x)), rng.randrange(len(x[0]))
        x[h][r][rng.randrange(len(x[0][0]))] = rng.choice([math.nan, math.inf, -math.inf])
        d, suf = P.encode(x)
        names[target] = write(fn, d)
        judge("non-finite input", base(), expect_bad=True, bad_file=names[target], text_place=(suf == ".txt"))
    elif what == 4:    # NaN / inf in O: judged (exit 1), never refused
        x = [[list(r) for r in h] for h in P.O]
        x[rng.randrange(len(x))][rng.randrange(len(x[0]))][rng.randrange(len(x[0][0]))] = \
            rng.choice([math.nan, math.inf, -math.inf])
        d, _ = P.encode(x)
        names["o"] = write(fn, d)
        p = judge("non-finite O", base(), finite=False)
        if p is not None and p.returncode != 1:
            failures.append(f"non-finite O not judged as a fail: exit {p.returncode} {base()}")
    elif what == 5:    # a shape that does not fit the others
        x = {"q": P.Q, "k": P.K, "v": P.V, "o": P.O}[target]
        x = [[list(r) + [0.5] for r in h] for h in x]
        d, _ = P.encode(x)
        names[target] = write(fn, d)
        # Q's d (K's names K), V's d_v (O's names O), K's d, O's d_v: the file that disagrees
        blamed = {"q": "k", "k": "k", "v": "o", "o": "o"}[target]
        judge("mismatched shape", base(), expect_bad=True, bad_file=names[blamed])
    elif what == 6:    # control characters and escapes in a text file
        bad = rng.choice(["\x1b[31m", "\x07", "\x1b]0;pwned\x07", "\x9b", "\x00", "\x08\x08", "1\x1b", "\x7f"])
        rows = [r for h in {"q": P.Q, "k": P.K, "v": P.V, "o": P.O}[target] for r in h]
        text = text_bytes(rows).decode()
        lines = text.split("\n")
        li = rng.randrange(1, len(lines) - 1)
        lines[li] = lines[li] + " " + bad
        names[target] = write(fn.rsplit(".", 1)[0] + ".txt", "\n".join(lines).encode("latin-1", "replace"))
        judge("control characters in a text file", base() if P.kind == "text" else
              ["--q", names["q"], "--k", names["k"], "--v", names["v"], "--o", names["o"]] + extra,
              expect_bad=True, bad_file=names[target], text_place=True)
    elif what == 7:    # control characters in a file's name, with something wrong in the file
        evil = rng.choice(["\x1b[31mred", "bell\x07", "\x1b]0;title\x07", "tab\there", "cr\rx", "nl\nx"])
        suffix = ".npy" if fn.endswith(".npy") else ".txt"
        newname = write(prefix + target + evil + suffix, rng.choice([b"", data[:len(data) // 2], b"1 2\n3\n"]))
        names[target] = newname
        judge("control characters in a file name", base(), expect_bad=True, bad_file=newname)
    elif what == 8:    # empty file
        names[target] = write(fn, b"")
        judge("empty file", base(), expect_bad=True, bad_file=names[target])
    elif what == 9:    # a directory given as a file
        dpath = os.path.join(tmp, prefix + "dir" + (".npy" if rng.random() < 0.5 else ""))
        os.makedirs(dpath, exist_ok=True)
        names[target] = dpath
        judge("directory", base(), expect_bad=True, bad_file=dpath)
    elif what == 10:   # a damaged --lse
        nrows = P.H * P.N
        vals = [rng.uniform(-3, 3) for _ in range(nrows + rng.choice([0, 0, 1, -1]))] or [0.0]
        lse = write(prefix + "lse.npy", mutate_bytes(npy_bytes((len(vals),), vals, "<f4"))
                    if rng.random() < 0.5 else npy_bytes((len(vals),), vals, "<f4"))
        judge("lse", base() + ["--lse", lse], finite=False)
    elif what == 12:   # finite but extreme values: beyond float16's or float32's range, or any O
        scale = rng.choice([300.0, 7e4, 1e30, 3e38, 1e150, 1e300])
        x = {"q": P.Q, "k": P.K, "v": P.V, "o": P.O}[target]
        x = [[[v * scale for v in r] for r in h] for h in x]
        if P.kind == "text" or P.descr.endswith("f8") or scale < 6e4 or (scale < 3e38 and "f4" in P.descr):
            d, _ = P.encode(x)
            names[target] = write(fn, d)
            judge("extreme values", base() + rng.choice([[], ["--dtype", "f16"], ["--dtype", "bf16"]]))
    else:              # a damaged --tree (square problems only get past the shape check)
        par = [-1] + [rng.randrange(-2, max(1, P.N)) for _ in range(max(0, P.N - 1))]
        t = " ".join(map(str, par)).encode()
        tree = write(prefix + "tree.txt", mutate_bytes(t) if rng.random() < 0.5 else t)
        args = [a for a in base() if a not in ("--mask", "causal", "--window", "2")]
        if "--window" in base():
            args = base()[:8] + P.heads_args()
        judge("tree", args + ["--tree", tree], finite=False)


try:
    for i in range(runs):
        one(i)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
for f in failures[:40]:
    print("FAIL:", f)
print(f"fuzz_check_cli: {runs} runs, {len(failures)} failures (seed {seed}; FS_SEED={seed} replays)")
sys.exit(1 if failures else 0)
