"""flashstep_check: judge your attention kernel's output from Python, with `flashstep check`.

    from flashstep_check import check

    out = my_flash_attention(q, k, v, causal=True)
    check(q, k, v, out, causal=True)          # passes, or raises CheckFailed naming the mistake

    verdict = check(q, k, v, out, causal=True, raise_on_fail=False)
    verdict["pass"], verdict["diagnosis"], verdict["detail"], verdict["max_abs_err"]

q, k, v and o are NumPy arrays or PyTorch tensors (on any device; they are copied to the CPU) in
float16, bfloat16, float32 or float64, laid out (B, H, N, d) as PyTorch's scaled_dot_product_
attention takes them (layout="bhnd", the default), (B, N, H, d) as flash_attn_func takes and
returns them (layout="bnhd"; (N, H, d) for 3-D arrays), or (H, N, d) and (N, d). K and V may
have fewer heads than Q (GQA). bfloat16 in NumPy, which has none, is its raw bits in a 16-bit
integer array (tensor.view(torch.int16).numpy()). The tensors are saved as q.npy, k.npy, v.npy,
o.npy (and lse.npy) in a temporary directory, the names messages use, and `flashstep check`
judges them against the float64 reference. The precision is dtype=, else bfloat16 for bfloat16
inputs, else the command's own choice (float16 for a float16 o, else float32, with its note on
stderr when every value of o is a float16 or bfloat16 number: the verdict's "notes").

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
    """The output is wrong: the message names the diagnosis and its detail (and the command's notes,
    such as a hint to pass dtype=); .verdict holds all."""

    def __init__(self, verdict):
        self.verdict = verdict
        notes = f" {verdict['notes']}" if verdict.get("notes") else ""
        super().__init__(f"flashstep check: FAIL, diagnosis {verdict['diagnosis']}: {verdict['detail']} "
                         f"(max |O - ref| = {verdict['max_abs_err']}, plain error = {verdict['reference_err']}){notes}")


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
    """A NumPy array and whether it holds bfloat16 bits (a 16-bit integer array)."""
    if hasattr(x, "detach"):   # a PyTorch tensor: to the CPU; bfloat16 as its bits
        t = x.detach().cpu().contiguous()
        if str(t.dtype) == "torch.bfloat16":
            import torch
            return t.view(torch.int16).numpy(), True
        if str(t.dtype).startswith("torch.float8"):   # FP8: its bits (pass dtype="e4m3" or "e5m2")
            import torch
            return t.view(torch.uint8).numpy(), False
        return t.numpy(), False
    a = np.asarray(x)
    if a.dtype in (np.int16, np.uint16):
        return a, True
    if a.dtype == np.uint8:   # FP8 bits
        return a, False
    if a.dtype.kind != "f":
        raise CheckError(f"flashstep check: {name} has dtype {a.dtype}; give float16, float32, float64, or bfloat16 "
                         "(its bits as int16 or uint16)")
    return a, False


def _layout(a, layout, name):
    """(B, H, N, d), (H, N, d) or (N, d) in C order, from layout "bhnd" or "bnhd"."""
    if layout not in ("bhnd", "bnhd"):
        raise CheckError(f"flashstep check: layout is 'bhnd' or 'bnhd', not {layout!r}")
    if a.ndim not in (1, 2, 3, 4):
        raise CheckError(f"flashstep check: {name} has {a.ndim} dimensions; give (B, H, N, d), (H, N, d) or (N, d)")
    if layout == "bnhd" and a.ndim >= 3:   # (B, N, H, d) or (N, H, d): the heads before the rows
        a = np.swapaxes(a, -3, -2)
    return np.ascontiguousarray(a)


def check(q, k, v, o, causal=False, scale=None, lse=None, window=None, softcap=None, dtype=None, layout="bhnd",
          bk=None, threads=None, binary=None, raise_on_fail=True, timeout=None, q_scale=None, k_scale=None,
          v_scale=None):
    """Judge o = attention(q, k, v) with `flashstep check`; returns the verdict dict
    {"pass", "max_abs_err", "reference_err", "diagnosis", "detail"}.

    causal: the causal mask, bottom-right aligned as FlashAttention's; window: a sliding window of
    that many keys; scale: the score scale (default 1/sqrt(d)); softcap: S = C tanh(S / C);
    lse: the kernel's log-sum-exp per row (natural log), to be judged too; dtype: the precision
    the kernel ran in ("f16", "bf16", "f32", "f64"; default: see above); bk: the block size to try
    for the rescale mistakes; threads: threads to judge with (default: every core). An FP8 kernel:
    dtype="e4m3" or "e5m2", q, k, v as FP8 values or their bits (uint8, float8 tensors), and
    q_scale, k_scale, v_scale its per-tensor descales.
    Raises CheckFailed (an AssertionError) when the output is wrong and raise_on_fail is true,
    CheckError when the inputs cannot be judged."""
    exe = _binary(binary)
    arrays = {}
    bf16 = False
    for name, x in (("q", q), ("k", k), ("v", v), ("o", o)) + ((("lse", lse),) if lse is not None else ()):
        a, is_bf16 = _to_numpy(x, name)
        bf16 = bf16 or is_bf16
        arrays[name] = a if name == "lse" else _layout(a, layout, name)
    if bf16 and dtype not in (None, "bf16"):
        raise CheckError(f"flashstep check: bfloat16 inputs are judged as bf16, not dtype={dtype!r}")
    if bf16:
        dtype = "bf16"
    with tempfile.TemporaryDirectory(prefix="flashstep-check-") as tmp:
        args = [exe, "check", "--format", "jsonl", "--quiet", "--rows", "0"]
        for name, a in arrays.items():
            path = os.path.join(tmp, name + ".npy")
            np.save(path, a)
            args += ["--" + name, path]
        if dtype is not None:
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
        for flag, x in (("--q-scale", q_scale), ("--k-scale", k_scale), ("--v-scale", v_scale)):
            if x is not None:
                args += [flag, repr(float(x))]
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        stderr = r.stderr.replace(tmp + os.sep, "")   # name the arrays, not the temporary directory
    if r.returncode not in (0, 1):
        raise CheckError(stderr.strip() or f"flashstep check exited with {r.returncode}")
    last = r.stdout.rstrip("\n").rsplit("\n", 1)[-1]
    verdict = json.loads(last)
    verdict.pop("event", None)
    for key in ("max_abs_err", "reference_err"):   # "inf" and "nan" arrive as strings
        if isinstance(verdict.get(key), str):
            verdict[key] = float(verdict[key])
    if stderr.strip():
        verdict["notes"] = stderr.strip()
    if not verdict["pass"] and raise_on_fail:
        raise CheckFailed(verdict)
    return verdict
