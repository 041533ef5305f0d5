#!/usr/bin/env python3
"""report.py: the performance tables of README.md and docs/*.md, generated from the run records.

    python3 bench/report.py            print every table this script knows, by name
    python3 bench/report.py --check    exit 1, with a unified diff, when any text between
                                       <!-- report:NAME --> and <!-- /report:NAME --> in the
                                       docs differs from what this script writes for NAME
    python3 bench/report.py --write    rewrite those blocks in place
    python3 bench/report.py --root DIR the repository to read and write (default: this one)

Records are read, never written: bench/results/DATE-NAME/*.txt (`bench/ggml-side-by-side.sh`
output: a `## flashstep bench` table and a `## ggml` list), bench/cuda/results/DATE-NAME/*.log
(`RESULT ...` lines of bench_cuda, sdpa_bench.py, bench_ring and ring_torch.py, with the GPU
named in machine.txt) and bench/webgpu/results/DATE-NAME/{ours,ort,sdpa}.json (bench.js, ort.mjs,
sdpa.py). Each table takes, for each case, the newest run folder that timed both sides of the
comparison in the same call; folders named *-trial hold kernels that were not kept and are
skipped, and so is a CPU record whose 1-minute load before it was at least half the machine's
cores (another program held a core). "Newest" is the folder's date, then the first HH:MM of its NOTE.txt. Where a folder
holds several timings of one case (repeated files, repeated lines), the median is taken; where
it holds several of our versions, the fastest is shown and named. A ratio is always the other
side's time over ours (above 1: ours is faster).

Python 3 standard library only; the whole run reads a few MB and takes well under a second.
"""
import argparse
import difflib
import functools
import glob
import json
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md", "docs/benchmarks.md", "docs/kernels-cpu.md", "docs/kernels-cuda.md",
        "docs/webgpu.md"]
MARK = re.compile(r"(<!-- report:([a-z0-9-]+) -->\n)(.*?)(<!-- /report:\2 -->)", re.S)


# ---------------------------------------------------------------- small helpers

def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def note_time(path):
    """The first HH:MM in the opening lines of a run folder's NOTE.txt, or None."""
    note = os.path.join(path, "NOTE.txt")
    if os.path.exists(note):
        m = re.search(r"\b\d\d:\d\d\b", read(note)[:300])
        if m:
            return m.group(0)
    return None


def series(name):
    """A folder name's series and number: 2026-11-25-run15 -> ('2026-11-25-run', 15)."""
    m = re.match(r"(.*?)(\d+)(-[a-z0-9-]*)?$", name[11:])
    if not m:
        return name, 0
    return name[:11] + m.group(1), int(m.group(2))


@functools.lru_cache(maxsize=None)
def run_folders(sub):
    """The run folders under sub (e.g. bench/results), oldest first, trials left out.

    Order: the date, then the time the NOTE.txt opens with; a folder whose NOTE gives no time
    takes that of the nearest lower-numbered run of its series that does (run 15 after run 9's
    10:07), and runs of one series keep their numbers' order."""
    dirs = [d for d in glob.glob(os.path.join(ROOT, sub, "20*")) if os.path.isdir(d)]
    dirs = [d for d in dirs if not os.path.basename(d).endswith("-trial")]
    named = {os.path.basename(d): d for d in dirs}
    known = {name: note_time(d) for name, d in named.items()}

    def key(name):
        s, n = series(name)
        t = known[name]
        if t is None:
            lower = [(series(o)[1], t2) for o, t2 in known.items()
                     if t2 and series(o)[0] == s and series(o)[1] < n]
            t = max(lower)[1] if lower else "00:00"
        return (name[:10], t, s, n, name)
    return tuple(named[n] for n in sorted(named, key=key))


def link(folder, prefix):
    """A Markdown link to a run's NOTE.txt (or its folder), relative to the doc at prefix."""
    rel = os.path.relpath(folder, ROOT)
    name = os.path.basename(folder)
    target = rel + "/NOTE.txt" if os.path.exists(os.path.join(folder, "NOTE.txt")) else rel + "/"
    return "[`%s`](%s%s)" % (name, prefix, target)


def fnum(x, digits=1):
    return ("%." + str(digits) + "f") % x


def span(values, digits=1, unit=""):
    """'a' or 'a–b' (smallest to largest) of a list of numbers."""
    lo, hi = min(values), max(values)
    if fnum(lo, digits) == fnum(hi, digits):
        return fnum(lo, digits) + unit
    return fnum(lo, digits) + "–" + fnum(hi, digits) + unit


def ratio(values):
    return span(values, 2, "×")


def kv(line):
    """The key=value pairs of a RESULT line."""
    return dict(re.findall(r"(\w+)=([^\s,]+)", line))


def table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i else "---" for i in range(len(header))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- CPU: flashstep against ggml

CPU_SHORT = {"zen4": "Zen 4 (AMD EPYC, 2 cores)", "zen5": "Zen 5 (AMD EPYC, 2 cores)",
             "xeon": "Intel Xeon host (16 vCPUs)"}
CPU_NAMES = {"zen4": "AMD EPYC, Zen 4 (family 25), 2 cores, AVX-512",
             "zen5": "AMD EPYC, Zen 5, 2 cores, AVX-512",
             "xeon": "Intel Xeon (family 6, model 207) host of a lent GPU machine, 16 vCPUs, AVX-512"}


def parse_ggml_side_by_side(text):
    """One ggml-side-by-side.sh record: our rows, ggml's rows and the probes, or None."""
    if "## ggml" not in text or "## flashstep bench" not in text:
        return None
    ours, ggml = [], []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 9 and re.match(r"(flash|decode)-v\d", f[0]) and f[1].isdigit():
            ours.append({"kernel": f[0], "N": int(f[1]), "d": int(f[2]), "causal": f[3] == "yes",
                         "threads": int(f[4]), "ms": float(f[5]),
                         "of_peak": float(f[7].rstrip("%"))})
        m = re.match(r"ggml (prefill|decode)\s+(?:KV )?heads \d+ (?:N|kv)\s+(\d+) d (\d+) "
                     r"K/V (f32|f16)\s+([\d.]+) ms", line)
        if m:
            ggml.append({"kind": m.group(1), "N": int(m.group(2)), "d": int(m.group(3)),
                         "kv": m.group(4), "ms": float(m.group(5))})
    date = re.search(r"# date:\s+(\S+ \S+)", text)
    load = re.search(r"# load before:\s+([\d.]+)", text)
    cores = re.search(r"# machine:.*?(\d+) cores", text)
    busy = bool(load and cores and float(load.group(1)) >= int(cores.group(1)) / 2)
    return {"ours": ours, "ggml": ggml, "date": date.group(1) if date else "", "busy": busy}


@functools.lru_cache(maxsize=None)
def cpu_runs():
    """machine tag -> (folder, [records]) of the newest ggml side by side on that machine."""
    found = {}
    for folder in run_folders("bench/results"):
        recs = []
        for path in sorted(glob.glob(os.path.join(folder, "*.txt"))):
            r = parse_ggml_side_by_side(read(path))
            if r and r["ours"] and r["ggml"] and not r["busy"]:
                recs.append(r)
        if recs:
            tag = os.path.basename(folder)[11:].split("-")[0]
            found[tag] = (folder, recs)
    return found


def cpu_rows(folder, recs, prefix, full):
    """The rows of one machine's table: prefill (not causal) and decode against ggml."""
    rows = []
    cases = [("prefill", 128, 4096), ("prefill", 64, 4096), ("decode", 128, 32768)]
    for kind, d, n in cases:
        for kv_type in (["f32", "f16"] if kind == "decode" else [None]):
            ours_ms, peer_ms, share, kern, peer_kv = [], [], [], set(), set()
            for r in recs:
                if kind == "prefill":
                    mine = [o for o in r["ours"] if o["kernel"].startswith("flash")
                            and o["d"] == d and o["N"] == n and not o["causal"]]
                    theirs = [g for g in r["ggml"] if g["kind"] == "prefill" and g["d"] == d
                              and g["N"] == n]
                else:
                    want = "decode-v\\d+" + ("-f16" if kv_type == "f16" else "") + "$"
                    mine = [o for o in r["ours"] if re.match(want, o["kernel"]) and o["N"] == n]
                    theirs = [g for g in r["ggml"] if g["kind"] == "decode" and g["N"] == n
                              and g["kv"] == kv_type]
                if not mine or not theirs:
                    continue
                best = min(mine, key=lambda o: o["ms"])
                peer = min(theirs, key=lambda g: g["ms"])
                ours_ms.append(best["ms"])
                share.append(best["of_peak"])
                kern.add(best["kernel"])
                peer_ms.append(peer["ms"])
                peer_kv.add(peer["kv"])
            if not ours_ms:
                continue
            rat = [p / o for p, o in zip(peer_ms, ours_ms)]
            threads = recs[0]["ours"][0]["threads"]
            if kind == "prefill":
                case = "prefill, 8 heads, N = %d, d = %d, float32" % (n, d)
                probe = "of the FMA probe"
            else:
                case = "decode, GQA 32/8, %d keys, d = 128, K/V %s" % (
                    n, "float32" if kv_type == "f32" else "float16")
                probe = "of the read probe"
            dg = 1 if kind == "prefill" else 2
            ours = "%s ms (%s, %s %% %s)" % (span(ours_ms, dg), "/".join(sorted(kern)),
                                               span(share), probe)
            peer = "%s ms (K/V %s)" % (span(peer_ms, dg), "/".join(sorted(peer_kv)))
            if not full:
                ours = "%s ms, %s %% %s" % (span(ours_ms, dg), span(share), probe)
            rows.append([ratio(rat), case, ours, peer,
                         link(folder, prefix) + ("" if len(recs) == 1 else
                                                 " (%d runs)" % len(recs))])
    return rows, threads


def cpu_causal_rows(folder, recs, prefix):
    """Causal against unmasked, ours alone (ggml has no causal skip)."""
    rows = []
    for d in (128, 64):
        sp, sh = [], []
        for r in recs:
            un = [o for o in r["ours"] if o["kernel"].startswith("flash") and o["d"] == d
                  and o["N"] == 4096 and not o["causal"]]
            ca = [o for o in r["ours"] if o["kernel"].startswith("flash") and o["d"] == d
                  and o["N"] == 4096 and o["causal"]]
            if un and ca:
                sp.append(min(u["ms"] for u in un) / min(c["ms"] for c in ca))
                sh.append(min(ca, key=lambda c: c["ms"])["of_peak"])
        if sp:
            rows.append([ratio(sp), "causal prefill against unmasked, N = 4096, d = %d" % d,
                         "%s %% of the FMA probe" % span(sh), "–", link(folder, prefix)])
    return rows


def gen_cpu(prefix, full=False, tags=("zen4", "xeon")):
    runs = cpu_runs()
    out = []
    for tag in (tags if not full else [t for t in ("zen4", "xeon", "zen5") if t in runs]):
        if tag not in runs:
            continue
        folder, recs = runs[tag]
        rows, threads = cpu_rows(folder, recs, prefix, full)
        if full:
            rows += cpu_causal_rows(folder, recs, prefix)
        out.append("**%s**, %d thread%s, %s UTC:\n\n" % (
            CPU_NAMES.get(tag, tag), threads, "" if threads == 1 else "s",
            recs[-1]["date"]))
        out.append(table(["vs ggml", "case", "flashstep", "ggml (fastest K/V type)",
                          "run"], rows))
        out.append("\n")
    return "".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------- CUDA: against PyTorch's SDPA

def cuda_gpu(folder):
    path = os.path.join(folder, "machine.txt")
    text = read(path) if os.path.exists(path) else ""
    m = re.search(r"NVIDIA (H\d00)", text) or re.search(r"(H\d00)", read(
        os.path.join(folder, "NOTE.txt")) if os.path.exists(os.path.join(folder, "NOTE.txt"))
        else "")
    n = len(re.findall(r"^\s*\d+, NVIDIA", text, re.M))
    return (m.group(1) if m else "GPU"), max(n, 1)


@functools.lru_cache(maxsize=None)
def cuda_results(folder):
    """Every RESULT line of a CUDA run folder's logs, parsed once: (what, {key: value})."""
    lines = []
    for path in sorted(glob.glob(os.path.join(folder, "*.log"))):
        for line in read(path).splitlines():
            if line.startswith("RESULT "):
                lines.append((line.split()[1], kv(line)))
    return tuple(lines)


def median(xs):
    return statistics.median(xs)


PREFILL_CASES = [  # (label, dtype, d, causal, N, B, H)
    ("B = 4, N = 4096, H = 16, d = 128", "f16", "128", "0", "4096", "4", "16"),
    ("B = 4, N = 4096, H = 16, d = 128, causal", "f16", "128", "1", "4096", "4", "16"),
    ("B = 1, N = 16384, H = 16, d = 128", "f16", "128", "0", "16384", "1", "16"),
    ("B = 1, N = 16384, H = 16, d = 128, causal", "f16", "128", "1", "16384", "1", "16"),
    ("B = 16, N = 1024, H = 32, d = 64", "f16", "64", "0", "1024", "16", "32"),
    ("B = 16, N = 1024, H = 32, d = 64, causal", "f16", "64", "1", "1024", "16", "32"),
    ("B = 4, N = 4096, H = 32, d = 64", "f16", "64", "0", "4096", "4", "32"),
    ("B = 4, N = 4096, H = 8, d = 256", "f16", "256", "0", "4096", "4", "8"),
]
README_PREFILL = {0, 1, 4, 7}


def gen_cuda_prefill(prefix, full=False, kind="prefill", peer_kind="sdpa"):
    folders = run_folders("bench/cuda/results")
    res = {f: cuda_results(f) for f in folders}
    rows = []
    for i, (label, dt, d, causal, n, b, h) in enumerate(PREFILL_CASES):
        if kind == "prefill" and not full and i not in README_PREFILL:
            continue
        if kind == "backward" and d == "64" and n == "1024":
            continue
        shape = {"dtype": dt, "d": d, "causal": causal, "N": n, "B": b, "H": h}
        pick = None
        for f in folders:
            ours, peers = {}, {}
            for w, k in res[f]:
                if any(k.get(x) != y for x, y in shape.items()):
                    continue
                if w == kind and "tflops" in k:
                    ours.setdefault(int(k["v"]), []).append(float(k["tflops"]))
                elif w == peer_kind and "tflops" in k:
                    peers.setdefault(k["backend"], []).append(float(k["tflops"]))
            if ours and "flash" in peers and "cudnn" in peers:
                pick = (f, ours, peers)
        if not pick:
            continue
        f, ours, peers = pick
        v, best = max(((v, median(t)) for v, t in ours.items()), key=lambda x: x[1])
        fl, cu = median(peers["flash"]), median(peers["cudnn"])
        gpu, _ = cuda_gpu(f)
        name = "%s, %s" % (kind, label)
        rows.append(["%.2f×" % (best / fl), "%.2f×" % (best / cu), name,
                     "v%d: %s" % (v, fnum(best)), fnum(fl), fnum(cu),
                     "%s, %s" % (gpu, link(f, prefix))])
    return table(["vs FlashAttention-2", "vs cuDNN", "case (float16)", "ours, TFLOP/s",
                  "SDPA flash", "SDPA cuDNN", "GPU, run"], rows)


def gen_cuda_decode(prefix):
    folders = run_folders("bench/cuda/results")
    rows = []
    for nkv, b in (("32768", "8"), ("65536", "4")):
        shape = {"dtype": "f16", "d": "128", "Hq": "32", "Hkv": "8", "nkv": nkv, "B": b}
        pick = None
        for f in folders:
            ours, peers, copy = {}, {}, []
            for w, k in cuda_results(f):
                if w == "copy" and "tbps" in k:
                    copy.append(float(k["tbps"]))
                if any(k.get(x) != y for x, y in shape.items()):
                    continue
                if w == "decode" and "us" in k:
                    ours.setdefault(int(k["v"]), []).append(float(k["us"]))
                elif w == "sdpa_decode" and "us" in k:
                    peers.setdefault(k["backend"], []).append(float(k["us"]))
            if ours and peers:
                pick = (f, ours, peers, copy)
        if not pick:
            continue
        f, ours, peers, copy = pick
        v, us = min(((v, median(t)) for v, t in ours.items()), key=lambda x: x[1])
        pb, pus = min(((p, median(t)) for p, t in peers.items()), key=lambda x: x[1])
        byts = 2 * int(b) * int(nkv) * 8 * 128 * 2
        tb = byts / us / 1e6
        cp = (" (%.0f %% of the %.2f TB/s copy)" % (100 * tb / median(copy), median(copy))
              if copy else "")
        gpu, _ = cuda_gpu(f)
        rows.append(["%.2f×" % (pus / us), "decode, B = %s, GQA 32/8, %s keys, d = 128" % (b, nkv),
                     "v%d: %.1f µs, %.2f TB/s%s" % (v, us, tb, cp),
                     "%s: %.1f µs" % (pb, pus), "%s, %s" % (gpu, link(f, prefix))])
    return table(["vs SDPA", "case (float16)", "ours", "SDPA's fastest backend",
                  "GPU, run"], rows)


def gen_cuda(prefix, full=False):
    out = gen_cuda_prefill(prefix, full)
    if full:
        out += "\n" + gen_cuda_prefill(prefix, True, "backward", "sdpa_backward")
        out += "\n" + gen_cuda_decode(prefix)
    return out


# ---------------------------------------------------------------- ring attention over NCCL

def gen_ring(prefix, full=False):
    folders = run_folders("bench/cuda/results")
    best = {}  # P -> (folder, ring rows, cp rows)
    for f in folders:
        ring, cp = [], []
        for w, k in cuda_results(f):
            if w == "ring":
                ring.append(k)
            elif w == "torch_cp":
                cp.append(k)
        for p in sorted({r["P"] for r in ring}):
            rp = [r for r in ring if r["P"] == p]
            cpp = [c for c in cp if c["P"] == p]
            if rp and cpp:
                best[p] = (f, rp, cpp)
    rows = []
    for p in sorted(best, key=int):
        if not full and p != "2":
            continue
        f, rp, cpp = best[p]
        gpu, _ = cuda_gpu(f)
        for mask in ("none", "causal"):
            for n in sorted({int(r["N"]) for r in rp}):
                rs = [r for r in rp if r["mask"] == mask and int(r["N"]) == n
                      and r["dt"] == "f16" and r["d"] == "128"]
                cs = [c for c in cpp if c["mask"] == mask and int(c["N"]) == n
                      and c["dt"] == "f16" and c["d"] == "128"]
                if not rs or not cs:
                    continue
                if not full and n not in (65536, 262144):
                    continue
                ring_ms = median([float(r["ring_ms"]) for r in rs])
                one_ms = median([float(r["single_ms"]) for r in rs])
                hid = median([float(r["hidden"]) for r in rs])
                cp_ms = min(float(c["cp_ms"]) for c in cs)
                rows.append(["%.2f×" % (cp_ms / ring_ms), "%.2f×" % (one_ms / ring_ms),
                             "%dk; %s" % (n // 1024, "causal, zigzag" if mask == "causal"
                                          else "no mask"),
                             "%s × %s" % (p, gpu), fnum(ring_ms), fnum(cp_ms),
                             "%.0f %%" % (100 * hid), link(f, prefix)])
    return table(["vs PyTorch CP", "vs one GPU", "N; mask (H = 16, d = 128, float16)",
                  "GPUs", "ring ms", "PyTorch CP ms", "transfers hidden", "run"], rows)


# ---------------------------------------------------------------- WebGPU: against ORT Web and PyTorch

@functools.lru_cache(maxsize=None)
def webgpu_load(folder, name):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return None
    try:
        d = json.loads(read(path))
    except ValueError:
        return None
    return d if isinstance(d, dict) and isinstance(d.get("rows"), list) else None


def wkey(r):
    return (r.get("kind"), r.get("n_kv"), r.get("d"), r.get("heads"), r.get("causal"))


def gen_webgpu(prefix, full=False):
    folders = run_folders("bench/webgpu/results")
    pre_cases = [(4096, 128, False), (4096, 128, True), (16384, 128, False),
                 (16384, 128, True), (16384, 64, False)]
    if not full:
        pre_cases = [(4096, 128, False), (16384, 128, False), (16384, 64, False)]
    rows = []
    for n, d, causal in pre_cases:
        pick = None
        for f in folders:
            ours, ort, sd = (webgpu_load(f, x) for x in ("ours.json", "ort.json", "sdpa.json"))
            if not ours or not ort:
                continue
            mine = [r for r in ours["rows"] if r.get("kind") == "prefill" and r.get("n_kv") == n
                    and r.get("d") == d and r.get("causal") == causal and "ms" in r
                    and r.get("storage", "f32") == "f32"]   # float32 beside ORT's float32
            theirs = [r for r in ort["rows"] if r.get("kind") == "prefill" and r.get("n_kv") == n
                      and r.get("d") == d and r.get("causal") == causal and "ms" in r]
            if mine and theirs:
                pick = (f, ours, mine, theirs, sd)
        if not pick:
            continue
        f, ours, mine, theirs, sd = pick
        best = min(mine, key=lambda r: r["ms"])
        o_ms = median([r["ms"] for r in theirs])
        pt = ""
        if sd:
            ps = [r for r in sd["rows"] if r.get("kind") == "prefill" and r.get("n_kv") == n
                  and r.get("d") == d and r.get("causal") == causal and r.get("backend") ==
                  "efficient f32" and "ms" in r]
            if ps:
                pt = "%.2f×" % (ps[0]["ms"] / best["ms"])
        fma = ours.get("probe", {}).get("fma_tflops")
        share = " (%.0f %% of the FMA probe)" % (100 * best["tflops"] / fma) if fma else ""
        rows.append(["%.2f×" % (o_ms / best["ms"]), pt or "–",
                     "prefill, 16 heads, N = %d, d = %d%s, float32" % (n, d,
                                                                      ", causal" if causal else ""),
                     "%s: %.2f ms, %.1f TFLOP/s%s" % (best["kernel"], best["ms"], best["tflops"],
                                                      share),
                     "%.2f ms" % o_ms, "%s, %s" % (ours["device"]["device"].split("-")[1].upper(),
                                                  link(f, prefix))])
    for nkv in ((32768, 131072) if full else (131072,)):
        pick = None
        for f in folders:
            ours, ort, sd = (webgpu_load(f, x) for x in ("ours.json", "ort.json", "sdpa.json"))
            if not ours or not ort:
                continue
            mine = [r for r in ours["rows"] if r.get("kind") == "decode" and r.get("n_kv") == nkv
                    and "paged" not in r.get("kernel", "") and "ms" in r and
                    r.get("storage", "f32") == "f32" and not r["kernel"].startswith("akunu")]
            theirs = [r for r in ort["rows"] if r.get("kind") == "decode" and r.get("n_kv") == nkv
                      and "ms" in r]
            if mine and theirs:
                pick = (f, ours, mine, theirs, sd)
        if not pick:
            continue
        f, ours, mine, theirs, sd = pick
        best = min(mine, key=lambda r: r["ms"])
        o_ms = median([r["ms"] for r in theirs])
        copy = ours.get("probe", {}).get("copy_gbps")
        share = " (%.0f %% of the copy probe)" % (100 * best["gbps"] / copy) if copy else ""
        rows.append(["%.0f×" % (o_ms / best["ms"]), "–",
                     "decode, GQA 32/8, %d keys, d = 128, float32" % nkv,
                     "%s: %.3f ms, %.2f TB/s%s" % (best["kernel"], best["ms"],
                                                   best["gbps"] / 1000, share),
                     "%.1f ms" % o_ms, "%s, %s" % (ours["device"]["device"].split("-")[1].upper(),
                                                   link(f, prefix))])
    return table(["vs ORT Web", "vs PyTorch f32", "case", "ours",
                  "ONNX Runtime Web", "GPU, run"], rows)


# ---------------------------------------------------------------- the maps' one-line figures

def cells(table_text):
    """The body rows of a generated table, as lists of cells."""
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in table_text.splitlines()[2:] if line.startswith("|")]


def gen_map_cpu(prefix):
    """One line per machine: the d = 128 prefill and the float32 decode against ggml."""
    out = []
    runs = cpu_runs()
    for tag in ("zen4", "xeon"):
        if tag not in runs:
            continue
        rows, _ = cpu_rows(runs[tag][0], runs[tag][1], prefix, False)
        pre = [r for r in rows if r[1].startswith("prefill") and "d = 128" in r[1]]
        dec = [r for r in rows if r[1].startswith("decode") and "float32" in r[1]]
        if pre and dec:
            out.append("- %s: prefill (d = 128) **%s** faster than ggml, decode (float32 K/V) "
                       "**%s**; %s\n" % (CPU_SHORT[tag], pre[0][0], dec[0][0],
                           pre[0][-1]))
    return "".join(out) or "No record yet.\n"


def gen_map_cuda(prefix):
    """The headline prefill row against both of PyTorch's backends, and the decode."""
    rows = cells(gen_cuda_prefill(prefix, False))
    out = []
    for r in rows[:2]:
        out.append("- %s: **%s** PyTorch's cuDNN attention, %s its FlashAttention-2; %s\n"
                   % (r[2], r[1], r[0], r[-1]))
    dec = cells(gen_cuda_decode(prefix))
    if dec:
        out.append("- %s: **%s** PyTorch's fastest SDPA backend; %s\n" % (dec[0][1], dec[0][0],
                                                                          dec[0][-1]))
    return "".join(out) or "No record yet.\n"


def gen_map_webgpu(prefix):
    """The d = 128 prefill and the long decode against ONNX Runtime Web."""
    out = []
    for r in cells(gen_webgpu(prefix, False)):
        if "d = 128" in r[2] and ("N = 4096" in r[2] or "decode" in r[2]):
            out.append("- %s: **%s** ONNX Runtime Web%s; %s\n" % (
                r[2], r[0], "" if r[1] == "–" else ", %s PyTorch's float32 SDPA" % r[1], r[-1]))
    return "".join(out) or "No record yet.\n"


GENERATORS = {
    "cpu": lambda p: gen_cpu(p),
    "cpu-full": lambda p: gen_cpu(p, True),
    "cuda": lambda p: gen_cuda(p),
    "cuda-full": lambda p: gen_cuda(p, True),
    "webgpu": lambda p: gen_webgpu(p),
    "webgpu-full": lambda p: gen_webgpu(p, True),
    "ring": lambda p: gen_ring(p),
    "ring-full": lambda p: gen_ring(p, True),
    "map-cpu": gen_map_cpu,
    "map-cuda": gen_map_cuda,
    "map-webgpu": gen_map_webgpu,
}


# ---------------------------------------------------------------- the blocks in the docs

def render(doc, text):
    """text with every report block replaced by what this script writes for it."""
    prefix = "../" * doc.count("/")
    bad = []

    def sub(m):
        name = m.group(2)
        if name not in GENERATORS:
            bad.append(name)
            return m.group(0)
        return m.group(1) + GENERATORS[name](prefix) + m.group(4)
    out = MARK.sub(sub, text)
    return out, bad


def main(argv):
    global ROOT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="exit 1 with a diff if a block is stale")
    g.add_argument("--write", action="store_true", help="rewrite the blocks in place")
    ap.add_argument("--root", default=ROOT, help="the repository (default: this one)")
    args = ap.parse_args(argv)
    ROOT = os.path.abspath(args.root)
    if not args.check and not args.write:
        for name, gen in GENERATORS.items():
            sys.stdout.write("<!-- report:%s -->\n%s<!-- /report:%s -->\n\n" % (name, gen(""),
                                                                                 name))
        return 0
    stale = 0
    blocks = 0
    for doc in DOCS:
        path = os.path.join(ROOT, doc)
        if not os.path.exists(path):
            continue
        text = read(path)
        blocks += len(MARK.findall(text))
        new, bad = render(doc, text)
        for name in bad:
            sys.stderr.write("report.py: %s: no table is named %r\n" % (doc, name))
            stale = 1
        if new != text:
            if args.write:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                sys.stderr.write("report.py: rewrote %s\n" % doc)
            else:
                stale = 1
                sys.stdout.writelines(difflib.unified_diff(
                    text.splitlines(True), new.splitlines(True), doc, doc + " (from the records)"))
    if args.check:
        if stale:
            sys.stderr.write("report.py: the figures above differ from the records; "
                             "`python3 bench/report.py --write` rewrites them\n")
        else:
            sys.stderr.write("report.py: %d generated blocks match the records\n" % blocks)
    return stale


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
