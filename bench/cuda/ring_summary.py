"""ring_summary.py: the RESULT lines of bench_ring (and ring_torch.py) as markdown tables.

    python3 bench/cuda/ring_summary.py ring.log [torch.log]
    python3 bench/cuda/ring_summary.py ring-bwd.log        (the backward's RESULT ringbwd lines)

A file that does not exist is skipped with a line saying so.
"""
import os
import sys


def results(path, kind):
    rows = []
    if not os.path.exists(path):
        print(f"({path}: not there)\n")
        return rows
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) > 1 and w[0] == "RESULT" and w[1] == kind:
                rows.append(dict(x.split("=", 1) for x in w[2:] if "=" in x))
    return rows


def main(argv):
    ring = results(argv[1], "ring") if len(argv) > 1 else []
    sweep = results(argv[1], "sweep") if len(argv) > 1 else []
    torch_rows = results(argv[2], "torch_cp") if len(argv) > 2 else []
    bwd = results(argv[1], "ringbwd") if len(argv) > 1 else []
    if bwd:
        print("Ring backward, H = 16, batch 1 (ms; one GPU = the single-GPU backward on the whole "
              "problem; hidden = 1 − exposed / transfers alone, exposed = the time the slowest GPU's compute "
              "waited for K, V or dK, dV plus its hops home that outlasted its compute, from the events; "
              "all GPUs: the same with the largest wait over the GPUs (run 1 printed only that one, as "
              "'exposed'); from totals = 1 − (ring − compute alone) / transfers alone; by the clock (the GPUs' "
              "common %globaltimer, lines of 2026-11-27 on): home after all = how long the hops home went on "
              "after the last GPU's compute ended, ends apart = how far apart the GPUs' compute ended, "
              "hidden by the clock = 1 − (largest wait in steps + home after all) / transfers alone; "
              "home chunks = the groups of KV heads the last step runs):\n")
        print("| mask | shard | N | P | type | d | bwd v | home chunks | one GPU | ring | speedup | efficiency | compute alone | "
              "transfers alone | in the ring | exposed | of it home | hidden | hidden, all GPUs | from totals | "
              "home after all | ends apart | hidden by the clock | steps | TFLOP/s one → ring | ring vs one |")
        print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
              "---|---|---:|")
        for r in bwd:
            opt = lambda k: f"{100 * float(r[k]):.0f} %" if k in r else "–"   # not in run 1's lines
            ms = lambda k: f"{float(r[k]):.2f}" if k in r else "–"   # not before 2026-11-27
            print(f"| {r['mask']} | {r['shard']} | {int(r['N']) // 1024}k | {r['P']} | {r.get('dt', 'f16')} | "
                  f"{r.get('d', '128')} | {r['bwd_v']} | {r.get('home_chunks', '4')} | "
                  f"{float(r['single_ms']):.1f} | {float(r['ring_ms']):.1f} | {float(r['speedup']):.3f} | "
                  f"{100 * float(r['eff']):.1f} % | {float(r['compute_ms']):.1f} | {float(r['comm_ms']):.2f} | "
                  f"{float(r['comm_in_ring_ms']):.2f} | {float(r['exposed_ms']):.2f} | {float(r['home_ms']):.2f} | "
                  f"{100 * float(r['hidden']):.0f} % | {opt('hidden_min')} | {float(r['diff_hidden']):.2f} | "
                  f"{ms('home_all_ms')} | {ms('cend_spread_ms')} | {opt('hidden_all')} | "
                  f"{r['step_ms']} | {r['single_tflops']} → {r['ring_tflops']} | {r['ring_vs_one']} |")
        print()
    if sweep:
        print("SMs left to NCCL and NCCL's blocks (N = 128k; NCCL blocks 0: as NCCL chooses), ms:\n")
        print("| mask | NCCL blocks | reserve | ring | transfers in the ring | exposed | transfers alone |\n"
              "|---|---:|---:|---:|---:|---:|---:|")
        for r in sweep:
            opt = lambda k: f"{float(r[k]):.2f}" if k in r else "–"   # not in the runs of 2026-11-26
            print(f"| {r['mask']} | {r.get('nccl_ctas', '0')} | {r['reserve']} | {float(r['ring_ms']):.2f} | "
                  f"{opt('comm_in_ring_ms')} | {opt('exposed_ms')} | {opt('comm_alone_ms')} |")
        print()
    if ring:
        print("Ring attention, H = 16, batch 1 (ms; speedup = one GPU / ring; hidden = 1 − exposed / "
              "transfers alone, exposed = how long the transfers outlasted their steps' compute, from the events; "
              "from totals = 1 − (ring − compute alone) / transfers alone):\n")
        print("| mask | shard | N | P | type | d | SMs left | NCCL blocks | one GPU | ring | speedup | efficiency | compute alone | "
              "transfers alone | in the ring | exposed | hidden | from totals | steps | merge | "
              "TFLOP/s one → ring | GB/s a step | ring vs one |")
        print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---|")
        for r in ring:
            opt = lambda k, f: f.format(float(r[k])) if k in r else "–"   # not in run 1's lines
            print(f"| {r['mask']} | {r['shard']} | {int(r['N']) // 1024}k | {r['P']} | {r.get('dt', 'f16')} | "
                  f"{r.get('d', '128')} | {r['reserve']} | {r.get('nccl_ctas', '0')} | "
                  f"{float(r['single_ms']):.1f} | {float(r['ring_ms']):.1f} | {float(r['speedup']):.3f} | "
                  f"{100 * float(r['eff']):.1f} % | {float(r['compute_ms']):.1f} | {float(r['comm_ms']):.2f} | "
                  f"{opt('comm_in_ring_ms', '{:.2f}')} | {opt('exposed_ms', '{:.2f}')} | "
                  f"{100 * float(r['hidden']):.0f} % | {opt('diff_hidden', '{:.2f}')} | {r['step_ms']} | "
                  f"{float(r['merge_ms']):.2f} | {r['single_tflops']} → {r['ring_tflops']} | {r['comm_GBps']} | "
                  f"{r['ring_vs_one']} |")
        print()
    if torch_rows:
        print("PyTorch context parallel (SDPA flash backend), same shapes:\n")
        print("| mask | N | P | rotate | one GPU ms | CP ms | speedup | TFLOP/s one → CP |")
        print("|---|---:|---:|---|---:|---:|---:|---|")
        for r in torch_rows:
            print(f"| {r['mask']} | {int(r['N']) // 1024}k | {r['P']} | {r['rotate']} | "
                  f"{float(r['single_ms']):.1f} | {float(r['cp_ms']):.1f} | {float(r['speedup']):.3f} | "
                  f"{r['single_tflops']} → {r['cp_tflops']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
