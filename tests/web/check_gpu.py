#!/usr/bin/env python3
"""check_gpu.py URL FLASHSTEP [--seed N]: the page's "Run on this GPU" panel in headless Chromium
with WebGPU on SwiftShader (Chromium's Vulkan on the CPU), so it runs on a machine without a GPU.

- the panel names the adapter and lists every kernel;
- every lesson a WGSL kernel traces (the tiled forward, the one-query walk, FlashDecoding with
  contiguous or strided splits, every mask, GQA, soft-cap, exp2) runs on the GPU and its trace
  matches the engine's event by event; the others say why not, in words the test expects;
- random problems drawn fresh (seed printed) loaded as "Your problem" and traced the same way;
  the full-size kernels on a third of the random problems and on one of five lessons' problems
  (the seed says which), against float64;
- the GPU trace download has the engine's events, kind for kind, as `flashstep trace` prints them;
- planted faults must be caught (a third of them a run, the seed says which: each makes its
  kernel's pipeline anew, seconds on SwiftShader; three seeds in a row plant all): a missing rescale (α = 1) in the traced kernel, in prefill
  version 3 and in 003's Prefill V1 (its O in workgroup memory not rescaled), an off-by-one tile
  edge in prefill version 1 and decode version 2, and in decode version 4 float16 halves unpacked
  out of order and the paged form reading each page's slots backwards, decode version 7's
  merger skipping a head's last split, and decode version 9's transpose-reduction keeping the
  wrong half and its weights broadcast from each batch's first key only;
- then, from the page's own files again, every full-size kernel against float64 on random
  problems, with subgroups, and half of the forms without subgroups (the seed says which half),
  at one head size a run (32 or 64 by the seed; the other
  for a kernel that does not take it): each pipeline costs seconds to make on SwiftShader, so two runs
  cover what one run of both sizes did in twice the time; and the planted faults at head size 32
  where their kernel takes it;
- decode version 7 (the merge in the split's dispatch) in its four forms, and version 10 in two
  of its four (the seed says which), on problems of several splits and of one, GQA, every mask
  the decode takes (a random bitmask among them), key counts that are not a multiple of the tile:
  against float64, its counters back at 0 after each dispatch (read back, and a second launch on
  the same buffers writing the same O bit for bit), and O bit for bit its two-pass twin's (decode
  versions 5 and 9);
- the benchmark's smallest plan runs on the same device, checks, times, draws its chart (its
  table's columns lined up) and offers its JSON;
- a lost device is reported and opened again; no console error throughout;
- the kernels SwiftShader cannot run (it offers neither shader-f16 nor subgroup matrices: prefill
  versions 6, 7 and 8, decode version 6) are said to be skipped, with the reason, and checked as
  far as this machine can: prefill versions 7 and 8 transcribed into JavaScript against float64
  (bench/webgpu/emulate_sgmat.js), with faults planted in version 8's transcription caught, and
  every kernel's WGSL in every form compiled by Dawn's null backend (bench/webgpu/validate.js, where
  `npm ci --prefix bench/webgpu` has installed Dawn; versions 7 and 8 also at the H200's 48 KiB and
  in every ablation and variant form), with bench/webgpu/sgmat_probe.js's probes of prefill version 7 compiled
  and its own side run there, bench.js --ablation's and --decode-ablation's own side run there (bench.js --null), and
  fsgpu.js's //#for directive (a loop, or unrolled) on a small text; prefill version 7 is offered by default where the adapter has a configuration it takes;
- the Vulkan layer that reads a driver's statistics of each pipeline (bench/webgpu/vkstats), where
  gcc and the Vulkan headers are installed: built, and where Dawn for Node is, loaded under it on
  Chromium's SwiftShader, which offers no statistics (the layer says so and passes every call through: a
  kernel checked through it is right), bench.js's begin and end lines around each pipeline made
  with the layer's record between them and an empty pair for one the host already has, each
  module's SPIR-V written under its hash; and vkstats/summary.py's table of a recorded H200 log.
After each phase it prints its seconds and where they went (Clock). Prints 'N passed, M failed';
exit 1 on a failure.
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser, CDPError  # noqa: E402
from check_page import Page, TOOLBAR  # noqa: E402
import report  # noqa: E402
from report import check  # noqa: E402
import check_page  # noqa: E402

# Why a lesson is not traced on the GPU: each refusal must be one of these.
REFUSALS = ("pitfall", "backward algorithm", "softmax algorithm", "reference algorithm", "low-precision",
            "no dropout", "given scores", "no attention problem to run",
            "paged decode")   # (002_05: the traced WGSL decode reads a contiguous cache)

# Planted faults: (file, text to replace, replacement, what must then fail[, split_len: keys a
# split, so that the problem has several]). A fault whose text is not found fails the test, so
# the faults follow the kernels' code.
FAULTS = [
    ("fwd_trace", "alpha = select(ex(m_old - m_new), 0.0, m_old == NEG);", "alpha = 1.0;", "trace"),
    ("fwd_v3", "let alpha = select(exp2(m - m_new), vec4f(0.0), m == vec4f(NEG));", "let alpha = vec4f(1.0);", "prefill-v3"),
    # version 4 fetches the tile after the next one (every other tile left out); version 5 (fwd_v4's
    # NODOT form) drops the fourth of a score's partial sums
    ("fwd_v4", "let cn = next_tile(r0, r1, c0 + BK);", "let cn = next_tile(r0, r1, c0 + 2u * BK);", "prefill-v4"),
    ("fwd_v4", "let one = vec4f(1.0);", "let one = vec4f(1.0, 1.0, 1.0, 0.0);", "prefill-v5"),
    ("fwd_v1", "let c1 = min(c0 + BK, P.n_kv);", "let c1 = min(c0 + BK - 1u, P.n_kv);", "prefill-v1"),
    ("decode_v2", "let c1 = min(c0 + BK, end);", "let c1 = min(c0 + BK - 1u, end);", "decode-v2"),
    # decode version 5 (decode_v2's AHEAD form) fetches only the first half of each next tile's K
    ("decode_v2", "min(c0 + 2u * BK, end)", "min(c0 + BK + BK / 2u, end)", "decode-v5"),
    ("akunu_prefill_v1", "let a = corr[pr];", "let a = 1.0;", "akunu-prefill-v1"),
    # decode version 4: the upper four halves of a packed word unpacked in the wrong order, and
    # the paged form's key past the split's end kept
    ("decode_v4", "return vec4f(unpack2x16float(w.z), unpack2x16float(w.w));",
     "return vec4f(unpack2x16float(w.w), unpack2x16float(w.z));", "decode-v4-f16"),
    ("decode_v4", "return ((table[j / PS] * PS + j % PS) * P.n_kv_heads + kvh) * NC;",
     "return ((table[j / PS] * PS + (PS - 1u - j % PS)) * P.n_kv_heads + kvh) * NC;", "decode-paged"),
    # decode version 7: the last split workgroup of a head merges all but the head's last split
    ("decode_merge", "merge_row(h0 * P.n_q + r, P.n_split, t);", "merge_row(h0 * P.n_q + r, P.n_split - 1u, t);", "decode-v7", 32),
    # decode version 9: the transpose-reduction keeps the wrong half (each lane ends with another
    # (row, key)'s sum), and every key of a batch weighted by its first key's p
    ("decode_v9", "x[i] = select(x[i], x[i + h], up) + subgroupShuffleXor(select(x[i + h], x[i], up), h);",
     "x[i] = select(x[i + h], x[i], up) + subgroupShuffleXor(select(x[i], x[i + h], up), h);", "decode-v9"),
    ("decode_v9", "let pk = subgroupBroadcast(p, r * B + k);", "let pk = subgroupBroadcast(p, r * B);", "decode-v9-f16"),
    # decode version 11 reads each batch's page a batch ahead: here the page of the batch just
    # fetched, so the batch after it is read from that page (one subgroup, 64 keys a split: many
    # batches a subgroup, pages crossed)
    ("decode_v9", "pg = page_of(j0 + 2u * per);", "pg = page_of(j0 + per);", "decode-v11-paged-f16", {"nsg": 1, "split_len": 64}),
    # decode version 14 steps from a batch's first key by the stride of a head-major pool: in
    # vLLM's layout (the page's slots n_kv_heads rows apart) the batch's other keys are read from
    # the wrong rows
    ("decode_v9", "let stride = P.n_kv_heads * D4;", "let stride = D4;", "decode-v14-paged-f16"),
]

# The lessons whose own problems the full-size kernels run too (two a run, by the seed).
FULL_LESSONS = ("000_04", "000_08", "003_03", "003_08", "000_07")

# Decode versions 7 and 10, their own checks (fsgpu.js checkFused): (problem, split_len or 0 for the default).
# Each run gives every case its head size (HEAD_D), whose pipelines "every kernel against float64" has made already.
FUSED_CASES = [
    ({"n_q_heads": 8, "n_kv_heads": 2, "n_q": 1, "n_kv": 150, "d": 32, "mask": "causal"}, 40),   # 4 splits, GQA 4
    ({"n_q_heads": 4, "n_kv_heads": 1, "n_q": 2, "n_kv": 90, "d": 64, "mask": "window", "window": 9, "softcap": 2.5}, 32),  # 3 splits, 8 rows
    ({"n_q_heads": 4, "n_kv_heads": 2, "n_q": 1, "n_kv": 77, "d": 32, "mask": "none"}, 0),       # one split
    ({"n_q_heads": 2, "n_kv_heads": 2, "n_q": 2, "n_kv": 100, "d": 64, "mask": "bits"}, 24),     # 5 splits, a random bitmask
]
FUSED_JS = """(async () => {
  const g = Module.flashstep.gpu.device(), out = [];
  for (const name of NAMES)
    for (const [k, [c, split_len]] of CASES.entries()) {
      const p = FSGPU.randomProblem(SEED * 10 + k, c.mask === 'bits' ? Object.assign({}, c, {mask: 'none'}) : c);
      if (c.mask === 'bits') {   // a random bitmask: about half the keys of each row visible
        const words = 2 * Math.ceil(c.n_kv / 64), bits = new Uint32Array(c.n_q * words), r = FSGPU.rng(SEED + k);
        for (let i = 0; i < c.n_q; i++) for (let j = 0; j < c.n_kv; j++) if (r() < 0.5) bits[i * words + (j >>> 5)] |= 1 << (j & 31);
        p.mask = {kind: 3, words, bits, offset: c.n_kv - c.n_q};
      }
      if (split_len) p.split_len = split_len;
      const why = g.kernels[name].ok(p);   // (version 10: at most W rows a KV head, W the subgroup's size)
      if (why) { out.push({name, k, skip: why}); continue; }
      const r = await g.checkFused(name, p);
      out.push({name, k, ok: r.ok, n_split: r.n_split, worst: r.check.worst, where: r.check.where,
                counters_zero: r.counters_zero, same_twice: r.same_twice, differ: r.differ});
    }
  return out;
})()"""



def lesson_names(flashstep):
    out = subprocess.run([flashstep, "lessons"], capture_output=True, text=True, check=True).stdout
    return [w for w in out.split() if len(w) > 6 and w[:3].isdigit() and w[3] == "_" and not w.endswith(".txt,")
            and not w.endswith(".txt")]


def mat(rng, rows, cols, spread=1.0):
    return "\n".join(" ".join(f"{rng.uniform(-spread, spread):.6f}" for _ in range(cols)) for _ in range(rows)) + "\n"


def random_problem(rng):
    """Files and `play` options of a random problem a traced kernel takes."""
    hq, hkv = rng.choice([(1, 1), (2, 1), (4, 2)])
    n_kv = rng.randint(1, 24)
    decode = rng.random() < 0.35
    n_q = rng.randint(1, 2) if decode else rng.randint(1, n_kv)
    d = rng.randint(1, 6)
    files = {"q": mat(rng, hq * n_q, d, rng.choice([1, 3])), "k": mat(rng, hkv * n_kv, d), "v": mat(rng, hkv * n_kv, rng.randint(1, 5))}
    opts = ["--heads", f"{hq}:{hkv}"] if hq > 1 else []
    mask = rng.choice(["none", "causal", "window", "tree"] if not decode and n_q == n_kv else ["none", "causal", "window"])
    if mask == "causal":
        opts += ["--mask", "causal"]
    elif mask == "window":
        opts += ["--window", str(rng.randint(1, 6))]
    elif mask == "tree":
        files["tree"] = " ".join(str(-1 if i == 0 else rng.randrange(i)) for i in range(n_kv)) + "\n"
    if rng.random() < 0.3:
        opts += ["--softcap", f"{rng.uniform(0.5, 4):.3f}"]
    if decode:
        opts += ["--decode"]
        if rng.random() < 0.4:
            opts += ["--parts", str(rng.randint(1, 5))]
        else:
            opts += ["--bk", str(rng.randint(1, 8))]
        opts += ["--merge", rng.choice(["sequential", "tree"]), "--form", rng.choice(["normalized", "unnormalized"])]
    else:
        opts += ["--bq", str(rng.randint(1, 5)), "--bk", str(rng.randint(1, 7)), "--form", rng.choice(["normalized", "unnormalized"]),
                 "--order", rng.choice(["q-outer", "kv-outer"])]
        if rng.random() < 0.3:
            opts += ["--exp2"]
        if rng.random() < 0.15:   # 000's walk: one key at a time, its own tiling
            opts = [o for o in opts[:opts.index("--bq")] if o != "--exp2"] + ["--query", "--form", rng.choice(["normalized", "unnormalized"])]
    return files, opts


def main():
    args = sys.argv[1:]
    seed = None
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    url, flashstep = args[0].rstrip("/") + "/", os.path.abspath(args[1])
    seed = seed if seed is not None else int(time.time()) % 1000000
    print(f"GPU panel checks (seed {seed}; replay with --seed {seed})")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        sys.exit("test-web: no chromium found")
    tmp = tempfile.mkdtemp(prefix="flashstep-gpu-")
    downloads = os.path.join(tmp, "downloads")
    os.makedirs(downloads)
    try:
        with Browser(chromium, 1280, 720 + TOOLBAR, timeout=300, webgpu=True) as b:
            page = Page(b, url, downloads)
            page.size(1280, 720 + TOOLBAR)
            run(page, b, flashstep, seed, tmp)
            page.drain()
            check(not page.errors, "no console error or uncaught exception", "; ".join(page.errors[:5]))
    except CDPError as e:
        check(False, "the browser session", str(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(report.summary())


# Where a phase's seconds go, printed after it for a reader of the CI log: the pipelines made
# (WGSL compiled: on SwiftShader most of the time), the kernels' runs with their read-backs, and
# the float64 checks on the host. The page's FSGPU.Device methods are wrapped to count them
# (test-only; the wrappers time, they change no argument or answer) and put back on each load.
CLOCK_JS = """(() => {
  if (!window.FSGPU || FSGPU.Device.prototype.clocked) return;
  const P = FSGPU.Device.prototype, now = () => performance.now();
  const S = window.gpuClock = {made: 0, make_ms: 0, run_ms: 0, check_ms: 0, attention_ms: 0};
  const wrap = (name, after) => {
    const f = P[name];
    P[name] = async function (...a) {
      const n = Object.keys(this.pipelines).length, t = now();
      try { return await f.apply(this, a); } finally { after(now() - t, Object.keys(this.pipelines).length - n); }
    };
  };
  wrap('pipeline', (ms, made) => { S.make_ms += ms; S.made += made; });
  wrap('submit', (ms) => { S.run_ms += ms; });
  wrap('read', (ms) => { S.run_ms += ms; });
  wrap('attention', (ms) => { S.attention_ms += ms; });
  wrap('check', (ms) => { S.check_ms += ms; });
  P.clocked = true;
})()"""


class Clock:
    """Seconds a phase took, and where they went (CLOCK_JS's counts, summed over page loads)."""

    def __init__(self, page):
        self.page, self.done = page, {}
        self.start()

    def counts(self):
        got = self.page.b.eval("JSON.stringify(window.gpuClock || {})")
        return json.loads(got or "{}")

    def load(self, frag):
        """page.load, keeping the counts of the page left behind."""
        for k, v in self.counts().items():
            self.done[k] = self.done.get(k, 0) + v
        self.page.load(frag)
        self.page.b.eval(CLOCK_JS)

    def start(self):
        self.page.b.eval(CLOCK_JS)
        self.t0, self.base = time.time(), self.total()

    def total(self):
        now = self.counts()
        return {k: self.done.get(k, 0) + now.get(k, 0) for k in set(self.done) | set(now)}

    def stop(self, what):
        c, b = self.total(), self.base
        d = lambda k: c.get(k, 0) - b.get(k, 0)
        host = max(0.0, d("check_ms") - d("attention_ms"))
        print(f"        [{what}: {time.time() - self.t0:.1f} s; {d('made'):.0f} pipelines made in {d('make_ms') / 1000:.1f} s, "
              f"kernels run and read back {d('run_ms') / 1000:.1f} s, float64 checks {host / 1000:.1f} s]")
        self.start()


def gpu_call(b, expr, timeout=None):
    """An expression giving a promise, awaited in the page; its value as JSON text. timeout: the
    seconds to wait for it (the browser's own, 300, by default)."""
    return b.eval(f"({expr}).then(x => JSON.stringify(x))", await_promise=True, timeout=timeout)


def unzeroed_results(text):
    """Result matrices (Res, or arrays of them) declared inside a loop of a WGSL text with neither
    an initializer nor each element set to Res() on the lines after: on the H200 such a declaration
    was not zeroed again on each pass of the loop (prefill version 10's first run, S summed over
    every tile), whatever WGSL promises. Returns the (line number, line) of each."""
    lines = text.split("\n")
    out = []
    for k, line in enumerate(lines):
        m = re.match(r"^(\s+)var (\w+): (array<Res\b|Res\b)[^=]*;", line)
        if not m or len(m.group(1)) <= 2:      # at the function's top: zeroed once, as it must be
            continue
        name = m.group(2)
        after = "\n".join(lines[k + 1:k + 5])
        if not re.search(r"\b%s(\[\w+\])? = Res\(\);" % name, after):
            out.append((k + 1, line.strip()))
    return out


VKSTATS_FIXTURE = """bench pipeline begin fwd_sgmat8.wgsl main subgroups [BK=16 D=64] {}
vkstats pipeline 7 module 00000000000000aa spirv 58748 wg 128: exe "main" subgroup 32 | Register Count=175; Binary Size=53376; Stack Size=0; Local Memory Size=68719476736; Shared Memory Size=21520;
bench pipeline end
bench pipeline begin fwd_sgmat8.wgsl main subgroups [BK=16 D=64] {}
bench pipeline end
vkstats pipeline 8 module 00000000000000bb spirv 1888: exe "main" subgroup 32 | Register Count=16; Binary Size=640;
bench pipeline begin fwd_v4.wgsl main subgroups [NODOT\x1b[31m] {"D":64}
vkstats pipeline 9 module 00000000000000cc spirv 28560: exe "main" subgroup 32 | Register Count=135; Binary Size=34944; Stack Size=0; Local Memory Size=68719476736; Shared Memory Size=33280;
bench pipeline end
"""


def fnv1a64(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def vkstats_checks(seed, webgpu):
    """The layer bench/webgpu/vkstats: built, loaded under Dawn on SwiftShader, its lines where bench.js's pairs put them."""
    summary = os.path.join(webgpu, "vkstats", "summary.py")
    with tempfile.TemporaryDirectory() as tmp:
        fixture = os.path.join(tmp, "fixture.log")
        with open(fixture, "w", encoding="utf-8") as f:
            f.write(VKSTATS_FIXTURE)
        r = subprocess.run([sys.executable, summary, fixture], capture_output=True, text=True, timeout=60)
        rows = [x for x in r.stdout.splitlines() if x.startswith("| fwd")]
        check(r.returncode == 0 and len(rows) == 2 and "| invocations | Register Count | Binary Size |" in r.stdout
              and "| 128 | 175 | 53376 | 0 | 68719476736 | 21520 | 8 (2) |" in rows[0] and rows[1].endswith("| - | 135 | 34944 | 0 | 68719476736 | 33280 | - |")
              and "[NODOT?[31m]" in rows[1] and "\x1b" not in r.stdout
              and "2 kernels (2 pipelines of bench.js, 1 made outside its pairs)" in r.stdout,
              "vkstats/summary.py makes one row a kernel of a recorded log (the same kernel twice one row, a pipeline outside "
              "bench.js's pairs counted apart, a control character shown as ?), and from 175 registers and 21.5 KB a workgroup "
              "of 128 counts 8 warps, 2 workgroups an SM of Hopper (none without the workgroup's size)", (r.stdout + r.stderr)[-600:])
        lacks = [what for what, ok in (("gcc", shutil.which("gcc")),
                                       ("the Vulkan headers (libvulkan-dev)", os.path.exists("/usr/include/vulkan/vk_layer.h"))) if not ok]
        if lacks:
            print(f"SKIP: the Vulkan layer bench/webgpu/vkstats: no {', '.join(lacks)} here to build it")
            return
        layer = os.path.join(tmp, "layer")
        r = subprocess.run(["bash", os.path.join(webgpu, "vkstats", "build.sh"), layer], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0 and os.path.exists(os.path.join(layer, "libVkLayer_fs_stats.so")),
              "bench/webgpu/vkstats/build.sh builds the layer, warning-free", (r.stdout + r.stderr)[-600:])
        if r.returncode:
            return
        icd = next((p for p in ("/usr/lib/chromium/vk_swiftshader_icd.json", "/usr/lib64/chromium/vk_swiftshader_icd.json")
                    if os.path.exists(p)), None)
        lacks = [what for what, ok in (("Chromium's SwiftShader Vulkan driver", icd),
                                       ("Dawn for Node (npm ci --prefix bench/webgpu)", os.path.isdir(os.path.join(webgpu, "node_modules", "webgpu"))))
                 if not ok]
        if lacks:
            print(f"SKIP: the Vulkan layer bench/webgpu/vkstats under Dawn: no {', '.join(lacks)} here")
            return
        log, spirv = os.path.join(tmp, "vkstats.log"), os.path.join(tmp, "spirv")
        os.mkdir(spirv)
        js = ("const [fsgpu, bench, kdir, log, seed] = process.argv.slice(1);"
              "const w = require('webgpu'); Object.assign(globalThis, w.globals);"
              "const FSGPU = require(fsgpu), fs = require('fs'), path = require('path');"
              "(async () => {"
              "  const gpu = w.create(['backend=vulkan', 'enable-dawn-features=allow_unsafe_apis']);"   # (kept: Dawn lives while it does)
              "  const dev = await FSGPU.open(gpu, name => fs.readFileSync(path.join(kdir, name + '.wgsl'), 'utf8'));"
              "  require(bench).markPipelines(dev, log);"
              "  const p = FSGPU.randomProblem(Number(seed), {n_q_heads: 2, n_kv_heads: 1, n_q: 40, n_kv: 50, d: 32, mask: 'causal'});"
              "  const a = await dev.check('prefill-v1', p, {sample: 32}), b = await dev.check('prefill-v1', p, {sample: 32});"
              "  console.log(JSON.stringify({ok: a.ok && b.ok, worst: a.worst, adapter: dev.info.description}));"
              "  dev.destroy(); process.exit(0);"
              "})().catch(e => { console.log('ERROR ' + e.message); process.exit(1); });")
        env = dict(os.environ, VK_ICD_FILENAMES=icd, VK_DRIVER_FILES=icd, VK_LAYER_PATH=layer, VK_INSTANCE_LAYERS="VK_LAYER_FS_stats",
                   FS_VKSTATS=log, FS_VKSTATS_SPIRV=spirv)
        kdir = os.path.join(webgpu, "..", "..", "src", "kernels", "webgpu")
        r = subprocess.run(["node", "-e", js, os.path.join(kdir, "fsgpu.js"), os.path.join(webgpu, "bench.js"), kdir, log, str(seed)],
                           capture_output=True, text=True, timeout=180, env=env, cwd=webgpu)
        out = r.stdout.strip().splitlines()
        try:
            said = json.loads(out[-1]) if out else {}
        except ValueError:
            said = {}
        lines = open(log, encoding="utf-8", errors="replace").read().splitlines() if os.path.exists(log) else []
        pairs, inside, outside = [], None, 0
        for x in lines:
            if x.startswith("bench pipeline begin "):
                inside = []
            elif x == "bench pipeline end" and inside is not None:
                pairs.append(inside)
                inside = None
            elif x.startswith("vkstats pipeline "):
                if inside is None:
                    outside += 1
                else:
                    inside.append(x)
        made = [p[0] for p in pairs if len(p) == 1]
        hashes = [re.match(r"vkstats pipeline \d+ module ([0-9a-f]{16}) spirv (\d+) wg (\d+):", x) for x in made]
        files_ok = bool(hashes) and all(m and os.path.exists(os.path.join(spirv, m.group(1) + ".spv")) and
                                        fnv1a64(open(os.path.join(spirv, m.group(1) + ".spv"), "rb").read()) == int(m.group(1), 16) and
                                        os.path.getsize(os.path.join(spirv, m.group(1) + ".spv")) == int(m.group(2)) and
                                        int(m.group(3)) == 64 for m in hashes)   # (prefill version 1: 64 invocations)
        check(r.returncode == 0 and said.get("ok") is True and "SwiftShader" in str(said.get("adapter"))
              and any(x.startswith("vkstats device: ") for x in lines)
              and made and all(len(p) <= 1 for p in pairs) and any(not p for p in pairs) and files_ok,
              "the layer loads under Dawn on SwiftShader (no statistics there, as it says), passes every call through (prefill "
              "version 1 checked through it is right), and writes one record a pipeline between bench.js's begin and end lines "
              "(a pipeline the host has already made: an empty pair), each module's SPIR-V under its FNV-1a hash and its "
              "workgroup's 64 invocations read from it",
              f"rc {r.returncode}, {said or out[-3:]}, {len(pairs)} pairs, {len(made)} with a record, {outside} records outside, "
              f"SPIR-V files right: {files_ok}; {(r.stderr or '')[-300:]}")
        r = subprocess.run([sys.executable, summary, log], capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and "no statistics" in r.stderr, "vkstats/summary.py says when a log holds no statistics (exit 1)",
              (r.stdout + r.stderr)[-300:])


def node_checks(seed):
    """The kernels SwiftShader cannot run, as far as this machine can check them (from Node)."""
    webgpu = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "webgpu")
    kdir = os.path.join(webgpu, "..", "..", "src", "kernels", "webgpu")
    bad = [(f, n, t) for f in sorted(os.listdir(kdir)) if f.startswith("fwd_sgmat") and f.endswith(".wgsl")
           for n, t in unzeroed_results(open(os.path.join(kdir, f), encoding="utf-8").read())]
    planted = unzeroed_results("fn f() {\n  for (;;) {\n    var s: array<Res, RB>;\n    s[0] = f(s[0]);\n  }\n}")
    check(not bad and len(planted) == 1,
          "every result matrix declared inside a loop of the subgroup-matrix kernels is zeroed explicitly "
          "(a planted bare declaration is found)", str(bad or planted))
    r = subprocess.run(["node", os.path.join(webgpu, "emulate_sgmat.js"), "--seed", str(seed), "--count", "12"],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0 and "prefill v7: 12 of 12" in r.stdout and "prefill v8: 12 of 12" in r.stdout,
          "prefill versions 7 and 8 (subgroup matrices; 9, 10, 13, 14 and 16 to 20 are forms of 8, among its cases) transcribed "
          "into JavaScript match float64 on 12 random problems (emulate_sgmat.js)", (r.stdout + r.stderr)[-600:])
    # faults planted in version 8's transcription must fail: a row's maximum not shared by its
    # lanes, O not rescaled when m moves, version 10's second row block of S stored over the first,
    # version 13's first K tile staged from key 0 instead of the block's first visited tile,
    # version 14's untested scores on partial tiles too, version 18's second block of a pair begun
    # with the first one's O, version 19's tile loop stopped a tile short of the last row's keys,
    # its FASTC form's (version 20's) causal test one key short
    for fault in ("noshuffle", "alpha1", "rbstore", "firstk", "fasts", "pairzero", "rangeend", "fastc"):
        r = subprocess.run(["node", os.path.join(webgpu, "emulate_sgmat.js"), "--seed", str(seed), "--count", "12", "--fault", fault],
                           capture_output=True, text=True, timeout=300)
        check(r.returncode == 1 and "FAIL v8" in r.stdout, f"a fault planted in version 8's transcription ({fault}) is caught",
              (r.stdout + r.stderr)[-400:])
    # the benchmark's memo of float64 rows (referenceRowShared; plain JavaScript, no Dawn needed): the
    # same numbers as referenceRow, one object the second time, and computed anew for a new mask, new
    # (rounded) arrays, a new V or Q alone
    js = ("const F=require(process.argv[1]);const seed=Number(process.argv[2]);const memo=new WeakMap();"
          "const p=F.randomProblem(seed,{n_q_heads:4,n_kv_heads:2,n_q:24,n_kv:40,d:16});"
          "const c=Object.assign({},p,{mask:Object.assign({},p.mask,{kind:F.MASK.causal})});"
          "const h=Object.assign({},p,{k:F.half1(p.k).r,v:F.half1(p.v).r});"
          "const q=F.randomProblem(seed+1,{n_q_heads:4,n_kv_heads:2,n_q:24,n_kv:40,d:16});"
          "const v=Object.assign({},p,{v:q.v}),g=Object.assign({},p,{q:q.q});"
          "const same=(a,b)=>a.l===b.l&&a.lse===b.lse&&a.o.every((x,i)=>x===b.o[i]);let ok=true,n=0;"
          "for(const x of [p,c,h,q,v,g])for(const [hh,i] of [[0,0],[1,5],[3,23],[2,7]]){"
          "const a=F.referenceRowShared(memo,x,hh,i),b=F.referenceRowShared(memo,x,hh,i);"
          "ok=ok&&a===b&&same(a,F.referenceRow(x,hh,i));n++;}"
          "const d1=F.referenceRowShared(memo,p,1,5),d2=F.referenceRowShared(memo,c,1,5),d3=F.referenceRowShared(memo,q,1,5);"
          "console.log(JSON.stringify({ok,n,apart:!same(d1,d2)&&!same(d1,d3)}));")
    r = subprocess.run(["node", "-e", js, os.path.join(kdir, "fsgpu.js"), str(seed)], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and r.stdout.strip() == '{"ok":true,"n":24,"apart":true}',
          "the benchmark's memo of float64 rows gives referenceRow's numbers, the same object a second time, and new rows for "
          f"a causal mask, float16-rounded K and V, a new V or Q alone and a new problem (seed {seed})", (r.stdout + r.stderr)[-400:])
    vkstats_checks(seed, webgpu)   # (summary.py needs no Dawn; the layer's own part says when it is missing)
    if not os.path.isdir(os.path.join(webgpu, "node_modules", "webgpu")):
        print("SKIP: validate.js (every kernel's WGSL compiled by Dawn's null backend): no Dawn for Node here "
              "(npm ci --prefix bench/webgpu)")
        return
    r = subprocess.run(["node", os.path.join(webgpu, "validate.js")], capture_output=True, text=True, timeout=300)
    if r.returncode == 2:
        print(f"SKIP: validate.js: {(r.stdout + r.stderr).strip()[-300:]}")
        return
    check(r.returncode == 0, "every kernel's WGSL in every form (the shader-f16 ones and prefill versions 7 and 8 on subgroup "
          "matrices among them, and their ablation and variant forms) compiles on Dawn's null backend (validate.js)",
          (r.stdout + r.stderr)[-600:])
    # sgmat_probe.js (the device call's probes of prefill version 7): every kernel compiled, its own side run
    # end to end on the null backend, which computes nothing (so its PASS and FAIL mean nothing; ERROR does)
    r = subprocess.run(["node", os.path.join(webgpu, "sgmat_probe.js"), "--null", "--seed", str(seed)],
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    errors = [x for x in out.splitlines() if ": ERROR" in x]
    check(r.returncode in (0, 1) and "summary:" in out and not errors, "sgmat_probe.js's kernels compile and its checks run "
          "on Dawn's null backend (no ERROR line)", "\n".join(errors[:3]) or out[-600:])
    # bench.js --ablation (the device call's ablation of versions 7 and 8): every form made, bound,
    # run and timed on the null backend (which computes nothing), its table printed; a form may
    # fail there only for the null backend's 16 KiB of workgroup memory, or (64 invocations) for
    # its own 128-lane subgroups, which the adapter shown to fsgpu.js hides
    r = subprocess.run(["node", os.path.join(webgpu, "bench.js"), "--null", "--ablation", "--ablation-n", "256", "--probe-sizes", "4,8", "--seed", str(seed),
                        "--decode-ablation-n", "512",
                        "--only", "prefill-v5,prefill-v7,prefill-v8,prefill-v9,prefill-v10,prefill-v11,prefill-v13,prefill-v14,prefill-v16,prefill-v17,prefill-v18,prefill-v19,prefill-v20,decode-v9,decode-v9-f16"],
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    errors = [x for x in out.splitlines() if x.startswith("ablation: ") and "more workgroup memory" not in x
              and "multiple of the device maxSubgroupSize" not in x]
    v8rows = [x for x in out.splitlines() if x.startswith("| prefill-v8")]
    drows = [x for x in out.splitlines() if x.startswith("| 512 | ")]   # --decode-ablation's: 2 storages x (probe + 6 forms)
    # versions 5's and 11's forms (float32: they fit the null backend's 16 KiB at d = 64, the table's
    # last two columns)
    v5rows = [x for x in out.splitlines() if x.startswith(("| prefill-v5 NO", "| prefill-v11 NO"))]
    check(r.returncode == 0 and "| prefill-v7 NOSOFT |" in out and len(v8rows) >= 8 and "| prefill-v8 UNROLL |" in out and not errors
          and not any("error" in x for x in v8rows if x.startswith(("| prefill-v8 |", "| prefill-v8 NO")))
          and "| prefill-v10 NOQK |" in out and "| prefill-v13 NOQK |" in out and "| prefill-v14 NOQK |" in out and "| prefill-v16 NOQK |" in out and "| prefill-v17 NOQK |" in out and "| prefill-v18 NOQK |" in out and "| prefill-v19 NOQK |" in out and "| prefill-v20 NOQK |" in out and len(v5rows) == 12 and not any("error" in x.split("|")[4] for x in v5rows)
          and "probe at 4 MiB: copy" in out and "probe at 8 MiB: copy" in out
          and len(drows) == 14 and not any(x.split("|")[3].strip() in ("error", "-") for x in drows) and "decode ablation: " not in out,
          "bench.js --ablation's forms and variants (versions 5, 7 to 11, 13, 14 and 16 to 20) and --decode-ablation's forms of decode "
          "version 9 (both storages, beside the read probe) are made, bound and timed on Dawn's null "
          "backend (bench.js --null), and --probe-sizes' probes at 4 and 8 MiB run there", "\n".join(errors[:3]) or out[-600:])
    # fsgpu.js's //#for directive (fwd_sgmat8.wgsl's loops): a for loop, or with UNROLL its body
    # once a step in braces, the step a constant (nested, the count an expression of the defs)
    js = ("const F=require(process.argv[1]);const src=['//#for a D / SK','x[a] = 0;','//#for b min(BK, D) / SN','y[a][b] = 1;',"
          "'//#endfor','//#endfor'].join('\\n');const d={D:32,SK:16,BK:16,SN:8};"
          "console.log(JSON.stringify([F.preprocess(src,false,d),F.preprocess(src,false,Object.assign({UNROLL:true},d))]));")
    r = subprocess.run(["node", "-e", js, os.path.join(webgpu, "..", "..", "src", "kernels", "webgpu", "fsgpu.js")],
                       capture_output=True, text=True, timeout=60)
    try:
        loop, unrolled = (x.split("\n")[4:] for x in json.loads(r.stdout))
    except (ValueError, TypeError):
        loop, unrolled = [], []
    check(loop == ["for (var a = 0u; a < D / SK; a++) {", "x[a] = 0;", "for (var b = 0u; b < min(BK, D) / SN; b++) {", "y[a][b] = 1;", "}", "}"]
          and [x for x in unrolled if x not in "{}"] == ["x[0u] = 0;", "y[0u][0u] = 1;", "y[0u][1u] = 1;", "x[1u] = 0;", "y[1u][0u] = 1;", "y[1u][1u] = 1;"]
          and unrolled.count("{") == 6 == unrolled.count("}"),
          "fsgpu.js's //#for is a for loop, and with UNROLL its body once a step, the step a constant", (r.stdout + r.stderr)[-400:])
    # prefill version 7 is offered where the adapter has an f16 x f16 -> f32 configuration whose M
    # divides the subgroup size, and not where it has none (its reason then names what is missing)
    js = ("const F=require(process.argv[1]);const w=require('webgpu');Object.assign(globalThis,w.globals);"
          "const g=w.create(['backend=null','enable-dawn-features=allow_unsafe_apis']);"
          "const cfg=[{componentType:'f16',resultComponentType:'f32',M:16,N:16,K:16}];"
          "const s={requestAdapter:async o=>{const a=await g.requestAdapter(o);const i={vendor:'null',subgroupMinSize:32,"
          "subgroupMaxSize:32,subgroupMatrixConfigs:cfg};return new Proxy(a,{get(t,k){if(k==='info')return i;"
          "const v=t[k];return typeof v==='function'?v.bind(t):v;}});}};"
          "(async()=>{const r=[];for(const c of [cfg,[{componentType:'u8',resultComponentType:'u32',M:16,N:16,K:32}]]){"
          "cfg.splice(0,cfg.length,...c);const d=await F.open(s,()=> '');"
          "r.push(d.kernels['prefill-v7'].absent());d.destroy();}console.log(JSON.stringify(r));process.exit(0);})()")
    r = subprocess.run(["node", "-e", js, os.path.join(webgpu, "..", "..", "src", "kernels", "webgpu", "fsgpu.js")],
                       capture_output=True, text=True, timeout=60, cwd=webgpu)
    said = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    check(said.startswith("[null,") and "f16" in said and said.endswith("]"), "prefill version 7 is offered with an f16 x f16 -> "
          "f32 configuration, and not with only an 8-bit one (the reason names what it needs)", (said or r.stderr)[-400:])


def run(page, b, flashstep, seed, tmp):
    # one head size a run for the full-size kernels' random checks (each pipeline costs seconds to
    # make on SwiftShader; both sizes over two runs, the seed says which)
    head_d = (32, 64)[seed % 2]
    print(f"head size of this run's random kernel checks: {head_d} (seed {seed})")
    node_checks(seed)
    page.load("#000_04/3")
    clock = Clock(page)
    info = json.loads(gpu_call(b, "Module.flashstep.gpu.open()"))
    check(bool(info.get("vendor") or info.get("description")) and "limits" in info, "WebGPU opens an adapter (SwiftShader here)", str(info)[:200])
    sgmat = ["prefill-v7", "prefill-v8", "prefill-v9", "prefill-v10", "prefill-v13", "prefill-v14", "prefill-v16",
             "prefill-v17", "prefill-v18", "prefill-v19", "prefill-v20"]   # shader-f16 and subgroup matrices
    lacks = [k for k in ["prefill-v6", "decode-v6"] + sgmat
             if not info.get("f16") or (k in sgmat and not info.get("subgroup_matrix_kernel"))]
    if lacks:
        print(f"SKIP on this adapter: {', '.join(lacks)} (it offers shader-f16: {'yes' if info.get('f16') else 'no'}; "
              f"a subgroup matrix configuration prefill-v7 takes: {'yes' if info.get('subgroup_matrix_kernel') else 'no'})")
    page.click_id("b-gpu")
    page.b.wait_for("document.getElementById('gpu-kernels').childElementCount >= 16", what="the kernel list", timeout=30)
    adapter = page.text_of("gpu-adapter")
    check("subgroups" in adapter and "workgroup memory" in adapter, "the panel names the adapter, its features and limits", adapter)
    kernels = b.eval("[...document.querySelectorAll('#gpu-kernels dt')].map(x => x.textContent)")
    check(len(kernels) >= 9 and any("fwd_v3.wgsl" in k for k in kernels) and any("akunu.wgsl" in k for k in kernels)
          and any("akunu_prefill_v1.wgsl" in k for k in kernels), "the panel lists every kernel with its file", str(kernels))

    clock.stop("the adapter and the kernel list")

    # every lesson: traced and matching, or refused for a reason the test knows
    matched, refused, bad, kernel_runs, kernel_bad = [], [], [], 0, []
    # the full-size kernels on the lesson's own problem too, for one of five lessons a run, the seed
    # says which (each lesson's head size makes a pipeline anew for every kernel: 16 of them, 60-80 s
    # on SwiftShader)
    full_set = [FULL_LESSONS[seed % 5]]
    print(f"the full-size kernels on lesson {full_set[0]}'s own problem this run (seed {seed})")
    for name in lesson_names(flashstep):
        b.eval(f"Module.flashstep.open({json.dumps(name)}, 0)")
        full = name.startswith(tuple(full_set))
        r = json.loads(gpu_call(b, f"Module.flashstep.gpu.trace({'true' if full else 'false'})") or "null")
        for k in (r or {}).get("kernels", []):
            kernel_runs += not k["said"].startswith("not run")
            if not k["ok"]:
                kernel_bad.append(f"{name} {k['name']}: {k['said']}")
        if r and r.get("ok") and r.get("match"):
            matched.append(name)
        elif r and not r.get("ok") and any(w in r.get("why", "") for w in REFUSALS):
            refused.append(name)
        else:
            bad.append(f"{name}: {r}")
    check(not bad and len(matched) >= 20, f"{len(matched)} lessons traced on the GPU match the engine event by event, "
          f"{len(refused)} say why no WGSL kernel traces them", "; ".join(bad[:4]))
    # (how many kernels take the problem depends on the lesson: 000_08's head size of 2 leaves two,
    # most want a multiple of 4; 003_03's one query and 96 keys most; every kernel runs in the
    # check against float64 below)
    check(not kernel_bad and kernel_runs >= 1, f"the full-size kernels on a lesson's own problem: {kernel_runs} runs "
          "match float64", "; ".join(kernel_bad[:3]))
    for must in ("000_04_tiled_causal_n6", "000_07_tree_mask", "000_08_gqa_32_8", "003_03_parallel_decode", "003_07_softcap",
                 "003_08_sliding_window", "000_05_flashdecoding_merge", "000_02_online_attention"):
        check(must in matched, f"{must} traced on the GPU")
    msg = page.text_of("gpu-msg")
    check("matches" in msg or "not traced" in msg, "the panel says what the last trace did", msg)

    clock.stop("every lesson traced")

    # random problems through "Your problem"
    rng = random.Random(seed)
    fails = []
    for k in range(12):
        files, opts = random_problem(rng)
        args = []
        for key, text in files.items():
            b.eval(f"Module.FS.writeFile('/input/{key}.txt', {json.dumps(text)})")
            args += [f"--{key}", f"{key}.txt"]
        args += opts
        rc = b.eval("Module.flashstep.problem(" + json.dumps("\n".join(args)) + ")")
        if rc != 0:
            fails.append(f"case {k} not loaded: {' '.join(args)}")
            continue
        # the full-size kernels on a third of them (k mod 3 = seed mod 3): each problem's head size
        # (1 to 6) makes their pipelines anew, up to 34 of them a run, two minutes beside the other
        # lane; the trace on every one
        full = k % 3 == seed % 3
        r = json.loads(gpu_call(b, f"Module.flashstep.gpu.trace({'true' if full else 'false'})") or "null")
        if not (r and r.get("ok") and r.get("match")):
            fails.append(f"case {k} ({' '.join(opts)}): {r}")
        # the full-size kernels that take the problem ran on it too: each must match float64
        fails += [f"case {k} ({' '.join(opts)}) {x['name']}: {x['said']}" for x in (r or {}).get("kernels", []) if not x["ok"]]
    check(not fails, "12 random problems (GQA, masks, trees, soft-cap, both forms and orders, exp2, decode splits and "
          "parts, both merges) traced on the GPU match the engine, and the full-size kernels that take four of them float64",
          f"seed {seed}: " + "; ".join(fails[:3]))

    clock.stop("12 random problems traced")

    # the GPU trace download: the engine's events, kind for kind (the lesson opened in this page:
    # a fresh page would open the device again and compile its pipelines anew, 5 s on SwiftShader)
    b.eval("Module.flashstep.open('000_04_tiled_causal_n6', 3)")
    r = json.loads(gpu_call(b, "Module.flashstep.gpu.trace(false)"))
    if b.eval("document.getElementById('p-gpu').hidden"):
        page.click_id("b-gpu")
    _, got = page.download("gpu-trace-dl")
    eng = subprocess.run([flashstep, "trace", "--q", "assets/doc000_tiled/Q.txt", "--k", "assets/doc000_tiled/K.txt", "--v",
                          "assets/doc000_tiled/V.txt", "--bq", "2", "--bk", "3", "--mask", "causal", "--form", "unnormalized",
                          "--format", "jsonl"], capture_output=True, text=True, cwd=check_page.ROOT).stdout.splitlines()
    gl = got.decode().splitlines() if got else []
    kinds = lambda lines: [json.loads(x).get("kind") for x in lines if x.strip().startswith("{") and '"kind"' in x]
    check(r.get("match") and len(gl) > 10 and kinds(gl) == kinds(eng), "the GPU trace download has the engine's events, kind for kind",
          f"{len(gl)} lines against {len(eng)}")

    clock.stop("the trace download")

    # planted faults: a third of them a run, the seed says which (each makes its kernel's pipeline
    # anew, 5-8 s on SwiftShader); three runs in a row plant every one
    faults = [f for k, f in enumerate(FAULTS) if k % 3 == seed % 3]
    print(f"planted faults this run: {len(faults)} of {len(FAULTS)} (those k with k mod 3 = {seed % 3}; seed {seed})")
    for file, old, new, what, *rest in faults:
        # the problem's own settings: a split length, or a dict of them
        sets = rest[0] if rest and isinstance(rest[0], dict) else {"split_len": rest[0]} if rest else {}
        loader = ("(name) => Module.flashstep.gpu.wgsl(name).then((t) => { if (name !== %s) return t; "
                  "if (!t.includes(%s)) throw new Error('fault text not found in ' + name); return t.split(%s).join(%s); })"
                  % (json.dumps(file), json.dumps(old), json.dumps(old), json.dumps(new)))
        if what == "trace":
            clock.load("#000_04/3")   # (a fresh page: open the faulty kernels after it)
        gpu_call(b, f"Module.flashstep.gpu.open({loader})")
        if what == "trace":   # (the traced kernel alone: the full-size ones would be compiled for nothing)
            r = json.loads(gpu_call(b, "Module.flashstep.gpu.trace(false)") or "null")
            caught = bool(r) and r.get("ok") and not r.get("match")
            detail = str(r)
        else:
            # head size 32 where the kernel takes it (a smaller pipeline to make), else 64
            p = ("[32, 64].map((d) => Object.assign(FSGPU.randomProblem(%d, {n_q_heads: 4, n_kv_heads: 2, n_q: %d, n_kv: 100, d, mask: 'causal'}), %s))"
                 ".find((p) => !Module.flashstep.gpu.device().kernels[%s].ok(p))"
                 % (seed, 1 if what.startswith("decode") else 70, json.dumps(sets), json.dumps(what)))
            r = json.loads(gpu_call(b, f"Module.flashstep.gpu.open().then(() => Module.flashstep.gpu.device().check({json.dumps(what)}, {p}))")
                           or "null")
            caught = bool(r) and not r["ok"]
            detail = str(r)
        msg = page.text_of("gpu-msg")
        check(caught and "fault text not found" not in msg, f"a planted fault ({new} in {file}.wgsl) is caught", detail[:300])
    gpu_call(b, "Module.flashstep.gpu.open(null)")
    clock.load("#000_04/3")
    r = json.loads(gpu_call(b, "Module.flashstep.gpu.trace(false)") or "null")
    check(r and r.get("match"), "the traced kernel from the page's own files matches again after the faults")
    clock.stop("the planted faults")

    # every full-size kernel against float64, from the page's own files again after the faults.
    # Then the benchmark on the same device: its rows' pipelines (the same kernels, sizes and
    # constants) are made here once, not again after a fresh page.
    # (130-170 s on this 2-core machine alone, 2026-11-30, most of it compiling its 52-56 pipelines
    # on SwiftShader, one head size a run; both sizes took 543 s inside make test, beside
    # check_page.py's browser and the sanitized build: a hang, not a slow machine, is what its
    # limit is for)
    # (the kernels' forms without subgroups: half of them a run, the seed says which half)
    res = json.loads(gpu_call(b, f"Module.flashstep.gpu.check({seed}, 6, [{head_d}], [{seed // 2 % 2}, 2])", timeout=900) or "null")
    # a kernel with no run ("--"): only one this adapter lacks a feature for (printed as skipped above)
    unran = [x.split()[1] for x in (res or {}).get("lines", [])
             if x.startswith("--") and x.split()[2] == "subgroups" and x.split()[1] not in lacks]
    check(res and res["bad"] == 0 and res["ran"] >= 30 and not unran,
          f"every kernel against float64 on random problems ({res and res['ran']} runs, with subgroups, and half of them without; "
          f"head size {head_d}, or the other for a kernel that does not take it)",
          (f"no run: {', '.join(unran)}\n" if unran else "") + ("\n".join(res["lines"]) if res else "no answer"))
    clock.stop("every kernel against float64")

    # decode versions 7 and 10: float64, their counters back at 0, O bit for bit their two-pass
    # twins' (versions 5 and 9)
    # (version 7 in its four forms; version 10, whose forms and twins make three pipelines each
    # here, in two of them a run, the seed says which: a float32 and a float16 one, one of them
    # paged; two runs in a row take all four)
    cases = [(dict(c, d=head_d), split) for c, split in FUSED_CASES]
    names = ["decode-v7", "decode-v7-f16", "decode-v7-paged", "decode-v7-paged-f16"] + \
        [["decode-v10", "decode-v10-paged-f16"], ["decode-v10-f16", "decode-v10-paged"]][seed // 3 % 2]
    print(f"decode version 10's forms this run: {', '.join(names[4:])} (seed {seed})")
    js = FUSED_JS.replace("CASES", json.dumps(cases)).replace("SEED", str(seed)).replace("NAMES", json.dumps(names))
    res = json.loads(gpu_call(b, js) or "null") or []
    ran = [r for r in res if "skip" not in r]
    bad = [r for r in ran if not r["ok"]]
    splits = sorted({r["n_split"] for r in ran})
    v10 = [r for r in ran if r["name"].startswith("decode-v10")]
    check(len(res) == len(names) * len(FUSED_CASES) and not bad and 1 in splits and max(splits, default=0) >= 4
          and len(v10) >= 2 * (len(FUSED_CASES) - 1) and max((r["n_split"] for r in v10), default=0) >= 3,
          f"decode version 7 in its four forms and version 10 in two on {len(FUSED_CASES)} problems ({len(ran)} runs; {', '.join(map(str, splits))} "
          "splits a KV head; GQA; causal, window with soft-cap, none, a bitmask): within 1e-4 of float64, their counters back at 0 "
          "after each dispatch, and O bit for bit their two-pass twins' (versions 5 and 9)",
          f"seed {seed}: " + json.dumps(bad[:2]) + " skipped: " + json.dumps([r for r in res if "skip" in r][:2]))
    clock.stop("decode versions 7 and 10's fused merge")

    # the benchmark's smallest plan, at this run's head size where a kernel takes it (the rows then
    # reuse the pipelines made above)
    res = json.loads(gpu_call(b, f"Module.flashstep.gpu.bench('tiny', {seed}, {head_d})") or "null")
    rows = res["rows"] if res else []
    good = [r for r in rows if r.get("ms", 0) > 0 and r.get("check", {}).get("ok")]
    check(res and len(rows) >= 8 and len(good) == len(rows) and res["probe"]["copy_gbps"] > 0,
          f"the benchmark (tiny plan) checks and times {len(good)} of {len(rows)} rows beside the probes",
          json.dumps([r for r in rows if r not in good])[:400])
    check(not b.eval("document.getElementById('gpu-chart').hidden") and "TFLOP/s" in page.text_of("gpu-table"),
          "its table and chart are shown")
    # its columns line up however long a kernel's name (decode-v2-paged-f16): each row's n_q and
    # n_kv end where the header's names end
    lines = page.text_of("gpu-table").split("\n")
    ends = [lines[1].index(c) + len(c) for c in (" n_q", " n_kv")] if len(lines) > 2 and " n_kv" in lines[1] else []
    askew = [x for x in lines[2:] if not ends or any(not x[e - 1].isdigit() or x[e:e + 1] != " " for e in ends)]
    check(ends and not askew, "its table's columns line up under the header", "\n".join(lines[1:2] + askew[:3]))
    if b.eval("document.getElementById('p-gpu').hidden"):
        page.click_id("b-gpu")
    _, got = page.download("gpu-json")
    try:
        saved = json.loads(got)
    except (TypeError, ValueError):
        saved = None
    check(saved and len(saved["rows"]) == len(rows) and saved["device"]["limits"], "its JSON download holds every row and the adapter")
    clock.stop("the benchmark's tiny plan")

    # a lost device (the traced kernel only: the others would be compiled anew for nothing more)
    b.eval("Module.flashstep.gpu.lose()")
    time.sleep(0.5)
    r = json.loads(gpu_call(b, "Module.flashstep.gpu.trace(false)") or "null")
    if not (r and r.get("match")):
        r = json.loads(gpu_call(b, "Module.flashstep.gpu.trace(false)") or "null")
    check(r and r.get("match"), "a lost device is opened again on the next run")
    clock.stop("a lost device")


if __name__ == "__main__":
    main()
