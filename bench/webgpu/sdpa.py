#!/usr/bin/env python3
"""sdpa.py: PyTorch's scaled_dot_product_attention on the shapes of a bench.js run, same GPU,
for scale beside the WGSL kernels (which reach the GPU through Vulkan, float32, no tensor cores).

    python3 bench/webgpu/sdpa.py ours.json [--json FILE]

Rows: float32 through the memory-efficient backend (the same arithmetic as ours: float32 in,
float32 out), float16 through FlashAttention-2 (PyTorch's flash backend) and cuDNN, with
enable_gqa for the decode rows. Each timed by CUDA events, the median of 20 launches after 3."""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def timed(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    ours = json.load(open(sys.argv[1]))
    out_path = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    seen, rows = set(), []
    # the plan's rows, or for a call that ran no plan (bench.js --check-only --ablation) the ablation's shapes
    shapes = ours.get("rows") or [dict(kind="prefill", n_q=sh["n"], n_kv=sh["n"], d=sh["d"], heads=sh["heads"],
                                       kv_heads=sh["heads"], causal=sh["causal"])
                                  for a in ours.get("ablation") or [] for sh in a.get("shapes", [])]
    if not shapes:
        sys.exit(f"sdpa.py: {sys.argv[1]} has no rows and no ablation shapes: nothing to time")
    for r in shapes:
        key = (r["kind"], r["n_q"], r["n_kv"], r["d"], r["heads"], r["kv_heads"], r["causal"])
        if key in seen:
            continue
        seen.add(key)
        kind, n_q, n_kv, d, H, Hkv, causal = key
        for dtype, backend, name in ((torch.float32, SDPBackend.EFFICIENT_ATTENTION, "efficient f32"),
                                     (torch.float16, SDPBackend.FLASH_ATTENTION, "flash f16"),
                                     (torch.float16, SDPBackend.CUDNN_ATTENTION, "cudnn f16")):
            row = dict(kind=kind, n_q=n_q, n_kv=n_kv, d=d, heads=H, kv_heads=Hkv, causal=causal, backend=name)
            try:
                q = torch.randn(1, H, n_q, d, device="cuda", dtype=dtype)
                k = torch.randn(1, Hkv, n_kv, d, device="cuda", dtype=dtype)
                v = torch.randn(1, Hkv, n_kv, d, device="cuda", dtype=dtype)
                with sdpa_kernel([backend]):
                    f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=Hkv != H)
                    row["ms"] = timed(f)
                pairs = n_q * (n_q + 1) / 2 + n_q * (n_kv - n_q) if causal else n_q * n_kv
                row["tflops"] = 4 * d * pairs * H / (row["ms"] * 1e9)
                row["gbps"] = (q.numel() * 2 + k.numel() + v.numel()) * q.element_size() / (row["ms"] * 1e6)
            except Exception as e:  # a backend that does not take the shape says so
                row["error"] = str(e).splitlines()[0][:160]
            print(json.dumps(row), flush=True)
            rows.append(row)
    if out_path:
        json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "rows": rows}, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()
