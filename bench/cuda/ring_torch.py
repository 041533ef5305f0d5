"""ring_torch.py: PyTorch's context parallel attention on the shapes bench_ring times, for comparison.

    torchrun --nproc_per_node 2 bench/cuda/ring_torch.py [--sizes 64,128,256] [--reps 3]

Each rank makes the same Q, K, V (1, 16, N, 128) float16 (same seed), then inside
torch.distributed.tensor.experimental.context_parallel (which shards the sequence, head and tail
together under a causal mask) times F.scaled_dot_product_attention, causal and not, with CUDA
events around each call after a barrier; the slowest rank's median is reported. Rank 0 also
times the same SDPA call on the whole problem on its GPU alone (the flash backend), so the line
gives PyTorch's own speedup. Lines starting with RESULT are the measurements; a shape or rotate
method that fails prints the error instead (so the record says why). Nothing here is checked
against float64: bench_ring checks our ring; this only times PyTorch's.
"""
import argparse
import os
import statistics
import sys
import traceback

import torch
import torch.distributed as dist
import torch.nn.functional as F


def timed(fn, reps):
    """Median milliseconds of fn() over reps calls after one warm-up, CUDA events, all ranks aligned."""
    fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        dist.barrier()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    return statistics.median(ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="64,128,256")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--methods", default="allgather,alltoall")
    args = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.experimental import context_parallel
    from torch.nn.attention import SDPBackend, sdpa_kernel
    try:
        from torch.distributed.tensor.experimental._attention import set_rotate_method
    except ImportError:
        set_rotate_method = None
    mesh = init_device_mesh("cuda", (world,))
    if rank == 0:
        print(f"torch {torch.__version__}, {world} ranks, {torch.cuda.get_device_name(0)}", flush=True)
    H, d = 16, 128
    for kN in [int(x) for x in args.sizes.split(",")]:
        N = kN * 1024
        for causal in (False, True):
            flops = 4.0 * H * N * N * d * (0.5 if causal else 1.0)
            g = torch.Generator(device=dev).manual_seed(1234 + kN)
            q = torch.randn(1, H, N, d, device=dev, dtype=torch.float16, generator=g)
            k = torch.randn(1, H, N, d, device=dev, dtype=torch.float16, generator=g)
            v = torch.randn(1, H, N, d, device=dev, dtype=torch.float16, generator=g)
            one = float("nan")
            if rank == 0:
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    one = timed_local(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), args.reps)
            dist.barrier()
            for method in args.methods.split(","):
                try:
                    if set_rotate_method is not None:
                        set_rotate_method(method)
                    qs, ks, vs = q.clone(), k.clone(), v.clone()
                    with context_parallel(mesh, buffers=[qs, ks, vs], buffer_seq_dims=[2, 2, 2],
                                          no_restore_buffers={qs, ks, vs}):
                        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                            ms = timed(lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal), args.reps)
                    t = torch.tensor([ms], device=dev)
                    dist.all_reduce(t, op=dist.ReduceOp.MAX)
                    if rank == 0:
                        cp = t.item()
                        print(f"RESULT torch_cp mask={'causal' if causal else 'none'} N={N} H={H} d={d} dt=f16 "
                              f"P={world} rotate={method} backend=flash single_ms={one:.3f} cp_ms={cp:.3f} "
                              f"speedup={one / cp:.3f} single_tflops={flops / one * 1e-9:.1f} "
                              f"cp_tflops={flops / cp * 1e-9:.1f}", flush=True)
                    del qs, ks, vs
                except Exception as e:  # record why, go on
                    if rank == 0:
                        print(f"FAILED torch_cp mask={'causal' if causal else 'none'} N={N} rotate={method}: "
                              f"{type(e).__name__}: {e}", flush=True)
                        traceback.print_exc(limit=3)
                    dist.barrier()
            del q, k, v
            torch.cuda.empty_cache()
    dist.destroy_process_group()


def timed_local(fn, reps):
    """timed() without the barrier, for one rank alone."""
    fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    return statistics.median(ms)


if __name__ == "__main__":
    sys.exit(main())
