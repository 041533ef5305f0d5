#!/usr/bin/env python3
"""turns_summary.py FOLDER V1,V2[,...]: backward versions timed in turn, one version a run.

A run folder whose call ran `bench_cuda --time --only backward --from V --to V` several times per
version (time-rR-vV.log), alternating the versions, and PyTorch's sdpa_bench.py beside them
(sdpa-r*.log). Prints a Markdown table, one row per shape: each version's spread over its runs, the
ratio of each later version's median to the first's, cuDNN's median and each version's median over
it. One version a run, in turn, because within one run the version timed first reads up to 6 %
faster than the same kernel timed after it (2026-12-02-h200-bwd-lean).
"""
import glob
import statistics as st
import sys


def fields(line):
    return dict(x.split("=", 1) for x in line.split()[2:] if "=" in x)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().split("\n")[0])
    folder, vs = sys.argv[1], [int(x) for x in sys.argv[2].split(",")]
    ours, cud = {}, {}
    for f in sorted(glob.glob(folder + "/time-r*-v*.log")):
        for line in open(f):
            if line.startswith("RESULT backward"):
                k = fields(line)
                ours.setdefault((int(k["v"]), k["dtype"], int(k["d"]), int(k["N"]), int(k["causal"])), []).append(
                    float(k["tflops"]))
    for f in sorted(glob.glob(folder + "/sdpa-r*.log")):
        for line in open(f):
            if line.startswith("RESULT sdpa_backward") and "backend=cudnn" in line:
                k = fields(line)
                cud.setdefault((k["dtype"], int(k["d"]), int(k["N"]), int(k["causal"])), []).append(float(k["tflops"]))
    cols = ["backward (dtype, d, N)", "mask"] + ["v%d" % v for v in vs] + ["v%d / v%d" % (v, vs[0]) for v in vs[1:]]
    if cud:
        cols += ["SDPA cuDNN"] + ["v%d / cuDNN" % v for v in vs]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for k in sorted({k[1:] for k in ours}, key=lambda k: (k[2], -k[1], k[0], k[3])):
        m = {v: ours.get((v,) + k, []) for v in vs}
        if not all(m.values()):
            continue
        med = {v: st.median(m[v]) for v in vs}
        row = ["%s, %d, %d" % k[:3], "causal" if k[3] else "none"]
        row += ["%.1f-%.1f" % (min(m[v]), max(m[v])) for v in vs]
        row += ["%.3f" % (med[v] / med[vs[0]]) for v in vs[1:]]
        if cud:
            c = cud.get(k)
            row += ["%.1f" % st.median(c) if c else "–"] + [("%.3f" % (med[v] / st.median(c))) if c else "–" for v in vs]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
