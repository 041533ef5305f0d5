#!/usr/bin/env python3
"""check_fp8_cli.py: `flashstep fp8` and `trace --fp8`, checked from the outside.

On random matrices drawn fresh each run (seed printed; FS_SEED replays): the RMSE that `fp8`
prints for a recipe equals the RMSE of the output that `trace --fp8` prints for the same recipe
against a float64 reference computed here; the trace's scales are amax / 448 as the recipe says;
--fp8-values records the exact and rounded inputs. FlashAttention-3's measurement orders the
formats as their precision says (f32 < f16 < bf16 < e4m3 < e5m2). Every kind of bad input: exit
code 2, file:line:column or the recipe's column on stderr, and --help names every option.
Usage: check_fp8_cli.py BUILD/flashstep
"""
import json, math, os, sys

import cli_test
from cli_test import check

exe = sys.argv[1]
rng = cli_test.random_source()
tmp = cli_test.scratch("fs-fp8-")


def write(name, rows):
    return cli_test.write_rows(tmp, name, rows)


def reference(Q, K, V, causal):
    nq, nk, d = len(Q), len(K), len(Q[0])
    out = []
    for i in range(nq):
        s = [sum(a * b for a, b in zip(Q[i], K[j])) / math.sqrt(d) for j in range(nk)]
        vis = [j for j in range(nk) if not causal or j <= i + nk - nq]
        m = max(s[j] for j in vis)
        p = {j: math.exp(s[j] - m) for j in vis}
        l = sum(p.values())
        out.append([sum(p[j] * V[j][c] for j in vis) / l for c in range(len(V[0]))])
    return out


# ---- help ---------------------------------------------------------------------------------------
rc, out, err = cli_test.run(exe, "fp8", ["--help"])
check(rc == 0, f"fp8 --help exits {rc}")
for opt in ["--n", "--d", "--seed", "--outliers", "--outlier-std", "--q", "--k", "--v", "--bq", "--bk", "--mask",
            "--recipe", "--format"]:
    check(opt + " " in out, f"fp8 --help names {opt}")
rc, out, err = cli_test.run(exe, "trace", ["--help"])
check("--fp8 RECIPE" in out and "--fp8-values" in out, "trace --help names --fp8 and --fp8-values")

# ---- the measurement, small ----------------------------------------------------------------------
rc, out, err = cli_test.run(exe, "fp8", ["--n", "256", "--d", "64", "--seed", str(rng.randrange(1 << 30)), "--format", "jsonl"])
check(rc == 0, f"fp8 --format jsonl exits {rc}: {err}")
rows = {json.loads(line)["recipe"]: json.loads(line)["rmse"] for line in out.splitlines()}
check(len(rows) == 10, f"the default list has 10 recipes, got {len(rows)}")
r = lambda k: rows.get(k, math.nan)
check(r("f32") < r("f16 none p-scale=1") < r("bf16 none p-scale=1") < r("e4m3 tensor p-scale=256") < r("e5m2 tensor p-scale=256"),
      f"precision orders the errors: {rows}")
check(r("f32") < 1e-6, f"float32's error is float32's size: {r('f32')}")
rc, out, err = cli_test.run(exe, "fp8", ["--n", "64", "--d", "16"])
check(rc == 0 and "vs e4m3 per tensor" in out and "e4m3 block hadamard seed=1 p-scale=256" in out, "the table: " + out[:300])

# ---- fp8 and trace --fp8 agree, on random matrices -----------------------------------------------
for trial in range(4):
    nq, nk, d, dv = rng.randint(1, 9), rng.randint(1, 9), rng.choice([1, 2, 4, 8]), rng.randint(1, 4)
    Q = [[round(rng.gauss(0, 1) * (30 if c == 0 else 1), 6) for c in range(d)] for _ in range(nq)]
    K = [[round(rng.gauss(0, 1), 6) for c in range(d)] for _ in range(nk)]
    V = [[round(rng.gauss(0, 1), 6) for c in range(dv)] for _ in range(nk)]
    causal = nq <= nk and rng.random() < 0.5
    qf, kf, vf = write("q.txt", Q), write("k.txt", K), write("v.txt", V)
    recipe = rng.choice(["e4m3", "e4m3 block", "e5m2 none", "e4m3 hadamard seed=7", "f16", "bf16", "e4m3 p-scale=1"])
    bq, bk = rng.randint(1, 4), rng.randint(1, 4)
    mask = ["--mask", "causal"] if causal else []
    rc, out, err = cli_test.run(exe, "fp8", ["--q", qf, "--k", kf, "--v", vf, "--recipe", recipe, "--bq", str(bq), "--bk", str(bk),
                                             "--format", "jsonl"] + mask)
    check(rc == 0, f"fp8 on files ({recipe}) exits {rc}: {err}")
    if rc != 0:
        continue
    rmse = json.loads(out.splitlines()[0])["rmse"]
    rc, out, err = cli_test.run(exe, "trace", ["--q", qf, "--k", kf, "--v", vf, "--fp8", recipe, "--fp8-values", "--bq", str(bq),
                                               "--bk", str(bk), "--format", "jsonl"] + mask)
    check(rc == 0, f"trace --fp8 '{recipe}' exits {rc}: {err}")
    ev = [json.loads(line) for line in out.splitlines()]
    O = [e["o"] for e in ev if e["event"] == "out"]
    R = reference(Q, K, V, causal)
    mine = math.sqrt(sum((a - b) ** 2 for ro, rr in zip(O, R) for a, b in zip(ro, rr)) / (nq * dv))
    check(abs(mine - rmse) <= 1e-9 * max(rmse, 1e-300) + 1e-15,
          f"trial {trial} ({recipe}): fp8 says RMSE {rmse}, trace --fp8 output gives {mine}")
    tiles = [e for e in ev if e["event"] == "tile"]
    check(all(e.get("lowp") for e in tiles), "tile events say lowp")
    if recipe == "e4m3":   # per-tensor: K's scale is amax / 448 as a float32
        amax = max(abs(x) for r_ in K for x in r_)
        check(all(abs(e["k_scale"] - amax / 448) <= 1e-6 * amax / 448 for e in tiles), f"k_scale is amax/448: {tiles[0]['k_scale']}, {amax / 448}")
    rows_ev = [e for e in ev if e["event"] == "row"]
    check(all("q8" in e and "p8" in e and len(e["q"]) == d for e in rows_ev), "--fp8-values: rows carry q, q8, p8")
    check(all(len(e["k8"]) == (e["c1"] - e["c0"]) * d for e in tiles), "--fp8-values: tiles carry k8")

# ---- bad input -------------------------------------------------------------------------------------
bad = write("bad.txt", [[1.0, 2.0]])
with open(bad, "a") as f:
    f.write("3 x\n")
q3 = write("q3.txt", [[1, 2, 3]])
k3 = write("k3.txt", [[1, 2, 3]])
v1 = write("v1.txt", [[1]])
cases = [
    (["--q", bad, "--k", bad, "--v", bad], "bad.txt:2:3"),
    (["--recipe", "e4m3 blok"], "column 6"),
    (["--recipe", "f32 block"], "column 5"),
    (["--q", q3, "--k", k3, "--v", v1, "--recipe", "e4m3 hadamard"], "power of two"),
    (["--q", q3], "all of --q, --k and --v"),
    (["--n", "0"], "--n is 1 to 16384"),
    (["--mask", "window"], "--mask is none or causal"),
    (["--bogus", "1"], "unknown option"),
    (["--n"], "needs a value"),
    (["--format", "csv"], "--format is table or jsonl"),
]
for args, want in cases:
    rc, out, err = cli_test.run(exe, "fp8", args)
    check(rc == 2 and want in err, f"fp8 {args}: exit {rc}, wanted 2 and '{want}' in: {err.strip()}")
tq, tk, tv = "assets/doc000_tiled/Q.txt", "assets/doc000_tiled/K.txt", "assets/doc000_tiled/V.txt"
if os.path.exists(tq):
    for args, want in [
        (["--fp8", "e4m3 e5m2"], "column 6"),
        (["--fp8", "e4m3", "--form", "normalized"], "--form does not apply to --fp8"),
        (["--fp8-values"], "--fp8-values needs --fp8"),
        (["--fp8", "e4m3", "--reference"], "--fp8 does not apply to --reference"),
        (["--fp8", "e4m3", "--backend", "cuda"], "--backend cuda has no low-precision (--fp8) forward"),
    ]:
        rc, out, err = cli_test.run(exe, "trace", ["--q", tq, "--k", tk, "--v", tv] + args)
        check(rc == 2 and want in err, f"trace {args}: exit {rc}, wanted 2 and '{want}' in: {err.strip()}")
    rc, out, err = cli_test.run(exe, "trace", ["--q", q3, "--k", k3, "--v", v1, "--fp8", "hadamard"])
    check(rc == 2 and "q3.txt:1:1" in err and "power of two" in err, f"trace --fp8 hadamard, d = 3: {err.strip()}")

# --kv-cache: the decode over a float16 and an e4m3 KV cache. Inputs that float16 holds exactly
# (multiples of 1/64 below 2) cost the float16 cache only float32's rounding and P's float16
# rounding; the e4m3 cache loses more; a cache of at most 16 positions has one page, so per page
# equals per head up to where V's descale is applied (float32's rounding).
nk = rng.randint(5, 16)
kq = write("kq.txt", [[rng.randint(-128, 128) / 64 for _ in range(4)] for _ in range(3)])
kk = write("kk.txt", [[rng.randint(-128, 128) / 64 for _ in range(4)] for _ in range(nk)])
kvv = write("kv.txt", [[rng.randint(-128, 128) / 64 + 1 / 1024 for _ in range(3)] for _ in range(nk)])
rc, out, err = cli_test.run(exe, "fp8", ["--kv-cache", "--q", kq, "--k", kk, "--v", kvv, "--format", "jsonl"])
rows = [json.loads(x) for x in out.strip().split("\n")] if rc == 0 else []
check(rc == 0 and [r["cache"] for r in rows] == ["f16", "e4m3", "e4m3"] and rows[2]["page"] == 16,
      f"fp8 --kv-cache jsonl: {rc} {out} {err}")
if len(rows) == 3:
    check(rows[0]["rmse"] < 2e-3 and 4 * rows[0]["rmse"] < rows[1]["rmse"], f"--kv-cache: float16 {rows[0]['rmse']:.3g}, e4m3 {rows[1]['rmse']:.3g}")
    check(abs(rows[1]["rmse"] - rows[2]["rmse"]) <= 1e-5 * rows[1]["rmse"], f"--kv-cache, {nk} positions: per page {rows[2]['rmse']!r} != per head {rows[1]['rmse']!r}")
rc, out, err = cli_test.run(exe, "fp8", ["--kv-cache", "--n", "2048", "--d", "64"])
check(rc == 0 and "e4m3 cache, one scale per page of 16" in out and "vs f16 cache" in out and "2048 keys" in out,
      f"fp8 --kv-cache table: {rc} {out}")
rc, out, err = cli_test.run(exe, "fp8", ["--kv-cache", "--recipe", "e4m3"])
check(rc == 2 and "--kv-cache measures the cache formats" in err, f"--kv-cache with --recipe: {rc} {err}")
rc, out, err = cli_test.run(exe, "fp8", ["--help"])
check(rc == 0 and "--kv-cache" in out, "fp8 --help names --kv-cache")

cli_test.finish("check_fp8_cli: {passed} passed, {failed} failed (seed {seed})")
