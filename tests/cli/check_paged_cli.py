#!/usr/bin/env python3
"""check_paged_cli.py: `flashstep trace --decode --page-size P [--block-table FILE | --seed S]`.

For random problems drawn fresh each run (seed printed; FS_SEED replays), random page sizes,
GQA, masks and split settings: the paged trace is the contiguous decode's events, in order and
with the same numbers (the JSON text of each is identical), plus the page events (alloc, write,
lookup), which follow the block table; the output rows are the contiguous run's, bit for bit.
Then the table from --seed, the replay of a paged trace (`render --trace`), `play` and `render`
taking the options, and every bad input: exit 2 and file:line:column on stderr.
Usage: check_paged_cli.py BUILD/flashstep
"""
import json, os, sys

import cli_test
from cli_test import check

exe = sys.argv[1]
rng = cli_test.random_source()
tmp = cli_test.scratch("fs-paged-cli-")


def write(name, rows):
    return cli_test.write_rows(tmp, name, rows, " ", "# written by check_paged_cli.py\n")


def text(name, s):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(s)
    return path


def run(args, command="trace"):
    return cli_test.run(exe, command, args)


def mat(n, m):
    return [[round(rng.uniform(-2, 2), 6) for _ in range(m)] for _ in range(n)]


PAGE_EVENTS = ("alloc", "write", "lookup", "share", "cow")

for trial in range(8):
    hkv = rng.randint(1, 2)
    hq = hkv * rng.randint(1, 3)
    nq, nkv, d, dv = rng.randint(1, 3), rng.randint(1, 17), rng.randint(1, 4), rng.randint(1, 3)
    q = write(f"q{trial}.txt", mat(hq * nq, d))
    k = write(f"k{trial}.txt", mat(hkv * nkv, d))
    v = write(f"v{trial}.txt", mat(hkv * nkv, dv))
    ps = rng.randint(1, 6)
    blocks = -(-nkv // ps)
    pool = blocks + rng.randint(0, 4)
    pages = rng.sample(range(pool), blocks)
    table = text(f"table{trial}.txt", "# block -> page\n" + "".join(f"{p}\n" for p in pages))
    split = rng.choice([["--bk", str(rng.randint(1, 6))], ["--parts", str(rng.randint(1, 4))]])
    extra = split + rng.choice([[], ["--mask", "causal"], ["--window", str(rng.randint(1, 5))]]) + \
        rng.choice([[], ["--merge", "tree"]]) + rng.choice([[], ["--form", "normalized"]])
    base = ["--q", q, "--k", k, "--v", v, "--heads", f"{hq}:{hkv}", "--decode", "--format", "jsonl"] + extra
    what = f"trial {trial}: n_kv={nkv} page {ps} table {pages} {' '.join(extra)}"
    rc, out, err = run(base)
    check(rc == 0, f"{what}: contiguous run: {err}")
    plain = out.splitlines()
    rc, out, err = run(base + ["--page-size", str(ps), "--block-table", table])
    check(rc == 0, f"{what}: paged run: exit {rc}: {err}")
    lines = out.splitlines()
    ev = [json.loads(x) for x in lines]
    check(all(e["step"] == i for i, e in enumerate(ev)), f"{what}: steps count 0, 1, 2, ...")
    # The contiguous events, the same text (step numbers aside), in the same order.
    def strip(line):
        e = json.loads(line)
        del e["step"]
        return json.dumps(e, sort_keys=True)
    rest = [strip(x) for x, e in zip(lines, ev) if e["event"] not in PAGE_EVENTS]
    check(rest == [strip(x) for x in plain], f"{what}: the contiguous decode's events, unchanged")
    # The filling: an alloc per block into the page the table names, a write per key.
    allocs = [e for e in ev if e["event"] == "alloc"]
    writes = [e for e in ev if e["event"] == "write"]
    check([(e["block"], e["page"]) for e in allocs] == list(enumerate(pages)), f"{what}: alloc follows the table")
    check([(e["pos"], e["page"], e["slot"]) for e in writes] == [(j, pages[j // ps], j % ps) for j in range(nkv)],
          f"{what}: each key written into its page and slot")
    # Each lookup names the table's page, and the lookups before a partial cover the keys it reads.
    looks = [e for e in ev if e["event"] == "lookup"]
    check(all(e["page"] == pages[e["block"]] and e["c0"] // ps == e["block"] == (e["c1"] - 1) // ps for e in looks),
          f"{what}: lookups follow the table")
    pending = []
    for e in ev:
        if e["event"] == "lookup":
            pending.append(e)
        elif e["event"] == "partial":
            want = list(range(e["c0"], e["c1"], e["stride"])) if e["class"] != "skipped" else []
            got = [j for x in pending for j in range(x["c0"], x["c1"], x["stride"])]
            check(got == want, f"{what}: split {e['split']} row {e['row']} head {e['head']}: lookups read {got}, "
                               f"the split reads {want}")
            pending = []
    # The table form prints the same output rows.
    rc1, t1, _ = run([a for a in base if a not in ("--format", "jsonl")])
    rc2, t2, _ = run([a for a in base if a not in ("--format", "jsonl")] + ["--page-size", str(ps), "--block-table", table])
    outs = lambda t: [x for x in t.splitlines() if x.startswith("  =>")]
    check(rc1 == rc2 == 0 and outs(t1) == outs(t2) and outs(t1), f"{what}: the table's output rows agree")
    check(f"block table [{', '.join(map(str, pages))}]" in t2, f"{what}: the table form names the block table")

# --seed: a shuffled table, the same for the same seed, never in order; different seeds differ.
q = write("q.txt", mat(1, 2))
k = write("k.txt", mat(12, 2))
v = write("v.txt", mat(12, 1))
base = ["--q", q, "--k", k, "--v", v, "--decode", "--page-size", "2", "--format", "jsonl"]


def table_of(out):
    return [e["page"] for e in map(json.loads, out.splitlines()) if e["event"] == "alloc"]


tables = {}
for s in ("1", "2", "3", "77"):
    rc, out, err = run(base + ["--seed", s])
    check(rc == 0, f"--seed {s}: {err}")
    tables[s] = table_of(out)
    check(sorted(tables[s]) == list(range(6)) and tables[s] != list(range(6)), f"--seed {s}: a shuffle: {tables[s]}")
rc, out, err = run(base + ["--seed", "2"])
check(table_of(out) == tables["2"], "--seed 2 twice: the same table")
rc, out, err = run(base)
check(table_of(out) == tables["1"], "no --seed: seed 1")
check(len({tuple(t) for t in tables.values()}) > 1, f"different seeds give different tables: {tables}")
# Two keys in pages of 1: the only shuffle that is not in order.
k2 = write("k2.txt", mat(2, 2))
v2 = write("v2.txt", mat(2, 1))
rc, out, err = run(["--q", q, "--k", k2, "--v", v2, "--decode", "--page-size", "1", "--format", "jsonl"])
check(rc == 0 and table_of(out) == [1, 0], f"two blocks: the table [1, 0]: {table_of(out)} {err}")


# A paged trace saved as JSONL (the table tests below read it too) replays in the window (render
# needs no display).
rc, out, err = run(base + ["--seed", "3"])
saved = text("paged.jsonl", out)
n_events = len(out.splitlines())
png = os.path.join(tmp, "replay.png")


def window_cases():
    """render (which needs the window, not a display) and play's window options."""
    rc, out, err = run(["--trace", saved, "--step", str(n_events // 2), "--out", png], "render")
    check(rc == 0 and os.path.getsize(png) > 1000, f"render --trace of a paged trace: rc={rc} {err!r}")
    # render and play take the same options.
    png2 = os.path.join(tmp, "own.png")
    rc, out, err = run(["--q", q, "--k", k, "--v", v, "--decode", "--page-size", "4", "--seed", "5", "--step", "3",
                        "--out", png2], "render")
    check(rc == 0 and os.path.exists(png2), f"render with --page-size: rc={rc} {err!r}")
    rc, out, err = run(["--q", q, "--k", k, "--v", v, "--decode", "--page-size", "0", "--step", "3", "--out", png2],
                       "render")
    check(rc == 2 and "--page-size must be an integer from 1" in err, f"render --page-size 0: rc={rc} {err!r}")
    rc, out, err = run(["--q", q, "--k", k, "--v", v, "--page-size", "2"], "play")
    check(rc == 2 and "--page-size does not apply" in err, f"play --page-size without --decode: rc={rc} {err!r}")

    # A saved paged trace with a damaged page event is refused at its line and field.
    bad = text("bad.jsonl", open(saved).read().replace('"page":', '"page":-', 1))
    rc, out, err = run(["--trace", bad, "--step", "0", "--out", png], "render")
    check(rc == 2 and "bad.jsonl:1:" in err, f"a negative page in a saved trace: rc={rc} {err!r}")

    # Writes that disagree on the page size (a slot moved) are refused at the line.
    lines = open(saved).read().splitlines()
    ws = [i for i, x in enumerate(lines) if '"event":"write"' in x and '"block":1' in x]
    if ws:
        i = ws[0]
        lines[i] = lines[i].replace('"slot":0', '"slot":1')
        mixed = text("mixed.jsonl", "\n".join(lines) + "\n")
        rc, out, err = run(["--trace", mixed, "--step", "0", "--out", png], "render")
        check(rc == 2 and f"mixed.jsonl:{i + 1}:1:" in err and "page size" in err,
              f"writes of two page sizes in a saved trace: rc={rc} {err!r}")


if cli_test.has_window(exe):
    window_cases()
else:
    print("check_paged_cli: render and play's window options skipped (this build has no window)")

# Bad input: exit 2, nothing on stdout, file:line:column.
def bad_table(content, expect, what, extra=()):
    path = text("t.txt", content)
    rc, out, err = run(base + ["--block-table", path, *extra])
    check(rc == 2 and not out and expect in err, f"{what}: rc={rc} {err!r}")


bad_table("0\n1\n2\nx3\n4\n5\n", "t.txt:4:1: expected a page number", "a word in the table")
bad_table("0\n1\n2\n3 4\n5\n", "t.txt:4:3: one page number a line", "two numbers on a line")
bad_table("0\n  -1\n2\n3\n4\n5\n", "t.txt:2:3: page -1 is out of range", "a negative page")
bad_table("0\n1\n2\n3\n4\n40\n", "t.txt:6:1: page 40 is out of range", "a page past the pool's bound")
bad_table("0\n1\n# comment\n2\n3\n1\n", "t.txt:6:1: page 1 already holds block 1 (line 2)", "a page twice")
bad_table("0\n1\n2\n", "t.txt:4:1: the table has 3 entries but the sequence has 6 blocks", "too few entries")
bad_table("0\n1\n2\n3\n4\n5\n6\n", "t.txt:7:1: one entry too many", "too many entries")
bad_table("", "t.txt:1:1: the table has 0 entries", "an empty table")
bad_table("0\n1\n2\n3\n4\n5\n", "give one or the other", "--block-table and --seed", ["--seed", "3"])
bad_table("0\n1\n2\n3\n4\n5\x1b[31m\n", "\\x1b", "a control byte is shown escaped")
rc, out, err = run(base + ["--block-table", os.path.join(tmp, "missing.txt")])
check(rc == 2 and "missing.txt" in err and not out, f"a missing table file: {err!r}")
rc, out, err = run(["--q", q, "--k", k, "--v", v, "--decode", "--block-table", saved])
check(rc == 2 and "--block-table needs --page-size" in err, f"--block-table without --page-size: {err!r}")
rc, out, err = run(["--q", q, "--k", k, "--v", v, "--decode", "--seed", "4"])
check(rc == 2 and "--seed needs --page-size" in err, f"--seed without --page-size: {err!r}")
for val in ("0", "-2", "x", "1048577"):
    rc, out, err = run(["--q", q, "--k", k, "--v", v, "--decode", "--page-size", val])
    check(rc == 2 and "--page-size must be an integer from 1 to 1048576" in err, f"--page-size {val}: {err!r}")
rc, out, err = run(["--q", q, "--k", k, "--v", v, "--decode", "--page-size", "2", "--seed", "-1"])
check(rc == 2 and "--seed must be a whole number" in err, f"--seed -1: {err!r}")
rc, out, err = run(["--q", q, "--k", k, "--v", v, "--page-size", "2"])
check(rc == 2 and "--page-size does not apply to tiled attention" in err, f"--page-size without --decode: {err!r}")
s = write("s.txt", mat(1, 12))
rc, out, err = run(["--scores", s, "--decode", "--page-size", "2"])
check(rc == 2 and "not --scores" in err, f"--page-size with --scores: {err!r}")
rc, out, err = run(["--q", q, "--k", k, "--v", v, "--decode", "--page-size", "2", "--page-size", "3"])
check(rc == 2 and "--page-size given twice" in err, f"--page-size twice: {err!r}")
rc, out, err = run(["--help"])
check(rc == 0 and "--page-size P" in out and "--block-table FILE" in out and "--seed S" in out, "--help names the options")

cli_test.finish("check_paged_cli: {passed} passed, {failed} failed (seed {seed})")
