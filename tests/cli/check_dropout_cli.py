#!/usr/bin/env python3
"""check_dropout_cli.py: the `flashstep trace --dropout P --seed S` contract, from the outside.

For random problems drawn fresh each run (seed printed; FS_SEED replays), masks none, causal and
sliding window, GQA, ragged tiles, both loop orders, random p and Philox seeds:
  - the mask rebuilt from the forward's JSONL (every "tile" event's "dropped" pairs) is exactly
    the set of visible cells that Philox4x32-10, written here in plain Python from the published
    algorithm, drops under the mapping of docs/09-dropout.md; and the backward's "btile" events
    list the same pairs;
  - the output rows and dQ, dK, dV equal a dense dropout attention written here from the formulas
    (ℓ over P before dropout, kept weights times 1/(1 - p));
  - p = 0 prints the same output rows, bit for bit, as the run without --dropout.
Then the refusals (p outside [0, 1), not a number, --seed without --dropout, a bad seed, an
algorithm that does not drop) and the table form.
Usage: check_dropout_cli.py BUILD/flashstep
"""
import json, math, sys

import cli_test
from cli_test import check

exe = sys.argv[1]
rng = cli_test.random_source()
tmp = cli_test.scratch("fs-drop-")
TOL = 1e-10
M32 = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    """Philox4x32 with ten rounds (Salmon et al., SC'11): multipliers D2511F53, CD9E8D57, key
    bumped by 9E3779B9, BB67AE85 before every round but the first."""
    c, k = list(ctr), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & M32, (p0 >> 32) ^ c[3] ^ k[1], p0 & M32]
    return c


# Random123's kat_vectors, so the Python generator is itself checked before it judges anything.
check(philox4x32_10([0, 0, 0, 0], [0, 0]) == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8], "philox KAT zero")
check(philox4x32_10([M32] * 4, [M32, M32]) == [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd], "philox KAT ones")
check(philox4x32_10([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]) ==
      [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1], "philox KAT pi")


def dropped(seed, p, head, row, col):
    """The documented mapping: key = the seed's words, counter = (batch 0, head, row, col // 4),
    word col % 4, dropped when word / 2^32 < p."""
    x = philox4x32_10([0, head, row, col // 4], [seed & M32, seed >> 32])[col % 4]
    return x / 2.0 ** 32 < p


def write(name, rows):
    return cli_test.write_rows(tmp, name, rows)


def run(args):
    return cli_test.run(exe, "trace", args)


def mat(n, m, lo=-2.0, hi=2.0):
    return [[round(rng.uniform(lo, hi), 6) for _ in range(m)] for _ in range(n)]


def dense(Q, K, V, dO, hq, hkv, nq, nkv, vis, p, seed):
    """Dense dropout attention and its backward from the formulas: O, dQ, dK, dV."""
    d, dv, g, ks = len(Q[0]), len(V[0]), hq // hkv, 1 / (1 - p)
    scale = 1 / math.sqrt(d)
    O = []
    dQ = [[0.0] * d for _ in range(hq * nq)]
    dK = [[0.0] * d for _ in range(hkv * nkv)]
    dV = [[0.0] * dv for _ in range(hkv * nkv)]
    for h in range(hq):
        kh = h // g
        for i in range(nq):
            q = Q[h * nq + i]
            s = {j: scale * sum(a * b for a, b in zip(q, K[kh * nkv + j])) for j in range(nkv) if vis(i, j)}
            if not s:
                O.append([0.0] * dv)
                continue
            mx = max(s.values())
            ell = sum(math.exp(x - mx) for x in s.values())            # before dropout
            P = {j: math.exp(x - mx) / ell for j, x in s.items()}
            z = {j: 0.0 if dropped(seed, p, h, i, j) else ks for j in P}
            O.append([sum(z[j] * P[j] * V[kh * nkv + j][c] for j in P) for c in range(dv)])
            go = dO[h * nq + i]
            dP = {j: z[j] * sum(a * b for a, b in zip(go, V[kh * nkv + j])) for j in P}
            D = sum(P[j] * dP[j] for j in P)
            for j in P:
                ds = scale * P[j] * (dP[j] - D)
                for c in range(d):
                    dQ[h * nq + i][c] += ds * K[kh * nkv + j][c]
                    dK[kh * nkv + j][c] += ds * q[c]
                for c in range(dv):
                    dV[kh * nkv + j][c] += z[j] * P[j] * go[c]
    return O, dQ, dK, dV


def close(a, b):
    return abs(a - b) <= TOL * max(1.0, abs(b))


def cells(events, kind):
    """(head, row, key) of every pair the events of this kind list as dropped."""
    got = []
    for e in events:
        if e["event"] == kind:
            got += [(e["head"], i, j) for i, j in e["dropped"]]
    return got


for trial in range(8):
    hkv = rng.randint(1, 2)
    hq = hkv * rng.randint(1, 2)
    nq, nkv, d, dv = rng.randint(1, 9), rng.randint(1, 11), rng.randint(1, 4), rng.randint(1, 3)
    w = rng.randint(1, 4)
    kind = ["none", "causal", "window"][trial % 3]
    off = nkv - nq
    margs, vis = {"none": ([], lambda i, j: True),
                  "causal": (["--mask", "causal"], lambda i, j: j <= i + off),
                  "window": (["--window", str(w)], lambda i, j: i + off - w < j <= i + off)}[kind]
    Q, K, V, dO = mat(hq * nq, d), mat(hkv * nkv, d), mat(hkv * nkv, dv, -1, 1), mat(hq * nq, dv, -1, 1)
    q, k, v, do = (write(f"{n}{trial}.txt", m) for n, m in (("q", Q), ("k", K), ("v", V), ("do", dO)))
    p = round(rng.uniform(0.05, 0.8), 4)
    seed = rng.randrange(1 << 64)
    bq, bk = rng.randint(1, 4), rng.randint(1, 4)
    order = rng.choice(["q-outer", "kv-outer"])
    base = ["--q", q, "--k", k, "--v", v, "--heads", f"{hq}:{hkv}", "--bq", str(bq), "--bk", str(bk),
            "--order", order, "--format", "jsonl"] + margs
    drop = ["--dropout", repr(p), "--seed", str(seed)]
    what = f"{kind} heads={hq}:{hkv} n={nq}x{nkv} Bq={bq} Bk={bk} {order} p={p} seed={seed}"
    O, dQ, dK, dV = dense(Q, K, V, dO, hq, hkv, nq, nkv, vis, p, seed)

    rc, out, err = run(base + drop)
    check(rc == 0, f"{what}: forward exit {rc}: {err}")
    fwd = [json.loads(x) for x in out.splitlines()] if rc == 0 else []
    tiles = [e for e in fwd if e["event"] == "tile"]
    check(all("dropped" in e and e["dropout"] == p for e in tiles), f"{what}: every tile event carries dropped and p")
    check(all(e.get("dropped") == [] and e["dropout"] == p for e in fwd if e["event"] == "skip"),
          f"{what}: every skip event carries p and drops nothing")
    check(all("dropped" not in e for e in fwd if e["event"] not in ("tile", "skip")), f"{what}: only pair events carry dropped")
    mask = cells(fwd, "tile")
    want = sorted((h, i, j) for h in range(hq) for i in range(nq) for j in range(nkv)
                  if vis(i, j) and dropped(seed, p, h, i, j))
    check(sorted(mask) == want and len(set(mask)) == len(mask),
          f"{what}: the forward's dropped pairs are not the mapping's ({len(mask)} listed, {len(want)} expected)")
    check(all(e["r0"] <= i < e["r1"] and e["c0"] <= j < e["c1"] for e in tiles for i, j in e["dropped"]),
          f"{what}: a dropped pair outside its tile")
    outs = [e["o"] for e in fwd if e["event"] == "out"]
    check(len(outs) == hq * nq and all(close(a, b) for r, row in enumerate(outs) for a, b in zip(row, O[r])),
          f"{what}: output rows differ from the dense dropout attention")

    rc, out, err = run(base + drop + ["--backward", "--do", do])
    check(rc == 0, f"{what}: backward exit {rc}: {err}")
    bwd = [json.loads(x) for x in out.splitlines()] if rc == 0 else []
    check(all("dropped" in e for e in bwd if e["event"] == "btile"), f"{what}: every btile event carries dropped")
    check(all(e.get("dropped") == [] and e["dropout"] == p for e in bwd if e["event"] == "bskip"),
          f"{what}: every bskip event carries p and drops nothing")
    check(sorted(cells(bwd, "btile")) == sorted(mask), f"{what}: the backward drops other cells than the forward")
    for name, ref in (("dQ", dQ), ("dK", dK), ("dV", dV)):
        got = [e["value"] for e in bwd if e["event"] == "grad" and e["tensor"] == name]
        check(len(got) == len(ref) and all(close(a, b) for r, row in enumerate(got) for a, b in zip(row, ref[r])),
              f"{what}: {name} differs from the dense dropout backward")

    # p = 0: the same output rows as without dropout, to the last digit; nothing dropped.
    rc0, out0, _ = run(base + ["--dropout", "0", "--seed", str(seed)])
    rc1, out1, _ = run(base)
    o0 = [x for x in out0.splitlines() if '"out"' in x]
    o1 = [x for x in out1.splitlines() if '"out"' in x]
    check(rc0 == 0 and rc1 == 0 and o0 == o1 and o0, f"{what}: p = 0 is not the run without dropout")
    check(all(json.loads(x).get("dropped") == [] for x in out0.splitlines() if '"tile"' in x), f"{what}: p = 0 drops")

# The table form names p, 1/(1 - p) and each tile's dropped cells; the backward says how dP is masked.
rc, out, err = run(["--q", q, "--k", k, "--v", v, "--heads", f"{hq}:{hkv}", "--dropout", "0.5", "--seed", "3"])
check(rc == 0 and "dropout p=0.500000 seed=3" in out and "1/(1-p) = 2.000000" in out and "dropped (row, key):" in out,
      f"table form: rc={rc} {err!r}")
rc, out, err = run(["--q", q, "--k", k, "--v", v, "--heads", f"{hq}:{hkv}", "--dropout", "0.5", "--backward"])
check(rc == 0 and "dP = Z * dO V^T / (1-p)" in out, f"backward table form: rc={rc} {err!r}")

# Refusals: exit 2, a message naming the option, nothing on stdout.
good = write("good.txt", [[1.0, 2.0], [3.0, 4.0]])
g3 = ["--q", good, "--k", good, "--v", good]
for bad in ("1", "1.0", "-0.1", "2", "abc", "nan", "inf", "1e999", "", "0.5x"):
    rc, out, err = run(g3 + ["--dropout", bad])
    check(rc == 2 and "--dropout must be a probability" in err and not out, f"--dropout {bad!r}: rc={rc} {err!r}")
for bad in ("-1", "1.5", "x", "", "18446744073709551616", "0x10", " 7"):
    rc, out, err = run(g3 + ["--dropout", "0.1", "--seed", bad])
    check(rc == 2 and "--seed must be" in err and not out, f"--seed {bad!r}: rc={rc} {err!r}")
rc, out, err = run(g3 + ["--dropout", "0.1", "--seed", "18446744073709551615"])
check(rc == 0, f"--seed 2^64-1 is a seed: rc={rc} {err!r}")
rc, out, err = run(g3 + ["--seed", "5"])
check(rc == 2 and "give --dropout" in err and not out, f"--seed alone: {err!r}")
for t in (["--decode"], ["--reference"], ["--query"]):
    rc, out, err = run(g3 + ["--dropout", "0.1", *t])
    check(rc == 2 and "does not apply" in err and not out, f"--dropout with {t}: {err!r}")
rc, out, err = run(g3 + ["--dropout", "0.1", "--pitfall", "no-rescale"])
check(rc == 2 and "--pitfall" in err and not out, f"--dropout with --pitfall: {err!r}")
rc, out, err = run(g3 + ["--dropout", "0.1", "--fp8", "e4m3"])
check(rc == 2 and "--fp8" in err and not out, f"--dropout with --fp8: {err!r}")
rc, out, err = run(g3 + ["--dropout", "0.1", "--backend", "cuda"])
check(rc == 2 and "dropout" in err and not out, f"--dropout with --backend cuda: {err!r}")
rc, out, err = run(["--help"])
check(rc == 0 and "--dropout P" in out and "--seed S" in out, "--help names --dropout and --seed")

cli_test.finish("dropout cli: {passed} passed, {failed} failed (seed {seed})")
