"""summary.py: the side-by-side table from bench_cuda's and sdpa_bench's RESULT lines.

    python3 bench/cuda/summary.py bench.log sdpa.log     (Markdown on stdout)
"""
import re
import sys


def results(path):
    rows = []
    try:
        for line in open(path):
            if line.startswith("RESULT "):
                f = line.split()
                kind = f[1]
                kv = dict(x.split("=", 1) for x in f[2:] if "=" in x)
                rows.append((kind, kv, line))
    except OSError:
        pass
    return rows


def main():
    ours = results(sys.argv[1])
    sdpa = results(sys.argv[2]) if len(sys.argv) > 2 else []
    copy = [kv for k, kv, _ in ours if k == "copy"]
    print("| shape (B×N, H, d) | dtype | causal | " + " | ".join(
        f"v{v}" for v in sorted({kv["v"] for k, kv, _ in ours if k == "prefill"}, key=int)) +
        " | SDPA flash | SDPA cuDNN | best / flash | best / cuDNN |")
    vs = sorted({kv["v"] for k, kv, _ in ours if k == "prefill"}, key=int)
    print("|" + "---|" * (7 + len(vs)))
    keys = []
    for k, kv, _ in ours:
        if k == "prefill":
            key = (kv["N"], kv["d"], kv["causal"], kv["dtype"], kv["B"], kv["H"])
            if key not in keys:
                keys.append(key)
    for key in keys:
        N, d, causal, dt, B, H = key
        mine = {kv["v"]: float(kv["tflops"]) for k, kv, _ in ours if k == "prefill" and
                (kv["N"], kv["d"], kv["causal"], kv["dtype"], kv["B"], kv["H"]) == key}
        def sd(bk):
            for k, kv, _ in sdpa:
                if (k == "sdpa" and kv.get("backend") == bk and kv.get("N") == N and kv.get("d") == d
                        and kv.get("causal") == causal and kv.get("dtype") == dt and "tflops" in kv):
                    return float(kv["tflops"])
            return None
        fl, cu = sd("flash"), sd("cudnn")
        best = max(mine.values()) if mine else 0
        cells = [f"{mine[v]:.1f}" if v in mine else "–" for v in vs]
        ratio = f"{best / fl:.2f}×" if fl else "–"
        ratio_cu = f"{best / cu:.2f}×" if cu else "–"
        print(f"| {B}×{N}, {H}, {d} | {dt} | {causal} | " + " | ".join(cells) +
              f" | {fl if fl is not None else '–'} | {cu if cu is not None else '–'} | {ratio} | {ratio_cu} |")
    print()
    print("TFLOP/s (4·B·H·N²·d, halved for causal), median of CUDA-event timings.")
    print()
    bvs = sorted({kv["v"] for k, kv, _ in ours if k == "backward"}, key=int)
    print("| backward (B×N, H, d) | dtype | causal | " + " | ".join(f"v{v}" for v in bvs) +
          " | SDPA flash | SDPA cuDNN | best / flash | best / cuDNN |")
    print("|" + "---|" * (7 + len(bvs)))
    bkeys = []
    for k, kv, _ in ours:
        if k == "backward":
            key = (kv["N"], kv["d"], kv["causal"], kv["dtype"], kv["B"], kv["H"])
            if key not in bkeys:
                bkeys.append(key)
    for key in bkeys:
        N, d, causal, dt, B, H = key
        mine = {kv["v"]: float(kv["tflops"]) for k, kv, _ in ours if k == "backward" and
                (kv["N"], kv["d"], kv["causal"], kv["dtype"], kv["B"], kv["H"]) == key}
        def sb(bk):
            for k2, kv2, _ in sdpa:
                if (k2 == "sdpa_backward" and kv2.get("backend") == bk and kv2.get("N") == N
                        and kv2.get("d") == d and kv2.get("causal") == causal
                        and kv2.get("dtype") == dt and "tflops" in kv2):
                    return float(kv2["tflops"])
            return None
        best, fl, cu = max(mine.values()), sb("flash"), sb("cudnn")
        print(f"| {B}×{N}, {H}, {d} | {dt} | {causal} | " + " | ".join(
              f"{mine[v]:.1f}" if v in mine else "–" for v in bvs) +
              f" | {fl if fl is not None else '–'} | {cu if cu is not None else '–'} "
              f"| {f'{best / fl:.2f}×' if fl else '–'} | {f'{best / cu:.2f}×' if cu else '–'} |")
    print()
    print("Backward TFLOP/s: 2.5 × the forward's count (five products instead of two).")
    print()
    print("| decode (B, Hq/Hkv, n_kv, d) | dtype | version | µs | TB/s of K+V | SDPA best TB/s |")
    print("|---|---|---|---|---|---|")
    for k, kv, _ in ours:
        if k != "decode":
            continue
        best = None
        for k2, kv2, _ in sdpa:
            if (k2 == "sdpa_decode" and kv2.get("nkv") == kv["nkv"] and kv2.get("dtype") == kv["dtype"]
                    and "tbps" in kv2):
                t = float(kv2["tbps"])
                best = t if best is None or t > best else best
        print(f"| {kv['B']}, {kv['Hq']}/{kv['Hkv']}, {kv['nkv']}, {kv['d']} | {kv['dtype']} | v{kv['v']} "
              f"| {kv['us']} | {kv['tbps']} | {best if best is not None else '–'} |")
    d8 = [kv for k, kv, _ in ours if k == "decode_fp8"]
    if d8:
        cp = max((float(kv["tbps"]) for kv in copy if "tbps" in kv), default=None)
        print()
        print("| e4m3-cache decode (B, Hq/Hkv, n_kv, d) | page | f16 µs | e4m3 version | e4m3 µs | f16 TB/s | e4m3 TB/s "
              "| e4m3 / copy | tokens/s f16 | tokens/s e4m3 | e4m3 / f16 | SDPA f16 µs |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")

        def same(x, y):   # the same sequences stored the same way (page size and pool layout)
            return all(x.get(k) == y.get(k) for k in ("B", "nkv", "d", "page", "layout"))

        for b in d8:
            if b["kernel"] in ("f16", "f16_paged"):
                continue
            f16 = [a for a in d8 if a["kernel"] in ("f16", "f16_paged") and same(a, b)]
            if not f16:
                continue
            a = min(f16, key=lambda kv: float(kv["us"]))   # the best float16 kernel stored the same way
            torch = [kv2.get("us") for k2, kv2, _ in sdpa if k2 == "sdpa_decode" and kv2.get("nkv") == a["nkv"]
                     and kv2.get("B") == a["B"] and kv2.get("dtype") == "f16" and "us" in kv2]
            frac = f"{float(b['tbps']) / cp:.0%}" if cp else "–"
            page = b['page'] + (f" {b['layout']}" if "layout" in b else "")
            print(f"| {a['B']}, {a['Hq']}/{a['Hkv']}, {a['nkv']}, {a['d']} | {page} | {a['us']} (v{a['v']}) "
                  f"| v{b['v']} | {b['us']} | {a['tbps']} | {b['tbps']} | {frac} | {a['tok_s']} | {b['tok_s']} "
                  f"| {b['vs_f16']}× | {min(torch, key=float) if torch else '–'} |")
        for kv in ours:
            if kv[0] == "decode_fp8_paged":
                p = kv[1]
                lay = f" ({p['layout']})" if "layout" in p else ""
                print(f"\npaged e4m3 / contiguous e4m3 at B = {p['B']}, n_kv = {p['nkv']}, page {p['page']}{lay}: "
                      f"{p['e4m3_paged_vs_contiguous']} (float16: {p['f16_paged_vs_contiguous']})")
    f8 = [kv for k, kv, _ in ours if k == "fp8"]
    if f8:
        names = []
        for kv in f8:
            if kv["kernel"] not in names:
                names.append(kv["kernel"])
        print()
        print("| e4m3 forward (B×N, H, d) | causal | " + " | ".join(names) + " | best e4m3 / best f16 | PyTorch FP8 |")
        print("|" + "---|" * (4 + len(names)))
        shapes = []
        for kv in f8:
            key = (kv["N"], kv["d"], kv["causal"], kv["B"], kv["H"])
            if key not in shapes:
                shapes.append(key)
        for N, d, causal, B, H in shapes:
            row = {kv["kernel"]: kv for kv in f8 if (kv["N"], kv["d"], kv["causal"], kv["B"], kv["H"]) == (N, d, causal, B, H)}
            t = {n: float(row[n]["tflops"]) for n in row}
            b16 = max(v for n, v in t.items() if n.startswith("f16"))
            b8 = max(v for n, v in t.items() if n.startswith("e4m3"))
            torch8 = [kv2.get("tflops") for k2, kv2, _ in sdpa if k2 == "sdpa_fp8" and kv2.get("N") == N
                      and kv2.get("causal") == causal and "tflops" in kv2]
            print(f"| {B}×{N}, {H}, {d} | {causal} | " + " | ".join(f"{t[n]:.1f}" if n in t else "–" for n in names) +
                  f" | {b8 / b16:.2f}× | {max(torch8, key=float) if torch8 else 'n/a'} |")
        print()
        print("| e4m3 RMSE against float64 (B×N, H, d) | causal | " + " | ".join(names) + " | simulated e4m3 | simulated e4m3 + Hadamard |")
        print("|" + "---|" * (4 + len(names)))
        for N, d, causal, B, H in shapes:
            row = {kv["kernel"]: kv for kv in f8 if (kv["N"], kv["d"], kv["causal"], kv["B"], kv["H"]) == (N, d, causal, B, H)}
            # the simulation of the row's first e4m3 version, plain and with the Hadamard pre-pass
            plain = [n for n in row if n.startswith("e4m3") and not n.endswith("_hadamard")]
            had = [n for n in row if n.startswith("e4m3") and n.endswith("_hadamard")]
            sim = row[plain[0]].get("simulation_rmse", "–") if plain else "–"
            simh = row[had[0]].get("simulation_rmse", "–") if had else "–"
            print(f"| {B}×{N}, {H}, {d} | {causal} | " + " | ".join(row[n]["rmse"] if n in row else "–" for n in names) +
                  f" | {sim} | {simh} |")
        pre = [kv for k, kv, _ in ours if k == "fp8_prepass"]
        if pre:
            print()
            print("| e4m3 pre-passes (N, d, causal) | Q, K ms | Q, K with Hadamard ms | Vᵀ ms | best e4m3 with pre-passes TFLOP/s |")
            print("|---|---|---|---|---|")
            for kv in pre:
                print(f"| {kv['N']}, {kv.get('d', '–')}, {kv['causal']} | {kv['qk_ms']} | {kv['qk_hadamard_ms']} | {kv['v_transpose_ms']} "
                      f"| {kv['best_e4m3_with_prepasses_tflops']} |")
        print()
        print("e4m3 inputs: N(0, 1) with 0.1 % of entries N(0, 10), float16, quantized per tensor; output bfloat16.")
    paged = [kv for k, kv, _ in ours if k == "decode_paged"]
    if paged:
        print()
        print("| paged decode (B, Hq/Hkv, n_kv, d) | dtype | page | pool | version | µs | TB/s | contiguous version, µs | TB/s | paged / contiguous |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for kv in paged:
            print(f"| {kv['B']}, {kv['Hq']}/{kv['Hkv']}, {kv['nkv']}, {kv['d']} | {kv['dtype']} | {kv['page']} "
                  f"| {kv.get('layout', 'NHD')} | v{kv['v']} "
                  f"| {kv['us']} | {kv['tbps']} | v{kv.get('cv', 9)}, {kv.get('contiguous_us', kv.get('contiguous_v9_us'))} "
                  f"| {kv['contiguous_tbps']} "
                  f"| {float(kv['ratio']) * 100:.1f} % |")
    for kv in copy:
        print(f"\ndevice copy (cudaMemcpy D2D, 1 GiB, read + write): {kv['tbps']} TB/s")
    for k, kv, line in sdpa:
        if k == "torch_copy":
            print(f"torch copy_ (1 GiB, read + write): {kv['tbps']} TB/s")


if __name__ == "__main__":
    main()
