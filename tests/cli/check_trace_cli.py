#!/usr/bin/env python3
"""check_trace_cli.py: the `flashstep trace` contract, checked from the outside.

For random problems drawn fresh each run (seed printed; FS_SEED replays), every form, loop
order and mask: the JSONL lines, their order, their fields, and the output rows against the
reference run to 1e-12. Then every kind of bad input: exit code 2 and file:line:column on stderr.
Usage: check_trace_cli.py BUILD/flashstep
"""
import json, math, os, re, sys

import cli_test
from cli_test import check

exe = sys.argv[1]
rng = cli_test.random_source()
tmp = cli_test.scratch("fs-cli-")


def write(name, rows):
    """Commas and a comment line: the text reader takes both."""
    return cli_test.write_rows(tmp, name, rows, ", ", "# written by check_trace_cli.py\n")


def run(args):
    return cli_test.run(exe, "trace", args)


def num(x):
    return -math.inf if x == "-inf" else math.inf if x == "inf" else math.nan if x == "nan" else x


def mat(n, m):
    return [[round(rng.uniform(-2, 2), 6) for _ in range(m)] for _ in range(n)]


ROW_FIELDS = ["row", "qt", "kt", "m_old", "m_blk", "m_new", "l_old", "l_blk", "l_new", "alpha", "beta"]

for trial in range(6):
    hkv = rng.randint(1, 2)
    hq = hkv * rng.randint(1, 2)
    nq, nkv, d, dv = rng.randint(1, 9), rng.randint(1, 11), rng.randint(1, 4), rng.randint(1, 3)
    masks = [[], ["--mask", "causal"], ["--window", str(rng.randint(1, 4))]]
    if nq == nkv:
        parent = [-1] + [rng.randint(0, i - 1) for i in range(1, nq)]
        masks.append(["--tree", write(f"tree{trial}.txt", [parent])])
    q = write(f"q{trial}.txt", mat(hq * nq, d))
    k = write(f"k{trial}.txt", mat(hkv * nkv, d))
    v = write(f"v{trial}.txt", mat(hkv * nkv, dv))
    base = ["--q", q, "--k", k, "--v", v, "--heads", f"{hq}:{hkv}", "--format", "jsonl"]
    for mask in masks:
        rc, out, err = run(base + mask + ["--reference"])
        check(rc == 0, f"reference run: {err}")
        ref = {(e["head"], e["row"]): e for e in map(json.loads, out.splitlines()) if e["event"] == "out"}
        for form in ["normalized", "unnormalized"]:
            for order in ["q-outer", "kv-outer"]:
                bq, bk = rng.randint(1, 4), rng.randint(1, 4)
                args = base + mask + ["--form", form, "--order", order, "--bq", str(bq), "--bk", str(bk)]
                rc, out, err = run(args)
                what = f"{' '.join(mask)} {form} {order} Bq={bq} Bk={bk}"
                check(rc == 0, f"{what}: exit {rc}: {err}")
                ev = [json.loads(line) for line in out.splitlines()]
                check(all("event" in e and e["step"] == i for i, e in enumerate(ev)), f"{what}: event/step fields")
                nqt, nkt = -(-nq // bq), -(-nkv // bk)
                seq, outs, i = [], [], 0
                while i < len(ev) and ev[i]["event"] in ("tile", "skip", "out"):
                    e = ev[i]
                    if e["event"] == "out":
                        seq.append(("out", e["head"], e["row"]))
                        outs.append(e)
                        i += 1
                        continue
                    seq.append(("pair", e["head"], e["qt"], e["kt"]))
                    if e["event"] == "skip":
                        check(e["reason"] in ("causal", "window", "tree", "bitmask"), f"{what}: skip reason")
                        i += 1
                        continue
                    rows = list(range(e["r0"], e["r1"]))
                    got = [x for x in ev[i + 1:i + 1 + len(rows)]]
                    check([x["event"] for x in got] == ["row"] * len(rows), f"{what}: rows after tile")
                    check([x["row"] for x in got] == rows, f"{what}: row order")
                    check(all(all(f in x for f in ROW_FIELDS) for x in got), f"{what}: row fields")
                    check(all(x["qt"] == e["qt"] and x["kt"] == e["kt"] for x in got), f"{what}: row tile ids")
                    i += 1 + len(rows)
                check(i == len(ev), f"{what}: only tile, skip, row and out events")
                # q-outer: a Q tile's rows go out right after its last KV tile; kv-outer: all at the end
                if order == "q-outer":
                    want = [x for h in range(hq) for a in range(nqt)
                            for x in [("pair", h, a, b) for b in range(nkt)] +
                            [("out", h, r) for r in range(a * bq, min(nq, (a + 1) * bq))]]
                else:
                    want = [("pair", h, a, b) for h in range(hq) for b in range(nkt) for a in range(nqt)]
                    want += [("out", h, r) for h in range(hq) for r in range(nq)]
                check(seq == want, f"{what}: one tile or skip per pair in loop order, out events where rows finish")
                check(len(outs) == hq * nq, f"{what}: one out event per row")
                err_max = 0.0
                for e in outs:
                    r = ref[(e["head"], e["row"])]
                    for a, b in zip(e["o"], r["o"]):
                        err_max = max(err_max, abs(num(a) - num(b)) / max(1.0, abs(num(b))))
                check(err_max <= 1e-12, f"{what}: output differs from reference by {err_max:.3g}")
    # decode: partials and merges before each out
    for merge in ["sequential", "tree"]:
        rc, out, err = run(base + ["--decode", "--bk", str(rng.randint(1, 4)), "--merge", merge])
        ev = [json.loads(line) for line in out.splitlines()]
        kinds = [e["event"] for e in ev]
        check(rc == 0 and kinds[-1] == "out" and "partial" in kinds, f"decode {merge}: {err}")
        check(all(kinds[j] in ("partial", "merge") for j in range(len(kinds)) if kinds[j] != "out"),
              f"decode {merge}: only partial/merge/out events")

# Bad input: exit 2 and file:line:column.
good = write("good.txt", [[1.0, 2.0], [3.0, 4.0]])
bad_cases = {
    "ragged": ("1 2\n3\n", ":2:"),
    "not a number": ("1 2\n3 abc\n", ":2:3:"),
    "nan": ("1 nan\n", ":1:3:"),
    "inf": ("inf 1\n", ":1:1:"),
    "empty": ("# nothing\n", ":1:1:"),
}
for name, (text, where) in bad_cases.items():
    path = os.path.join(tmp, f"bad_{name.replace(' ', '_')}.txt")
    open(path, "w").write(text)
    rc, out, err = run(["--q", path, "--k", good, "--v", good])
    check(rc == 2 and (path + where) in err, f"bad input '{name}': rc={rc} stderr={err!r}")
rc, out, err = run(["--q", good, "--k", write("k3.txt", [[1.0, 2.0, 3.0]] * 2), "--v", good])
check(rc == 2 and "k3.txt:1:1:" in err, f"shape mismatch: {err!r}")
for t in (["--bq", "0"], ["--bk", "-1"], ["--window", "0"], ["--format", "xml"], ["--bogus"]):
    rc, out, err = run(["--q", good, "--k", good, "--v", good, *t])
    check(rc == 2 and err, f"bad option {t}: rc={rc}")
# A problem option given twice is refused, not "the last one wins" (the same table serves play
# and render).
for t in (["--q", good], ["--bq", "2", "--bq", "3"], ["--mask", "none", "--mask", "causal"], ["--reference", "--reference"]):
    rc, out, err = run(["--q", good, "--k", good, "--v", good, *t])
    check(rc == 2 and f"flashstep trace: {t[0]} given twice" in err and not out, f"{t} twice: rc={rc} {err!r}")
# --scale 0 (every score 0: uniform weights) is legal, as in check.
rc, out, err = run(["--q", good, "--k", good, "--v", good, "--scale", "0", "--format", "jsonl"])
outs = [e for e in map(json.loads, out.splitlines()) if e["event"] == "out"]
check(rc == 0 and outs and all(abs(num(x) - y) < 1e-12 for e in outs for x, y in zip(e["o"], [2.0, 3.0])),
      f"--scale 0 gives the mean of V's rows: rc={rc} {err!r}")
# Options the chosen algorithm does not read are refused, not silently ignored.
zfile = write("z.txt", [[2.0, 5.0, 1.0, 4.0]])
for t in (["--decode", "--bq", "2"], ["--decode", "--pitfall", "no-rescale"], ["--merge", "tree"],
          ["--parts", "2"], ["--chunk", "2"], ["--reference", "--exp2"], ["--query", "--order", "kv-outer"]):
    rc, out, err = run(["--q", good, "--k", good, "--v", good, *t])
    check(rc == 2 and "does not apply" in err and not out, f"option for another algorithm {t}: rc={rc} {err!r}")
for t in (["--tree", good], ["--mask", "causal"], ["--bk", "2"]):
    rc, out, err = run(["--z", zfile, *t])
    check(rc == 2 and "does not apply" in err and not out, f"--z with {t}: rc={rc} {err!r}")
for t in (["--query", "--exp2"], ["--decode", "--bk", "2", "--form", "normalized"], ["--z", zfile, "--chunk", "2"]):
    args = t if "--z" in t else ["--q", good, "--k", good, "--v", good, *t]
    rc, out, err = run(args)
    check(rc == 0, f"{t} must run: rc={rc} {err!r}")
tree = write("cycle.txt", [[-1, 0]])
open(tree, "w").write("1 0\n")
rc, out, err = run(["--q", good, "--k", good, "--v", good, "--tree", tree])
check(rc == 2 and "cycle.txt:1:1:" in err, f"not a tree: {err!r}")
cyc = os.path.join(tmp, "cycle3.txt")
open(cyc, "w").write("-1\n# a comment line\n0 2 1\n")
g3 = write("g3.txt", [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
rc, out, err = run(["--q", g3, "--k", g3, "--v", g3, "--tree", cyc])
check(rc == 2 and "cycle3.txt:3:3:" in err, f"a cycle is located at its entry: {err!r}")
hexf = os.path.join(tmp, "hex.txt")
open(hexf, "w").write("1 0x10\n")
rc, out, err = run(["--q", hexf, "--k", good, "--v", good])
check(rc == 2 and "hex.txt:1:3:" in err, f"hexadecimal is not a number here: {err!r}")
rc, out, err = run(["--q", tmp, "--k", good, "--v", good])
check(rc == 2 and "directory" in err, f"a directory as input: {err!r}")
rc, out, err = run(["--q", good, "--k", good, "--v", good, "--heads", "99999999999:1"])
check(rc == 2 and "--heads" in err, f"--heads overflow: {err!r}")
npy = os.path.join(tmp, "bad.npy")
open(npy, "wb").write(b"\x93NUMPY\x01\x00\x20\x00{'descr': '<i4', 'shape': (2,)}    \n" + b"\0" * 8)
rc, out, err = run(["--q", npy, "--k", good, "--v", good])
check(rc == 2 and "bad.npy:1:" in err, f"bad npy dtype: {err!r}")
big = os.path.join(tmp, "big.txt")
with open(big, "w") as f:
    for _ in range(3000):
        f.write("0.5 0.25\n")
rc, out, err = run(["--q", big, "--k", big, "--v", big, "--bq", "1", "--bk", "1"])
check(rc == 2 and "limit" in err, f"trace size bound: rc={rc} {err!r}")
# Decode with far more strided parts than keys: bounded before it runs, not an allocation failure.
q3 = write("q3.txt", [[1.0, 2.0]] * 3)
rc, out, err = run(["--q", q3, "--k", good, "--v", good, "--decode", "--parts", "1048576"])
check(rc == 2 and "limit" in err, f"decode trace size bound: rc={rc} {err!r}")

# Finite inputs whose scores or sums overflow float64 are refused before the run, naming the
# score (row, key, value of the product) or the entry of V; nothing prints nan or inf.
huge = write("huge.txt", [[1e308, 1.0], [1.0, 1e308]])
small = write("small.txt", [[1.0, 0.0], [0.0, 1.0]])
for args, what in [(["--q", huge, "--k", huge, "--v", small], "entries of 1e308"),
                   (["--q", small, "--k", small, "--v", small, "--scale", "1e308"], "--scale 1e308"),
                   (["--q", huge, "--k", huge, "--v", small, "--decode"], "decode, entries of 1e308"),
                   (["--q", huge, "--k", huge, "--v", small, "--query"], "one query, entries of 1e308"),
                   (["--q", huge, "--k", huge, "--v", small, "--reference"], "reference, entries of 1e308"),
                   (["--scores", huge, "--scale", "10"], "given scores times 10")]:
    for fmt in ["table", "jsonl"]:
        rc, out, err = run(args + ["--format", fmt])
        check(rc == 2 and not out and "query row 0 and key 0" in err and "e+" in err,
              f"overflowing score ({what}, {fmt}): rc={rc} out={out[:200]!r} err={err!r}")
rc, out, err = run(["--q", small, "--k", small, "--v", huge])
check(rc == 2 and "V's entry at KV head 0, key 0, column 0" in err and huge + ":2:1:" in err,
      f"overflowing V, located: rc={rc} {err!r}")
rc, out, err = run(["--q", huge, "--k", huge, "--v", small])
check(rc == 2 and err.startswith("flashstep trace: " + huge + ":2:1: the score"), f"overflowing score, located: {err!r}")
# With the soft-cap on, every score is capped to at most C: large ones are fine.
rc, out, err = run(["--q", huge, "--k", huge, "--v", small, "--softcap", "30", "--format", "jsonl"])
check(rc == 0 and '"nan"' not in out and '"inf"' not in out, f"soft-capped huge scores run: rc={rc} {err!r}")
# The backward: gradients that would pass float64 are refused the same way, naming the bound.
rc, out, err = run(["--q", small, "--k", small, "--v", small, "--backward", "--do", huge])
check(rc == 2 and not out and "beyond the limit" in err and "dO" in err, f"overflowing dO: rc={rc} {err!r}")
# Scores that are large but safe run, and the table prints them in exponent form.
rc, out, err = run(["--q", small, "--k", small, "--v", small, "--scale", "1e300"])
check(rc == 0 and "1.000e+300" in out and "nan" not in out.lower() and not re.search(r"(?<![-\w])inf", out),
      f"--scale 1e300 runs, exponent form: rc={rc} {err!r} {out[:300]!r}")
rc, out, err = run(["--q", small, "--k", small, "--v", small, "--scale", "1e300", "--format", "jsonl"])
check(rc == 0 and '"nan"' not in out and '"inf"' not in out, f"--scale 1e300 JSONL finite: {out[:300]!r}")

cli_test.finish("trace cli: {passed} passed, {failed} failed")
