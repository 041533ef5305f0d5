"""ring_torch.py: PyTorch's context parallel attention on the shapes bench_ring times, for comparison.

    torchrun --nproc_per_node 2 bench/cuda/ring_torch.py [--sizes 64,128,256] [--reps 3]

Rank 0 first times F.scaled_dot_product_attention (flash backend) on each whole problem on its
GPU alone. Then each rank makes the same Q, K, V (1, 16, N, 128) float16 (same seed) and, inside
torch.distributed.tensor.experimental.context_parallel (head-and-tail sharding under a causal
mask, contiguous otherwise, as its load balancing allows), times the same call, causal and not,
for each way of rotating K and V it offers, with CUDA events around each call after a barrier;
the slowest rank's median is reported. Lines starting with RESULT are the measurements; a shape
that fails prints the error and ends the run (a failed region may leave its dispatch in place). Nothing here is checked
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
    try:  # head-and-tail sharding needs a causal mask; plain contiguous shards otherwise
        from torch.distributed.tensor.experimental._attention import _cp_options
    except ImportError:
        _cp_options = None
    mesh = init_device_mesh("cuda", (world,))
    if rank == 0:
        print(f"torch {torch.__version__}, {world} ranks, {torch.cuda.get_device_name(0)}", flush=True)
    H, d = 16, 128
    shapes = [(int(x) * 1024, causal) for x in args.sizes.split(",") for causal in (True, False)]

    def inputs(N):
        g = torch.Generator(device=dev).manual_seed(1234 + N)
        return [torch.randn(1, H, N, d, device=dev, dtype=torch.float16, generator=g) for _ in range(3)]

    # first the whole problems on rank 0's GPU alone, before any context parallel region
    one = {}
    if rank == 0:
        for N, causal in shapes:
            q, k, v = inputs(N)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                one[N, causal] = timed_local(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                                             args.reps)
            del q, k, v
            torch.cuda.empty_cache()
    dist.barrier()
    for N, causal in shapes:
        flops = 4.0 * H * N * N * d * (0.5 if causal else 1.0)
        for method in args.methods.split(","):
            try:
                if set_rotate_method is not None:
                    set_rotate_method(method)
                if _cp_options is not None:
                    _cp_options.enable_load_balance = causal
                qs, ks, vs = inputs(N)
                with context_parallel(mesh, buffers=[qs, ks, vs], buffer_seq_dims=[2, 2, 2],
                                      no_restore_buffers={qs, ks, vs}):
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        ms = timed(lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal), args.reps)
                t = torch.tensor([ms], device=dev)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                if rank == 0:
                    cp, o = t.item(), one[N, causal]
                    print(f"RESULT torch_cp mask={'causal' if causal else 'none'} N={N} H={H} d={d} dt=f16 "
                          f"P={world} rotate={method} backend=flash single_ms={o:.3f} cp_ms={cp:.3f} "
                          f"speedup={o / cp:.3f} single_tflops={flops / o * 1e-9:.1f} "
                          f"cp_tflops={flops / cp * 1e-9:.1f}", flush=True)
                del qs, ks, vs
                torch.cuda.empty_cache()
            except Exception as e:  # record why and stop: a failed region may leave its dispatch in place
                if rank == 0:
                    print(f"FAILED torch_cp mask={'causal' if causal else 'none'} N={N} rotate={method}: "
                          f"{type(e).__name__}: {e}", flush=True)
                    traceback.print_exc(limit=3)
                return 1
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
