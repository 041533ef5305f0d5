"""sdpa_profile.py: one forward (or backward) call of PyTorch's scaled_dot_product_attention per
backend, for ncu.

    python3 bench/cuda/sdpa_profile.py B,N,H,d [--backends cudnn,flash] [--backward]

At batch B, N positions, H heads, head size d, float16 (inputs from torch.randn): for each
backend, one warm-up call, then one call without a mask and one causal, each between
torch.cuda.synchronize() calls, so that ncu (-k on the kernel's name) sees exactly those
launches; the kernel names and times are printed by torch.profiler for the same calls. With
--backward, each call is a forward and then torch.autograd.grad of its output (dO from
torch.randn), as sdpa_bench.py times the backward; both passes' kernels are listed. A backend
that refuses the shape prints why and is left out.
"""
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdpa_bench  # noqa: E402  (its backends, so that both scripts time the same ones)

BACKENDS = dict(sdpa_bench.BACKENDS)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        B, N, H, d = (int(x) for x in argv[1].split(","))
    except ValueError:
        print(f"sdpa_profile.py: the shape is B,N,H,d (four integers), not {argv[1]!r}", file=sys.stderr)
        return 2
    names = ["cudnn", "flash"]
    rest = argv[2:]
    backward = "--backward" in rest
    rest = [a for a in rest if a != "--backward"]
    if len(rest) >= 2 and rest[0] == "--backends":
        names = rest[1].split(",")
        rest = rest[2:]
    if rest:
        print(f"sdpa_profile.py: unknown arguments {rest!r} (--backends NAMES, --backward)", file=sys.stderr)
        return 2
    for b in names:
        if b not in BACKENDS:
            print(f"sdpa_profile.py: unknown backend {b!r} (cudnn, flash)", file=sys.stderr)
            return 2
    q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=torch.float16, requires_grad=backward) for _ in range(3))
    dout = torch.randn(B, H, N, d, device="cuda", dtype=torch.float16)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, B={B} N={N} H={H} d={d} f16"
          + (", forward then backward" if backward else ""))

    def call(causal):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        if backward:
            torch.autograd.grad(o, (q, k, v), dout)
        torch.cuda.synchronize()

    for name in names:
        with sdpa_kernel(BACKENDS[name]):
            try:
                call(False)
            except RuntimeError as e:
                print(f"{name}: n/a ({str(e).splitlines()[0]})")
                continue
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for causal in (False, True):
                    call(causal)
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    print(f"{name}: kernel {e.name} {e.device_time_total / 1000:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
