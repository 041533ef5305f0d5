#!/usr/bin/env python3
"""check_ring_cli.py: `flashstep trace --ring P [--sharding S] [--backward]`, from the outside.

For random problems drawn fresh each run (seed printed; FS_SEED replays), every sharding, causal
and not, P from 1 to 5, GQA, sequence lengths that are not multiples of P: the JSONL's output rows
equal the --reference run's to 1e-12 and the backward's gradient rows the single-device
--backward's to 1e-11; every device holds every shard once, at step t the shard (p - t) mod P,
with the positions this file computes from the sharding's definition (docs/11-ring.md); every
send has its receive; every merge's alpha and beta are exp(m_old - m_new) and exp(m_blk - m_new);
the table ends with the work table. Then the refusals: exit 2 and one sentence.
Usage: check_ring_cli.py BUILD/flashstep
"""
import json, math, os, sys

import cli_test
from cli_test import check

exe = sys.argv[1]
rng = cli_test.random_source()
tmp = cli_test.scratch("fs-ring-cli-")


def mat(n, m):
    return [[round(rng.uniform(-1.5, 1.5), 6) for _ in range(m)] for _ in range(n)]


def positions(sharding, n, P, s):
    """The positions of shard s, written from the definitions in docs/11-ring.md."""
    if sharding == "contiguous":
        return list(range(s * n // P, (s + 1) * n // P))
    if sharding == "striped":
        return list(range(s, n, P))
    h = n // 2
    e0, e1 = s * h // P, (s + 1) * h // P + (1 if s == P - 1 and n % 2 else 0)
    return list(range(e0, e1)) + list(range(n - (s + 1) * h // P, n - s * h // P))


def events(out):
    return [json.loads(line) for line in out.splitlines()]


for trial in range(10):
    sharding = ["contiguous", "zigzag", "striped"][trial % 3]
    P = rng.randint(1, 5)
    n = (2 * P if sharding == "zigzag" else P) + rng.randint(0, 7)
    hkv = rng.randint(1, 2)
    hq = hkv * rng.randint(1, 2)
    d, dv = rng.randint(1, 3), rng.randint(1, 3)
    causal = trial % 2 == 0
    q = cli_test.write_rows(tmp, f"q{trial}.txt", mat(hq * n, d))
    k = cli_test.write_rows(tmp, f"k{trial}.txt", mat(hkv * n, d))
    v = cli_test.write_rows(tmp, f"v{trial}.txt", mat(hkv * n, dv))
    do = cli_test.write_rows(tmp, f"do{trial}.txt", mat(hq * n, dv))
    base = ["--q", q, "--k", k, "--v", v, "--heads", f"{hq}:{hkv}"] + (["--mask", "causal"] if causal else [])
    tiles = ["--bq", str(rng.randint(1, 3)), "--bk", str(rng.randint(1, 3))]
    ring = ["--ring", str(P), "--sharding", sharding] + tiles
    what = f"trial {trial}: P={P} {sharding} n={n} {'causal' if causal else 'none'} {' '.join(tiles)}"

    rc, out, err = cli_test.run(exe, "trace", base + ring + ["--format", "jsonl"])
    check(rc == 0, f"{what}: exit {rc}: {err.strip()}")
    if rc:
        continue
    ev = events(out)
    rc2, ref, _ = cli_test.run(exe, "trace", base + ["--reference", "--format", "jsonl"])
    want = {(e["head"], e["row"]): e["o"] for e in events(ref) if e["event"] == "out"}
    got = {(e["head"], e["row"]): e["o"] for e in ev if e["event"] == "out"}
    check(rc2 == 0 and got.keys() == want.keys() and all(
        abs(a - b) <= 1e-12 * max(1, abs(b)) for key in want for a, b in zip(got[key], want[key])),
        f"{what}: output rows differ from --reference")

    held = {}
    for e in ev:
        if e["event"] == "hold":
            p, t, s = e["device"], e["ring_step"], e["shard"]
            check(s == (p - t) % P, f"{what}: device {p} holds shard {s} at step {t}")
            check(e["positions"] == positions(sharding, n, P, s), f"{what}: shard {s}'s positions {e['positions']}")
            held[(p, t)] = s
    check(sorted(held) == [(p, t) for p in range(P) for t in range(P)] and
          all(sorted(held[(p, t)] for t in range(P)) == list(range(P)) for p in range(P)),
          f"{what}: each device holds each shard once")
    sends = [e for e in ev if e["event"] == "send"]
    recvs = [e for e in ev if e["event"] == "recv"]
    key = lambda e: (e["ring_step"], e["shard"], e["from"], e["to"], e["bytes"])
    check(len(sends) == P * (P - 1) and sorted(map(key, sends)) == sorted(map(key, recvs)) and
          all(e["to"] == (e["from"] + 1) % P and held[(e["from"], e["ring_step"])] == e["shard"] and
              e["bytes"] == len(positions(sharding, n, P, e["shard"])) * (d + dv) * hkv * 8 for e in sends),
          f"{what}: sends and receives")
    bad = [e for e in ev if e["event"] == "rmerge" and (
        abs(e["beta"] - math.exp(e["m_blk"] - e["m_new"])) > 1e-15 or
        (e["m_old"] != "-inf" and abs(e["alpha"] - math.exp(e["m_old"] - e["m_new"])) > 1e-15))]
    check(not bad, f"{what}: merge factors {bad[:1]}")
    if causal:
        for e in ev:
            if e["event"] in ("tile", "skip") and e["device"] >= 0:
                qp = positions(sharding, n, P, e["device"])[e["r0"]:e["r1"]]
                kp = positions(sharding, n, P, e["shard"])[e["c0"]:e["c1"]]
                seen = min(kp) <= max(qp)
                check((e["event"] == "tile") == seen and (seen or e["reason"] == "causal"),
                      f"{what}: {e['event']} at step {e['step']} (queries {qp}, keys {kp})")

    rc, table, err = cli_test.run(exe, "trace", base + ring)
    check(rc == 0 and "work per device and ring step" in table and
          sum(1 for line in table.splitlines() if line.startswith("  device ") and " load " in line) == P,
          f"{what}: the table's work table")

    rc, out, err = cli_test.run(exe, "trace", base + ring + ["--backward", "--do", do, "--format", "jsonl"])
    rc2, one, err2 = cli_test.run(exe, "trace", base + tiles + ["--backward", "--do", do, "--format", "jsonl"])
    check(rc == 0 and rc2 == 0, f"{what}: backward exit {rc}, {rc2}: {err.strip()} {err2.strip()}")
    if rc == 0 and rc2 == 0:
        g1 = {(e["tensor"], e["head"], e["row"]): e["value"] for e in events(out) if e["event"] == "grad"}
        g2 = {(e["tensor"], e["head"], e["row"]): e["value"] for e in events(one) if e["event"] == "grad"}
        check(g1.keys() == g2.keys() and all(abs(a - b) <= 1e-11 * max(1, abs(b)) for x in g2 for a, b in zip(g1[x], g2[x])),
              f"{what}: ring backward's gradients differ from --backward's")
        hops = [e for e in events(out) if e["event"] == "send"]
        check(len(hops) == P * P and all(e["carries"] == ("dK,dV" if e["ring_step"] == P - 1 else "K,V,dK,dV") for e in hops),
              f"{what}: the backward's hops")

# Refusals: exit 2, one sentence naming the problem.
q = cli_test.write_rows(tmp, "q.txt", mat(5, 2))
k = cli_test.write_rows(tmp, "k.txt", mat(5, 2))
v = cli_test.write_rows(tmp, "v.txt", mat(5, 2))
k4 = cli_test.write_rows(tmp, "k4.txt", mat(4, 2))
v4 = cli_test.write_rows(tmp, "v4.txt", mat(4, 2))
base = ["--q", q, "--k", k, "--v", v]
for args, words in [
    (["--ring", "3"], "at least 6 positions"),                       # zigzag needs 2P
    (["--ring", "6", "--sharding", "striped"], "at least 6 positions"),
    (["--ring", "0"], "--ring must be"),
    (["--ring", "2", "--sharding", "diagonal"], "--sharding is contiguous, zigzag or striped"),
    (["--sharding", "zigzag"], "--sharding needs --ring"),
    (["--ring", "2", "--window", "2"], "not window"),
    (["--ring", "2", "--mask", "causal", "--offset", "1"], "offset 0"),
    (["--ring", "2", "--dropout", "0.5"], "does not apply to ring attention"),
    (["--ring", "2", "--decode"], "--ring runs the tiled forward"),
    (["--ring", "2", "--exp2"], "does not apply to ring attention"),
]:
    rc, out, err = cli_test.run(exe, "trace", base + args)
    check(rc == 2 and words in err, f"trace {' '.join(args)}: exit {rc}, stderr {err.strip()!r}")
rc, out, err = cli_test.run(exe, "trace", ["--q", q, "--k", k4, "--v", v4, "--ring", "2"])
check(rc == 2 and "n_q (5) must equal n_kv (4)" in err, f"n_q != n_kv: exit {rc}, {err.strip()!r}")

# The window's ring scene: render draws it (a PNG), forward and backward.
if cli_test.has_window(exe):
    rc, out, err = cli_test.run(exe, "render", base + ["--ring", "2", "--sharding", "contiguous", "--step", "3",
                                                       "--out", tmp + "/x.png"])
    png = open(tmp + "/x.png", "rb").read(8) if rc == 0 and os.path.exists(tmp + "/x.png") else b""
    check(rc == 0 and png == b"\x89PNG\r\n\x1a\n", f"render --ring: exit {rc}, a PNG ({err.strip()!r})")
    rc, out, err = cli_test.run(exe, "render", base + ["--ring", "2", "--sharding", "striped", "--backward", "--step",
                                                       "5", "--out", tmp + "/y.png"])
    check(rc == 0 and os.path.exists(tmp + "/y.png"), f"render --ring --backward: exit {rc} ({err.strip()!r})")
else:
    print("check_ring_cli: render --ring skipped (this build has no window)")

cli_test.finish("check_ring_cli: {passed} passed, {failed} failed (seed {seed})")
