"""flashstep_check: judge your attention kernel's output from Python, with `flashstep check`.

    from flashstep_check import check

    out = my_flash_attention(q, k, v, causal=True)
    check(q, k, v, out, causal=True)          # passes, or raises CheckFailed naming the mistake

    verdict = check(q, k, v, out, causal=True, raise_on_fail=False)
    verdict["pass"], verdict["diagnosis"], verdict["detail"], verdict["max_abs_err"]

q, k, v and o are NumPy arrays or PyTorch tensors (on any device; they are copied to the CPU) in
float16, bfloat16, float32 or float64, laid out (B, H, N, d) as PyTorch's scaled_dot_product_
attention takes them (layout="bhnd", the default), (B, N, H, d) as flash_attn_func takes and
returns them (layout="bnhd"), or (H, N, d) and (N, d). K and V may have fewer heads than Q (GQA).
The tensors are saved as .npy files in a temporary directory and `flashstep check` judges them
against the float64 reference at the precision they hold (bfloat16 is saved as its raw bits, as
the command reads it). The verdict is the command's JSON verdict, as a dict.

Standard library and NumPy only; PyTorch is used only when you pass its tensors. The binary is
found from `binary=`, else $FLASHSTEP, else `flashstep` on PATH, else the build/flashstep of the
source tree this file sits in.
"""
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

__all__ = ["check", "CheckFailed", "CheckError"]


class CheckFailed(AssertionError):
    """The output is wrong: the message names the diagnosis and its detail; .verdict holds all."""

    def __init__(self, verdict):
        self.verdict = verdict
        super().__init__(f"flashstep check: FAIL, diagnosis {verdict['diagnosis']}: {verdict['detail']} "
                         f"(max |O - ref| = {verdict['max_abs_err']}, plain error = {verdict['reference_err']})")


class CheckError(ValueError):
    """The inputs could not be judged (shapes, NaN in Q, K or V, a missing binary): the message is
    the command's own."""


def _binary(binary):
    for cand in (binary, os.environ.get("FLASHSTEP"), shutil.which("flashstep"),
                 os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "flashstep")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise CheckError("flashstep check: the flashstep binary was not found (pass binary=, set FLASHSTEP, "
                     "put it on PATH, or run make in the source tree)")


def _to_numpy(x, name):
    """A NumPy array and whether it holds bfloat16 bits (as uint16)."""
    if hasattr(x, "detach"):   # a PyTorch tensor: to the CPU; bfloat16 as its bits
        t = x.detach().cpu().contiguous()
        if str(t.dtype) == "torch.bfloat16":
            import torch
            return t.view(torch.int16).numpy().view(np.uint16), True
        return t.numpy(), False
    a = np.asarray(x)
    if a.dtype.kind not in "fu" and a.dtype != np.float16:
        raise CheckError(f"flashstep check: {name} has dtype {a.dtype}; give float16, bfloat16, float32 or float64")
    return a, a.dtype == np.uint16


def _layout(a, layout, name):
    if a.ndim == 4 and layout == "bnhd":
        return np.ascontiguousarray(np.swapaxes(a, 1, 2))
    if a.ndim == 4 and layout != "bhnd":
        raise CheckError(f"flashstep check: layout is 'bhnd' or 'bnhd', not {layout!r}")
    if a.ndim not in (1, 2, 3, 4):
        raise CheckError(f"flashstep check: {name} has {a.ndim} dimensions; give (B, H, N, d), (H, N, d) or (N, d)")
    return np.ascontiguousarray(a)


def check(q, k, v, o, causal=False, scale=None, lse=None, window=None, softcap=None, dtype=None, layout="bhnd",
          bk=None, threads=None, binary=None, raise_on_fail=True, timeout=None):
    """Judge o = attention(q, k, v) with `flashstep check`; returns the verdict dict
    {"pass", "max_abs_err", "reference_err", "diagnosis", "detail"}.

    causal: the causal mask, bottom-right aligned as FlashAttention's; window: a sliding window of
    that many keys; scale: the score scale (default 1/sqrt(d)); softcap: S = C tanh(S / C);
    lse: the kernel's log-sum-exp per row (natural log), to be judged too; dtype: the precision
    the kernel ran in ("f16", "bf16", "f32", "f64"; default: that of o); bk: the block size to try
    for the rescale mistakes; threads: threads to judge with (default: every core).
    Raises CheckFailed (an AssertionError) when the output is wrong and raise_on_fail is true,
    CheckError when the inputs cannot be judged."""
    exe = _binary(binary)
    arrays = {}
    bf16 = False
    for name, x in (("q", q), ("k", k), ("v", v), ("o", o)) + ((("lse", lse),) if lse is not None else ()):
        a, is_bf16 = _to_numpy(x, name)
        bf16 = bf16 or is_bf16
        arrays[name] = a if name == "lse" else _layout(a, layout, name)
    if dtype is None:
        dtype = "bf16" if bf16 else {np.dtype(np.float16): "f16", np.dtype(np.float64): "f64"}.get(arrays["o"].dtype, "f32")
    with tempfile.TemporaryDirectory(prefix="flashstep-check-") as tmp:
        args = [exe, "check", "--format", "jsonl", "--quiet", "--rows", "0"]
        for name, a in arrays.items():
            path = os.path.join(tmp, name + ".npy")
            np.save(path, a)
            args += ["--" + name, path]
        args += ["--dtype", dtype]
        if causal:
            args += ["--mask", "causal"]
        if window is not None:
            args += ["--window", str(int(window))]
        if scale is not None:
            args += ["--scale", repr(float(scale))]
        if softcap is not None:
            args += ["--softcap", repr(float(softcap))]
        if bk is not None:
            args += ["--bk", str(int(bk))]
        if threads is not None:
            args += ["--threads", str(int(threads))]
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if r.returncode not in (0, 1):
        raise CheckError(r.stderr.strip() or f"flashstep check exited with {r.returncode}")
    last = r.stdout.rstrip("\n").rsplit("\n", 1)[-1]
    verdict = json.loads(last)
    verdict.pop("event", None)
    for key in ("max_abs_err", "reference_err"):   # "inf" and "nan" arrive as strings
        if isinstance(verdict.get(key), str):
            verdict[key] = float(verdict[key])
    if r.stderr.strip():
        verdict["notes"] = r.stderr.strip()
    if not verdict["pass"] and raise_on_fail:
        raise CheckFailed(verdict)
    return verdict
