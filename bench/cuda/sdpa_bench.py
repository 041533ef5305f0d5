"""sdpa_bench.py: PyTorch's scaled_dot_product_attention on the shapes bench_cuda times.

Run on the same GPU in the same call as bench_cuda (bench/cuda/run.sh does both), so the two
tables compare like with like. Backends: flash (FlashAttention-2 inside PyTorch) and cuDNN; a
backend that refuses a shape prints n/a. Timing: CUDA events around each call, median of 30
after 5 warm-up calls, inputs drawn fresh (torch.randn). FLOPs counted as in bench_cuda:
4·B·H·N²·d, halved for causal; the backward (torch.autograd.grad after one forward) 2.5 times
that. Lines starting with RESULT are the measurements. sdpa_fp8 lines ask whether PyTorch takes
float8_e4m3fn inputs at all (n/a with the error where it does not). Options: --quick (N = 4096
only), --only KIND (prefill, backward, decode or fp8: that kind alone, as bench_cuda's --only),
--reps N (the prefill's timed calls, 30 unless given; its RESULT lines then also carry the
wall-clock seconds the 5 warm-up and timed calls began and ended, t0 and t1, for clocks.py report).
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def time_ms(fn, warm=5, reps=30):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


BACKENDS = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]


def prefill(N, d, causal, dtype, name, reps=None):
    B, H = 16384 // N, 2048 // d
    q, k, v = (torch.randn(B, H, N, d, dtype=dtype, device="cuda") for _ in range(3))
    flops = 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)
    for bname, backend in BACKENDS:
        try:
            with sdpa_kernel(backend):
                t0 = time.time()
                ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)),
                             reps=reps or 30)
                t1 = time.time()
            when = f" t0={t0:.3f} t1={t1:.3f} reps={reps}" if reps else ""
            print(f"RESULT sdpa backend={bname} dtype={name} d={d} causal={causal} N={N} B={B} H={H} "
                  f"ms={ms:.4f} tflops={flops / (ms * 1e-3) / 1e12:.1f}{when}", flush=True)
        except Exception as e:  # a backend that does not take this shape
            print(f"RESULT sdpa backend={bname} dtype={name} d={d} causal={causal} N={N} n/a "
                  f"({type(e).__name__}: {str(e).splitlines()[0][:80]})", flush=True)


def backward(N, d, causal, dtype, name):
    """The backward alone: the forward runs once, then torch.autograd.grad is timed (the
    backend's backward kernels and their small pre/post steps). FLOPs: 2.5 × the forward's."""
    B, H = 16384 // N, 2048 // d
    q, k, v = (torch.randn(B, H, N, d, dtype=dtype, device="cuda", requires_grad=True) for _ in range(3))
    g = torch.randn(B, H, N, d, dtype=dtype, device="cuda")
    flops = 2.5 * 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)
    for bname, backend in BACKENDS:
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
            ms = time_ms(lambda: torch.autograd.grad(out, (q, k, v), g, retain_graph=True), 3, 20)
            print(f"RESULT sdpa_backward backend={bname} dtype={name} d={d} causal={causal} N={N} B={B} H={H} "
                  f"ms={ms:.4f} tflops={flops / (ms * 1e-3) / 1e12:.1f}", flush=True)
        except Exception as e:
            print(f"RESULT sdpa_backward backend={bname} dtype={name} d={d} causal={causal} N={N} n/a "
                  f"({type(e).__name__}: {str(e).splitlines()[0][:80]})", flush=True)
        finally:
            out = None


def decode(B, Hq, Hkv, N, d, dtype, name):
    q = torch.randn(B, Hq, 1, d, dtype=dtype, device="cuda")
    k, v = (torch.randn(B, Hkv, N, d, dtype=dtype, device="cuda") for _ in range(2))
    nbytes = 2.0 * k.numel() * k.element_size()
    for bname, backend in BACKENDS + [("efficient", SDPBackend.EFFICIENT_ATTENTION)]:
        try:
            with sdpa_kernel(backend):
                ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), 5, 50)
            print(f"RESULT sdpa_decode backend={bname} dtype={name} d={d} B={B} Hq={Hq} Hkv={Hkv} "
                  f"nkv={N} us={ms * 1e3:.1f} tbps={nbytes / (ms * 1e-3) / 1e12:.2f}", flush=True)
        except Exception as e:
            print(f"RESULT sdpa_decode backend={bname} dtype={name} nkv={N} n/a "
                  f"({type(e).__name__}: {str(e).splitlines()[0][:80]})", flush=True)


def fp8(N, d, causal):
    """Whether PyTorch offers an e4m3 attention path: scaled_dot_product_attention on
    float8_e4m3fn tensors under each backend (and the default choice), timed where one runs."""
    B, H = 16384 // N, 2048 // d
    q, k, v = (torch.randn(B, H, N, d, dtype=torch.float16, device="cuda").to(torch.float8_e4m3fn)
               for _ in range(3))
    flops = 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)
    for bname, backend in BACKENDS + [("default", None)]:
        try:
            if backend is None:
                fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
                ms = time_ms(fn)
            else:
                with sdpa_kernel(backend):
                    ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)))
            print(f"RESULT sdpa_fp8 backend={bname} d={d} causal={causal} N={N} B={B} H={H} "
                  f"ms={ms:.4f} tflops={flops / (ms * 1e-3) / 1e12:.1f}", flush=True)
        except Exception as e:  # no FP8 path
            print(f"RESULT sdpa_fp8 backend={bname} d={d} causal={causal} N={N} n/a "
                  f"({type(e).__name__}: {str(e).splitlines()[0][:80]})", flush=True)


def main():
    quick = "--quick" in sys.argv
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv[:-1] else None
    if only not in (None, "prefill", "backward", "decode", "fp8"):
        sys.exit("sdpa_bench.py: --only takes prefill, backward, decode or fp8")
    reps = None
    if "--reps" in sys.argv:
        k = sys.argv.index("--reps")
        if k + 1 >= len(sys.argv) or not sys.argv[k + 1].isdigit() or not 1 <= int(sys.argv[k + 1]) <= 100000:
            sys.exit("sdpa_bench.py: --reps takes a number of calls from 1 to 100000")
        reps = int(sys.argv[k + 1])
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_()
    b = torch.empty_like(a)
    ms = time_ms(lambda: b.copy_(a), 3, 20)
    print(f"RESULT torch_copy bytes={a.numel()} ms={ms:.3f} tbps={2.0 * a.numel() / (ms * 1e-3) / 1e12:.2f}")
    del a, b
    for N in ([4096] if quick else [4096, 1024, 16384]) if only in (None, "prefill") else []:
        for dtype, name in [(torch.float16, "f16"), (torch.bfloat16, "bf16")]:
            if N != 4096 and dtype != torch.float16:
                continue
            for d in (128, 64):
                for causal in (0, 1):
                    prefill(N, d, causal, dtype, name, reps)
    if only in (None, "prefill"):
        for causal in (0, 1):
            prefill(4096, 256, causal, torch.float16, "f16", reps)
    if only in (None, "backward"):
        for dtype, name in [(torch.float16, "f16"), (torch.bfloat16, "bf16")]:
            for d in (128, 64):
                for causal in (0, 1):
                    backward(4096, d, causal, dtype, name)
        if not quick:
            for causal in (0, 1):
                backward(16384, 128, causal, torch.float16, "f16")
    if only in (None, "decode"):
        decode(8, 32, 8, 32768, 128, torch.float16, "f16")
        decode(4, 32, 8, 65536, 128, torch.float16, "f16")
        decode(8, 32, 8, 32768, 128, torch.bfloat16, "bf16")
    if only in (None, "fp8"):
        for N in (4096, 16384):
            for causal in (0, 1):
                fp8(N, 128, causal)


if __name__ == "__main__":
    main()
