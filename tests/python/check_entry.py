#!/usr/bin/env python3
"""check_entry.py FLASHSTEP: python/flashstep_check.py against outputs built here in NumPy.

Random problems drawn fresh each run (the seed is printed; FS_SEED=N replays one): correct outputs
in float16, float32 and bfloat16 bits, in the (B, H, N, d) and (B, N, H, d) layouts and with GQA,
must pass; wrong ones (scale 1/d, no causal mask, the running-max form of the rescale slip) must
raise CheckFailed naming their mistake; inputs that cannot be judged raise CheckError with the
command's message. Needs NumPy (the Makefile runs it with a python3 that has it)."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numpy as np  # noqa: E402
from flashstep_check import CheckError, CheckFailed, check  # noqa: E402

exe = os.path.abspath(sys.argv[1])
seed = int(os.environ.get("FS_SEED") or random.SystemRandom().randrange(1 << 31))
rng = np.random.default_rng(seed)
passed = failed = 0


def ok(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what} [replay with FS_SEED={seed}]")


def attention(q, k, v, causal, scale=None, slip_bk=0):
    """float64 attention of (B, H, N, d) arrays, GQA by head groups; slip_bk > 0: the running-max
    form with o_new = o_old + P V / l_new in blocks of slip_bk keys (001's pitfall 1, its
    most common form)."""
    B, H, N, d = q.shape
    g = H // k.shape[1]
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    sc = 1 / np.sqrt(d) if scale is None else scale
    s = np.einsum("bhid,bhjd->bhij", q, k) * sc
    Nk = k.shape[2]
    if causal:
        s = np.where(np.arange(Nk)[None, :] <= np.arange(N)[:, None] + (Nk - N), s, -np.inf)
    if not slip_bk:
        p = np.exp(s - s.max(-1, keepdims=True))
        return np.einsum("bhij,bhjd->bhid", p / p.sum(-1, keepdims=True), v)
    o = np.zeros(q.shape[:3] + (v.shape[3],))
    m = np.full(q.shape[:3], -np.inf)
    l = np.zeros(q.shape[:3])
    for c0 in range(0, Nk, slip_bk):
        blk = s[..., c0:c0 + slip_bk]
        mn = np.maximum(m, blk.max(-1))
        p = np.exp(blk - np.where(np.isfinite(mn), mn, 0)[..., None])
        alpha = np.where(np.isfinite(m), np.exp(m - np.where(np.isfinite(mn), mn, 0)), 0.0)
        l_new = alpha * l + p.sum(-1)
        safe = np.where(l_new > 0, l_new, 1)
        o = o + np.einsum("bhij,bhjd->bhid", p, v[..., c0:c0 + slip_bk, :]) / safe[..., None]
        m, l = np.where(np.isfinite(mn), mn, m), l_new
    return o


def problem(B, H, HKV, N, d, dt):
    q = rng.uniform(-2, 2, (B, H, N, d)).astype(dt)
    k = rng.uniform(-2, 2, (B, HKV, N, d)).astype(dt)
    v = rng.uniform(-1, 1, (B, HKV, N, d)).astype(dt)
    return q, k, v


def f64(*xs):
    return [x.astype(np.float64) for x in xs]


def bf16_bits(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


N, d = int(rng.integers(40, 90)), int(rng.integers(8, 24))
for dt, name in ((np.float16, "float16"), (np.float32, "float32")):
    q, k, v = problem(2, 4, 2, N, d, dt)
    o = attention(*f64(q, k, v), True).astype(dt)
    r = check(q, k, v, o, causal=True, binary=exe)
    ok(r["pass"] and r["diagnosis"] == "ok", f"{name} GQA causal passes: {r}")
    r = check(*(np.swapaxes(x, 1, 2) for x in (q, k, v, o)), causal=True, layout="bnhd", binary=exe)
    ok(r["pass"], f"{name} in flash_attn's (B, N, H, d) layout passes: {r}")
    for what, bad, want in (("scale 1/d", attention(*f64(q, k, v), True, scale=1 / d), "wrong-scale"),
                            ("no causal mask", attention(*f64(q, k, v), False), "mask-missing"),
                            ("o_new = o_old + P V / l_new", attention(*f64(q, k, v), True, slip_bk=16), "no-rescale")):
        try:
            check(q, k, v, bad.astype(dt), causal=True, binary=exe)
            ok(False, f"{name}, {what}: no CheckFailed")
        except CheckFailed as e:
            ok(e.verdict["diagnosis"] == want and want in str(e), f"{name}, {what}: {e}")
        r = check(q, k, v, bad.astype(dt), causal=True, binary=exe, raise_on_fail=False)
        ok(not r["pass"] and r["diagnosis"] == want, f"{name}, {what}, raise_on_fail=False: {r}")

# bfloat16: NumPy has none; its bits as uint16 (what tensor.view(torch.uint16) gives) with dtype bf16
q, k, v = problem(1, 2, 2, N, d, np.float32)
qb, kb, vb = (bf16_bits(x) for x in (q, k, v))
o = attention(*f64(*(bf16_value(x) for x in (qb, kb, vb))), False)
r = check(qb, kb, vb, bf16_bits(o), binary=exe)
ok(r["pass"] and r["diagnosis"] == "ok", f"bfloat16 bits pass: {r}")

# bfloat16 bits as int16 (tensor.view(torch.int16).numpy(), as docs/check.md saves them)
r = check(qb.view(np.int16), kb.view(np.int16), vb.view(np.int16), bf16_bits(o).view(np.int16), binary=exe)
ok(r["pass"], f"bfloat16 bits as int16 pass: {r}")
# a bfloat16 kernel's output saved as float32 with float32 inputs holding bfloat16 values: the
# command's note (pass dtype bf16) reaches the caller
qf, kf, vf = (bf16_value(x) for x in (qb, kb, vb))
of = bf16_value(bf16_bits(o))
try:
    check(qf, kf, vf, of, binary=exe)
    ok(False, "bfloat16 values as float32 judged as float32: no CheckFailed")
except CheckFailed as e:
    ok("bf16" in str(e) and "bfloat16" in e.verdict.get("notes", ""), f"the note suggesting bf16 reaches the caller: {e}")
ok(check(qf, kf, vf, of, dtype="bf16", binary=exe)["pass"], "and with dtype='bf16' they pass")
# 3-D (N, H, d) with layout="bnhd"
q3, k3, v3 = problem(1, 2, 2, N, d, np.float32)
o3 = attention(*f64(q3, k3, v3), True).astype(np.float32)
r = check(*(np.swapaxes(x[0], 0, 1) for x in (q3, k3, v3, o3)), causal=True, layout="bnhd", binary=exe)
ok(r["pass"], f"3-D (N, H, d) with layout='bnhd' passes: {r}")

# an FP8 kernel: e4m3 values (here their bits, uint8) times descales
def e4m3(x):
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    nz = x != 0
    E = np.maximum(np.floor(np.log2(np.abs(x[nz]))), -6)
    q = 2.0 ** (E - 3)
    out[nz] = np.sign(x[nz]) * np.minimum(np.abs(np.round(x[nz] / q) * q), 448)   # NumPy rounds halves to even
    return out


def e4m3_value(b):
    """The value of an e4m3 code (NaN codes left out: never produced here)."""
    sgn, e, m = -1.0 if b & 0x80 else 1.0, (b >> 3) & 15, b & 7
    return sgn * (m * 2.0 ** -9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))


CODE = {}
for b in range(256):
    if (b & 0x7f) != 0x7f:
        CODE.setdefault(e4m3_value(b), b)   # +0 before -0


def e4m3_bits(x):
    """The codes of values that are e4m3 values, looked up in the table of all 256."""
    return np.vectorize(lambda v: CODE[float(v)], otypes=[np.uint8])(x)


q8, k8, v8 = (e4m3(rng.normal(0, 1.5, (1, 2, N, d))) for _ in range(3))
qs8, ks8, vs8 = 0.5, 1.25, 1.5
o8 = attention(q8 * qs8, k8 * ks8, v8 * vs8, True)
r = check(*(e4m3_bits(x) for x in (q8, k8, v8)), o8.astype(np.float32), causal=True, dtype="e4m3", q_scale=qs8,
          k_scale=ks8, v_scale=vs8, binary=exe)
ok(r["pass"], f"an e4m3 problem as bits with descales passes: {r}")
try:
    check(*(e4m3_bits(x) for x in (q8, k8, v8)), attention(q8 * qs8, k8 * ks8, v8 * vs8, False).astype(np.float32),
          causal=True, dtype="e4m3", q_scale=qs8, k_scale=ks8, v_scale=vs8, binary=exe)
    ok(False, "e4m3 without the causal mask: no CheckFailed")
except CheckFailed as e:
    ok(e.verdict["diagnosis"] == "mask-missing", f"e4m3 without the causal mask: {e}")

# what cannot be judged: the command's own message
try:
    check(q, k, v[:, :, :-1], o, binary=exe)
    ok(False, "mismatched V: no CheckError")
except CheckError as e:
    ok(str(e).startswith("flashstep check: v.npy:1:1:") and "V has shape" in str(e), f"mismatched V: {e}")
q2 = q.copy()
q2[0, 1, 3, 2] = np.nan
try:
    check(q2, k, v, o, binary=exe)
    ok(False, "NaN in Q: no CheckError")
except CheckError as e:
    ok("q.npy" in str(e) and "NaN" in str(e), f"NaN in Q: {e}")
# no usable binary given: $FLASHSTEP, PATH, then the source tree's build/flashstep
os.environ["FLASHSTEP"] = exe
o32 = attention(*f64(q, k, v), False).astype(np.float32)
r = check(q, k, v, o32, binary="/nonexistent/flashstep")
ok(r["pass"], f"the binary found through $FLASHSTEP: {r}")

print(f"python entry: {passed} passed, {failed} failed (seed {seed})")
sys.exit(1 if failed else 0)
