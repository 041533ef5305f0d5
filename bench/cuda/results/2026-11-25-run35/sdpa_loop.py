"""SDPA cuDNN (and flash) at the quick prefill shapes, reps calls each timed by events, with wall-clock t0/t1."""
import sys, time, statistics, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
reps = int(sys.argv[1]); backs = sys.argv[2].split(",")
BE = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}
for dt, dn in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
  for d in (128, 64):
    for causal in (0, 1):
      B, H, N = 4, 2048 // d, 4096
      q, k, v = (torch.randn(B, H, N, d, dtype=dt, device="cuda") for _ in range(3))
      flops = 4.0 * B * H * N * N * d * (0.5 if causal else 1.0)
      for name in backs:
        with sdpa_kernel(BE[name]):
          f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
          for _ in range(5): f()
          torch.cuda.synchronize()
          t0 = time.time(); ts = []
          for _ in range(reps):
            a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
            a.record(); f(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
          t1 = time.time(); ms = statistics.median(ts)
          print(f"RESULT sdpa backend={name} dtype={dn} d={d} causal={causal} N={N} B={B} H={H} ms={ms:.4f} "
                f"tflops={flops/(ms*1e-3)/1e12:.1f} t0={t0:.3f} t1={t1:.3f} reps={reps}", flush=True)
      time.sleep(1.0)
