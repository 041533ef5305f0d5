#!/usr/bin/env python3
"""check_report.py: bench/report.py against a small repository of made-up records.

    python3 tests/bench/check_report.py [SEED]

Builds a scratch tree with one CPU side-by-side record (and a newer one taken under load, which
must be left out), one CUDA call (two of our versions and both SDPA backends; a newer *-trial
folder, which must be skipped), and a README whose generated blocks are stale. Then: --check
must exit 1 and print a diff; --write must rewrite the blocks with the ratios this test computes
itself and draw the CPU plot; --check must then exit 0; a block with an unknown name must fail;
an edited plot must fail. The timings are drawn fresh each run; the seed is printed on failure
(pass it back to replay).

Then the prose figures of the real docs/benchmarks.md: a copy of the repository's records and
docs must pass --check, and must fail it once one figure of the prose (outside the generated
blocks) is changed, or one new figure with a unit is added that nothing checks.
"""
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(HERE, "..", "..", "bench", "report.py")


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def cpu_record(load, ours, ggml):
    o = ours
    g = ggml
    return f"""# date:     2026-01-01 10:00:00 UTC
# machine:  AMD EPYC, 2 cores
# load before: {load}, 0.50, 0.50
## flashstep bench
kernel                 N     d causal threads          ms   GFLOP/s   of peak     GB/s   RSS MiB
flash-v7            4096   128     no       2     {o[0]:.3f}     211.1     90.2%     0.21     129.0
flash-v7            4096   128    yes       2     {o[0] / 1.9:.3f}     203.3     87.6%     0.40     129.0
flash-v7            4096    64     no       2     {o[1]:.3f}     198.6     85.5%     0.19      81.0
decode-v5          32768   128     no       2       {o[2]:.3f}      55.8     86.1%    27.88     575.1
decode-v5-f16      32768   128     no       2       {o[3]:.3f}     113.1     86.3%    28.27     319.1
## ggml test-backend-ops perf -o FLASH_ATTN_EXT -b CPU
ggml prefill heads 8 N   4096 d 128 K/V f32    {g[0]:.3f} ms    63.2 GFLOP/s
ggml prefill heads 8 N   4096 d 128 K/V f16    {g[0] * 1.3:.3f} ms    84.5 GFLOP/s
ggml prefill heads 8 N   4096 d 64 K/V f32     {g[1]:.3f} ms    85.4 GFLOP/s
ggml decode  KV heads 8 kv  32768 d 128 K/V f32      {g[2]:.3f} ms    19.5 GFLOP/s    9.75 GB/s of K/V
ggml decode  KV heads 8 kv  32768 d 128 K/V f16      {g[3]:.3f} ms    27.8 GFLOP/s    6.95 GB/s of K/V
"""


def cuda_log(tf31, tf35, flash, cudnn):
    shape = "dtype=f16 d=128 causal=0 N=4096 B=4 H=16"
    return (f"RESULT prefill v=31 {shape} ms=1.0 tflops={tf31:.1f}\n"
            f"RESULT prefill v=35 {shape} ms=1.0 tflops={tf35:.1f}\n"
            f"RESULT sdpa backend=flash {shape} ms=1.0 tflops={flash:.1f}\n"
            f"RESULT sdpa backend=cudnn {shape} ms=1.0 tflops={cudnn:.1f}\n")


def run(root, *args):
    p = subprocess.run([sys.executable, REPORT, "--root", root] + list(args),
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def prose_figures(rnd, expect):
    """The real page's prose figures: a copy passes; a planted wrong or unchecked figure fails."""
    repo = os.path.dirname(os.path.dirname(HERE))
    with tempfile.TemporaryDirectory() as root:
        for sub in ("bench/results", "bench/cuda/results", "bench/webgpu/results"):
            os.makedirs(os.path.dirname(os.path.join(root, sub)), exist_ok=True)
            os.symlink(os.path.join(repo, sub), os.path.join(root, sub))  # read, never written
        shutil.copytree(os.path.join(repo, "docs"), os.path.join(root, "docs"),
                        ignore=shutil.ignore_patterns("*.png", "*.gif", "*.jpg"))
        shutil.copy(os.path.join(repo, "README.md"), root)
        page = os.path.join(root, "docs/benchmarks.md")
        text = open(page).read()
        rc, out = run(root, "--check")
        expect(rc == 0, f"the copy of the repository fails --check: {out[-2000:]}")

        # the committed plots: well-formed SVG on white paper, naming runs that exist
        for name in ("perf-cpu", "perf-cuda-h100", "perf-cuda-h200", "perf-webgpu"):
            path = os.path.join(root, "docs/img", name + ".svg")
            try:
                svg = ET.parse(path).getroot()
            except (OSError, ET.ParseError) as e:
                expect(False, f"{name}.svg is not well-formed SVG: {e}")
                continue
            words = " ".join(t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text"))
            runs = re.findall(r"20\d\d-\d\d-\d\d-[\w-]+", words)
            expect(runs and all(glob.glob(os.path.join(repo, "bench", "*", r)) +
                                glob.glob(os.path.join(repo, "bench", "*", "results", r))
                                for r in runs), f"{name}.svg names no run, or one that is not "
                                                f"a record folder: {runs}")
            expect(any(r.get("fill") == "#ffffff" for r in svg.iter(
                "{http://www.w3.org/2000/svg}rect")), f"{name}.svg has no white paper")

        # one figure of the prose, outside the generated blocks, chosen at random
        prose = re.sub(r"<!-- report:([a-z0-9-]+) -->.*?<!-- /report:\1 -->", lambda m:
                       " " * len(m.group(0)), text, flags=re.S)
        prose = prose.split("## Running the benchmarks")[0]
        figs = [m for m in re.finditer(r"(?<![\d.])\d+(?:\.\d+)?(?=\s?(?:%|×|ms|µs|GB/s|TB/s|"
                                       r"TFLOP/s|GHz|MHz|W\b))", prose)]
        expect(len(figs) > 40, f"only {len(figs)} prose figures found to plant into")
        m = rnd.choice(figs)
        digits = len(m.group(0).split(".")[1]) if "." in m.group(0) else 0
        wrong = "%.*f" % (digits, float(m.group(0)) * 1.1 + 1)
        open(page, "w").write(text[:m.start()] + wrong + text[m.end():])
        rc, out = run(root, "--check")
        expect(rc == 1, f"--check passed with {m.group(0)} changed to {wrong} at offset "
                        f"{m.start()} of docs/benchmarks.md")

        # a new figure that nothing checks
        extra = text.replace("**What holds it back:**", "**What holds it back:** about 12.5 %% "
                             "of the time %s;" % "was lost", 1)
        open(page, "w").write(extra)
        rc, out = run(root, "--check")
        expect(rc == 1 and "12.5 %" in out, "an unchecked figure in the prose passed --check")


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else random.SystemRandom().randrange(1 << 30)
    rnd = random.Random(seed)
    fails = []

    def expect(cond, what):
        if not cond:
            fails.append(what)

    with tempfile.TemporaryDirectory() as root:
        ours = [rnd.uniform(100, 400), rnd.uniform(50, 200), rnd.uniform(2, 10), rnd.uniform(1, 5)]
        ggml = [o * rnd.uniform(1.2, 3.5) for o in ours]
        # the records print 3 decimals: the expected ratios come from what they print
        ours, ggml = [round(o, 3) for o in ours], [round(g, 3) for g in ggml]
        write(root, "bench/results/2026-01-01-zen4-ggml/NOTE.txt", "2026-01-01 10:00 UTC: a run\n")
        write(root, "bench/results/2026-01-01-zen4-ggml/a.txt", cpu_record(0.3, ours, ggml))
        # newer, but taken with a core busy: left out
        write(root, "bench/results/2026-01-02-zen4-ggml/NOTE.txt", "2026-01-02 10:00 UTC\n")
        write(root, "bench/results/2026-01-02-zen4-ggml/a.txt",
              cpu_record(1.5, ours, [1.0] * 4))
        tf31, tf35 = rnd.uniform(500, 650), rnd.uniform(500, 650)
        flash, cudnn = rnd.uniform(300, 400), rnd.uniform(550, 700)
        tf31, tf35, flash, cudnn = (round(t, 1) for t in (tf31, tf35, flash, cudnn))
        for name, t in (("2026-01-01-run1", cuda_log(tf31, tf35, flash, cudnn)),
                        ("2026-01-02-run2-trial", cuda_log(999.0, 999.0, flash, cudnn))):
            write(root, f"bench/cuda/results/{name}/NOTE.txt", name[:10] + " 09:00 UTC\n")
            write(root, f"bench/cuda/results/{name}/time.log", t)
            write(root, f"bench/cuda/results/{name}/machine.txt", "NVIDIA H100 80GB HBM3\n")
        # a WebGPU run: our float16 and float32 prefill, PyTorch's SDPA, ONNX Runtime Web in
        # float16 (one of its rows wrong: left out of the ratio)
        w16, w32 = round(rnd.uniform(2, 6), 3), round(rnd.uniform(6, 12), 3)
        o16 = [round(rnd.uniform(8, 20), 3) for _ in range(2)]
        case = {"kind": "prefill", "n_q": 4096, "n_kv": 4096, "d": 128, "heads": 16, "causal": False}
        web = "bench/webgpu/results/2026-01-01-h200-run1/"
        write(root, web + "NOTE.txt", "2026-01-01 11:00 UTC: a run\n")
        write(root, web + "ours.json", json.dumps({"device": {"device": "nvidia-h200"}, "rows": [
            dict(case, kernel="prefill-v10", storage="f16", ms=w16, tflops=1.0),
            dict(case, kernel="prefill-v5", storage="f32", ms=w32, tflops=1.0)]}))
        write(root, web + "sdpa.json", json.dumps({"rows": [
            dict(case, backend="flash f16", ms=0.5), dict(case, backend="cudnn f16", ms=0.25)]}))
        write(root, web + "ort-f16.json", json.dumps({"rows": [
            dict(case, storage="f16", ms=o16[0], check={"ok": True}),
            dict(case, storage="f16", ms=o16[1], check={"ok": True}),
            dict(case, storage="f16", ms=0.001, check={"ok": False})]}))
        readme = ("# x\n\n<!-- report:cpu -->\nstale\n<!-- /report:cpu -->\n\n"
                  "<!-- report:cpu-full -->\n<!-- /report:cpu-full -->\n\n"
                  "<!-- report:cuda -->\n<!-- /report:cuda -->\n\n"
                  "<!-- report:webgpu-f16 -->\n<!-- /report:webgpu-f16 -->\n")
        write(root, "README.md", readme)

        rc, out = run(root, "--check")
        expect(rc == 1, f"--check on stale blocks exited {rc}, not 1")
        expect("-stale" in out, "--check printed no diff removing the stale line")

        rc, out = run(root, "--write")
        expect(rc == 0, f"--write exited {rc}: {out}")
        text = open(os.path.join(root, "README.md")).read()
        short = text.split("<!-- /report:cpu -->")[0]
        for i, case in enumerate(["d = 128", "d = 64"]):
            want = "| %.2f× | prefill, 8 heads, N = 4096, %s" % (ggml[i] / ours[i], case)
            expect(want in text, f"README lacks the row {want!r}")
            expect((want in short) == (i == 0), f"the short table's row {want!r} is wrong")
        want = "| %.2f× | decode, GQA 32/8, 32768 keys, d = 128, K/V float16" % (ggml[3] / ours[3])
        expect(want in text, f"README lacks the row {want!r}")
        expect(want not in short, "the short CPU table carries the float16 decode")
        svg_path = os.path.join(root, "docs/img/perf-cpu.svg")
        expect(os.path.exists(svg_path), "--write drew no CPU plot")
        svg = open(svg_path).read() if os.path.exists(svg_path) else ""
        expect(svg.startswith("<svg") and "2026-01-01-zen4-ggml" in svg,
               "the CPU plot is not an SVG naming its run")
        expect("2026-01-02-zen4-ggml" not in text, "the record taken under load was used")
        best = max(tf31, tf35)
        want = "| %.2f× | %.2f× | prefill, B = 4, N = 4096, H = 16, d = 128 | v%d: %.1f" % (
            best / flash, best / cudnn, 35 if tf35 > tf31 else 31, best)
        expect(want in text, f"README lacks the CUDA row {want!r}")
        expect("trial" not in text, "a *-trial folder was used")
        expect("](bench/cuda/results/2026-01-01-run1/NOTE.txt)" in text,
               "the CUDA row does not link its run's NOTE.txt")

        want = "| %.2f× | %.3f× | %.3f× | %.2f× (prefill-v5) | prefill, 16 heads, N = 4096, d = 128, float16 | prefill-v10: %.2f ms" % (
            (o16[0] + o16[1]) / 2 / w16, 0.5 / w16, 0.25 / w16, w32 / w16, w16)
        expect(want in text, f"README lacks the WebGPU float16 row {want!r} (ONNX Runtime Web's float16 "
                             "beside ours; its wrong row left out)")

        rc, out = run(root, "--check")
        expect(rc == 0, f"--check after --write exited {rc}: {out}")

        write(root, "docs/img/perf-cpu.svg", svg.replace("ggml", "gmml", 1))
        rc, out = run(root, "--check")
        expect(rc == 1 and "perf-cpu.svg" in out, "an edited plot passed --check")
        write(root, "docs/img/perf-cpu.svg", svg)

        write(root, "README.md", text + "\n<!-- report:nosuch -->\n<!-- /report:nosuch -->\n")
        rc, out = run(root, "--check")
        expect(rc == 1 and "nosuch" in out, "a block with an unknown name passed --check")

    prose_figures(rnd, expect)

    if fails:
        for f in fails:
            print("report: FAIL:", f)
        print(f"report: seed {seed} (replay: python3 tests/bench/check_report.py {seed})")
        return 1
    print("report: --check, --write, the choice of records, the plots and the prose figures: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
