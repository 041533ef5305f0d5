#!/usr/bin/env python3
"""report.py: the performance tables and plots of README.md and docs/*.md, generated from the run
records, and the check of the figures in docs/benchmarks.md's prose against those records.

    python3 bench/report.py            print every table this script knows, by name
    python3 bench/report.py --check    exit 1, with a unified diff, when any text between
                                       <!-- report:NAME --> and <!-- /report:NAME --> in the
                                       docs differs from what this script writes for NAME, when
                                       a plot in docs/img/ differs from what it draws, or when a
                                       prose figure of docs/benchmarks.md fails its check
                                       (FIGURES, below)
    python3 bench/report.py --write    rewrite those blocks and plots in place
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

The plots (PLOTS) are plain SVG written here, one per machine: white paper, so they read the same
in a light and a dark page; each names its runs in its caption.

Python 3 standard library only; the whole run reads a few MB and takes well under a second.
"""
import argparse
import difflib
import functools
import glob
import json
import math
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


def newest(folders, find):
    """The last non-None find(folder) over folders (oldest first): the newest run that has it.

    find(folder) returns what a table needs from that run, or None when the run did not time
    both sides of the comparison."""
    pick = None
    for f in folders:
        got = find(f)
        if got is not None:
            pick = got
    return pick


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


CPU_CASES = [("prefill", 128, 4096, None), ("prefill", 64, 4096, None),
             ("decode", 128, 32768, "f32"), ("decode", 128, 32768, "f16")]


def cpu_cases(recs):
    """Each case of CPU_CASES that recs timed on both sides, with one value per record.

    recs: parse_ggml_side_by_side records of one run folder. Returns a list of dicts: kind, d,
    n, kv (the decode's K/V type, None for prefill), ours_ms, peer_ms, share (our % of the
    probe), ratio (peer_ms / ours_ms, one per record), kern and peer_kv (sets of names). Our
    fastest version and ggml's fastest K/V type are taken in each record."""
    out = []
    for kind, d, n, kv_type in CPU_CASES:
        c = {"kind": kind, "d": d, "n": n, "kv": kv_type, "ours_ms": [], "peer_ms": [],
             "share": [], "kern": set(), "peer_kv": set()}
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
            c["ours_ms"].append(best["ms"])
            c["share"].append(best["of_peak"])
            c["kern"].add(best["kernel"])
            c["peer_ms"].append(peer["ms"])
            c["peer_kv"].add(peer["kv"])
        if c["ours_ms"]:
            c["ratio"] = [p / o for p, o in zip(c["peer_ms"], c["ours_ms"])]
            out.append(c)
    return out


def cpu_rows(folder, recs, prefix, full):
    """The rows of one machine's table: prefill (not causal) and decode against ggml."""
    rows = []
    threads = recs[0]["ours"][0]["threads"]
    for c in cpu_cases(recs):
        if not full and (c["d"], c["kv"]) not in ((128, None), (128, "f32")):
            continue  # the README: d = 128 prefill and the float32 decode
        if c["kind"] == "prefill":
            case = "prefill, 8 heads, N = %d, d = %d, float32" % (c["n"], c["d"])
            probe = "of the FMA probe"
        else:
            case = "decode, GQA 32/8, %d keys, d = 128, K/V %s" % (
                c["n"], "float32" if c["kv"] == "f32" else "float16")
            probe = "of the read probe"
        dg = 1 if c["kind"] == "prefill" else 2
        ours = "%s ms (%s, %s %% %s)" % (span(c["ours_ms"], dg), "/".join(sorted(c["kern"])),
                                           span(c["share"]), probe)
        peer = "%s ms (K/V %s)" % (span(c["peer_ms"], dg), "/".join(sorted(c["peer_kv"])))
        if not full:
            ours = "%s ms, %s %% %s" % (span(c["ours_ms"], dg), span(c["share"]), probe)
        rows.append([ratio(c["ratio"]), case, ours, peer,
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
README_PREFILL = {0, 1}


LENT_GPUS = ("H200", "H100")   # the CUDA and WebGPU float16 tables: a row of each case on each, in this order


def cuda_pick(shape, kind, peer_kind, gpu=None):
    """The newest CUDA run (on that gpu, "H100" or "H200", when given) that timed our `kind` and
    both SDPA backends at shape, or None.

    shape: the RESULT keys that must match (dtype, d, causal, N, B, H). Returns (folder,
    {our version: [TFLOP/s]}, {"flash"|"cudnn": [TFLOP/s]})."""
    def find(f):
        if gpu and cuda_gpu(f)[0] != gpu:
            return None
        ours, peers = {}, {}
        for w, k in cuda_results(f):
            if any(k.get(x) != y for x, y in shape.items()):
                continue
            if w == kind and "tflops" in k:
                ours.setdefault(int(k["v"]), []).append(float(k["tflops"]))
            elif w == peer_kind and "tflops" in k:
                peers.setdefault(k["backend"], []).append(float(k["tflops"]))
        return (f, ours, peers) if ours and "flash" in peers and "cudnn" in peers else None
    return newest(run_folders("bench/cuda/results"), find)


def cuda_best(ours):
    """(version, median TFLOP/s) of our fastest version in one run."""
    return max(((v, median(t)) for v, t in ours.items()), key=lambda x: x[1])


def gen_cuda_prefill(prefix, full=False, kind="prefill", peer_kind="sdpa"):
    rows = []
    for i, (label, dt, d, causal, n, b, h) in enumerate(PREFILL_CASES):
        if kind == "prefill" and not full and i not in README_PREFILL:
            continue
        if kind == "backward" and d == "64" and n == "1024":
            continue
        for g in LENT_GPUS:
            pick = cuda_pick({"dtype": dt, "d": d, "causal": causal, "N": n, "B": b, "H": h},
                             kind, peer_kind, g)
            if not pick:
                continue
            f, ours, peers = pick
            v, best = cuda_best(ours)
            fl, cu = median(peers["flash"]), median(peers["cudnn"])
            name = "%s, %s" % (kind, label)
            rows.append(["%.2f×" % (best / fl), "%.2f×" % (best / cu), name,
                         "v%d: %s" % (v, fnum(best)), fnum(fl), fnum(cu),
                         "%s, %s" % (g, link(f, prefix))])
    return table(["vs FlashAttention-2", "vs cuDNN", "case (float16)", "ours, TFLOP/s",
                  "SDPA flash", "SDPA cuDNN", "GPU, run"], rows)


def cuda_decode_pick(nkv, b, gpu=None):
    """The newest CUDA run (on that gpu when given) that timed our decode and an SDPA backend at
    nkv keys, batch b (float16, d = 128, GQA 32/8), or None. Returns (folder, {version: [µs]},
    {backend: [µs]}, [copy TB/s])."""
    shape = {"dtype": "f16", "d": "128", "Hq": "32", "Hkv": "8", "nkv": nkv, "B": b}

    def find(f):
        if gpu and cuda_gpu(f)[0] != gpu:
            return None
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
        return (f, ours, peers, copy) if ours and peers else None
    return newest(run_folders("bench/cuda/results"), find)


def decode_bytes(nkv, b):
    """Bytes of K and V one decode step reads: B × keys × 8 KV heads × d = 128 × 2 tensors ×
    2 bytes (float16)."""
    return 2 * int(b) * int(nkv) * 8 * 128 * 2


def gen_cuda_decode(prefix):
    rows = []
    for nkv, b in (("32768", "8"), ("65536", "4")):
        for g in LENT_GPUS:
            pick = cuda_decode_pick(nkv, b, g)
            if not pick:
                continue
            f, ours, peers, copy = pick
            v, us = min(((v, median(t)) for v, t in ours.items()), key=lambda x: x[1])
            pb, pus = min(((p, median(t)) for p, t in peers.items()), key=lambda x: x[1])
            tb = decode_bytes(nkv, b) / us / 1e6
            cp = (" (%.0f %% of the %.2f TB/s copy)" % (100 * tb / median(copy), median(copy))
                  if copy else "")
            rows.append(["%.2f×" % (pus / us), "decode, B = %s, GQA 32/8, %s keys, d = 128" % (b, nkv),
                         "v%d: %.1f µs, %.2f TB/s%s" % (v, us, tb, cp),
                         "%s: %.1f µs" % (pb, pus), "%s, %s" % (g, link(f, prefix))])
    return table(["vs SDPA", "case (float16)", "ours", "SDPA's fastest backend",
                  "GPU, run"], rows)


def gen_cuda(prefix, full=False):
    out = gen_cuda_prefill(prefix, full)
    if full:
        out += "\n" + gen_cuda_prefill(prefix, True, "backward", "sdpa_backward")
        out += "\n" + gen_cuda_decode(prefix)
    return out


# ---------------------------------------------------------------- ring attention over NCCL

def ring_runs():
    """{P: (folder, ring RESULT rows, torch_cp rows)}: for each number of GPUs, the newest run
    that timed the ring and PyTorch's context parallel on that many."""
    best = {}
    for f in run_folders("bench/cuda/results"):
        ring = [k for w, k in cuda_results(f) if w == "ring"]
        cp = [k for w, k in cuda_results(f) if w == "torch_cp"]
        for p in sorted({r["P"] for r in ring}):
            rp = [r for r in ring if r["P"] == p]
            cpp = [c for c in cp if c["P"] == p]
            if rp and cpp:
                best[p] = (f, rp, cpp)
    return best


def ring_cases(rp, cpp):
    """(mask, N, ring ms, one-GPU ms, share hidden, PyTorch CP ms) for each mask and N that
    both sides timed, float16 and d = 128: medians of the ring's rows, CP's fastest."""
    out = []
    for mask in ("none", "causal"):
        for n in sorted({int(r["N"]) for r in rp}):
            rs = [r for r in rp if r["mask"] == mask and int(r["N"]) == n
                  and r["dt"] == "f16" and r["d"] == "128"]
            cs = [c for c in cpp if c["mask"] == mask and int(c["N"]) == n
                  and c["dt"] == "f16" and c["d"] == "128"]
            if rs and cs:
                out.append((mask, n, median([float(r["ring_ms"]) for r in rs]),
                            median([float(r["single_ms"]) for r in rs]),
                            median([float(r["hidden"]) for r in rs]),
                            min(float(c["cp_ms"]) for c in cs)))
    return out


def gen_ring(prefix, full=False):
    best = ring_runs()
    rows = []
    for p in sorted(best, key=int):
        if not full and p != "2":
            continue
        f, rp, cpp = best[p]
        gpu, _ = cuda_gpu(f)
        for mask, n, ring_ms, one_ms, hid, cp_ms in ring_cases(rp, cpp):
            if not full and n != 262144:
                continue
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


def webgpu_ours(r, kind, n, d=None, causal=None):
    """Whether one of our ours.json rows is a timed case of kind at n keys (and d, causal).

    Decode rows are the contiguous float32 cache of our own kernels (no paged, float16 or
    borrowed "akunu" variants): the form that ONNX Runtime Web's rows time."""
    if r.get("kind") != kind or r.get("n_kv") != n or "ms" not in r:
        return False
    if kind == "decode":
        return ("paged" not in r.get("kernel", "") and r.get("storage", "f32") == "f32"
                and not r["kernel"].startswith("akunu"))
    # prefill: our float32 kernels beside ORT's float32 (not the float16 versions 6 and 7)
    return r.get("d") == d and r.get("causal") == causal and r.get("storage", "f32") == "f32"


def webgpu_peer(r, kind, n, d=None, causal=None):
    """Whether a row of ort.json (or sdpa.json) times kind at n keys (and d, causal)."""
    if r.get("kind") != kind or r.get("n_kv") != n or "ms" not in r:
        return False
    return kind == "decode" or (r.get("d") == d and r.get("causal") == causal)


def webgpu_pick(kind, n, d=None, causal=None):
    """The newest WebGPU run that timed ours and ONNX Runtime Web at one case, or None.

    Returns (folder, ours.json, our matching rows, ORT's matching rows, sdpa.json or None)."""
    def find(f):
        ours, ort, sd = (webgpu_load(f, x) for x in ("ours.json", "ort.json", "sdpa.json"))
        if not ours or not ort:
            return None
        mine = [r for r in ours["rows"] if webgpu_ours(r, kind, n, d, causal)]
        theirs = [r for r in ort["rows"] if webgpu_peer(r, kind, n, d, causal)]
        return (f, ours, mine, theirs, sd) if mine and theirs else None
    return newest(run_folders("bench/webgpu/results"), find)


def webgpu_torch(sd, n, d, causal):
    """PyTorch's float32 SDPA ("efficient f32") prefill time in ms, or None."""
    ps = [r for r in (sd or {}).get("rows", []) if webgpu_peer(r, "prefill", n, d, causal)
          and r.get("backend") == "efficient f32"]
    return ps[0]["ms"] if ps else None


def webgpu_gpu(ours):
    return ours["device"]["device"].split("-")[1].upper()


def gen_webgpu(prefix, full=False):
    pre_cases = [(4096, 128, False), (4096, 128, True), (16384, 128, False),
                 (16384, 128, True), (16384, 64, False)]
    if not full:
        pre_cases = [(4096, 128, False)]
    rows = []
    for n, d, causal in pre_cases:
        pick = webgpu_pick("prefill", n, d, causal)
        if not pick:
            continue
        f, ours, mine, theirs, sd = pick
        best = min(mine, key=lambda r: r["ms"])
        o_ms = median([r["ms"] for r in theirs])
        pt_ms = webgpu_torch(sd, n, d, causal)
        fma = ours.get("probe", {}).get("fma_tflops")
        share = " (%.0f %% of the FMA probe)" % (100 * best["tflops"] / fma) if fma else ""
        rows.append(["%.2f×" % (o_ms / best["ms"]),
                     "%.2f×" % (pt_ms / best["ms"]) if pt_ms else "–",
                     "prefill, 16 heads, N = %d, d = %d%s, float32" % (n, d,
                                                                      ", causal" if causal else ""),
                     "%s: %.2f ms, %.1f TFLOP/s%s" % (best["kernel"], best["ms"], best["tflops"],
                                                      share),
                     "%.2f ms" % o_ms, "%s, %s" % (webgpu_gpu(ours), link(f, prefix))])
    for nkv in ((32768, 131072) if full else (131072,)):
        pick = webgpu_pick("decode", nkv)
        if not pick:
            continue
        f, ours, mine, theirs, sd = pick
        best = min(mine, key=lambda r: r["ms"])
        o_ms = median([r["ms"] for r in theirs])
        copy, rd = (ours.get("probe", {}).get(k) for k in ("copy_gbps", "read_gbps"))
        share = " (%.0f %% of the copy probe%s)" % (
            100 * best["gbps"] / copy, ", %.0f %% of the read probe" % (100 * best["gbps"] / rd)
            if rd else "") if copy else ""
        rows.append(["%.0f×" % (o_ms / best["ms"]), "–",
                     "decode, GQA 32/8, %d keys, d = 128, float32" % nkv,
                     "%s: %.3f ms, %.2f TB/s%s" % (best["kernel"], best["ms"],
                                                   best["gbps"] / 1000, share),
                     "%.1f ms" % o_ms, "%s, %s" % (webgpu_gpu(ours), link(f, prefix))])
    return table(["vs ORT Web", "vs PyTorch f32", "case", "ours",
                  "ONNX Runtime Web", "GPU, run"], rows)


def webgpu_f16_pick(n, d, causal, gpu=None):
    """The newest WebGPU run (on that gpu, "H100" or "H200", when given) that timed our float16
    prefill (versions 6 and up, storage f16) and PyTorch's float16 SDPA at one case: (folder,
    ours.json, our f16 rows, our f32 rows, sdpa.json)."""
    def find(f):
        ours, sd = webgpu_load(f, "ours.json"), webgpu_load(f, "sdpa.json")
        if not ours or not sd or (gpu and webgpu_gpu(ours) != gpu):
            return None
        case = [r for r in ours["rows"] if r.get("kind") == "prefill" and r.get("n_kv") == n
                and r.get("d") == d and r.get("causal") == causal and "ms" in r]
        f16 = [r for r in case if r.get("storage") == "f16"]
        f32 = [r for r in case if r.get("storage", "f32") in ("f32", None)]
        torch = [r for r in sd["rows"] if webgpu_peer(r, "prefill", n, d, causal)
                 and r.get("backend") in ("flash f16", "cudnn f16")]
        return (f, ours, f16, f32, sd) if f16 and torch else None
    return newest(run_folders("bench/webgpu/results"), find)


def gen_webgpu_f16(prefix, full=False):
    """Our float16 prefill (the matrix units' versions 7-10, shader-f16's version 6) against ONNX
    Runtime Web's float16 attention (ort-f16.json, where the run has it), PyTorch's float16 SDPA
    (flash, cuDNN) and our own float32 best in the same run."""
    cases = [(n, d, c) for d in (128, 64) for n in (4096, 16384) for c in (False, True)]
    if not full:
        cases = [(4096, 128, False)]
    rows = []
    for n, d, causal, g in [c + (g,) for c in cases for g in LENT_GPUS]:
        pick = webgpu_f16_pick(n, d, causal, g)
        if not pick:
            continue
        f, ours, f16, f32, sd = pick
        best = min(f16, key=lambda r: r["ms"])
        torch = {r["backend"]: r["ms"] for r in sd["rows"] if webgpu_peer(r, "prefill", n, d, causal)}
        fl, cu = torch.get("flash f16"), torch.get("cudnn f16")
        b32 = min(f32, key=lambda r: r["ms"]) if f32 else None
        o16 = webgpu_load(f, "ort-f16.json")
        o16 = [r["ms"] for r in (o16 or {}).get("rows", []) if webgpu_peer(r, "prefill", n, d, causal)
               and r.get("storage") == "f16" and (r.get("check") or {}).get("ok")]
        rows.append(["%.2f×" % (median(o16) / best["ms"]) if o16 else "–",
                     "%.3f×" % (fl / best["ms"]) if fl else "–",
                     "%.3f×" % (cu / best["ms"]) if cu else "–",
                     "%.2f× (%s)" % (b32["ms"] / best["ms"], b32["kernel"]) if b32 else "–",
                     "prefill, 16 heads, N = %d, d = %d%s, float16" % (n, d, ", causal" if causal else ""),
                     "%s: %.2f ms, %.1f TFLOP/s" % (best["kernel"], best["ms"], best["tflops"]),
                     "%s, %s" % (webgpu_gpu(ours), link(f, prefix))])
    return table(["vs ORT Web f16", "vs PyTorch flash", "vs PyTorch cuDNN", "vs our float32", "case",
                  "ours", "GPU, run"], rows)


# ---------------------------------------------------------------- plots: plain SVG, one per machine

INK, GRID, PAPER = "#1f2328", "#d0d7de", "#ffffff"   # GitHub's text and border greys; white paper
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"]  # Okabe-Ito


def esc(t):
    return t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def nice_top(hi):
    """An axis from 0 for values up to hi: (top, step), step 1, 2, 2.5 or 5 times a power of
    ten, at most 6 steps."""
    if hi <= 0:
        return 1.0, 0.2
    e = 10 ** (int(("%e" % hi).split("e")[1]) - 1)
    for step in (m * e * k for k in (1, 10, 100) for m in (1, 2, 2.5, 5)):
        n = math.ceil(hi / step - 1e-9)
        if n <= 6:
            return n * step, step
    return hi, hi / 5


def wrap(text, width):
    """text cut at spaces into lines of at most width characters."""
    lines, cur = [], ""
    for word in text.split(" "):
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = (cur + " " + word) if cur else word
    return lines + [cur]


def fmt_tick(v):
    return ("%.2f" % v).rstrip("0").rstrip(".")


def legend_places(series, left, right, y):
    """Where each series' legend entry goes: rows from (left, y), wrapped before right."""
    out, x = [], left
    for s in series:
        wid = 36 + 6.9 * len(s["name"])
        if x + wid > right and x > left:
            x, y = left, y + 17
        out.append((x, y))
        x += wid
    return out


def svg_panel(p, x0, y0, w, h, top):
    """One panel's SVG elements: axes, grid, ticks, labels, its series and reference lines.

    p: {"title", "xlabel", "ylabel", "x": ("log2", [(value, label)]) or ("cat", [labels]),
    "series": [{"name", "color", "dash", "lines", "points": [(x, y, lo, hi)]}], "refs": [(y,
    label)]}. x0, y0: the panel's top left corner; w, h: its size in px; top: where the plot
    area starts below y0 (the same in every panel of a figure: below the longest legend). lo
    and hi (or None) draw a bar: the smallest and largest of the runs whose median is y."""
    out = []
    L, R, B = 58, 12, 44
    for s, (lx, ly) in zip(p["series"], legend_places(p["series"], x0 + L, x0 + w, y0 + 38.0)):
        if s.get("lines", True):
            out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" '
                       'stroke-width="2"%s/>' % (lx, ly - 4, lx + 22, ly - 4, s["color"],
                                                 ' stroke-dasharray="6 4"' if s.get("dash")
                                                 else ""))
        out.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>' % (lx + 11, ly - 4,
                                                                         s["color"]))
        out.append('<text x="%.1f" y="%.1f" font-size="12" fill="%s">%s</text>'
                   % (lx + 28, ly, INK, esc(s["name"])))
    T = top
    ax0, ax1, ay0, ay1 = x0 + L, x0 + w - R, y0 + T, y0 + h - B
    ys = [v for s in p["series"] for pt in s["points"] for v in (pt[1], pt[3] or pt[1])]
    ys += [r[0] for r in p.get("refs", [])]
    top, step = nice_top(max(ys) * 1.08)
    kind, xs = p["x"]
    if kind == "log2":
        xlo, xhi = math.log2(xs[0][0]), math.log2(xs[-1][0])
        pad = (xhi - xlo) * 0.08 or 1

        def X(v, i=0, n=1):
            return ax0 + (math.log2(v) - xlo + pad) / (xhi - xlo + 2 * pad) * (ax1 - ax0)
        ticks = [(X(v), lab) for v, lab in xs]
    else:
        def X(v, i=0, n=1):
            slot = (ax1 - ax0) / len(xs)
            return ax0 + slot * (v + 0.5) + (i - (n - 1) / 2) * min(14, slot / (n + 1))
        ticks = [(X(i), lab) for i, lab in enumerate(xs)]

    def Y(v):
        return ay1 - v / top * (ay1 - ay0)
    out.append('<text x="%.1f" y="%.1f" font-size="13" font-weight="bold" fill="%s">%s</text>'
               % (ax0, y0 + 16, INK, esc(p["title"])))
    k = 0
    while k * step <= top * 1.0001:
        v = k * step
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>'
                   % (ax0, Y(v), ax1, Y(v), GRID))
        out.append('<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="%s">%s</text>'
                   % (ax0 - 5, Y(v) + 4, INK, fmt_tick(v)))
        k += 1
    out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>'
               % (ax0, ay1, ax1, ay1, INK))
    out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>'
               % (ax0, ay0, ax0, ay1, INK))
    for x, lab in ticks:
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>'
                   % (x, ay1, x, ay1 + 4, INK))
        out.append('<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" fill="%s">%s'
                   '</text>' % (x, ay1 + 16, INK, esc(lab)))
    out.append('<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" fill="%s">%s</text>'
               % ((ax0 + ax1) / 2, ay1 + 34, INK, esc(p["xlabel"])))
    out.append('<text transform="translate(%.1f %.1f) rotate(-90)" font-size="12" '
               'text-anchor="middle" fill="%s">%s</text>'
               % (x0 + 14, (ay0 + ay1) / 2, INK, esc(p["ylabel"])))
    for v, lab in p.get("refs", []):
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" '
                   'stroke-width="1.5" stroke-dasharray="2 3"/>' % (ax0, Y(v), ax1, Y(v), INK))
        out.append('<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="%s">%s</text>'
                   % (ax1 - 2, Y(v) - 4, INK, esc(lab)))
    n = len(p["series"])
    for i, s in enumerate(p["series"]):
        pts = [(X(x, i, n), Y(y), lo, hi) for x, y, lo, hi in s["points"]]
        dash = ' stroke-dasharray="6 4"' if s.get("dash") else ""
        if s.get("lines", True) and len(pts) > 1:
            out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>'
                       % (" ".join("%.1f,%.1f" % (x, y) for x, y, _, _ in pts), s["color"], dash))
        for x, y, lo, hi in pts:
            if lo is not None and hi is not None and abs(Y(lo) - Y(hi)) > 0.5:
                out.append('<path d="M%.1f %.1fV%.1fM%.1f %.1fh8M%.1f %.1fh8" stroke="%s" '
                           'stroke-width="1.5" fill="none"/>' % (
                               x, Y(lo), Y(hi), x - 4, Y(lo), x - 4, Y(hi), s["color"]))
            out.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="%s"/>'
                       % (x, y, s["color"], PAPER))
    return out


def svg_chart(title, panels, caption):
    """A whole figure, 860 px wide: title, the panels side by side (each with its own legend),
    and caption lines (the runs it was drawn from), wrapped. Returns the SVG text; the same
    records always give the same bytes."""
    width, ph = 860, 340
    pw = (width - 20) // len(panels)
    lines = [ln for c in caption for ln in wrap(c, 128)]
    top = 34
    height = top + ph + 10 + 16 * len(lines)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="Helvetica, Arial, sans-serif">' % (width, height, width, height),
           '<title>%s</title>' % esc(title),
           '<rect width="100%%" height="100%%" fill="%s"/>' % PAPER,
           '<text x="20" y="24" font-size="15" font-weight="bold" fill="%s">%s</text>'
           % (INK, esc(title))]
    rows = max(len({y for _, y in legend_places(p["series"], 58, pw, 0)}) for p in panels)
    for i, p in enumerate(panels):
        out += svg_panel(p, 10 + i * pw, top, pw, ph, 38 + 17 * (rows - 1) + 16)
    for i, line in enumerate(lines):
        out.append('<text x="20" y="%d" font-size="11" fill="%s">%s</text>'
                   % (top + ph + 14 + 16 * i, INK, esc(line)))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def run_names(folders):
    return ", ".join(sorted({os.path.basename(f) for f in folders}))


def plot_cpu():
    """Ratio to ggml per case, one series per machine: the median of the run's records as a
    dot, their smallest and largest as a bar."""
    runs = cpu_runs()
    labels = ["prefill d=128", "prefill d=64", "decode f32 K/V", "decode f16 K/V"]
    series, caption = [], []
    for i, tag in enumerate(t for t in ("zen4", "xeon", "zen5") if t in runs):
        folder, recs = runs[tag]
        pts = []
        for c in cpu_cases(recs):
            x = CPU_CASES.index((c["kind"], c["d"], c["n"], c["kv"]))
            pts.append((x, median(c["ratio"]), min(c["ratio"]), max(c["ratio"])))
        threads = recs[0]["ours"][0]["threads"]
        series.append({"name": "%s, %d threads" % (CPU_SHORT[tag].split(" (")[0], threads),
                       "color": COLORS[i], "lines": False, "points": pts})
        caption.append("%s: run %s (%d record%s; dot: median, bar: smallest to largest)" % (
            CPU_SHORT[tag], os.path.basename(folder), len(recs), "" if len(recs) == 1 else "s"))
    panel = {"title": "flashstep against ggml (8 heads; prefill N = 4096; decode 32768 keys)",
             "xlabel": "case (float32 Q; decode: GQA 32/8, d = 128)",
             "ylabel": "ggml's time / ours (×)", "x": ("cat", labels), "series": series,
             "refs": [(1.0, "1× = as fast as ggml")]}
    caption.insert(0, "Drawn by bench/report.py from bench/results/; above 1: flashstep is "
                      "faster.")
    return svg_chart("CPU: flashstep against ggml's flash attention", [dict(panel)], caption) \
        if series else None


def plot_cuda_h100():
    """TFLOP/s against N at d = 128 (B·N = 16384, H = 16), ours and both SDPA backends."""
    panels, used = [], set()
    for causal, name in (("0", "d = 128, no mask"), ("1", "d = 128, causal")):
        lines = {"flashstep (fastest version)": [], "SDPA FlashAttention-2": [],
                 "SDPA cuDNN": []}
        xs = []
        for n in (1024, 4096, 16384):
            pick = cuda_pick({"dtype": "f16", "d": "128", "causal": causal, "N": str(n),
                              "B": str(16384 // n), "H": "16"}, "prefill", "sdpa", "H100")
            if not pick:
                continue
            f, ours, peers = pick
            used.add(f)
            xs.append((n, "%dk" % (n // 1024)))
            lines["flashstep (fastest version)"].append((n, cuda_best(ours)[1], None, None))
            lines["SDPA FlashAttention-2"].append((n, median(peers["flash"]), None, None))
            lines["SDPA cuDNN"].append((n, median(peers["cudnn"]), None, None))
        if len(xs) < 2:
            continue
        panels.append({"title": name, "xlabel": "N (B = 16384 / N, H = 16, float16)",
                       "ylabel": "TFLOP/s (4·B·H·N²·d per second)", "x": ("log2", xs),
                       "series": [{"name": k, "color": COLORS[i], "dash": i > 0, "points": v}
                                  for i, (k, v) in enumerate(lines.items())],
                       "refs": []})
    if not panels:
        return None
    return svg_chart("CUDA on an H100: flashstep's prefill against PyTorch's SDPA", panels,
                     ["Drawn by bench/report.py from bench/cuda/results/, run " + run_names(used)
                      + "; causal counts half the FLOPs.",
                      "Both SDPA backends were timed in the same call as ours."])


def plot_cuda_h200():
    """Ring attention against PyTorch's context parallel on H200s, and the decode."""
    series, used, xs = [], set(), {}
    rings = {p: r for p, r in ring_runs().items() if cuda_gpu(r[0])[0] == "H200"}
    for i, p in enumerate(sorted(rings, key=int)):
        f, rp, cpp = rings[p]
        cases = ring_cases(rp, cpp)
        for mask, label in (("none", "no mask"), ("causal", "causal, zigzag")):
            pts = [(n, cp_ms / ring_ms, None, None)
                   for m, n, ring_ms, _, _, cp_ms in cases if m == mask]
            xs.update((n, "%dk" % (n // 1024)) for n, _, _, _ in pts)
            if pts:
                used.add(f)
                series.append({"name": "%s × H200, %s" % (p, label), "color": COLORS[i],
                               "dash": mask == "causal", "points": pts})
    panels = []
    if series:
        panels.append({"title": "ring attention over NCCL",
                       "xlabel": "N, whole sequence (H = 16, d = 128, float16)",
                       "ylabel": "PyTorch CP's time / the ring's (×)",
                       "x": ("log2", sorted(xs.items())), "series": series,
                       "refs": [(1.0, "1× = as fast as PyTorch")]})
    dec = {"flashstep (fastest version)": [], "SDPA FlashAttention-2": [], "SDPA cuDNN": []}
    dxs, copy = [], []
    for nkv, b in (("32768", "8"), ("65536", "4")):
        pick = cuda_decode_pick(nkv, b, "H200")
        if not pick:
            continue
        f, ours, peers, cp = pick
        used.add(f)
        copy += cp
        dxs.append((int(nkv), "%dk" % (int(nkv) // 1024)))
        tb = decode_bytes(nkv, b) / 1e6
        dec["flashstep (fastest version)"].append(
            (int(nkv), tb / min(median(t) for t in ours.values()), None, None))
        for be, name in (("flash", "SDPA FlashAttention-2"), ("cudnn", "SDPA cuDNN")):
            if be in peers:
                dec[name].append((int(nkv), tb / median(peers[be]), None, None))
    if len(dxs) > 1:
        panels.append({"title": "decode, GQA 32/8, d = 128, one step", "xlabel": "keys in the "
                       "cache (B = 8 at 32k, 4 at 64k; float16)", "ylabel": "TB/s of K and V read",
                       "x": ("log2", dxs),
                       "series": [{"name": k, "color": COLORS[i], "dash": i > 0, "points": v}
                                  for i, (k, v) in enumerate(dec.items()) if v],
                       "refs": [(median(copy), "the GPU's copy rate")] if copy else []})
    if not panels:
        return None
    return svg_chart("CUDA on H200s: ring attention and decode against PyTorch", panels,
                     ["Drawn by bench/report.py from bench/cuda/results/, runs " + run_names(used)
                      + ".",
                      "PyTorch's context parallel runs SDPA's FlashAttention-2 backend on each "
                      "GPU (above 1: the ring is faster); the decode's SDPA backends ran in the "
                      "same call as ours."])


def webgpu_series(kind, ns, value):
    """The WebGPU plot's points of one kind (d = 128, no mask) at each of ns: ours per kernel
    (no borrowed "akunu" kernels, prefill from version 3 on) and ONNX Runtime Web's median, as
    {name: [(n, value(row), None, None)]}; the x ticks; and each n's pick (webgpu_pick)."""
    d, xs, picks = {}, [], []
    for n in ns:
        pick = webgpu_pick(kind, n, 128, False) if kind == "prefill" else webgpu_pick(kind, n)
        if not pick:
            continue
        f, ours, mine, theirs, sd = pick
        picks.append((n, pick))
        xs.append((n, "%dk" % (n // 1024)))
        for r in mine:
            if kind == "decode" or (not r["kernel"].startswith("akunu") and r["kernel"] >= "prefill-v3"):
                d.setdefault("flashstep " + r["kernel"], []).append((n, value(r), None, None))
        d.setdefault("ONNX Runtime Web", []).append((n, median([value(r) for r in theirs]), None, None))
    return d, xs, picks


def plot_webgpu():
    """Prefill TFLOP/s against N and decode TB/s against the keys, ours per kernel and peers."""
    pre, xs, pre_picks = webgpu_series("prefill", (1024, 4096, 16384), lambda r: r["tflops"])
    for n, (f, ours, mine, theirs, sd) in pre_picks:
        pt = [r for r in (sd or {}).get("rows", []) if webgpu_peer(r, "prefill", n, 128, False)
              and r.get("backend") == "efficient f32"]
        if pt:
            pre.setdefault("PyTorch SDPA, float32 (CUDA)", []).append((n, pt[0]["tflops"], None,
                                                                       None))
    dec, dxs, dec_picks = webgpu_series("decode", (4096, 32768, 131072), lambda r: r["gbps"] / 1000)
    copy, rd = ([p[1]["probe"][k] / 1000 for _, p in dec_picks if p[1].get("probe", {}).get(k)]
                for k in ("copy_gbps", "read_gbps"))
    used = {p[0] for _, p in pre_picks + dec_picks}
    def mk(d):
        """Our kernels first, solid, in the first colours; the peers dashed, each in its own
        colour in both panels."""
        peers = {"ONNX Runtime Web": COLORS[3], "PyTorch SDPA, float32 (CUDA)": COLORS[4]}
        ours = sorted(k for k in d if k not in peers)
        return ([{"name": k, "color": COLORS[i], "points": d[k]} for i, k in enumerate(ours)]
                + [{"name": k, "color": c, "dash": True, "points": d[k]}
                   for k, c in peers.items() if k in d])
    panels = []
    if len(xs) > 1:
        panels.append({"title": "prefill, 16 heads, d = 128, no mask", "xlabel": "N (float32)",
                       "ylabel": "TFLOP/s", "x": ("log2", xs), "series": mk(pre), "refs": []})
    if len(dxs) > 1:
        panels.append({"title": "decode, GQA 32/8, d = 128", "xlabel": "keys in the cache "
                       "(float32)", "ylabel": "TB/s of K and V read", "x": ("log2", dxs),
                       "series": mk(dec),
                       "refs": ([(median(copy), "the device's copy probe")] if copy else [])
                       + ([(median(rd), "the device's read probe")] if rd else [])})
    if not panels:
        return None
    gpus = " and ".join(sorted({webgpu_gpu(p[1]) for _, p in pre_picks + dec_picks}))
    return svg_chart("WebGPU (Dawn, Vulkan) on an %s: flashstep against ONNX Runtime Web" % gpus,
                     panels,
                     ["Drawn by bench/report.py from bench/webgpu/results/, runs "
                      + run_names(used) + ".",
                      "ONNX Runtime Web ran on the same adapter in the same call; PyTorch on the "
                      "same GPU through CUDA."])


PLOTS = {"docs/img/perf-cpu.svg": plot_cpu, "docs/img/perf-cuda-h100.svg": plot_cuda_h100,
         "docs/img/perf-cuda-h200.svg": plot_cuda_h200, "docs/img/perf-webgpu.svg": plot_webgpu}


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
    """The headline prefill rows (with and without the mask) against both of PyTorch's backends,
    and the decode at 32768 keys, on each GPU."""
    rows = cells(gen_cuda_prefill(prefix, False))
    out = []
    for r in rows:
        out.append("- %s: **%s** PyTorch's cuDNN attention, %s its FlashAttention-2; %s\n"
                   % (r[2], r[1], r[0], r[-1]))
    for d in cells(gen_cuda_decode(prefix)):
        if "32768 keys" in d[1]:
            out.append("- %s: **%s** PyTorch's fastest SDPA backend; %s\n" % (d[1], d[0], d[-1]))
    return "".join(out) or "No record yet.\n"


def gen_map_webgpu(prefix):
    """The d = 128 prefill and the long decode against ONNX Runtime Web."""
    out = []
    for r in cells(gen_webgpu(prefix, False)):
        if "d = 128" in r[2] and ("N = 4096" in r[2] or "decode" in r[2]):
            out.append("- %s: **%s** ONNX Runtime Web%s; %s\n" % (
                r[2], r[0], "" if r[1] == "–" else ", %s PyTorch's float32 SDPA" % r[1], r[-1]))
    return "".join(out) or "No record yet.\n"


# ---------------------------------------------------------------- figures in the prose

# A figure in the prose of docs/benchmarks.md (outside the generated blocks) is checked in one of
# two ways. Computed: the phrase has {} slots that report.py fills from the records (the same
# parsers as the tables), and the filled phrase must stand in the page word for word. Cited: a
# figure that only a run's NOTE.txt or a raw log states (a probe level, a clock, an ncu count);
# every number of the phrase must occur in the named runs' files, a range as written ("17–19";
# "17-19" and "17 to 19" count) unless the entry is marked "ends" (a range that sums up several
# of the run's numbers: then its two ends must occur). Either way the phrase must be found: an
# edited figure, or an edited record, fails `--check`. Any other number with a unit in the
# sections above "Running the benchmarks" must be part of a phrase in NOT_MEASURED (a target, a
# count of GPUs) or it fails too.

CPU_RES, CUDA_RES = "bench/results/", "bench/cuda/results/"
WEB_RES = "bench/webgpu/results/"


@functools.lru_cache(maxsize=None)
def run_text(run):
    """All text files of one run folder (relative to ROOT), concatenated, or "" if none."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, run, "*"))):
        if os.path.isfile(path) and os.path.getsize(path) < 4 << 20 and not path.endswith(
                (".png", ".svg", ".ncu-rep", ".nsys-rep", ".sqlite", ".npy", ".gz")):
            out.append(read(path))
    return "\n".join(out)


def sbs(run):
    """The ggml-side-by-side records of a CPU run folder, oldest file first."""
    recs = []
    for path in sorted(glob.glob(os.path.join(ROOT, run, "*.txt"))):
        r = parse_ggml_side_by_side(read(path))
        if r:
            recs.append(r)
    return recs


def results(run, what, **want):
    """The RESULT lines `what` of a CUDA run whose keys equal want (values as strings)."""
    return [k for w, k in cuda_results(os.path.join(ROOT, run)) if w == what and all(
        k.get(a) == str(b) for a, b in want.items())]


def span_of(values, digits=1, dash="–"):
    return span(values, digits).replace("–", dash)


def fig_ggml_prefill_spread():
    recs = sbs(CPU_RES + "2026-11-27-zen4-ggml-worktake")
    best = [min(g["ms"] for g in r["ggml"] if g["kind"] == "prefill" and g["d"] == 128)
            for r in recs]
    return [span(best, 0), len(recs)]


def fig_cudnn_d64_causal():
    out = []
    for run in ("2026-11-27-v34-run1", "2026-11-27-v35-run1", "2026-11-27-v35-run2"):
        t = results(CUDA_RES + run, "sdpa", backend="cudnn", dtype="f16", d=64, causal=1,
                    N=4096, B=4, H=32)
        out.append(fnum(median([float(k["tflops"]) for k in t])))
    return out


def fig_bwd_16k_behind():
    """Our best backward at N = 16384 over cuDNN's (both masks), and the run."""
    r = []
    for causal in ("0", "1"):
        pick = cuda_pick({"dtype": "f16", "d": "128", "causal": causal, "N": "16384", "B": "1",
                          "H": "16"}, "backward", "sdpa_backward", "H200")
        f, ours, peers = pick
        r.append(cuda_best(ours)[1] / median(peers["cudnn"]))
    return [ratio(r), os.path.basename(f)]


def fig_bwd_lean_gain():
    """Backward version 12 over version 11 (version 8's kernel at d = 128), medians of the runs
    timed in turn, at every d = 128 row; and the run."""
    run = "2026-12-02-h200-bwd-lean-turns"
    r = []
    for k in results(CUDA_RES + run, "backward", v=12, d=128):
        if k is not results(CUDA_RES + run, "backward", v=12, d=128, dtype=k["dtype"], N=k["N"], causal=k["causal"])[0]:
            continue
        shape = dict(d=128, dtype=k["dtype"], N=k["N"], causal=k["causal"])
        t = [median([float(x["tflops"]) for x in results(CUDA_RES + run, "backward", v=v, **shape)]) for v in (12, 11)]
        r.append(t[0] / t[1])
    return [ratio(r), run]


def fig_cudnn_bwd_16k_causal():
    """cuDNN's backward at N = 16384, d = 128, causal in the three calls of 2026-12-02 (TFLOP/s)."""
    t = [float(k["tflops"]) for run in ("2026-12-02-h200-bwd-lean", "2026-12-02-h200-bwd-lean-turns",
                                        "2026-12-02-h200-bwd-rot")
         for k in results(CUDA_RES + run, "sdpa_backward", backend="cudnn", dtype="f16", d=128,
                          causal=1, N=16384)]
    return [span(t, 0)]


def fig_ring_one_gpu():
    """The one-GPU baseline's TFLOP/s in the ring tables' two H200 runs: largest, smallest."""
    t = [float(k["single_tflops"]) for run, p in (("2026-11-27-ring-run3", 2),
                                                   ("2026-11-26-ring-run3", 4))
         for k in results(CUDA_RES + run, "ring", P=p)]
    return ["%.0f" % max(t), "%.0f" % min(t)]


def fig_ring_exposed():
    """Four H200s, no mask: the exposed transfer time (ms, where any), the share hidden at 64k
    and the longest N, where nothing was hidden ("none")."""
    rs = sorted(results(CUDA_RES + "2026-11-26-ring-run3", "ring", P=4, mask="none"),
                key=lambda k: int(k["N"]))
    ex = [float(k["exposed_ms"]) for k in rs if float(k["exposed_ms"]) > 0.05]
    last = rs[-1]
    return ["%.1f–%.0f" % (min(ex), max(ex)), "%.0f" % (100 * float(rs[0]["hidden"])),
            "%dk" % (int(rs[0]["N"]) // 1024),
            "none" if float(last["hidden"]) <= 0 else "%.0f %%" % (100 * float(last["hidden"])),
            "%dk" % (int(last["N"]) // 1024)]


def fig_ring_bwd(run, p):
    out = []
    for mask in ("none", "causal"):
        rs = results(CUDA_RES + run, "ringbwd", P=p, mask=mask)
        out.append(span([float(k["speedup"]) for k in rs], 2))
    return out


def fig_webgpu_prefill_span():
    rats = []
    for n, causal in ((4096, False), (4096, True), (16384, False), (16384, True)):
        f, ours, mine, theirs, sd = webgpu_pick("prefill", n, 128, causal)
        rats.append(median([r["ms"] for r in theirs]) / min(r["ms"] for r in mine))
    return ["%.1f" % min(rats), "%.0f" % max(rats)]


def fig_webgpu_paged():
    """Paged over contiguous decode time at 32k keys and more, float32 and float16, in the newest run
    that timed decode version 14's paged forms, version 11's and their contiguous version 9: version
    14's span, the run, version 11's span. On the H200, of which the page's paragraph speaks."""
    def find(f):
        ours = webgpu_load(f, "ours.json")
        if not ours or webgpu_gpu(ours) != "H200":
            return None
        by = {(r["kernel"], r["n_kv"]): r["ms"] for r in ours["rows"]
              if r.get("kind") == "decode" and "ms" in r}
        def rat(v):
            return [by[(k, n)] / by[(k.replace("-v%d-paged" % v, "-v9"), n)] for k, n in by
                    if k.startswith("decode-v%d-paged" % v) and "-hnd" not in k and n >= 32768
                    and (k.replace("-v%d-paged" % v, "-v9"), n) in by]
        r14, r11 = rat(14), rat(11)
        return (f, r14, r11) if r14 and r11 else None
    f, r14, r11 = newest(run_folders("bench/webgpu/results"), find)
    return [span(r14, 2), os.path.basename(f), span(r11, 2)]


def fig_webgpu_f16():
    f, ours, mine, theirs, sd = webgpu_pick("decode", 131072)
    by = {(r["kernel"], r["n_kv"]): r["ms"] for r in ours["rows"] if r.get("kind") == "decode"
          and "ms" in r}
    return ["%.2f" % (by[("decode-v9", 131072)] / by[("decode-v9-f16", 131072)])]


def gen_webgpu_f16_lead(prefix):
    """The README's sentence above its float16 table: the spans of the full table's (every row's)
    ratios to PyTorch's flash backend and to our float32 kernel."""
    rows = cells(gen_webgpu_f16("", True))
    if not rows:
        return ""
    gpus = sorted({r[6].split(",")[0] for r in rows})
    return ("**WebGPU in float16 on %s**, on the matrix units through WGSL's subgroup matrices (Dawn's\n"
            "`vulkan_enable_f16_on_nvidia`), with the bounds checks every browser keeps: %s× the speed of\n"
            "PyTorch's FlashAttention-2 backend over %s eight shapes ([benchmarks.md](%sdocs/benchmarks.md)), "
            "%s× our\nfloat32 kernel ([webgpu.md](%sdocs/webgpu.md#prefill-version-20-the-causal-diagonal-with-one-comparison)):\n"
            % ("the " + " and the ".join(gpus),
               span([float(r[1].rstrip("×")) for r in rows], 2), "each run's" if len(gpus) > 1 else "the run's",
               prefix,
               span([float(r[3].split("×")[0]) for r in rows], 1), prefix))


def bench_ms(run, name):
    """{(kernel, N, d, causal): ms} of the `flashstep bench` table in one record file."""
    out = {}
    for line in read(os.path.join(ROOT, run, name)).splitlines():
        f = line.split()
        if len(f) >= 6 and f[1].isdigit() and f[2].isdigit() and f[3] in ("true", "false"):
            out[(f[0], int(f[1]), int(f[2]), f[3] == "true")] = float(f[5])
    return out


def fig_zen5_baseline():
    ms = bench_ms(CPU_RES + "2026-11-23-zen5-quiet", "quick-z5.txt")
    f, b = ms[("flash-v6", 4096, 128, False)], ms[("baseline-blas", 4096, 128, False)]
    fb, bb = ms[("flash-bwd-v1", 4096, 128, False)], ms[("baseline-bwd", 4096, 128, False)]
    return ["%.2f" % (b / f), fnum(f), fnum(b), "%.2f" % (bb / fb), fnum(fb), fnum(bb)]


def clocks_md(run):
    """The rows of a run's clocks.md (bench/cuda/clocks.py report): dicts by column name."""
    lines = [ln for ln in read(os.path.join(ROOT, run, "clocks.md")).splitlines()
             if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in ln.strip("|").split("|")))) for ln in lines[2:]]


def fig_power_cap():
    """Under the power cap (2000 launches): ours over cuDNN at d = 128 float16, both masks, and
    the share of cycles cuDNN's kernel saves under ncu."""
    run = CUDA_RES + "2026-11-25-run35"
    rows = [r for r in clocks_md(run) if r["dtype"] == "f16" and r["d"] == "128"]
    rat = []
    for c in ("0", "1"):
        ours = max(float(r["TFLOP/s"]) for r in rows if r["causal"] == c and r["run"] != "cudnn")
        cud = [float(r["TFLOP/s"]) for r in rows if r["causal"] == c and r["run"] == "cudnn"][0]
        rat.append("%.2f" % (ours / cud))

    def cycles(name):
        m = re.search(r"Elapsed Cycles\s+cycle\s+([\d,]+)", read(os.path.join(ROOT, run, name)))
        return float(m.group(1).replace(",", ""))
    return rat + ["%.0f" % (100 * (1 - cycles("ncu_cudnn.txt") / cycles("ncu_v31.txt")))]


def fig_xeon_stream():
    """Two-thread d = 128 prefill rounds of versions 6 and 7: the smallest and largest share."""
    sh = []
    for path in sorted(glob.glob(os.path.join(ROOT, CPU_RES, "2026-11-27-xeon-stream",
                                              "stream-*-v*.jsonl"))):
        for line in read(path).splitlines():
            r = json.loads(line)
            if r.get("d") == 128 and not r.get("causal") and r.get("threads") == 2:
                sh.append(100 * r["peak_fraction"])
    return [span(sh, 0)]


def fig_workspace():
    """Fresh memory on each call against a kept workspace: the median ms of the four rounds,
    per row (d = 128, 64; causal or not); the smallest and largest extra time in per cent."""
    rows = [ln.split(",") for ln in read(os.path.join(
        ROOT, CPU_RES, "2026-11-27-zen4-workspace", "workspace-vs-fresh.csv")).splitlines()
        if ln.count(",") >= 7]
    extra = []
    for d in ("128", "64"):
        for c in ("0", "1"):
            ms = {m: median([float(r[7]) for r in rows if r[1] == m and r[4] == d and r[5] == c])
                  for m in ("ws", "fresh")}
            extra.append(100 * (ms["fresh"] / ms["ws"] - 1))
    return [span(extra, 0)]


def fig_zen5_probe():
    """The decode rows' read probe (GB/s) in the two records of 2026-11-25-zen5-ggml."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, CPU_RES, "2026-11-25-zen5-ggml", "*.txt"))):
        probes = [float(x) for x in re.findall(r"probe ([\d.]+) GB/s\)", read(path))]
        if probes:  # NOTE.txt has none
            out.append(span(probes))
    return out


def fig_zen5_paged():
    """Paged decode version 5 over contiguous, per cent (the medians file's last column)."""
    text = read(os.path.join(ROOT, CPU_RES, "2026-11-25-zen5-decode-v5bc",
                             "decode-v5-z5bc-medians.txt"))
    return [span([float(x) for x in re.findall(r"^decode-v5\S*-p\d+ .* ([\d.]+) %$", text,
                                                 re.M)], 0)]


def fig_power_clocks():
    """SM clocks (MHz) of version 31 and cuDNN at d = 128 under the power cap, both types."""
    rows = [r for r in clocks_md(CUDA_RES + "2026-11-25-run35") if r["d"] == "128"
            and r["run"] in ("v31", "cudnn")]
    return [span([float(r["SM clock (MHz)"]) for r in rows], 0)]


def fig_paged_v10():
    """Paged version 10 over contiguous version 9 (per cent), pages of 16 and 256."""
    return [span([100 * float(k["ratio"]) for k in results(CUDA_RES + "2026-11-25-run6",
                                                          "decode_paged", v=10)], 1)]


def fig_paged_h200():
    """Paged float16 versions over their contiguous siblings (speed), pages shuffled, 256 then 16."""
    rows = [k for k in results(CUDA_RES + "2026-11-30-h200-paged-registers", "decode_paged")
            if "pages" not in k]
    return [span([float(k["ratio"]) for k in rows if k["page"] == str(P)], 3) for P in (256, 16)]


def fig_paged_best_h200():
    """Best paged over best contiguous decode (a call and through plans) in 2026-12-01's call:
    float16 with pages of 16, then the e4m3 cache with pages of 256 and of 16."""
    rows = results(CUDA_RES + "2026-12-01-h200-whole-vmax", "decode_fp8_paged")

    def of(kind, P):
        return span([float(k[kind + key]) for k in rows if k["page"] == str(P)
                     for key in ("_paged_vs_contiguous", "_plan_paged_vs_contiguous")], 3)
    return [of("f16", 16), of("e4m3", 256), of("e4m3", 16)]


def fig_kv8_page():
    """e4m3-cache version 16 (a whole page a stage): best paged over best contiguous with pages
    of 16, a call and through plans, both layouts (2026-12-01-h200-kv8-page-run1)."""
    rows = results(CUDA_RES + "2026-12-01-h200-kv8-page-run1", "decode_fp8_paged", page=16)
    return [span([float(k["e4m3" + key]) for k in rows
                  for key in ("_paged_vs_contiguous", "_plan_paged_vs_contiguous")], 3)]


def fig_page_f16():
    """Float16 decode versions 20 and 18 with pages of 16 over their contiguous siblings, both
    layouts, pages shuffled and in order (2026-12-02-h200-page-f16)."""
    rows = results(CUDA_RES + "2026-12-02-h200-page-f16", "decode_paged", page=16)
    return [span([float(k["ratio"]) for k in rows if k["v"] == str(v)], 3) for v in (20, 18)]


# (phrase, runs, values): values None for a cited figure, else a function of no arguments
# returning the strings that fill the phrase's {} slots.
FIGURES = [
    ("its fastest d = 128 prefill took {} ms across the {} runs of",
     [CPU_RES + "2026-11-27-zen4-ggml-worktake"],
     lambda: [fig_ggml_prefill_spread()[0], {3: "three"}.get(fig_ggml_prefill_spread()[1],
                                                            fig_ggml_prefill_spread()[1])]),
    ("cuDNN's own figure moved a lot between the day's calls: {}, {} and {} TFLOP/s at d = 64, "
     "N = 4096, causal", [], fig_cudnn_d64_causal),
    ("the newest run that timed it beside both peers has ours at {} cuDNN's speed (`{}`)", [],
     fig_bwd_16k_behind),
    ("and its speed at d = 128 is {} that of version 8's kernel timed in turn with it (`{}`)", [],
     fig_bwd_lean_gain),
    ("cuDNN's own backward at N = 16 384, causal, read {} TFLOP/s in the day's three calls", [],
     fig_cudnn_bwd_16k_causal),
    ("one-GPU baseline slowing at long sequences (about {} down to {} TFLOP/s)", [],
     fig_ring_one_gpu),
    ("part of the transfers shows ({} ms; hidden {} % at {}, {} at {}", [], fig_ring_exposed),
    ("the prefill took {}× less time than the OpenBLAS baseline that materializes S and P "
     "({} against {} ms, d = 128, N = 4096) and the backward {}× less than the materializing "
     "backward ({} against {} ms)", [], fig_zen5_baseline),
    ("({}× and {}× at d = 128, `2026-11-25-run35`). Under ncu, cuDNN takes {} % fewer cycles",
     [], fig_power_cap),
    ("{}× on four H100s (`2026-11-27-ring-run1`)", [], lambda: [span([float(k["speedup"]) for k
     in results(CUDA_RES + "2026-11-27-ring-run1", "ringbwd", dt="f16", d=128)], 2)]),
    ("is {}× one GPU without a mask and {}× causal on two H200s", [],
     lambda: fig_ring_bwd("2026-11-27-ring-run4", 2)),
    ("is {}–{}× ONNX Runtime Web at d = 128", [], fig_webgpu_prefill_span),
    ("prefill versions 6 and 7 at d = 128 read {} % of the probe on one machine", [],
     fig_xeon_stream),
    ("calls that allocate their own memory take {} % longer", [], fig_workspace),
    ("the read probe itself fell from {} to {} GB/s", [], fig_zen5_probe),
    ("read {} % of the contiguous decode's bandwidth", [], fig_zen5_paged),
    ("both kernels' SM clocks at {} MHz", [], fig_power_clocks),
    ("version 10 reads {} % of the contiguous version 9's bandwidth", [], fig_paged_v10),
    ("the paged float16 versions run at {} of their contiguous siblings' speed with pages of 256 "
     "and {} with pages of 16", [], fig_paged_h200),
    ("with pages of 16 the best paged float16 decode (version 18) runs at {} of the best "
     "contiguous one, and the paged e4m3 cache (version 14) at {} with pages of 256 and {} with "
     "pages of 16", [], fig_paged_best_h200),
    ("with a whole page of every KV head a stage (version 16) the paged e4m3 cache runs at {} of "
     "contiguous with pages of 16", [], fig_kv8_page),
    ("in float16 (version 20) reads {} of contiguous with pages of 16, where version 18 reads {} in "
     "the same call", [], fig_page_f16),
    ("The prefill uses {} % of the FMA probe at d = 128", [], lambda: [span(
        [x for tag, (f, recs) in cpu_runs().items() for c in cpu_cases(recs)
         if c["kind"] == "prefill" and c["d"] == 128 for x in c["share"]], 0)]),
    ("the ring is about {}× faster on two and four GPUs", [], lambda: [
        "%.1f" % median([float(r[0].rstrip("×")) for r in cells(gen_ring("", True))])]),
    ("takes {}× the contiguous time (`{}`), where version 11 took {}×", [], fig_webgpu_paged),
    ("Float16 K and V are {}× faster than float32", [], fig_webgpu_f16),
]

R = CPU_RES + "2026-11-27-"  # short prefixes for the run folders named below
G = CUDA_RES + "2026-11-2"
CITED = [  # (phrase as on the page, the runs whose files state its numbers)
    ("version 9 at 32k: 93.2 % of the copy probe, paged 0.98–0.99 of contiguous, float16 storage 80–81 %",
     [WEB_RES + "2026-12-02-h100-decode"], "ends"),
    ("the one-dispatch decode (version 10) reads 97.6 % of the copy probe at 128k keys and 79.3 % at "
     "32k, with float16 storage 92.4 % and 68.2 % counting its bytes; the paged version 11 92.7 % at "
     "32k in float32 and 82.0 % in float16", [WEB_RES + "2026-12-02-h100-full"]),
    ("reads 2.97 TB/s a call, the rate of the 2.98 TB/s copy in the same call",
     [CUDA_RES + "2026-12-02-h100-rows"]),
    ("decode with pages of 16 0.979–0.983 of contiguous, with pages of 256 0.990–1.002",
     [CUDA_RES + "2026-12-02-h100-rows"], "ends"),
    ("reads 92–94 % of the copy through its graph, 1.82–1.86× the float16 decode's tokens a second",
     [CUDA_RES + "2026-12-02-h100-rows"], "ends"),
    ("paged with pages of 16 0.925–0.928 of contiguous; the e4m3 forward 900.5 TFLOP/s",
     [CUDA_RES + "2026-12-02-h100-rows"], "ends"),
    ("and 821.6 at 4096", [CUDA_RES + "2026-12-02-h100-rows"]),
    ("At the lower one (about 25–31 GB/s on two threads) the float32 decode reads 80–86 % of "
     "it; at the upper one (45–53 GB/s) only 68–74 %", [R + "zen4-decode-ceiling"]),
    ("one core streams its K and V at 17–19 GB/s", [R + "zen4-decode-ceiling"]),
    ("the conversion's arithmetic limits it (58.8–62.0 % at the upper level)",
     [R + "zen4-decode-ceiling"], "ends"),
    ("With the exponential returning 0 below 2⁻¹²⁶ the causal speed-up went from 1.44–1.71× to "
     "1.76–2.12× on two cores", [R + "xeon-denormal"], "ends"),  # the medians of d = 128, 64
    ("put Q Kᵀ at 88 % and P V at 81 % of the probe there (`2026-11-27-xeon-sweep3`; 95 % each "
     "on the Zen 4", [R + "xeon-sweep3", R + "zen4-ablate"]),
    ("loses about 30 % when it walks new key tiles in 4 KiB pages, as the prefill does (3–6 % "
     "on the Zen 4", [R + "xeon-microkernel"]),
    ("its clock moved between 2.24 and 2.94 GHz and the same one-thread call took 495–723 ms of "
     "CPU time", [R + "xeon-steady"]),
    ("and the same call 65.6–78.9 % on three pairs of vCPUs of the next", [R + "xeon-pairs"]),
    ("held for 2000 launches the H100 runs at its 700 W cap", [G + "5-run35"]),
    ("an H100 80GB HBM3 and an H200 (driver 580.159.04", [G + "7-v35-run2", G + "9-h200-fwd-bwd-ncu"]),
    ("ours executes 1.17× its warp instructions without a mask (version 35) and 1.33× causal "
     "(version 34)", [G + "9-h200-fwd-bwd-ncu"]),
    ("under ncu's fixed clock cuDNN took 6–9 % fewer cycles there with version 8, which executed "
     "1.53× its warp instructions (1.91× causal)", [G + "9-h200-fwd-bwd-ncu"]),
    ("On the H200 version 28 reaches 909.2 TFLOP/s, 1.56× our best float16 version in the same call",
     [G + "9-h200-prefill-fp8"]),
    ("a trial version that read each number of workgroup memory once a tile, about half the "
     "transactions a key, ran 2.6–5.7× slower", [WEB_RES + "2026-11-29-h200-decode-v8-trial"]),
    ("gives 1.79–1.80× the float16 decode's tokens per second at 88–90 % of the copy rate",
     [G + "7-fp8kv-run1", G + "7-fp8kv-run2"]),
    ("its split kernel alone reads at 94 % of the copy rate", [G + "7-half-exp-trial"]),
    ("the e4m3 cache paged in 16s runs at 0.91–0.92 of its contiguous speed",
     [G + "7-fp8kv-run2"]),
    ("it reads 81 % of the copy rate a call, 83 % through a plan (the host's work done once) and "
     "84–85 % through a CUDA graph of the plan's run, 1.73× the float16 decode's tokens a second "
     "through graphs", [G + "9-h200-decode-fp8-plan", G + "9-h200-decode-graph"]),
    ("where the float16 decode (version 15) reads 98.1 % of the copy", [G + "9-h200-decode-graph"]),
    ("it reads 88–89 % of the copy at 32768 keys and 95.0–96.8 % at 131072, 1.79–1.81× and "
     "1.87–1.91× the float16 decode's tokens a second", [CUDA_RES + "2026-12-02-h200-decode-balance-2"]),
    ("what holds the 537 MB call under 95 % is its size (the float16 decode reading the same bytes "
     "reaches 94 %) and its step (5–6 %): 89.5–90.0 % of the copy, 1.82×",
     [CUDA_RES + "2026-12-03-h200-pairs", CUDA_RES + "2026-12-03-h200-pairs-2"]),

    ("reaches 1.50–1.54× our best float16 version", [G + "7-fp8-split-run7"], "ends"),
    ("93–94 % of its transfers hidden, read off the GPUs' common clock", [G + "7-ring-run4"]),
    ("the split pass alone reads at 88–89 % and the merge dispatch adds 5–8 % of the time",
     [WEB_RES + "2026-11-27-run8"], "ends"),  # 0.0054–0.0088 ms of a 0.108 ms call
    ("took 0.360–0.363 ms at 131072 keys whatever the split length, and float16 storage, half the "
     "bytes, took 84 % of float32's time", [WEB_RES + "2026-11-29-h200-decode-sweep"]),
    ("reads as fast as the copy probe at 128k keys and at 93 % of it at 32k",
     [WEB_RES + "2026-11-29-h200-decode-v9-run3"]),
    ("at 32k keys their split pass reads at 80 % of the read probe's rate and the merge dispatch "
     "adds 12 % of the time", [WEB_RES + "2026-11-29-h200-decode-v9-run2"]),
    ("costs 12–17 µs more than the dispatch it saves", [WEB_RES + "2026-11-29-h200-decode-v10"]),
    ("Version 5, the design before it, read 65–71 %", [WEB_RES + "2026-11-29-h200-decode-v9-run3"],
     "ends"),
    ("Through WGSL the matrix units give 622.2 TFLOP/s with both matrices in registers, 228.1 when "
     "the right one is loaded from workgroup memory before each product and 117.6 when it is loaded "
     "from storage", [WEB_RES + "2026-11-30-h200-v14"]),
]
FIGURES += [(c[0], c[1], None if len(c) == 2 else c[2]) for c in CITED]

NOT_MEASURED = [  # figures with a unit in the measured sections that are not measurements
    "missed the decode target of 85 % of the probe",           # a target
    "short of its 1000 TFLOP/s target",                         # a target
    "Above 2× (or 4×) one GPU",                                  # the number of GPUs
    "version 5 met 85 % of the copy probe",                     # a target; the table has both
    "not 2×",                                                    # the bytes' ratio
]


def norm(text):
    return re.sub(r"\s+", " ", text)


def prose(text):
    """text with the generated blocks and indented code lines left out, whitespace collapsed."""
    text = MARK.sub("", text)
    return norm("\n".join(ln for ln in text.splitlines() if not ln.startswith("    ")))


UNIT = re.compile(r"\d[\d.,]*(?:\s?[–-]\s?\d[\d.,]*)?\s?(?:%|×|ms\b|µs\b|GB/s|TB/s|"
                  r"TFLOP/s|GFLOP/s|GHz|MHz|W\b)")


def unlisted(body, phrases):
    """Numbers with a unit in body that no phrase covers: the figures nobody checks."""
    covered = [False] * len(body)
    for ph in phrases:
        i = body.find(ph)
        while i >= 0:
            covered[i:i + len(ph)] = [True] * len(ph)
            i = body.find(ph, i + 1)
    return [m.group(0) for m in UNIT.finditer(body) if not all(covered[m.start():m.end()])]


def check_figures(doc_text):
    """The complaints (strings) about the prose figures of docs/benchmarks.md; [] when all hold."""
    body = prose(doc_text)
    bad = []
    for phrase, runs, values in FIGURES:
        if callable(values):
            try:
                want = phrase.format(*values())
            except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError) as e:
                bad.append("%r: the records give no value (%s)" % (phrase, e))
                continue
            if want not in body:
                head = phrase.split("{}")[0]
                where = body.find(head) if head else -1
                bad.append("the records say %r; the page has %r" % (
                    want, body[where:where + len(want) + 12] if where >= 0 else "(no such text)"))
            continue
        if phrase not in body:
            bad.append("cited figure %r is not on the page" % phrase)
            continue
        ends = values == "ends"  # a range that sums up several numbers: its ends must occur
        text = re.sub(r"(?<=\d) ?(?:-|–|to) ?(?=\d)", "–", "\n".join(run_text(r) for r in runs))
        nums = r"\d+(?:[.,]\d+)*" + ("" if ends else r"(?:–\d+(?:[.,]\d+)?)?")
        for num in re.findall(nums, phrase):
            edge = r"(?<![\d.])%s(?!\.?\d)" if ends else r"(?<![\d.–])%s(?!\.?\d|–)"
            if not re.search(edge % re.escape(num), text):
                bad.append("%r: %s is in none of %s" % (phrase, num, ", ".join(runs)))
    measured = body.split("## Running the benchmarks")[0]
    phrases = []
    for ph, _, values in FIGURES:
        try:
            phrases.append(ph.format(*values()) if callable(values) else ph)
        except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError):
            pass  # reported above
    for fig in unlisted(measured, phrases + NOT_MEASURED):
        bad.append("%r is a figure that no entry of FIGURES or NOT_MEASURED covers" % fig)
    return bad


GENERATORS = {
    "cpu": lambda p: gen_cpu(p),
    "cpu-full": lambda p: gen_cpu(p, True),
    "cuda": lambda p: gen_cuda(p),
    "cuda-full": lambda p: gen_cuda(p, True),
    "webgpu": lambda p: gen_webgpu(p),
    "webgpu-full": lambda p: gen_webgpu(p, True),
    "webgpu-f16": lambda p: gen_webgpu_f16(p),
    "webgpu-f16-full": lambda p: gen_webgpu_f16(p, True),
    "webgpu-f16-lead": gen_webgpu_f16_lead,
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
    bench = os.path.join(ROOT, "docs/benchmarks.md")
    if os.path.exists(bench):
        for complaint in check_figures(read(bench)):
            sys.stdout.write("report.py: docs/benchmarks.md: %s\n" % complaint)
            stale = 1
    for rel, plot in PLOTS.items():
        path = os.path.join(ROOT, rel)
        svg = plot()
        if svg is None:
            continue
        old = read(path) if os.path.exists(path) else None
        if old == svg:
            continue
        if args.write:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(svg)
            sys.stderr.write("report.py: wrote %s\n" % rel)
        else:
            stale = 1
            sys.stdout.write("report.py: %s %s what the records draw\n" % (
                rel, "is missing, not" if old is None else "differs from"))
            sys.stdout.writelines(list(difflib.unified_diff(
                (old or "").splitlines(True), svg.splitlines(True), rel,
                rel + " (from the records)"))[:40])
    if args.check:
        if stale:
            sys.stderr.write("report.py: the figures above differ from the records; "
                             "`python3 bench/report.py --write` rewrites them\n")
        else:
            sys.stderr.write("report.py: %d generated blocks and %d plots match the records\n"
                             % (blocks, len(PLOTS)))
    return stale


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
