#!/usr/bin/env python3
"""check_backward_cli.py: the `flashstep trace --backward` contract, checked from the outside.

For random problems drawn fresh each run (seed printed; FS_SEED replays), every mask (none,
causal with and without an offset, sliding window, tree), GQA, the soft-cap, both loop orders
and ragged tiles: the lse, delta and grad lines against a backward written here from the
formulas alone (plain Python, dense, no tiles), the order of the events, and the way numbers
print (%.17g, as the forward events; "-inf" for a row that sees nothing). Then the refusals.
Usage: check_backward_cli.py BUILD/flashstep
"""
import json, math, os, re, sys

import cli_test
from cli_test import check

exe = sys.argv[1]
rng = cli_test.random_source()
tmp = cli_test.scratch("fs-bwd-")
TOL = 1e-10


def write(name, rows):
    return cli_test.write_rows(tmp, name, rows)


def run(args):
    return cli_test.run(exe, "trace", args)


def mat(n, m, lo=-2.0, hi=2.0):
    return [[round(rng.uniform(lo, hi), 6) for _ in range(m)] for _ in range(n)]


def visible_fn(kind, nq, nkv, offset, window, parent):
    off = nkv - nq if offset is None else offset
    if kind == "none":
        return lambda i, j: True
    if kind == "causal":
        return lambda i, j: j <= i + off
    if kind == "window":
        return lambda i, j: i + off - window < j <= i + off
    anc = []
    for i in range(nq):
        s, x = set(), i
        while x >= 0:
            s.add(x)
            x = parent[x]
        anc.append(s)
    return lambda i, j: j in anc[i]


def backward(Q, K, V, dO, hq, hkv, nq, nkv, scale, cap, vis):
    """Dense backward from the formulas: per head S, P, O, L, D, dP, dS, then dQ, dK, dV."""
    d, dv = len(Q[0]), len(V[0])
    g = hq // hkv
    L, D = [], []
    dQ = [[0.0] * d for _ in range(hq * nq)]
    dK = [[0.0] * d for _ in range(hkv * nkv)]
    dV = [[0.0] * dv for _ in range(hkv * nkv)]
    for h in range(hq):
        kh = h // g
        for i in range(nq):
            q = Q[h * nq + i]
            s, slope = {}, {}
            for j in range(nkv):
                if not vis(i, j):
                    continue
                x = scale * sum(a * b for a, b in zip(q, K[kh * nkv + j]))
                if cap > 0:
                    x = cap * math.tanh(x / cap)
                    slope[j] = 1 - (x / cap) ** 2
                else:
                    slope[j] = 1.0
                s[j] = x
            if not s:
                L.append(-math.inf)
                D.append(0.0)
                continue
            mx = max(s.values())
            lse = mx + math.log(sum(math.exp(x - mx) for x in s.values()))
            L.append(lse)
            p = {j: math.exp(x - lse) for j, x in s.items()}
            o = [sum(p[j] * V[kh * nkv + j][c] for j in p) for c in range(dv)]
            go = dO[h * nq + i]
            Dr = sum(a * b for a, b in zip(go, o))
            D.append(Dr)
            for j in p:
                dp = sum(a * b for a, b in zip(go, V[kh * nkv + j]))
                ds = p[j] * (dp - Dr) * slope[j] * scale
                for c in range(d):
                    dQ[h * nq + i][c] += ds * K[kh * nkv + j][c]
                    dK[kh * nkv + j][c] += ds * q[c]
                for c in range(dv):
                    dV[kh * nkv + j][c] += p[j] * go[c]
    return L, D, dQ, dK, dV


def close(a, b):
    if a == "-inf" or b == -math.inf:
        return a == "-inf" and b == -math.inf
    return isinstance(a, (int, float)) and abs(a - b) <= TOL * max(1.0, abs(b))


NUM = re.compile(r'(?<=[:,\[])(-?[0-9][0-9.eE+-]*)(?=[,\]}])')

for trial in range(6):
    hkv = rng.randint(1, 2)
    hq = hkv * rng.randint(1, 2)
    nq, nkv, d, dv = rng.randint(1, 8), rng.randint(1, 10), rng.randint(1, 4), rng.randint(1, 3)
    off = rng.randint(-2, 3)
    masks = [("none", [], None, 0, None), ("causal", ["--mask", "causal"], None, 0, None),
             ("causal", ["--mask", "causal", "--offset", str(off)], off, 0, None)]
    w = rng.randint(1, 4)
    masks.append(("window", ["--window", str(w)], None, w, None))
    if nq == nkv or trial % 2 == 0:
        nkv = nq
        parent = [-1] + [rng.randint(0, i - 1) for i in range(1, nq)]
        masks.append(("tree", ["--tree", write(f"tree{trial}.txt", [parent])], None, 0, parent))
    Q, K, V = mat(hq * nq, d), mat(hkv * nkv, d), mat(hkv * nkv, dv, -1, 1)
    dO = mat(hq * nq, dv, -1, 1)
    q, k, v, do = (write(f"{n}{trial}.txt", m) for n, m in (("q", Q), ("k", K), ("v", V), ("do", dO)))
    cap = round(rng.uniform(0.5, 3), 3) if trial % 3 == 1 else 0.0
    base = ["--backward", "--q", q, "--k", k, "--v", v, "--heads", f"{hq}:{hkv}", "--format", "jsonl"]
    if cap:
        base += ["--softcap", repr(cap)]
    scale = 1 / math.sqrt(d)
    for kind, margs, moff, mw, par in masks:
        vis = visible_fn(kind, nq, nkv, moff, mw, par)
        for use_do in (True, False):
            grad_out = dO if use_do else [[1.0] * dv for _ in range(hq * nq)]
            L, D, dQ, dK, dV = backward(Q, K, V, grad_out, hq, hkv, nq, nkv, scale, cap, vis)
            for order in ("q-outer", "kv-outer"):
                bq, bk = rng.randint(1, 4), rng.randint(1, 4)
                args = base + margs + ["--order", order, "--bq", str(bq), "--bk", str(bk)] + (["--do", do] if use_do else [])
                what = f"{' '.join(margs)} {order} Bq={bq} Bk={bk} heads={hq}:{hkv} cap={cap} do={'file' if use_do else '1'}"
                rc, out, err = run(args)
                check(rc == 0, f"{what}: exit {rc}: {err}")
                if rc:
                    continue
                check(use_do or "dO = 1" in err, f"{what}: without --do the run must say dO = 1: {err!r}")
                lines = out.splitlines()
                ev = [json.loads(x) for x in lines]
                check(all(e["step"] == n for n, e in enumerate(ev)), f"{what}: consecutive steps")
                bad = [t for x in lines for t in NUM.findall(x) if t != format(float(t), ".17g")]
                check(not bad, f"{what}: numbers not printed as %.17g: {bad[:3]}")
                kinds = [e["event"] for e in ev]
                lse = [e for e in ev if e["event"] == "lse"]
                delta = [e for e in ev if e["event"] == "delta"]
                check(kinds[:2 * hq * nq] == ["lse"] * (hq * nq) + ["delta"] * (hq * nq), f"{what}: lse, then delta rows first")
                check([(e["head"], e["row"]) for e in lse] == [(h, i) for h in range(hq) for i in range(nq)], f"{what}: lse rows")
                check(all(close(e["lse"], L[n]) for n, e in enumerate(lse)), f"{what}: lse values")
                check(all(close(e["D"], D[n]) for n, e in enumerate(delta)), f"{what}: delta values")
                # tiles in loop order, each followed by its rows and keys
                nqt, nkt, g = -(-nq // bq), -(-nkv // bk), hq // hkv
                pairs = [(e["head"], e["qt"], e["kt"]) for e in ev if e["event"] in ("btile", "bskip")]
                if order == "q-outer":
                    want = [(h, a, b) for h in range(hq) for a in range(nqt) for b in range(nkt)]
                else:
                    want = [(kh * g + x, a, b) for kh in range(hkv) for b in range(nkt) for x in range(g) for a in range(nqt)]
                check(pairs == want, f"{what}: one btile or bskip per pair, in loop order")
                # tile classes from the mask alone: skipped when no pair is visible, full when all are
                for e in ev:
                    if e["event"] not in ("btile", "bskip"):
                        continue
                    seen = [vis(i, j) for i in range(e["r0"], e["r1"]) for j in range(e["c0"], e["c1"])]
                    cls = "skipped" if not any(seen) else "full" if all(seen) else "partial"
                    if cls != e["class"] or (e["event"] == "bskip") != (cls == "skipped"):
                        check(False, f"{what}: tile ({e['qt']}, {e['kt']}) is {e['class']}, the mask says {cls}")
                        break
                # the per-tile contributions add up to the gradients
                acc = {}
                for e in ev:
                    if e["event"] == "brow":
                        key = ("dQ", e["head"], e["row"])
                        acc[key] = [a + b for a, b in zip(acc.get(key, [0.0] * d), e["dq_blk"])]
                    elif e["event"] == "bkey":
                        for name, blk in (("dK", "dk_blk"), ("dV", "dv_blk")):
                            key = (name, e["kv_head"], e["key"])
                            acc[key] = [a + b for a, b in zip(acc.get(key, [0.0] * len(e[blk])), e[blk])]
                sums_ok = all(all(abs(a - b) <= 1e-12 * max(1.0, abs(b)) for a, b in
                                  zip(acc.get((e["tensor"], e["head"], e["row"]), [0.0] * len(e["value"])), e["value"]))
                              for e in ev if e["event"] == "grad")
                check(sums_ok, f"{what}: dq_blk, dk_blk, dv_blk do not add up to the grad rows")
                first_grad = kinds.index("grad") if "grad" in kinds else len(kinds)
                check(all(x == "grad" for x in kinds[first_grad:]) and "btile" not in kinds[first_grad:],
                      f"{what}: the grad rows come after the last tile")
                grads = ev[first_grad:]
                for name, ref, rows, width in (("dQ", dQ, hq * nq, d), ("dK", dK, hkv * nkv, d), ("dV", dV, hkv * nkv, dv)):
                    got = [e for e in grads if e["tensor"] == name]
                    check(len(got) == rows, f"{what}: {rows} {name} rows, got {len(got)}")
                    per = nq if name == "dQ" else nkv
                    check([(e["head"], e["row"]) for e in got] == [(r // per, r % per) for r in range(rows)],
                          f"{what}: {name} row order")
                    err_ok = all(len(e["value"]) == width and all(close(a, b) for a, b in zip(e["value"], ref[n]))
                                 for n, e in enumerate(got))
                    check(err_ok, f"{what}: {name} differs from the independent backward")
                # rows that see nothing: "-inf", zero dQ, no NaN anywhere
                check('"nan"' not in out and '"inf"' not in out, f"{what}: no NaN or inf")
                for n, e in enumerate(lse):
                    if e["lse"] == "-inf":
                        row = [x for x in grads if x["tensor"] == "dQ"][n]["value"]
                        check(all(x == 0 for x in row), f"{what}: a row that sees nothing has dQ = 0")

# --do reads .npy like the other inputs: a float64 .npy of the last dO gives the same output.
npy = cli_test.write_npy(tmp, "do.npy", dO)
rc1, out1, err1 = run(base + ["--do", do])
rc2, out2, err2 = run(base + ["--do", npy])
check(rc1 == 0 and rc2 == 0 and out1 == out2 and out1, f"--do as .npy: rc={rc2} {err2!r}")

# The table form runs and names dO = 1.
rc, out, err = run(["--backward", "--q", q, "--k", k, "--v", v, "--heads", f"{hq}:{hkv}", "--mask", "causal"])
check(rc == 0 and "dO=1" in out and "dV:" in out, f"table form: rc={rc} {err!r}")

# Refusals: options the backward does not read, --do without --backward, a dO of the wrong shape.
good = write("good.txt", [[1.0, 2.0], [3.0, 4.0]])
for t in (["--form", "unnormalized"], ["--exp2"], ["--pitfall", "no-rescale"], ["--merge", "tree"], ["--parts", "2"],
          ["--chunk", "2"], ["--scores", good]):
    rc, out, err = run(["--backward", "--q", good, "--k", good, "--v", good, *t])
    check(rc == 2 and "does not apply" in err and not out, f"--backward with {t}: rc={rc} {err!r}")
# --backend: engine is the default; cuda runs the backward on the GPU in float32 (tests/cuda compares
# it with the engine) or, in a build without CUDA or on a machine without a GPU, says why.
rc1, out1, err1 = run(base + ["--backend", "engine"])
rc2, out2, err2 = run(base)
check(rc1 == 0 and out1 == out2 and out1, f"--backward --backend engine: rc={rc1} {err1!r}")
rc, out, err = run(base + ["--backend", "cuda"])
check((rc == 0 and '"event":"grad"' in out) or (rc == 2 and "CUDA backend:" in err and not out),
      f"--backward --backend cuda: rc={rc} {err!r}")
rc, out, err = run(base + ["--backend", "cuda", "--dropout", "0.3", "--seed", "5"])
check((rc == 0 and '"dropped"' in out) or (rc == 2 and "CUDA backend:" in err and not out),
      f"--backward --backend cuda --dropout: rc={rc} {err!r}")
for t in ([], ["--decode"], ["--reference"], ["--query"]):
    rc, out, err = run(["--q", good, "--k", good, "--v", good, "--do", good, *t])
    check(rc == 2 and "does not apply" in err and not out, f"--do without --backward {t}: rc={rc} {err!r}")
rc, out, err = run(["--backward", "--decode", "--q", good, "--k", good, "--v", good])
check(rc == 2 and "choose one" in err, f"--backward with --decode: {err!r}")
wide = write("wide.txt", [[1.0, 2.0, 3.0], [3.0, 4.0, 5.0]])
rc, out, err = run(["--backward", "--q", good, "--k", good, "--v", good, "--do", wide])
check(rc == 2 and "wide.txt:1:1:" in err and not out, f"dO of the wrong shape: {err!r}")
badf = os.path.join(tmp, "bad_do.txt")
open(badf, "w").write("1 2\n3 x\n")
rc, out, err = run(["--backward", "--q", good, "--k", good, "--v", good, "--do", badf])
check(rc == 2 and "bad_do.txt:2:3:" in err, f"dO not a number: {err!r}")
big = os.path.join(tmp, "big.txt")
with open(big, "w") as f:
    for _ in range(3000):
        f.write("0.5 0.25\n")
rc, out, err = run(["--backward", "--q", big, "--k", big, "--v", big, "--bq", "1", "--bk", "1"])
check(rc == 2 and "limit" in err, f"backward trace size bound: rc={rc} {err!r}")
rc, out, err = run(["--help"])
check(rc == 0 and "--backward" in out and "--do FILE" in out, "--help names --backward and --do")

cli_test.finish("backward cli: {passed} passed, {failed} failed")
